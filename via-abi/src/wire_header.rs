//! The VIA header HVIA-GE puts on the wire right after the 14-byte Ethernet header
//! (EtherType [`ETHERTYPE_VIA`](crate::ethernet::ETHERTYPE_VIA), 0x88B5). 40 bytes,
//! network byte order.
//!
//! The paper does not publish its frame format, so this header is a design choice. It
//! carries what the receiving engine needs to place a fragment without host help: which
//! VI, which message and where in it, and for RDMA write the remote buffer.
//!
//! | bytes | field | name | why |
//! |---|---|---|---|
//! | 0 | version, 1 | `version` | lets traces and a future format tell frames apart; others are rejected |
//! | 1 | operation ([`WireOp`]) | `op` | what the receiving engine does with the frame |
//! | 2 | flags ([`WireFlags`]): FIRST, LAST, IMMEDIATE, ACK_REQ | `flags` | message boundaries without per-VI state; immediate data valid; the sender asks for an ack of this frame |
//! | 3 | reserved, 0 | `reserved0` | keeps the VI numbers 16-bit aligned |
//! | 4..6 | destination VI number | `dst_vi` | selects the receiving VI context (like a port) |
//! | 6..8 | source VI number | `src_vi` | lets the receiver check the connection and address acks |
//! | 8..12 | sequence number | `seq` | per connection, +1 per data frame, for reliable delivery (compared in serial-number order, [`seq_before`]); an ack carries the highest in-order number received, a go-back nak the next number expected |
//! | 12..16 | message total length \[bytes\] | `msg_len` | the receiver checks the receive descriptor / knows when the message is whole |
//! | 16..20 | fragment offset \[bytes\] | `frag_offset` | where this fragment's payload goes in the message (RDMA: at `remote_va + frag_offset`) |
//! | 20..22 | fragment payload length \[bytes\] | `frag_len` | short frames are padded to 60 bytes, so the frame length cannot tell |
//! | 22..24 | reserved, 0 | `reserved1` | aligns the remote VA to 8 bytes |
//! | 24..32 | remote virtual address | `remote_va` | RDMA write: start of the target buffer (same in every fragment); RDMA read request: start of the source buffer; 0 otherwise |
//! | 32..36 | remote memory handle | `remote_handle` | RDMA write: the receiver's handle for that buffer; RDMA read request: the responder's handle for the source; 0 otherwise |
//! | 36..40 | immediate data | `immediate` | valid when IMMEDIATE is set; sent in every fragment, used on the last. RDMA read response (IMMEDIATE clear): the sequence number of the request it answers |
//! | 40.. | payload, `frag_len` bytes | `payload` | |
//!
//! RDMA read (op 9 request, op 10 response): the request has no payload, `msg_len` is
//! the number of bytes to read and FIRST | LAST are set; it takes the requester's next
//! sequence number. The responder answers with response fragments numbered in its own
//! sequence, laid out like an RDMA write's (`msg_len`, `frag_offset`, `frag_len`,
//! FIRST / LAST), `remote_va` and `remote_handle` 0.
//!
//! Connection management frames (connect request/accept/reject, disconnect) carry their
//! parameters (discriminator, reliability level, MTU) in the payload; header fields they do
//! not use are 0. One frame carries at most [`MAX_FRAGMENT_PAYLOAD`] = 1514 - 14 - 40 =
//! 1460 payload bytes.

use crate::endian::{set_u16_be, set_u32_be, set_u64_be, set_u8, u16_be, u32_be, u64_be, u8_at};
use crate::ethernet::MAX_PAYLOAD_LEN;
use crate::handle::MemHandle;
use crate::{require_len, Error, FieldInfo};
use bitflags::bitflags;

/// Byte ranges of the VIA wire header fields (design choice), relative to the end of the
/// Ethernet header.
pub mod field {
    use crate::Field;

