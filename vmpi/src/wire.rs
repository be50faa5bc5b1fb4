//! The header every VMPI message carries in front of its payload, in the VIA send
//! message (design choice; the study's VMPI format is not published). 40 bytes, network
//! byte order, so an eager message of `n` bytes is one VIA send of `40 + n` bytes.
//!
//! | bytes | field | name | why |
//! |---|---|---|---|
//! | 0 | kind ([`Kind`]) | `kind` | what the receiver does with it |
//! | 1 | reserved, 0 | `reserved` | |
//! | 2..4 | sender's rank | `src` | the envelope's source (the VI tells it too; kept for traces) |
//! | 4..6 | context | `ctx` | point-to-point or collective space |
//! | 6..8 | eager credits returned | `credits` | flow control, piggy-backed on every message |
//! | 8..12 | tag | `tag` | the envelope's tag |
//! | 12..16 | message length \[bytes\] | `len` | eager: the payload; RTS: the message the sender holds |
//! | 16..20 | sender's request id | `send_req` | RTS, CTS: which send |
//! | 20..24 | receiver's request id | `recv_req` | CTS: which receive (the RDMA write's immediate data names it again) |
//! | 24..28 | memory handle | `handle` | CTS: the receive buffer's VIA memory handle |
//! | 28..32 | reserved, 0 | `reserved1` | aligns the address |
//! | 32..40 | virtual address | `va` | CTS: the receive buffer's address |
//! | 40.. | payload (eager only) | | |

use crate::types::{Context, Rank, Tag};

/// A field's byte range.
pub type Field = core::ops::Range<usize>;

/// Byte ranges of the header fields.
pub mod field {
    use super::Field;
    /// Kind (1 byte).
    pub const KIND: Field = 0..1;
    /// Reserved (1 byte).
    pub const RESERVED: Field = 1..2;
    /// Sender's rank (2 bytes).
    pub const SRC: Field = 2..4;
    /// Context (2 bytes).
    pub const CTX: Field = 4..6;
    /// Credits returned (2 bytes).
    pub const CREDITS: Field = 6..8;
    /// Tag (4 bytes, signed).
    pub const TAG: Field = 8..12;
    /// Length \[bytes\] (4 bytes).
    pub const LEN: Field = 12..16;
    /// Sender's request id (4 bytes).
    pub const SEND_REQ: Field = 16..20;
    /// Receiver's request id (4 bytes).
    pub const RECV_REQ: Field = 20..24;
    /// Memory handle (4 bytes).
    pub const HANDLE: Field = 24..28;
    /// Reserved (4 bytes).
    pub const RESERVED1: Field = 28..32;
    /// Virtual address (8 bytes).
    pub const VA: Field = 32..40;
}

/// Header length \[bytes\].
pub const HEADER_LEN: usize = field::VA.end;

/// What a message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// 1: an eager ("ready mode") message: the payload follows the header.
    Eager,
    /// 2: request to send (synchronous mode): the sender holds `len` bytes for the
    /// receive that matches this envelope.
    Rts,
    /// 3: clear to send: the matched receive's buffer (`va`, `handle`), for the RDMA
    /// write of the data.
    Cts,
    /// 4: credits only (nothing else to say).
    Credit,
}

impl Kind {
    /// The kind byte.
    #[must_use]
    pub const fn raw(self) -> u8 {
        match self {
            Kind::Eager => 1,
            Kind::Rts => 2,
            Kind::Cts => 3,
            Kind::Credit => 4,
        }
    }

    /// Decodes a kind byte.
    #[must_use]
    pub const fn from_raw(b: u8) -> Option<Kind> {
        match b {
            1 => Some(Kind::Eager),
            2 => Some(Kind::Rts),
            3 => Some(Kind::Cts),
            4 => Some(Kind::Credit),
            _ => None,
        }
    }
}

