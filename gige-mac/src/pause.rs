//! IEEE 802.3x full-duplex flow control: MAC Control frames (IEEE 802.3 clause 31) and
//! the PAUSE operation (Annex 31B): building a PAUSE frame, recognising MAC Control
//! frames, and the pause quantum.
//!
//! A MAC Control frame is any frame whose Length/Type field is 0x8808 (clause 31.4.1.3);
//! it is consumed by the MAC Control sublayer of the receiving MAC and never handed to
//! its client. PAUSE is opcode 0x0001 sent to the reserved multicast address
//! 01-80-C2-00-00-01 (Annex 31B.2, 31B.3.1). Byte layout after the SFD:
//!
//! | bytes | field | value |
//! |---|---|---|
//! | 0..6 | destination address | 01-80-C2-00-00-01 |
//! | 6..12 | source address | the sending station |
//! | 12..14 | Length/Type | 0x8808, big-endian |
//! | 14..16 | MAC Control opcode | 0x0001 (PAUSE), big-endian |
//! | 16..18 | `pause_time` | quanta, big-endian |
//! | 18..60 | reserved | zeros |
//! | 60..64 | FCS | CRC-32, little-endian ([`crate::frame`]) |
//!
//! One pause quantum is 512 bit times (Annex 31B.2): 64 byte times, i.e. 64 GMII clocks
//! (512 ns) at 1000 Mb/s. A PAUSE with `pause_time` 0 ends a pause in progress.

use crate::frame::{build, FrameError};
use via_abi::ethernet::{EtherType, MacAddr, HEADER_LEN};

/// Length/Type of every MAC Control frame (IEEE 802.3 clause 31.4.1.3).
pub const MAC_CONTROL_ETHERTYPE: u16 = 0x8808;
/// Opcode of PAUSE (IEEE 802.3 Annex 31A, Annex 31B.2).
pub const PAUSE_OPCODE: u16 = 0x0001;
/// Destination address of PAUSE frames: the reserved multicast address of Annex 31B.3.1
/// (IEEE 802.1D never forwards it).
pub const PAUSE_DST: MacAddr = MacAddr([0x01, 0x80, 0xC2, 0x00, 0x00, 0x01]);
/// One pause quantum \[bit times\] (IEEE 802.3 Annex 31B.2).
pub const QUANTUM_BIT_TIMES: u64 = 512;
/// One pause quantum in byte times = GMII clocks (512 / 8).
pub const QUANTUM_BYTES: u64 = QUANTUM_BIT_TIMES / 8;
/// Length of a PAUSE frame on the wire after the SFD, FCS included \[bytes\]: the
/// 64-byte minimum frame.
pub const PAUSE_FRAME_LEN: usize = via_abi::ethernet::MIN_FRAME_LEN;

/// Byte ranges of the MAC Control fields after the Ethernet header.
pub mod field {
    /// MAC Control opcode, big-endian (2 bytes).
    pub const OPCODE: core::ops::Range<usize> = 14..16;
    /// PAUSE `pause_time`, big-endian (2 bytes).
    pub const PAUSE_TIME: core::ops::Range<usize> = 16..18;
}

/// What a MAC Control frame asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MacControl {
    /// PAUSE to the reserved multicast address: stop starting data frames for
    /// `quanta` x 512 bit times (0: resume now).
    Pause {
        /// `pause_time` \[quanta of 512 bit times\].
        quanta: u16,
    },
    /// A MAC Control frame this MAC does not act on: another opcode, a PAUSE to another
    /// address, or one too short to hold an opcode. Consumed and counted all the same.
    Other {
        /// The opcode, if the frame holds one.
        opcode: Option<u16>,
    },
}

/// The PAUSE frame a station with address `src` sends: 60 bytes and the FCS (64 bytes).
///
/// # Errors
/// None in practice (a PAUSE frame is a minimum frame); [`FrameError`] is passed on from
/// [`crate::frame::build`].
pub fn build_pause(src: MacAddr, quanta: u16) -> Result<Vec<u8>, FrameError> {
    let mut body = [0u8; 4];
    body[..2].copy_from_slice(&PAUSE_OPCODE.to_be_bytes());
    body[2..].copy_from_slice(&quanta.to_be_bytes());
    build(
        PAUSE_DST,
        src,
        EtherType::from_raw(MAC_CONTROL_ETHERTYPE),
        &body,
    )
}