    /// Version (1 byte).
    pub const VERSION: Field = 0..1;
    /// Operation (1 byte).
    pub const OP: Field = 1..2;
    /// Flags (1 byte).
    pub const FLAGS: Field = 2..3;
    /// Reserved (1 byte).
    pub const RESERVED0: Field = 3..4;
    /// Destination VI number (2 bytes).
    pub const DST_VI: Field = 4..6;
    /// Source VI number (2 bytes).
    pub const SRC_VI: Field = 6..8;
    /// Sequence number (4 bytes).
    pub const SEQ: Field = 8..12;
    /// Message total length \[bytes\] (4 bytes).
    pub const MSG_LEN: Field = 12..16;
    /// Fragment offset in the message \[bytes\] (4 bytes).
    pub const FRAG_OFFSET: Field = 16..20;
    /// Fragment payload length \[bytes\] (2 bytes).
    pub const FRAG_LEN: Field = 20..22;
    /// Reserved (2 bytes).
    pub const RESERVED1: Field = 22..24;
    /// Remote virtual address (8 bytes).
    pub const REMOTE_VA: Field = 24..32;
    /// Remote memory handle (4 bytes).
    pub const REMOTE_HANDLE: Field = 32..36;
    /// Immediate data (4 bytes).
    pub const IMMEDIATE: Field = 36..40;
}

/// Length of the VIA wire header \[bytes\] (a multiple of 4).
pub const HEADER_LEN: usize = field::IMMEDIATE.end;

/// The only header version this crate implements.
pub const VERSION: u8 = 1;

/// Most payload bytes one frame carries: 1500-byte Ethernet payload minus this header.
pub const MAX_FRAGMENT_PAYLOAD: usize = MAX_PAYLOAD_LEN - HEADER_LEN;

/// Field table of the wire header, in byte order.
pub const FIELDS: &[FieldInfo] = &[
    FieldInfo {
        name: "version",
        range: field::VERSION,
    },
    FieldInfo {
        name: "op",
        range: field::OP,
    },
    FieldInfo {
        name: "flags",
        range: field::FLAGS,
    },
    FieldInfo {
        name: "reserved0",
        range: field::RESERVED0,
    },
    FieldInfo {
        name: "dst_vi",
        range: field::DST_VI,
    },
    FieldInfo {
        name: "src_vi",
        range: field::SRC_VI,
    },
    FieldInfo {
        name: "seq",
        range: field::SEQ,
    },
    FieldInfo {
        name: "msg_len",
        range: field::MSG_LEN,
    },
    FieldInfo {
        name: "frag_offset",
        range: field::FRAG_OFFSET,
    },
    FieldInfo {
        name: "frag_len",
        range: field::FRAG_LEN,
    },
    FieldInfo {
        name: "reserved1",
        range: field::RESERVED1,
    },
    FieldInfo {
        name: "remote_va",
        range: field::REMOTE_VA,
    },
    FieldInfo {
        name: "remote_handle",
        range: field::REMOTE_HANDLE,
    },
    FieldInfo {
        name: "immediate",
        range: field::IMMEDIATE,
    },
];

const LAYOUT: &str = "VIA wire header";

/// Whether sequence number `a` comes before `b` in serial-number order (RFC 1982 style):
/// `a` is before `b` when `b` is 1 to 2^31 steps after it (wrapping), so the order
/// survives the wrap from `u32::MAX` to 0. A number is not before itself; two numbers
/// exactly 2^31 apart are each before the other (windows are far smaller).
pub const fn seq_before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// Number of frames a message of `msg_len` bytes needs: `ceil(msg_len / 1460)`, and one
/// frame for an empty message.
pub const fn fragment_count(msg_len: u32) -> u32 {
    fragment_count_of(msg_len, MAX_FRAGMENT_PAYLOAD as u32)
}

/// Number of frames a message of `msg_len` bytes needs when a frame carries at most
/// `per` payload bytes (a smaller MTU): `ceil(msg_len / per)`, one for an empty message
/// (`per` 0 is read as 1).
pub const fn fragment_count_of(msg_len: u32, per: u32) -> u32 {
    let per = if per == 0 { 1 } else { per };
    if msg_len == 0 {
        1
    } else {
        msg_len.div_ceil(per)
    }
}