/// Why bytes are not a VMPI header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// Fewer than [`HEADER_LEN`] bytes.
    #[error("a VMPI message of {0} bytes is shorter than its 40-byte header")]
    Truncated(usize),
    /// An undefined kind byte.
    #[error("VMPI message kind {0} is undefined")]
    Kind(u8),
    /// A reserved byte is not zero.
    #[error("VMPI header reserved bytes are not zero")]
    Reserved,
    /// An eager message whose payload is not `len` bytes.
    #[error("eager message says {said} bytes but carries {carried}")]
    Length {
        /// The header's length.
        said: u32,
        /// The payload's.
        carried: usize,
    },
}

/// A VMPI header, parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// What it is.
    pub kind: Kind,
    /// Sender's rank.
    pub src: Rank,
    /// Context.
    pub ctx: Context,
    /// Eager credits the sender returns.
    pub credits: u16,
    /// Tag.
    pub tag: Tag,
    /// Length \[bytes\].
    pub len: u32,
    /// Sender's request id.
    pub send_req: u32,
    /// Receiver's request id.
    pub recv_req: u32,
    /// Memory handle (CTS).
    pub handle: u32,
    /// Virtual address (CTS).
    pub va: u64,
}

fn be<const N: usize>(b: &[u8], f: Field) -> [u8; N] {
    let mut out = [0u8; N];
    if let Some(s) = b.get(f) {
        if s.len() == N {
            out.copy_from_slice(s);
        }
    }
    out
}

impl Header {
    /// A header of `kind` from `src` with every other field 0.
    #[must_use]
    pub fn new(kind: Kind, src: Rank, ctx: Context) -> Header {
        Header {
            kind,
            src,
            ctx,
            credits: 0,
            tag: Tag(0),
            len: 0,
            send_req: 0,
            recv_req: 0,
            handle: 0,
            va: 0,
        }
    }

    /// Parses the header at the start of `b`; an eager message's payload must be `len`
    /// bytes.
    ///
    /// # Errors
    /// [`WireError`]: short, undefined kind, reserved bytes set, wrong eager length.
    pub fn parse(b: &[u8]) -> Result<Header, WireError> {
        Header::parse_prefix(b, b.len())
    }

    fn parse_unchecked_len(b: &[u8]) -> Result<Header, WireError> {
        if b.len() < HEADER_LEN {
            return Err(WireError::Truncated(b.len()));
        }
        let raw = be::<1>(b, field::KIND)[0];
        let kind = Kind::from_raw(raw).ok_or(WireError::Kind(raw))?;
        if be::<1>(b, field::RESERVED)[0] != 0 || be::<4>(b, field::RESERVED1) != [0; 4] {
            return Err(WireError::Reserved);
        }
        Ok(Header {
            kind,
            src: Rank(u16::from_be_bytes(be(b, field::SRC))),
            ctx: Context(u16::from_be_bytes(be(b, field::CTX))),
            credits: u16::from_be_bytes(be(b, field::CREDITS)),
            tag: Tag(i32::from_be_bytes(be(b, field::TAG))),
            len: u32::from_be_bytes(be(b, field::LEN)),
            send_req: u32::from_be_bytes(be(b, field::SEND_REQ)),
            recv_req: u32::from_be_bytes(be(b, field::RECV_REQ)),
            handle: u32::from_be_bytes(be(b, field::HANDLE)),
            va: u64::from_be_bytes(be(b, field::VA)),
        })
    }

    /// Parses the header at the start of `b` for a message of `msg_len` bytes in all
    /// (header and payload; the payload itself need not be in `b`, so a receiver can
    /// load just the header first).
    ///
    /// # Errors
    /// As [`Header::parse`], with the eager length checked against `msg_len`.
    pub fn parse_prefix(b: &[u8], msg_len: usize) -> Result<Header, WireError> {
        let head = b.get(..HEADER_LEN).ok_or(WireError::Truncated(b.len()))?;
        let h = Header::parse_unchecked_len(head)?;
        let carried = msg_len
            .checked_sub(HEADER_LEN)
            .ok_or(WireError::Truncated(msg_len))?;
        if h.kind == Kind::Eager && usize::try_from(h.len).ok() != Some(carried) {
            return Err(WireError::Length {
                said: h.len,
                carried,
            });
        }
        Ok(h)
    }