/// Whether `bytes` (from the destination address on) hold the header of a MAC Control
/// frame: at least 14 bytes and Length/Type 0x8808.
#[must_use]
pub fn is_mac_control(bytes: &[u8]) -> bool {
    bytes.len() >= HEADER_LEN && bytes[12..14] == MAC_CONTROL_ETHERTYPE.to_be_bytes()
}

/// Reads a MAC Control frame (FCS already checked by the caller); `None` if `bytes` are
/// not a MAC Control frame at all.
#[must_use]
pub fn parse(bytes: &[u8]) -> Option<MacControl> {
    if !is_mac_control(bytes) {
        return None;
    }
    let be = |r: core::ops::Range<usize>| {
        bytes
            .get(r)
            .and_then(|b| <[u8; 2]>::try_from(b).ok())
            .map(u16::from_be_bytes)
    };
    let opcode = be(field::OPCODE);
    let to_pause_address = bytes.get(0..6) == Some(&PAUSE_DST.0[..]);
    Some(match (opcode, be(field::PAUSE_TIME)) {
        (Some(PAUSE_OPCODE), Some(quanta)) if to_pause_address => MacControl::Pause { quanta },
        _ => MacControl::Other { opcode },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::check_fcs;

    const SRC: MacAddr = MacAddr([0x02, 0x48, 0x56, 0x49, 0x41, 0x02]);

    #[test]
    fn pause_frame_bytes_follow_annex_31b() {
        let f = build_pause(SRC, 0xFFFE).unwrap();
        assert_eq!(f.len(), 64);
        let want_head = [
            0x01, 0x80, 0xC2, 0x00, 0x00, 0x01, // DA: reserved multicast
            0x02, 0x48, 0x56, 0x49, 0x41, 0x02, // SA
            0x88, 0x08, // Length/Type: MAC Control
            0x00, 0x01, // opcode: PAUSE
            0xFF, 0xFE, // pause_time, big-endian
        ];
        assert_eq!(&f[..18], &want_head);
        assert!(f[18..60].iter().all(|&b| b == 0), "reserved, zero");
        assert_eq!(&f[60..], &crate::frame::fcs(&f[..60]).to_le_bytes());
        assert!(check_fcs(&f).is_ok());
        assert_eq!(parse(&f), Some(MacControl::Pause { quanta: 0xFFFE }));
    }

    #[test]
    fn resume_and_other_control_frames() {
        let resume = build_pause(SRC, 0).unwrap();
        assert_eq!(&resume[16..18], &[0, 0]);
        assert_eq!(parse(&resume), Some(MacControl::Pause { quanta: 0 }));
        // Another opcode (0x0101: PFC) is a MAC Control frame not acted upon.
        let mut other = resume.clone();
        other[14..16].copy_from_slice(&0x0101u16.to_be_bytes());
        assert_eq!(
            parse(&other),
            Some(MacControl::Other {
                opcode: Some(0x0101)
            })
        );
        // PAUSE to a unicast address: not the reserved multicast address.
        let mut uni = resume.clone();
        uni[0] = 0x02;
        assert_eq!(
            parse(&uni),
            Some(MacControl::Other {
                opcode: Some(PAUSE_OPCODE)
            })
        );
        // Header only: a MAC Control frame without an opcode.
        assert!(is_mac_control(&resume[..14]));
        assert_eq!(
            parse(&resume[..15]),
            Some(MacControl::Other { opcode: None })
        );
        // Not MAC Control.
        let via = build(PAUSE_DST, SRC, EtherType::Via, &[0, 1, 0, 5]).unwrap();
        assert!(!is_mac_control(&via));
        assert_eq!(parse(&via), None);
        assert_eq!(parse(&[]), None);
        assert_eq!(parse(&[0x88; 13]), None);
    }

    #[test]
    fn a_quantum_is_512_bit_times() {
        assert_eq!(QUANTUM_BYTES, 64);
        assert_eq!(PAUSE_FRAME_LEN, 64);
    }
}
