//! The messages a `bsp_sync` exchanges (design choice), little-endian like the host
//! memory they are built in: a 32-byte message header, then records, each a 16-byte
//! record header and its payload padded to 8 bytes.
//!
//! Message header:
//!
//! | bytes | field | meaning |
//! |---|---|---|
//! | 0 | round | 1: requests (registrations, puts, gets, messages), 2: get replies, 3: puts done |
//! | 1 | flags | bit 0: the sender needs rounds 2 and 3 (it has gets, or puts by RDMA write) |
//! | 2..4 | reserved, 0 | |
//! | 4..8 | records | how many follow |
//! | 8..12 | RDMA puts | puts the sender writes into the receiver's memory in round 2 |
//! | 12..32 | reserved, 0 | |
//!
//! Record header:
//!
//! | bytes | field | registration (1) | put (2) | get (3) | message (4) | get reply (5) |
//! |---|---|---|---|---|---|---|
//! | 0 | kind | 1 | 2 | 3 | 4 | 5 |
//! | 1 | reserved, 0 | | | | | |
//! | 2..4 | `tag_len` | 0 | 0 | 0 | tag bytes | 0 |
//! | 4..8 | `a` | memory handle | area index | area index | 0 | request id |
//! | 8..12 | `b` | 0 | offset | offset | 0 | 0 |
//! | 12..16 | `len` | area bytes | bytes | bytes | payload bytes | bytes |
//! | 16.. | payload | address (8) | the bytes | request id (4) + 0 (4) | tag, payload | the bytes |

/// Message header length \[bytes\].
pub const MSG_HEADER: usize = 32;
/// Record header length \[bytes\].
pub const REC_HEADER: usize = 16;

/// What a record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecKind {
    /// A `bsp_push_reg` of the sender.
    Registration,
    /// A `bsp_put` into the receiver's area.
    Put,
    /// A `bsp_get` from the receiver's area.
    Get,
    /// A `bsp_send`.
    Message,
    /// The bytes a get asked for.
    GetReply,
}

impl RecKind {
    fn raw(self) -> u8 {
        match self {
            RecKind::Registration => 1,
            RecKind::Put => 2,
            RecKind::Get => 3,
            RecKind::Message => 4,
            RecKind::GetReply => 5,
        }
    }

    fn from_raw(b: u8) -> Option<RecKind> {
        Some(match b {
            1 => RecKind::Registration,
            2 => RecKind::Put,
            3 => RecKind::Get,
            4 => RecKind::Message,
            5 => RecKind::GetReply,
            _ => return None,
        })
    }
}

/// A record header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecHeader {
    /// Kind.
    pub kind: RecKind,
    /// Tag bytes (messages).
    pub tag_len: u16,
    /// Handle, area index or request id.
    pub a: u32,
    /// Offset.
    pub b: u32,
    /// Length \[bytes\].
    pub len: u32,
}

/// A message header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsgHeader {
    /// Round 1, 2 or 3.
    pub round: u8,
    /// The sender needs rounds 2 and 3.
    pub needs_more: bool,
    /// Records that follow.
    pub records: u32,
    /// Puts by RDMA write coming in round 2.
    pub rdma_puts: u32,
}

/// Why bytes are not a superstep message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecError {
    /// Too short for what it says.
    #[error("superstep message truncated at byte {0}")]
    Truncated(usize),
    /// An undefined round or record kind, or reserved bytes set.
    #[error("superstep message malformed at byte {0}")]
    Malformed(usize),
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at + 4)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

impl MsgHeader {
    /// The 32 bytes.
    #[must_use]
    pub fn emit(&self) -> [u8; MSG_HEADER] {
        let mut b = [0u8; MSG_HEADER];
        b[0] = self.round;
        b[1] = u8::from(self.needs_more);
        b[4..8].copy_from_slice(&self.records.to_le_bytes());
        b[8..12].copy_from_slice(&self.rdma_puts.to_le_bytes());
        b
    }

