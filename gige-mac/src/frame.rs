//! Real Ethernet frames: building them (pad to the 60-byte minimum, append the FCS),
//! checking them (length limits, FCS), and [`Frame`], a frame in flight with its ids.
//!
//! The FCS is the CRC-32 of IEEE 802.3 clause 3.2.9 over destination address through pad:
//! generator 0x04C11DB7, register preset to all ones, result complemented. Clause 3.2.9
//! transmits the complemented remainder with x^31 first and each octet least significant
//! bit first; in the bit-reflected form that `crc32fast` computes (polynomial 0xEDB88320)
//! this is the 32-bit value written **little-endian** after the last data byte. A receiver
//! recomputing the CRC over the frame and its FCS gets the constant residue 0x2144DF1C
//! (reflected, after the final complement).
//!
//! Byte layout as it leaves the MAC after the SFD (IEEE 802.3 clause 3.1.1):
//!
//! | bytes | field |
//! |---|---|
//! | 0..6 | destination address |
//! | 6..12 | source address |
//! | 12..14 | EtherType |
//! | 14..len-4 | payload, padded with zeros to make the frame at least 60 bytes |
//! | len-4..len | FCS, CRC-32, little-endian |

use sim_kernel::MsgId;
use std::sync::Arc;
use via_abi::ethernet::{
    field, EtherType, EthernetFrame, EthernetRepr, MacAddr, FCS_LEN, HEADER_LEN, MAX_FRAME_LEN,
    MIN_FRAME_LEN, MIN_FRAME_LEN_NO_FCS,
};

/// Smallest and largest frame, FCS included, a port accepts \[bytes\].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameLimits {
    /// Shorter frames are runts (IEEE 802.3 clause 4.2.4.2.2: minFrameSize 64 bytes).
    pub min_len: usize,
    /// Longer frames are too long (1518 for an untagged frame, clause 3.2.7).
    pub max_len: usize,
}

impl FrameLimits {
    /// IEEE 802.3 untagged frames: 64..=1518 bytes with FCS.
    pub const IEEE: FrameLimits = FrameLimits {
        min_len: MIN_FRAME_LEN,
        max_len: MAX_FRAME_LEN,
    };

    /// The limits of a segment with these wire parameters (minimum 64, maximum MTU + 4).
    #[must_use]
    pub const fn from_wire(wire: &crate::params::WireParams) -> Self {
        Self {
            min_len: MIN_FRAME_LEN,
            max_len: wire.max_frame_len(),
        }
    }
}

impl Default for FrameLimits {
    fn default() -> Self {
        Self::IEEE
    }
}

/// Why a frame could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// Header + payload (+ pad) + FCS would exceed the maximum frame length.
    #[error("frame of {len} bytes with FCS exceeds the maximum of {max} bytes")]
    TooLong {
        /// Length the frame would have, FCS included \[bytes\].
        len: usize,
        /// The limit \[bytes\].
        max: usize,
    },
    /// The bytes given to [`finish`] do not hold a whole 14-byte Ethernet header.
    #[error("{len} bytes cannot hold the 14-byte Ethernet header")]
    NoHeader {
        /// Bytes given.
        len: usize,
    },
}

/// Why a received frame is not good.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FcsError {
    /// Shorter than the minimum frame (a runt or collision fragment).
    #[error("runt: {len} bytes, minimum {min}")]
    Runt {
        /// Length received, FCS included \[bytes\].
        len: usize,
        /// The minimum \[bytes\].
        min: usize,
    },
    /// Longer than the maximum frame.
    #[error("frame too long: {len} bytes, maximum {max}")]
    TooLong {
        /// Length received, FCS included \[bytes\].
        len: usize,
        /// The maximum \[bytes\].
        max: usize,
    },
    /// The FCS does not match the frame's contents.
    #[error("FCS mismatch: computed {computed:#010x}, received {received:#010x}")]
    Mismatch {
        /// CRC-32 computed over destination address through pad.
        computed: u32,
        /// The FCS field as received (read little-endian).
        received: u32,
    },
}

