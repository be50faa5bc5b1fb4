//! The frames the engine builds and parses: Ethernet II header + VIA wire header
//! ([`via_abi::wire_header`], 40 bytes) + payload, 1514 bytes at most, no FCS.
//!
//! Data frames (send and RDMA-write fragments) carry up to
//! [`MAX_FRAGMENT_PAYLOAD`] = 1460 payload bytes. Control frames (design choice) carry
//! their parameters in the payload, network byte order:
//!
//! | op | header fields used | payload |
//! |---|---|---|
//! | `ConnectRequest` | `src_vi` (requester) | discriminator (4), reliability (1), 0 (1), MTU (2) |
//! | `ConnectAccept` | `dst_vi` (requester), `src_vi` (acceptor) | discriminator (4), reliability (1), 0 (1), MTU (2) |
//! | `ConnectReject` | `dst_vi` (requester) | discriminator (4), reason (1: no listener room, 2: reliability mismatch, 3: rejected by the host), 0 (1), MTU (2) |
//! | `Disconnect` | `dst_vi`, `src_vi` | none |
//! | `Ack` | `dst_vi`, `src_vi`, `seq` (last fragment of the message acknowledged, or the fragment that failed), `immediate` (VIA status error bits: 0 = positive ack, else a Nak), `msg_len` | none |
//!
//!
//! RDMA read frames (engines with `EngineParams::rdma_read`; sequenced like data frames):
//!
//! | op | header fields used | payload |
//! |---|---|---|
//! | `RdmaReadRequest` (9) | `dst_vi`, `src_vi`, `seq` (the requester's next), FIRST \| LAST, `msg_len` (bytes to read), `frag_offset` 0, `frag_len` 0, `remote_va` and `remote_handle` (the source, in the responder's memory) | none |
//! | `RdmaReadResponse` (10) | `dst_vi`, `src_vi`, `seq` (the responder's next), FIRST / LAST, `msg_len`, `frag_offset`, `frag_len` as a data fragment, `immediate` (the request's `seq`, IMMEDIATE clear) | up to 1460 bytes of the source |
//!
//! Every control frame has FIRST and LAST set and `msg_len = frag_len`. A fragment whose
//! payload DMA failed still occupies its TX slot (slots go to the GEC in ring order, see
//! `txdata`): it is sent with op byte 0 (undefined), which every receiver drops.

use via_abi::ethernet::{self, EtherType, EthernetFrame, EthernetRepr, MacAddr, ETHERTYPE_VIA};
use via_abi::wire_header::{self, WireFlags, WireHeader, WireHeaderRepr, WireOp};
use via_abi::MemHandle;

pub use via_abi::wire_header::MAX_FRAGMENT_PAYLOAD;

/// Ethernet + VIA header bytes in front of the payload.
pub const HEADERS_LEN: usize = ethernet::HEADER_LEN + wire_header::HEADER_LEN;

/// Offset of the VIA op byte in a frame.
pub const OP_OFFSET: usize = ethernet::HEADER_LEN + wire_header::field::OP.start;

/// The MTU the engine announces in connect frames (frame without FCS) \[bytes\].
pub const MTU: u16 = 1514;

/// Connect-reject reasons (payload byte 4 of a `ConnectReject`).
pub mod reject {
    /// The peer keeps no more unmatched connect requests.
    pub const NO_ROOM: u8 = 1;
    /// The listener's reliability level differs.
    pub const RELIABILITY: u8 = 2;
    /// The host rejected it (`VipConnectReject`).
    pub const HOST: u8 = 3;
}

/// The 54 header bytes of a frame from `src` to `dst`.
pub fn headers(src: MacAddr, dst: MacAddr, h: &WireHeaderRepr) -> Vec<u8> {
    let mut buf = Vec::new();
    headers_into(&mut buf, src, dst, h);
    buf
}

/// [`headers`] into `buf` (emptied first; its memory reused).
pub fn headers_into(buf: &mut Vec<u8>, src: MacAddr, dst: MacAddr, h: &WireHeaderRepr) {
    buf.clear();
    buf.resize(HEADERS_LEN, 0);
    EthernetRepr {
        dst,
        src,
        ethertype: EtherType::from_raw(ETHERTYPE_VIA),
    }
    .emit(&mut EthernetFrame::new_unchecked(&mut buf[..]));
    h.emit(&mut WireHeader::new_unchecked(
        &mut buf[ethernet::HEADER_LEN..],
    ));
}