    /// Parses the first 32 bytes of `b`.
    ///
    /// # Errors
    /// [`RecError`].
    pub fn parse(b: &[u8]) -> Result<MsgHeader, RecError> {
        let h = b.get(..MSG_HEADER).ok_or(RecError::Truncated(b.len()))?;
        if !(1..=3).contains(&h[0]) || h[1] > 1 || h[2..4] != [0, 0] || h[12..] != [0; 20] {
            return Err(RecError::Malformed(0));
        }
        Ok(MsgHeader {
            round: h[0],
            needs_more: h[1] == 1,
            records: u32_at(h, 4).ok_or(RecError::Truncated(4))?,
            rdma_puts: u32_at(h, 8).ok_or(RecError::Truncated(8))?,
        })
    }
}

impl RecHeader {
    /// The 16 bytes.
    #[must_use]
    pub fn emit(&self) -> [u8; REC_HEADER] {
        let mut b = [0u8; REC_HEADER];
        b[0] = self.kind.raw();
        b[2..4].copy_from_slice(&self.tag_len.to_le_bytes());
        b[4..8].copy_from_slice(&self.a.to_le_bytes());
        b[8..12].copy_from_slice(&self.b.to_le_bytes());
        b[12..16].copy_from_slice(&self.len.to_le_bytes());
        b
    }

    /// Parses the record header at the start of `b` (`at`: its offset in the message,
    /// for errors).
    ///
    /// # Errors
    /// [`RecError`].
    pub fn parse(b: &[u8], at: usize) -> Result<RecHeader, RecError> {
        let h = b.get(..REC_HEADER).ok_or(RecError::Truncated(at))?;
        let kind = RecKind::from_raw(h[0]).ok_or(RecError::Malformed(at))?;
        if h[1] != 0 {
            return Err(RecError::Malformed(at + 1));
        }
        Ok(RecHeader {
            kind,
            tag_len: u16::from_le_bytes([h[2], h[3]]),
            a: u32_at(h, 4).ok_or(RecError::Truncated(at))?,
            b: u32_at(h, 8).ok_or(RecError::Truncated(at))?,
            len: u32_at(h, 12).ok_or(RecError::Truncated(at))?,
        })
    }

    /// Payload bytes that follow the header (before padding).
    #[must_use]
    pub fn payload_len(&self) -> u64 {
        match self.kind {
            RecKind::Registration | RecKind::Get => 8,
            RecKind::Put | RecKind::GetReply => u64::from(self.len),
            RecKind::Message => u64::from(self.tag_len) + u64::from(self.len),
        }
    }

    /// Header and padded payload \[bytes\]: where the next record starts.
    #[must_use]
    pub fn total_len(&self) -> u64 {
        REC_HEADER as u64 + self.payload_len().next_multiple_of(8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_put_record_from_spec_bytes() {
        let r = RecHeader {
            kind: RecKind::Put,
            tag_len: 0,
            a: 2,
            b: 0x10,
            len: 5,
        };
        let b = r.emit();
        assert_eq!(b, [2, 0, 0, 0, 2, 0, 0, 0, 0x10, 0, 0, 0, 5, 0, 0, 0]);
        assert_eq!(RecHeader::parse(&b, 0), Ok(r));
        assert_eq!(r.total_len(), 16 + 8);
        let m = MsgHeader {
            round: 1,
            needs_more: true,
            records: 3,
            rdma_puts: 1,
        };
        assert_eq!(MsgHeader::parse(&m.emit()), Ok(m));
        let mut bad = m.emit();
        bad[0] = 4;
        assert_eq!(MsgHeader::parse(&bad), Err(RecError::Malformed(0)));
        assert_eq!(MsgHeader::parse(&bad[..5]), Err(RecError::Truncated(5)));
        assert_eq!(RecHeader::parse(&[9; 16], 40), Err(RecError::Malformed(40)));
    }

    proptest! {
        #[test]
        fn records_round_trip(kind in 1u8..=5, tag_len: u16, a: u32, b: u32, len: u32) {
            let r = RecHeader { kind: RecKind::from_raw(kind).expect("1..=5"), tag_len, a, b, len };
            prop_assert_eq!(RecHeader::parse(&r.emit(), 0), Ok(r));
            prop_assert_eq!(r.total_len() % 8, 0);
        }

        #[test]
        fn parsing_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            let _ = MsgHeader::parse(&bytes);
            let _ = RecHeader::parse(&bytes, 0);
        }
    }
}