/// The operation of a VIA frame. Undefined values decode to `Unknown` (0 is undefined, so
/// a zeroed buffer is never mistaken for a message).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WireOp {
    /// 1: a fragment of a send; the receiver places it through a receive descriptor.
    Send,
    /// 2: a fragment of an RDMA write; placed at `remote_va + frag_offset`.
    RdmaWrite,
    /// 3: connection request (VipConnectRequest).
    ConnectRequest,
    /// 4: connection accepted (VipConnectAccept).
    ConnectAccept,
    /// 5: connection rejected (VipConnectReject).
    ConnectReject,
    /// 6: disconnect (VipDisconnect).
    Disconnect,
    /// 7: acknowledgement of data frames up to `seq` (reliable delivery); with error bits
    /// in `immediate`, an error nak (fatal to the connection).
    Ack,
    /// 8: go-back nak: `seq` is the next data frame the receiver expects; the sender
    /// resends from there (not an error).
    Nak,
    /// 9: RDMA read request (no payload): read `msg_len` bytes at `remote_va` of the
    /// responder's region `remote_handle`. Sequenced like a data frame (reliable VIs
    /// only).
    RdmaReadRequest,
    /// 10: a fragment of an RDMA read's data, from the responder back to the requester:
    /// placed at `frag_offset` of the requester's read buffers; `immediate` names the
    /// request (its sequence number).
    RdmaReadResponse,
    /// Any other value (raw byte).
    Unknown(u8),
}

impl WireOp {
    /// Decodes the op byte.
    pub const fn from_raw(raw: u8) -> WireOp {
        match raw {
            1 => WireOp::Send,
            2 => WireOp::RdmaWrite,
            3 => WireOp::ConnectRequest,
            4 => WireOp::ConnectAccept,
            5 => WireOp::ConnectReject,
            6 => WireOp::Disconnect,
            7 => WireOp::Ack,
            8 => WireOp::Nak,
            9 => WireOp::RdmaReadRequest,
            10 => WireOp::RdmaReadResponse,
            other => WireOp::Unknown(other),
        }
    }

    /// The op byte.
    pub const fn raw(self) -> u8 {
        match self {
            WireOp::Send => 1,
            WireOp::RdmaWrite => 2,
            WireOp::ConnectRequest => 3,
            WireOp::ConnectAccept => 4,
            WireOp::ConnectReject => 5,
            WireOp::Disconnect => 6,
            WireOp::Ack => 7,
            WireOp::Nak => 8,
            WireOp::RdmaReadRequest => 9,
            WireOp::RdmaReadResponse => 10,
            WireOp::Unknown(raw) => raw,
        }
    }

    /// Whether the frame carries message data (send, RDMA write or RDMA read response
    /// fragments).
    pub const fn carries_data(self) -> bool {
        matches!(
            self,
            WireOp::Send | WireOp::RdmaWrite | WireOp::RdmaReadResponse
        )
    }

    /// Whether the frame takes a sequence number of its connection (data fragments and
    /// RDMA read requests): reliable VIs acknowledge and retransmit these.
    pub const fn is_sequenced(self) -> bool {
        self.carries_data() || matches!(self, WireOp::RdmaReadRequest)
    }
}

bitflags! {
    /// Flags of a VIA frame (design choice). Unknown bits are kept.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct WireFlags: u8 {
        /// First fragment of its message (`frag_offset == 0`).
        const FIRST = 0x01;
        /// Last fragment of its message (`frag_offset + frag_len == msg_len`).
        const LAST = 0x02;
        /// The `immediate` field is valid.
        const IMMEDIATE = 0x04;
        /// The sender asks the receiver to acknowledge this data frame (reliable VIs).
        const ACK_REQ = 0x08;
    }
}

/// A view of a VIA frame (header + payload, starting after the Ethernet header).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireHeader<T: AsRef<[u8]>> {
    buffer: T,
}

view_basics!(WireHeader);

impl<T: AsRef<[u8]>> WireHeader<T> {
    /// Returns [`Error::Truncated`] unless the buffer holds the 40-byte header and the
    /// `frag_len` payload bytes it announces (trailing padding is allowed).
    pub fn check_len(&self) -> Result<(), Error> {
        let got = self.buffer.as_ref().len();
        require_len(LAYOUT, HEADER_LEN, got)?;
        require_len(LAYOUT, self.payload_end(), got)
    }