/// A control header (FIRST | LAST, `msg_len = frag_len = payload_len`).
pub fn control(op: WireOp, dst_vi: u16, src_vi: u16, payload_len: u16) -> WireHeaderRepr {
    WireHeaderRepr {
        op,
        flags: WireFlags::FIRST | WireFlags::LAST,
        dst_vi,
        src_vi,
        seq: 0,
        msg_len: u32::from(payload_len),
        frag_offset: 0,
        frag_len: payload_len,
        remote_va: 0,
        remote_handle: MemHandle::NULL,
        immediate: 0,
    }
}

/// The payload of a connect request / accept / reject.
pub fn connect_payload(discriminator: u32, byte: u8) -> Vec<u8> {
    let mut p = Vec::with_capacity(8);
    p.extend_from_slice(&discriminator.to_be_bytes());
    p.push(byte);
    p.push(0);
    p.extend_from_slice(&MTU.to_be_bytes());
    p
}

/// Discriminator and parameter byte of a connect payload, if it is long enough.
pub fn parse_connect(payload: &[u8]) -> Option<(u32, u8)> {
    let d = payload.get(0..4)?;
    let b = *payload.get(4)?;
    Some((u32::from_be_bytes([d[0], d[1], d[2], d[3]]), b))
}

/// A received frame, taken apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    /// The Ethernet header.
    pub eth: EthernetRepr,
    /// The VIA header.
    pub hdr: WireHeaderRepr,
    /// The payload (`frag_len` bytes).
    pub payload_offset: usize,
}

/// Why a received frame was dropped before reaching a VI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxDrop {
    /// Not addressed to this card.
    NotForUs,
    /// Another EtherType.
    EtherType,
    /// Short, another version, or fragment fields inconsistent.
    Malformed,
}

/// Parses `frame` (bytes as in the RX buffer) for the card with address `me`.
///
/// # Errors
/// Why it is dropped.
pub fn parse(frame: &[u8], me: MacAddr) -> Result<Parsed, RxDrop> {
    let eth =
        EthernetRepr::parse(&EthernetFrame::new_unchecked(frame)).map_err(|_| RxDrop::Malformed)?;
    if eth.dst != me {
        return Err(RxDrop::NotForUs);
    }
    if eth.ethertype.raw() != ETHERTYPE_VIA {
        return Err(RxDrop::EtherType);
    }
    let rest = frame.get(ethernet::HEADER_LEN..).unwrap_or_default();
    let hdr =
        WireHeaderRepr::parse(&WireHeader::new_unchecked(rest)).map_err(|_| RxDrop::Malformed)?;
    hdr.check_fragment().map_err(|_| RxDrop::Malformed)?;
    Ok(Parsed {
        eth,
        hdr,
        payload_offset: HEADERS_LEN,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip() {
        let a = MacAddr([2, 0, 0, 0, 0, 1]);
        let b = MacAddr([2, 0, 0, 0, 0, 2]);
        let h = control(WireOp::ConnectRequest, 0, 7, 8);
        let mut f = headers(a, b, &h);
        f.extend(connect_payload(0xDEAD_BEEF, 1));
        let p = parse(&f, b).expect("valid");
        assert_eq!(p.hdr, h);
        assert_eq!(p.eth.src, a);
        assert_eq!(
            parse_connect(&f[p.payload_offset..]),
            Some((0xDEAD_BEEF, 1))
        );
        assert_eq!(parse(&f, a), Err(RxDrop::NotForUs));
        assert_eq!(parse(&f[..40], b), Err(RxDrop::Malformed));
        f[12] = 0x08;
        assert_eq!(parse(&f, b), Err(RxDrop::EtherType));
        assert_eq!(f[OP_OFFSET], WireOp::ConnectRequest.raw());
        assert_eq!(parse(&[], b), Err(RxDrop::Malformed));
    }
}