    /// The 40 header bytes.
    #[must_use]
    pub fn emit(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        let mut put = |f: Field, v: &[u8]| {
            if let Some(d) = b.get_mut(f) {
                d.copy_from_slice(v);
            }
        };
        put(field::KIND, &[self.kind.raw()]);
        put(field::SRC, &self.src.0.to_be_bytes());
        put(field::CTX, &self.ctx.0.to_be_bytes());
        put(field::CREDITS, &self.credits.to_be_bytes());
        put(field::TAG, &self.tag.0.to_be_bytes());
        put(field::LEN, &self.len.to_be_bytes());
        put(field::SEND_REQ, &self.send_req.to_be_bytes());
        put(field::RECV_REQ, &self.recv_req.to_be_bytes());
        put(field::HANDLE, &self.handle.to_be_bytes());
        put(field::VA, &self.va.to_be_bytes());
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_cts_from_spec_bytes() {
        let bytes: [u8; 40] = [
            3, 0, 0x00, 0x02, 0x00, 0x00, 0x00, 0x04, // CTS from rank 2, ctx 0, 4 credits
            0x00, 0x00, 0x00, 0x07, 0x00, 0x01, 0x00, 0x00, // tag 7, len 65536
            0x00, 0x00, 0x00, 0x11, 0x00, 0x00, 0x00, 0x22, // send_req 0x11, recv_req 0x22
            0x00, 0x00, 0x01, 0x00, 0, 0, 0, 0, // handle 0x100
            0x00, 0x00, 0x00, 0x00, 0x08, 0x04, 0xA0, 0x00, // va 0x0804_A000
        ];
        let h = Header::parse(&bytes).expect("valid");
        assert_eq!(
            h,
            Header {
                kind: Kind::Cts,
                src: Rank(2),
                ctx: Context::WORLD,
                credits: 4,
                tag: Tag(7),
                len: 65536,
                send_req: 0x11,
                recv_req: 0x22,
                handle: 0x100,
                va: 0x0804_A000,
            }
        );
        assert_eq!(h.emit(), bytes);
    }

    #[test]
    fn malformed_headers_are_errors_naming_the_fault() {
        assert_eq!(Header::parse(&[1; 39]), Err(WireError::Truncated(39)));
        let mut b = Header::new(Kind::Credit, Rank(0), Context::WORLD).emit();
        b[0] = 9;
        assert_eq!(Header::parse(&b), Err(WireError::Kind(9)));
        b[0] = 4;
        b[1] = 1;
        assert_eq!(Header::parse(&b), Err(WireError::Reserved));
        let mut e = Header::new(Kind::Eager, Rank(0), Context::WORLD);
        e.len = 3;
        let mut m = e.emit().to_vec();
        m.extend_from_slice(&[1, 2]);
        assert_eq!(
            Header::parse(&m),
            Err(WireError::Length {
                said: 3,
                carried: 2
            })
        );
        m.push(3);
        assert!(Header::parse(&m).is_ok());
        assert_eq!(
            WireError::Kind(9).to_string(),
            "VMPI message kind 9 is undefined"
        );
    }

    proptest! {
        #[test]
        fn emit_then_parse_is_identity(kind in 2u8..=4, src: u16, ctx: u16, credits: u16,
                                       tag: i32, len: u32, sr: u32, rr: u32, handle: u32,
                                       va: u64) {
            let h = Header {
                kind: Kind::from_raw(kind).expect("2..=4"),
                src: Rank(src), ctx: Context(ctx), credits, tag: Tag(tag), len,
                send_req: sr, recv_req: rr, handle, va,
            };
            prop_assert_eq!(Header::parse(&h.emit()), Ok(h));
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = Header::parse(&b);
        }
    }
}