    /// End of the payload, `HEADER_LEN + frag_len` \[bytes\].
    fn payload_end(&self) -> usize {
        HEADER_LEN + usize::from(self.frag_len())
    }

    /// Header version.
    pub fn version(&self) -> u8 {
        u8_at(self.buffer.as_ref(), field::VERSION)
    }

    /// Operation.
    pub fn op(&self) -> WireOp {
        WireOp::from_raw(u8_at(self.buffer.as_ref(), field::OP))
    }

    /// Flags (unknown bits kept).
    pub fn flags(&self) -> WireFlags {
        WireFlags::from_bits_retain(u8_at(self.buffer.as_ref(), field::FLAGS))
    }

    /// Destination VI number.
    pub fn dst_vi(&self) -> u16 {
        u16_be(self.buffer.as_ref(), field::DST_VI)
    }

    /// Source VI number.
    pub fn src_vi(&self) -> u16 {
        u16_be(self.buffer.as_ref(), field::SRC_VI)
    }

    /// Sequence number.
    pub fn seq(&self) -> u32 {
        u32_be(self.buffer.as_ref(), field::SEQ)
    }

    /// Message total length \[bytes\].
    pub fn msg_len(&self) -> u32 {
        u32_be(self.buffer.as_ref(), field::MSG_LEN)
    }

    /// Fragment offset in the message \[bytes\].
    pub fn frag_offset(&self) -> u32 {
        u32_be(self.buffer.as_ref(), field::FRAG_OFFSET)
    }

    /// Fragment payload length \[bytes\].
    pub fn frag_len(&self) -> u16 {
        u16_be(self.buffer.as_ref(), field::FRAG_LEN)
    }

    /// Remote virtual address.
    pub fn remote_va(&self) -> u64 {
        u64_be(self.buffer.as_ref(), field::REMOTE_VA)
    }

    /// Remote memory handle.
    pub fn remote_handle(&self) -> MemHandle {
        MemHandle(u32_be(self.buffer.as_ref(), field::REMOTE_HANDLE))
    }

    /// Immediate data.
    pub fn immediate(&self) -> u32 {
        u32_be(self.buffer.as_ref(), field::IMMEDIATE)
    }

    /// The `frag_len` payload bytes after the header (empty if they are not all present).
    pub fn payload(&self) -> &[u8] {
        let end = self.payload_end();
        self.buffer
            .as_ref()
            .get(HEADER_LEN..end)
            .unwrap_or_default()
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> WireHeader<T> {
    /// Sets the version.
    pub fn set_version(&mut self, v: u8) {
        set_u8(self.buffer.as_mut(), field::VERSION, v);
    }

    /// Sets the operation.
    pub fn set_op(&mut self, v: WireOp) {
        set_u8(self.buffer.as_mut(), field::OP, v.raw());
    }

    /// Sets the flags.
    pub fn set_flags(&mut self, v: WireFlags) {
        set_u8(self.buffer.as_mut(), field::FLAGS, v.bits());
    }

    /// Clears both reserved fields.
    pub fn clear_reserved(&mut self) {
        set_u8(self.buffer.as_mut(), field::RESERVED0, 0);
        set_u16_be(self.buffer.as_mut(), field::RESERVED1, 0);
    }

    /// Sets the destination VI number.
    pub fn set_dst_vi(&mut self, v: u16) {
        set_u16_be(self.buffer.as_mut(), field::DST_VI, v);
    }

    /// Sets the source VI number.
    pub fn set_src_vi(&mut self, v: u16) {
        set_u16_be(self.buffer.as_mut(), field::SRC_VI, v);
    }

    /// Sets the sequence number.
    pub fn set_seq(&mut self, v: u32) {
        set_u32_be(self.buffer.as_mut(), field::SEQ, v);
    }

    /// Sets the message total length \[bytes\].
    pub fn set_msg_len(&mut self, v: u32) {
        set_u32_be(self.buffer.as_mut(), field::MSG_LEN, v);
    }

    /// Sets the fragment offset \[bytes\].
    pub fn set_frag_offset(&mut self, v: u32) {
        set_u32_be(self.buffer.as_mut(), field::FRAG_OFFSET, v);
    }

    /// Sets the fragment payload length \[bytes\].
    pub fn set_frag_len(&mut self, v: u16) {
        set_u16_be(self.buffer.as_mut(), field::FRAG_LEN, v);
    }

    /// Sets the remote virtual address.
    pub fn set_remote_va(&mut self, v: u64) {
        set_u64_be(self.buffer.as_mut(), field::REMOTE_VA, v);
    }

    /// Sets the remote memory handle.
    pub fn set_remote_handle(&mut self, v: MemHandle) {
        set_u32_be(self.buffer.as_mut(), field::REMOTE_HANDLE, v.raw());
    }

    /// Sets the immediate data.
    pub fn set_immediate(&mut self, v: u32) {
        set_u32_be(self.buffer.as_mut(), field::IMMEDIATE, v);
    }

    /// The payload bytes after the header, writable (up to `frag_len`; empty if absent).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = self.payload_end();
        self.buffer
            .as_mut()
            .get_mut(HEADER_LEN..end)
            .unwrap_or_default()
    }
}

/// A VIA wire header as plain values (the version is implied: always [`VERSION`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WireHeaderRepr {
    /// Operation.
    pub op: WireOp,
    /// Flags.
    pub flags: WireFlags,
    /// Destination VI number.
    pub dst_vi: u16,
    /// Source VI number.
    pub src_vi: u16,
    /// Sequence number.
    pub seq: u32,
    /// Message total length \[bytes\].
    pub msg_len: u32,
    /// Fragment offset in the message \[bytes\].
    pub frag_offset: u32,
    /// Fragment payload length \[bytes\].
    pub frag_len: u16,
    /// Remote virtual address (RDMA write).
    pub remote_va: u64,
    /// Remote memory handle (RDMA write).
    pub remote_handle: MemHandle,
    /// Immediate data (valid with [`WireFlags::IMMEDIATE`]).
    pub immediate: u32,
}