/// The CRC-32 of IEEE 802.3 clause 3.2.9 over `bytes` (reflected; write it little-endian).
#[must_use]
pub fn fcs(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

/// Builds a frame of at most 1518 bytes: header, payload, zero pad to 60 bytes, FCS.
///
/// # Errors
/// [`FrameError::TooLong`] if the payload exceeds 1500 bytes.
pub fn build(
    dst: MacAddr,
    src: MacAddr,
    ethertype: EtherType,
    payload: &[u8],
) -> Result<Vec<u8>, FrameError> {
    build_with(FrameLimits::IEEE, dst, src, ethertype, payload)
}

/// [`build`] with other length limits (e.g. a larger MTU).
///
/// # Errors
/// [`FrameError::TooLong`] if the frame would exceed `limits.max_len`.
pub fn build_with(
    limits: FrameLimits,
    dst: MacAddr,
    src: MacAddr,
    ethertype: EtherType,
    payload: &[u8],
) -> Result<Vec<u8>, FrameError> {
    let mut bytes = vec![0u8; HEADER_LEN];
    EthernetRepr {
        dst,
        src,
        ethertype,
    }
    .emit(&mut EthernetFrame::new_unchecked(&mut bytes[..]));
    bytes.extend_from_slice(payload);
    finish(bytes, limits)
}

/// Completes a frame given header through payload: pads it with zeros to 60 bytes and
/// appends the FCS (what a MAC does with "auto-pad" and "append CRC" enabled).
///
/// # Errors
/// [`FrameError::NoHeader`] for fewer than 14 bytes, [`FrameError::TooLong`] if the result
/// would exceed `limits.max_len`.
pub fn finish(mut bytes: Vec<u8>, limits: FrameLimits) -> Result<Vec<u8>, FrameError> {
    if bytes.len() < HEADER_LEN {
        return Err(FrameError::NoHeader { len: bytes.len() });
    }
    let len = bytes
        .len()
        .max(MIN_FRAME_LEN_NO_FCS)
        .saturating_add(FCS_LEN);
    if len > limits.max_len {
        return Err(FrameError::TooLong {
            len,
            max: limits.max_len,
        });
    }
    if bytes.len() < MIN_FRAME_LEN_NO_FCS {
        bytes.resize(MIN_FRAME_LEN_NO_FCS, 0);
    }
    let crc = fcs(&bytes);
    bytes.extend_from_slice(&crc.to_le_bytes());
    Ok(bytes)
}

/// Checks a received frame (FCS included) against the IEEE limits and its FCS; returns a
/// view of the frame without its FCS (header, payload, pad).
///
/// # Errors
/// [`FcsError::Runt`], [`FcsError::TooLong`], [`FcsError::Mismatch`].
pub fn check_fcs(frame: &[u8]) -> Result<EthernetFrame<&[u8]>, FcsError> {
    check_fcs_with(FrameLimits::IEEE, frame)
}

/// [`check_fcs`] with other length limits.
///
/// # Errors
/// As [`check_fcs`].
pub fn check_fcs_with(limits: FrameLimits, frame: &[u8]) -> Result<EthernetFrame<&[u8]>, FcsError> {
    let len = frame.len();
    check_len(limits, len)?;
    let (body, fcs_bytes) = frame.split_at(len - FCS_LEN);
    let mut raw = [0u8; FCS_LEN];
    raw.copy_from_slice(fcs_bytes);
    let received = u32::from_le_bytes(raw);
    let computed = fcs(body);
    if computed != received {
        return Err(FcsError::Mismatch { computed, received });
    }
    Ok(EthernetFrame::new_unchecked(body))
}

/// [`check_fcs_with`] of a frame in flight: the same verdict, without computing the CRC
/// again for a frame made by `Frame::with_fcs` (its FCS is the CRC of its bytes by
/// construction, and the bytes cannot change since).
///
/// # Errors
/// As [`check_fcs`].
pub fn check_frame_with(limits: FrameLimits, frame: &Frame) -> Result<(), FcsError> {
    if frame.fcs_known_good {
        return check_len(limits, frame.len());
    }
    check_fcs_with(limits, frame.bytes()).map(|_| ())
}

/// The length checks of [`check_fcs_with`]: a frame must hold at least its header and
/// FCS whatever the configured minimum, and at most the configured maximum.
fn check_len(limits: FrameLimits, len: usize) -> Result<(), FcsError> {
    let min = limits.min_len.max(HEADER_LEN + FCS_LEN);
    if len < min {
        return Err(FcsError::Runt { len, min });
    }
    if len > limits.max_len {
        return Err(FcsError::TooLong {
            len,
            max: limits.max_len,
        });
    }
    Ok(())
}

/// Identifies a frame for traces and for the MAC that sent it (e.g. its descriptor).
/// Chosen by the sender; a switch forwards a frame under the same id.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FrameId(pub u64);

/// A frame in flight: its bytes exactly as they follow the SFD on the wire (FCS
/// included), shared cheaply between the sender, the wire and the receiver.
///
/// Equality and `Debug` look at the id, the message and the bytes only.
#[derive(Clone)]
pub struct Frame {
    /// The frame's id (sender's choice).
    pub id: FrameId,
    /// The message or transaction it belongs to, for trace spans and breakdowns.
    pub msg: MsgId,
    bytes: Arc<[u8]>,
    /// The last four bytes are the FCS of the others, as the sending MAC computed it
    /// (`Frame::with_fcs`): [`check_frame_with`] need not compute the CRC again.
    fcs_known_good: bool,
}

impl PartialEq for Frame {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && self.msg == other.msg && self.bytes == other.bytes
    }
}