impl WireHeaderRepr {
    /// Reads the header. Fails with [`Error::Truncated`] if the header or the payload it
    /// announces is missing, and with [`Error::Unsupported`] if the version is not 1.
    /// Reserved fields are ignored.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(h: &WireHeader<&T>) -> Result<Self, Error> {
        h.check_len()?;
        if h.version() != VERSION {
            return Err(Error::Unsupported {
                layout: LAYOUT,
                field: "version",
                value: u64::from(h.version()),
            });
        }
        Ok(WireHeaderRepr {
            op: h.op(),
            flags: h.flags(),
            dst_vi: h.dst_vi(),
            src_vi: h.src_vi(),
            seq: h.seq(),
            msg_len: h.msg_len(),
            frag_offset: h.frag_offset(),
            frag_len: h.frag_len(),
            remote_va: h.remote_va(),
            remote_handle: h.remote_handle(),
            immediate: h.immediate(),
        })
    }

    /// Bytes of header [`WireHeaderRepr::emit`] writes (the payload follows, `frag_len`
    /// bytes, written by the caller).
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Bytes of header plus payload \[bytes\].
    pub const fn frame_len(&self) -> usize {
        HEADER_LEN + self.frag_len as usize
    }

    /// Writes the header, version 1 and zeroed reserved fields (the payload is left alone).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, h: &mut WireHeader<T>) {
        h.set_version(VERSION);
        h.set_op(self.op);
        h.set_flags(self.flags);
        h.clear_reserved();
        h.set_dst_vi(self.dst_vi);
        h.set_src_vi(self.src_vi);
        h.set_seq(self.seq);
        h.set_msg_len(self.msg_len);
        h.set_frag_offset(self.frag_offset);
        h.set_frag_len(self.frag_len);
        h.set_remote_va(self.remote_va);
        h.set_remote_handle(self.remote_handle);
        h.set_immediate(self.immediate);
    }

    /// Checks a data fragment (send or RDMA write; other ops always pass) against its
    /// message: payload at most 1460 bytes, inside the message, FIRST set exactly when
    /// `frag_offset == 0`, LAST set exactly when the fragment ends the message.
    pub fn check_fragment(&self) -> Result<(), Error> {
        if !self.op.carries_data() {
            return Ok(());
        }
        let malformed = |reason| {
            Err(Error::Malformed {
                layout: LAYOUT,
                reason,
            })
        };
        if usize::from(self.frag_len) > MAX_FRAGMENT_PAYLOAD {
            return malformed("fragment payload longer than 1460 bytes");
        }
        let end = u64::from(self.frag_offset) + u64::from(self.frag_len);
        if end > u64::from(self.msg_len) {
            return malformed("fragment runs past the end of its message");
        }
        if self.flags.contains(WireFlags::FIRST) != (self.frag_offset == 0) {
            return malformed("FIRST flag disagrees with the fragment offset");
        }
        if self.flags.contains(WireFlags::LAST) != (end == u64::from(self.msg_len)) {
            return malformed("LAST flag disagrees with the fragment end");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The second and last fragment of a 2 000-byte RDMA write with immediate data,
    /// written by hand from the table (network byte order), with 540 payload bytes.
    const HEADER: [u8; 40] = [
        0x01, // version
        0x02, // op RDMA write
        0x06, // flags LAST | IMMEDIATE
        0x00, // reserved
        0x00, 0x05, // dst VI 5
        0x00, 0x09, // src VI 9
        0x00, 0x00, 0x01, 0x02, // seq 258
        0x00, 0x00, 0x07, 0xD0, // msg len 2000
        0x00, 0x00, 0x05, 0xB4, // frag offset 1460
        0x02, 0x1C, // frag len 540
        0x00, 0x00, // reserved
        0x00, 0x00, 0x00, 0x00, 0xBF, 0x00, 0x30, 0x00, // remote VA 0xBF00_3000
        0x00, 0x20, 0x00, 0x03, // remote handle 0x0020_0003
        0x12, 0x34, 0x56, 0x78, // immediate
    ];

    fn repr() -> WireHeaderRepr {
        WireHeaderRepr {
            op: WireOp::RdmaWrite,
            flags: WireFlags::LAST | WireFlags::IMMEDIATE,
            dst_vi: 5,
            src_vi: 9,
            seq: 258,
            msg_len: 2000,
            frag_offset: 1460,
            frag_len: 540,
            remote_va: 0xBF00_3000,
            remote_handle: MemHandle(0x0020_0003),
            immediate: 0x1234_5678,
        }
    }

    fn frame() -> Vec<u8> {
        let mut f = HEADER.to_vec();
        f.extend((0..540).map(|i| i as u8));
        f
    }

    #[test]
    fn field_table_covers_40_bytes() {
        crate::assert_field_table(FIELDS, 40);
        assert_eq!(HEADER_LEN % 4, 0);
        assert_eq!(MAX_FRAGMENT_PAYLOAD, 1460);
    }

    #[test]
    fn both_ways() {
        let f = frame();
        let view = WireHeader::new_checked(&f[..]).expect("complete");
        assert_eq!(WireHeaderRepr::parse(&view), Ok(repr()));
        assert_eq!(view.payload().len(), 540);
        assert_eq!(view.payload()[539], (539 % 256) as u8);
        assert_eq!(repr().check_fragment(), Ok(()));
        let mut out = vec![0xFFu8; repr().frame_len()];
        repr().emit(&mut WireHeader::new_unchecked(&mut out[..]));
        assert_eq!(out[..40], HEADER);
    }

    #[test]
    fn truncation_and_version() {
        let f = frame();
        assert!(matches!(
            WireHeader::new_checked(&f[..39]),
            Err(Error::Truncated {
                need: 40,
                got: 39,
                ..
            })
        ));
        assert!(matches!(
            WireHeader::new_checked(&f[..579]),
            Err(Error::Truncated {
                need: 580,
                got: 579,
                ..
            })
        ));
        let mut padded = f.clone();
        padded.extend([0; 6]);
        assert!(
            WireHeader::new_checked(&padded[..]).is_ok(),
            "padding allowed"
        );
        let mut v2 = f;
        v2[0] = 2;
        assert_eq!(
            WireHeaderRepr::parse(&WireHeader::new_unchecked(&v2[..])),
            Err(Error::Unsupported {
                layout: LAYOUT,
                field: "version",
                value: 2
            })
        );
    }

    #[test]
    fn unknown_op_and_flags_are_values() {
        let mut f = frame();
        f[1] = 0;
        f[2] = 0x86;
        let r = WireHeaderRepr::parse(&WireHeader::new_unchecked(&f[..])).expect("parse");
        assert_eq!(r.op, WireOp::Unknown(0));
        assert_eq!(r.flags.bits(), 0x86);
        assert_eq!(r.check_fragment(), Ok(()), "not a data op");
    }

    #[test]
    fn fragment_checks() {
        let mut r = repr();
        r.flags = WireFlags::IMMEDIATE;
        assert!(matches!(r.check_fragment(), Err(Error::Malformed { .. })));
        let mut r = repr();
        r.flags |= WireFlags::FIRST;
        assert!(r.check_fragment().is_err());
        let mut r = repr();
        r.msg_len = 1999;
        assert!(r.check_fragment().is_err());
        let mut r = repr();
        r.frag_offset = 0;
        r.frag_len = 1461;
        r.msg_len = 1461;
        r.flags = WireFlags::FIRST | WireFlags::LAST;
        assert!(r.check_fragment().is_err());
        r.frag_len = 1460;
        r.msg_len = 1460;
        assert_eq!(r.check_fragment(), Ok(()));
    }

    #[test]
    fn fragment_counts() {
        assert_eq!(fragment_count(0), 1);
        assert_eq!(fragment_count(4), 1);
        assert_eq!(fragment_count(1460), 1);
        assert_eq!(fragment_count(1461), 2);
        assert_eq!(fragment_count(u32::MAX), u32::MAX.div_ceil(1460));
    }

    #[test]
    fn serial_order_survives_the_wrap() {
        assert!(seq_before(0, 1));
        assert!(!seq_before(1, 0));
        assert!(!seq_before(5, 5), "a number is not before itself");
        assert!(seq_before(u32::MAX, 0), "wrap: MAX comes just before 0");
        assert!(!seq_before(0, u32::MAX));
        assert!(seq_before(u32::MAX - 3, 2));
        assert!(seq_before(0, 0x7FFF_FFFF));
        assert!(
            !seq_before(0, 0x8000_0001),
            "more than half the space away: after"
        );
    }

    #[test]
    fn nak_and_ack_req_on_the_wire() {
        assert_eq!(WireOp::from_raw(8), WireOp::Nak);
        assert_eq!(WireOp::Nak.raw(), 8);
        assert!(!WireOp::Nak.carries_data());
        assert_eq!(WireOp::from_raw(11), WireOp::Unknown(11));
        let mut r = repr();
        r.flags |= WireFlags::ACK_REQ;
        let mut f = frame();
        r.emit(&mut WireHeader::new_unchecked(&mut f[..]));
        assert_eq!(f[2], 0x0E, "LAST | IMMEDIATE | ACK_REQ");
        let back = WireHeaderRepr::parse(&WireHeader::new_unchecked(&f[..])).expect("parse");
        assert_eq!(back, r);
        assert!(back.flags.contains(WireFlags::ACK_REQ));
        assert_eq!(
            back.check_fragment(),
            Ok(()),
            "ACK_REQ is not a fragment field"
        );
        let nak = WireHeaderRepr {
            op: WireOp::Nak,
            flags: WireFlags::empty(),
            dst_vi: 5,
            src_vi: 9,
            seq: 41,
            msg_len: 0,
            frag_offset: 0,
            frag_len: 0,
            remote_va: 0,
            remote_handle: MemHandle::NULL,
            immediate: 0,
        };
        let mut buf = [0u8; HEADER_LEN];
        nak.emit(&mut WireHeader::new_unchecked(&mut buf[..]));
        assert_eq!(buf[1], 8);
        assert_eq!(&buf[8..12], &[0, 0, 0, 41]);
        assert_eq!(
            WireHeaderRepr::parse(&WireHeader::new_unchecked(&buf[..])),
            Ok(nak)
        );
    }

    #[test]
    fn rdma_read_ops_on_the_wire() {
        assert_eq!(WireOp::from_raw(9), WireOp::RdmaReadRequest);
        assert_eq!(WireOp::from_raw(10), WireOp::RdmaReadResponse);
        assert_eq!(WireOp::RdmaReadRequest.raw(), 9);
        assert_eq!(WireOp::RdmaReadResponse.raw(), 10);
        assert!(!WireOp::RdmaReadRequest.carries_data() && WireOp::RdmaReadRequest.is_sequenced());
        assert!(WireOp::RdmaReadResponse.carries_data() && WireOp::RdmaReadResponse.is_sequenced());
        assert!(!WireOp::Ack.is_sequenced());
        // A request for 5000 bytes: no payload, so its fragment fields need not add up.
        let req = WireHeaderRepr {
            op: WireOp::RdmaReadRequest,
            flags: WireFlags::FIRST | WireFlags::LAST,
            dst_vi: 5,
            src_vi: 9,
            seq: 3,
            msg_len: 5000,
            frag_offset: 0,
            frag_len: 0,
            remote_va: 0xBF00_3000,
            remote_handle: MemHandle(0x0020_0003),
            immediate: 0,
        };
        let mut buf = [0u8; HEADER_LEN];
        req.emit(&mut WireHeader::new_unchecked(&mut buf[..]));
        assert_eq!(buf[1], 9);
        assert_eq!(&buf[12..16], &[0, 0, 0x13, 0x88], "msg_len 5000");
        assert_eq!(req.check_fragment(), Ok(()));
        // A response fragment is checked like an RDMA write's.
        let mut resp = repr();
        resp.op = WireOp::RdmaReadResponse;
        resp.flags = WireFlags::LAST;
        assert_eq!(resp.check_fragment(), Ok(()));
        resp.msg_len = 1999;
        assert!(resp.check_fragment().is_err());
    }

    proptest! {
        #[test]
        fn serial_order_is_antisymmetric(a in any::<u32>(), d in 1u32..0x8000_0000) {
            let b = a.wrapping_add(d);
            prop_assert!(seq_before(a, b));
            prop_assert!(!seq_before(b, a));
        }

        #[test]
        fn round_trip(op in any::<u8>(), flags in any::<u8>(), dst in any::<u16>(),
                      src in any::<u16>(), seq in any::<u32>(), msg in any::<u32>(),
                      off in any::<u32>(), flen in 0u16..2048, va in any::<u64>(),
                      h in any::<u32>(), imm in any::<u32>()) {
            let r = WireHeaderRepr {
                op: WireOp::from_raw(op), flags: WireFlags::from_bits_retain(flags),
                dst_vi: dst, src_vi: src, seq, msg_len: msg, frag_offset: off, frag_len: flen,
                remote_va: va, remote_handle: MemHandle(h), immediate: imm,
            };
            let mut buf = vec![0xA5u8; r.frame_len()];
            r.emit(&mut WireHeader::new_unchecked(&mut buf[..]));
            prop_assert_eq!(WireHeaderRepr::parse(&WireHeader::new_unchecked(&buf[..])), Ok(r));
            prop_assert_eq!(WireOp::from_raw(op).raw(), op);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..120)) {
            let view = WireHeader::new_unchecked(&bytes[..]);
            if let Ok(r) = WireHeaderRepr::parse(&view) {
                let _ = r.check_fragment();
                prop_assert_eq!(view.payload().len(), usize::from(r.frag_len));
            }
        }

        #[test]
        fn fragmenting_a_message_passes_checks(msg_len in 0u32..20_000) {
            let n = fragment_count(msg_len);
            let per = MAX_FRAGMENT_PAYLOAD as u32;
            for i in 0..n {
                let off = i * per;
                let len = (msg_len - off).min(per) as u16;
                let mut flags = WireFlags::empty();
                flags.set(WireFlags::FIRST, i == 0);
                flags.set(WireFlags::LAST, i + 1 == n);
                let r = WireHeaderRepr { op: WireOp::Send, flags, dst_vi: 1, src_vi: 2,
                    seq: i, msg_len, frag_offset: off, frag_len: len, remote_va: 0,
                    remote_handle: MemHandle::NULL, immediate: 0 };
                prop_assert_eq!(r.check_fragment(), Ok(()));
            }
        }
    }
}