impl Eq for Frame {}

impl core::fmt::Debug for Frame {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Frame")
            .field("id", &self.id)
            .field("msg", &self.msg)
            .field("bytes", &self.bytes)
            .finish()
    }
}

impl Frame {
    /// A frame carrying `bytes` (destination address through FCS). Any bytes are
    /// accepted, also malformed ones: the receiver judges them.
    #[must_use]
    pub fn new(id: FrameId, msg: MsgId, bytes: impl Into<Arc<[u8]>>) -> Self {
        Self {
            id,
            msg,
            bytes: bytes.into(),
            fcs_known_good: false,
        }
    }

    /// A frame whose `bytes` end with the FCS the sending MAC has just computed over the
    /// others (header through pad; the caller's promise, checked in debug builds). The
    /// bytes are the same as [`Frame::new`]'s; the receiver's check gives the same
    /// verdict without computing the CRC a second time ([`check_frame_with`]).
    #[must_use]
    pub(crate) fn with_fcs(id: FrameId, msg: MsgId, bytes: impl Into<Arc<[u8]>>) -> Self {
        let bytes: Arc<[u8]> = bytes.into();
        debug_assert!(
            bytes.len() >= FCS_LEN && {
                let (body, tail) = bytes.split_at(bytes.len() - FCS_LEN);
                tail == fcs(body).to_le_bytes()
            },
            "Frame::with_fcs: the bytes do not end with their FCS"
        );
        Self {
            id,
            msg,
            bytes,
            fcs_known_good: true,
        }
    }

    /// The bytes on the wire after the SFD, FCS included.
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Length on the wire after the SFD \[bytes\].
    #[must_use]
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether the frame has no bytes at all (a GMII port refuses such a frame).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Destination address, if the frame is long enough to have one.
    #[must_use]
    pub fn dst(&self) -> Option<MacAddr> {
        self.addr(field::DST)
    }

    /// Source address, if the frame is long enough to have one.
    #[must_use]
    pub fn src(&self) -> Option<MacAddr> {
        self.addr(field::SRC)
    }

    fn addr(&self, range: core::ops::Range<usize>) -> Option<MacAddr> {
        let b = self.bytes.get(range)?;
        <[u8; 6]>::try_from(b).ok().map(MacAddr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// CRC-32 written from the polynomial, independent of crc32fast: reflected generator
    /// 0xEDB88320, register preset to 0xFFFFFFFF, one bit at a time, final complement.
    fn crc32_bitwise(data: &[u8]) -> u32 {
        let mut reg: u32 = 0xFFFF_FFFF;
        for &byte in data {
            reg ^= u32::from(byte);
            for _ in 0..8 {
                reg = if reg & 1 == 1 {
                    (reg >> 1) ^ 0xEDB8_8320
                } else {
                    reg >> 1
                };
            }
        }
        !reg
    }

    const A: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x0A]);
    const B: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x0B]);

    #[test]
    fn reference_crc_matches_known_vectors() {
        assert_eq!(crc32_bitwise(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32_bitwise(b""), 0);
        assert_eq!(
            crc32_bitwise(b"The quick brown fox jumps over the lazy dog"),
            0x414F_A339
        );
        assert_eq!(fcs(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn minimum_frame_is_padded_and_checked() {
        let f = build(B, A, EtherType::Via, &[0xDE, 0xAD]).unwrap();
        assert_eq!(f.len(), 64);
        assert_eq!(&f[0..6], &B.0);
        assert_eq!(&f[6..12], &A.0);
        assert_eq!(&f[12..14], &[0x88, 0xB5]);
        assert_eq!(&f[14..16], &[0xDE, 0xAD]);
        assert!(f[16..60].iter().all(|&b| b == 0), "zero pad");
        // FCS: the independent CRC of bytes 0..60, least significant byte first.
        let crc = crc32_bitwise(&f[..60]);
        assert_eq!(&f[60..64], &crc.to_le_bytes());
        // Residue over frame + FCS is the clause 3.2.9 constant.
        assert_eq!(crc32_bitwise(&f), 0x2144_DF1C);
        let view = check_fcs(&f).unwrap();
        assert_eq!(view.as_bytes().len(), 60);
        assert_eq!(view.dst(), B);
        assert_eq!(view.ethertype(), EtherType::Via);
    }

    #[test]
    fn maximum_frame_and_one_byte_more() {
        let f = build(B, A, EtherType::Ipv4, &[7u8; 1500]).unwrap();
        assert_eq!(f.len(), 1518);
        assert!(check_fcs(&f).is_ok());
        assert_eq!(
            build(B, A, EtherType::Ipv4, &[7u8; 1501]),
            Err(FrameError::TooLong {
                len: 1519,
                max: 1518
            })
        );
        let jumbo = FrameLimits {
            min_len: 64,
            max_len: 9018,
        };
        let j = build_with(jumbo, B, A, EtherType::Ipv4, &[1u8; 9000]).unwrap();
        assert_eq!(
            check_fcs(&j),
            Err(FcsError::TooLong {
                len: 9018,
                max: 1518
            })
        );
        assert!(check_fcs_with(jumbo, &j).is_ok());
    }

    #[test]
    fn malformed_inputs_are_errors() {
        assert_eq!(
            finish(vec![1, 2, 3], FrameLimits::IEEE),
            Err(FrameError::NoHeader { len: 3 })
        );
        for len in [0, 1, 3, 4, 17, 63] {
            let bytes = vec![0u8; len];
            assert_eq!(
                check_fcs(&bytes),
                Err(FcsError::Runt { len, min: 64 }),
                "{len}"
            );
        }
        let odd = FrameLimits {
            min_len: 0,
            max_len: 100,
        };
        assert!(matches!(
            check_fcs_with(odd, &[0u8; 3]),
            Err(FcsError::Runt { len: 3, min: 18 })
        ));
    }

    #[test]
    fn frame_accessors() {
        let f = Frame::new(
            FrameId(1),
            MsgId(2),
            build(B, A, EtherType::Arp, &[]).unwrap(),
        );
        assert_eq!((f.dst(), f.src(), f.len()), (Some(B), Some(A), 64));
        let short = Frame::new(FrameId(1), MsgId(2), vec![1u8, 2, 3]);
        assert_eq!((short.dst(), short.src()), (None, None));
        assert!(Frame::new(FrameId(0), MsgId(0), Vec::new()).is_empty());
    }

    proptest! {
        /// crc32fast agrees with the bitwise reference on any bytes.
        #[test]
        fn fcs_matches_reference(data in prop::collection::vec(any::<u8>(), 0..2000)) {
            prop_assert_eq!(fcs(&data), crc32_bitwise(&data));
        }

        /// Any built frame checks, carries its payload, and has the reference FCS.
        #[test]
        fn built_frames_check(payload in prop::collection::vec(any::<u8>(), 0..=1500), et in any::<u16>()) {
            let f = build(B, A, EtherType::from_raw(et), &payload).unwrap();
            prop_assert_eq!(f.len(), (14 + payload.len()).max(60) + 4);
            let n = f.len();
            prop_assert_eq!(&f[n - 4..], &crc32_bitwise(&f[..n - 4]).to_le_bytes()[..]);
            let view = check_fcs(&f).unwrap();
            prop_assert_eq!(&view.payload()[..payload.len()], &payload[..]);
        }

        /// Any bytes at all give a value, never a panic.
        #[test]
        fn any_bytes_check_without_panic(data in prop::collection::vec(any::<u8>(), 0..1600)) {
            let _ = check_fcs(&data);
            let _ = finish(data, FrameLimits::IEEE);
        }

        /// Any single bit flip, in the data or in the FCS itself, is detected.
        #[test]
        fn single_bit_flips_are_detected(
            payload in prop::collection::vec(any::<u8>(), 0..=1500),
            pos in any::<prop::sample::Index>(),
            bit in 0u8..8,
        ) {
            let mut f = build(B, A, EtherType::Via, &payload).unwrap();
            let i = pos.index(f.len());
            f[i] ^= 1 << bit;
            let is_mismatch = matches!(check_fcs(&f), Err(FcsError::Mismatch { .. }));
            prop_assert!(is_mismatch);
        }

        /// A frame made with its FCS gets the verdict of the full check under any
        /// limits, and equals the same bytes made with `Frame::new`.
        #[test]
        fn frames_with_their_fcs_check_like_the_full_check(
            payload in prop::collection::vec(any::<u8>(), 0..=1600),
            min_len in 0usize..100,
            max_len in 0usize..1700,
        ) {
            let any_len = FrameLimits { min_len: 0, max_len: usize::MAX };
            let bytes = finish([&[0u8; 14][..], &payload].concat(), any_len).unwrap();
            let limits = FrameLimits { min_len, max_len };
            let known = Frame::with_fcs(FrameId(7), MsgId(8), bytes.clone());
            let plain = Frame::new(FrameId(7), MsgId(8), bytes.clone());
            prop_assert_eq!(&known, &plain);
            let want = check_fcs_with(limits, &bytes).map(|_| ());
            prop_assert_eq!(check_frame_with(limits, &known), want.clone());
            prop_assert_eq!(check_frame_with(limits, &plain), want);
        }
    }
}
