//! The Ethernet II header and the IEEE 802.3 frame-size numbers HVIA-GE's wire obeys.
//! Network byte order. No CRC here: the MAC model computes the FCS.
//!
//! | bytes | field | name |
//! |---|---|---|
//! | 0..6 | destination MAC address | `dst` |
//! | 6..12 | source MAC address | `src` |
//! | 12..14 | EtherType (big-endian) | `ethertype` |
//! | 14.. | payload | `payload` |

use crate::endian::{bytes6, set_bytes6, set_u16_be, u16_be};
use crate::{require_len, Error, FieldInfo};

/// Byte ranges of the Ethernet II header fields (IEEE 802.3).
pub mod field {
    use crate::{Field, Rest};

    /// Destination MAC address (6 bytes).
    pub const DST: Field = 0..6;
    /// Source MAC address (6 bytes).
    pub const SRC: Field = 6..12;
    /// EtherType, big-endian (2 bytes).
    pub const ETHERTYPE: Field = 12..14;
    /// Payload: everything after the header.
    pub const PAYLOAD: Rest = 14..;
}

/// Length of the Ethernet II header \[bytes\].
pub const HEADER_LEN: usize = field::ETHERTYPE.end;
/// Preamble before the SFD \[bytes\] (IEEE 802.3).
pub const PREAMBLE_LEN: usize = 7;
/// Start-of-frame delimiter \[bytes\] (IEEE 802.3).
pub const SFD_LEN: usize = 1;
/// Frame check sequence, CRC-32 \[bytes\] (IEEE 802.3).
pub const FCS_LEN: usize = 4;
/// Minimum frame, header through FCS \[bytes\] (IEEE 802.3).
pub const MIN_FRAME_LEN: usize = 64;
/// Minimum frame without FCS \[bytes\]: shorter frames are padded to this.
pub const MIN_FRAME_LEN_NO_FCS: usize = MIN_FRAME_LEN - FCS_LEN;
/// Maximum untagged frame, header through FCS \[bytes\] (IEEE 802.3).
pub const MAX_FRAME_LEN: usize = 1518;
/// Maximum untagged frame without FCS \[bytes\] (the paper's "MTU 1514").
pub const MAX_FRAME_LEN_NO_FCS: usize = MAX_FRAME_LEN - FCS_LEN;
/// Maximum payload after the Ethernet header \[bytes\].
pub const MAX_PAYLOAD_LEN: usize = MAX_FRAME_LEN_NO_FCS - HEADER_LEN;
/// Minimum inter-frame gap \[bytes of wire time\] (IEEE 802.3: 96 bit times).
pub const MIN_IFG: usize = 12;
/// EtherType of HVIA-GE's VIA frames: 0x88B5, IEEE 802 "local experimental EtherType 1"
/// (design choice: the paper does not publish one; this value is reserved for exactly such
/// non-product protocols).
pub const ETHERTYPE_VIA: u16 = 0x88B5;

/// Field table of the Ethernet II header, in byte order.
pub const FIELDS: &[FieldInfo] = &[
    FieldInfo {
        name: "dst",
        range: field::DST,
    },
    FieldInfo {
        name: "src",
        range: field::SRC,
    },
    FieldInfo {
        name: "ethertype",
        range: field::ETHERTYPE,
    },
];

const LAYOUT: &str = "Ethernet II header";

/// Length of a frame (without FCS) after padding to the minimum frame size \[bytes\].
pub const fn padded_len(frame_len_no_fcs: usize) -> usize {
    if frame_len_no_fcs < MIN_FRAME_LEN_NO_FCS {
        MIN_FRAME_LEN_NO_FCS
    } else {
        frame_len_no_fcs
    }
}

/// Wire time one frame occupies \[bytes; 8 ns each on gigabit Ethernet\]: preamble + SFD +
/// padded frame + FCS + minimum inter-frame gap (saturating).
pub const fn wire_occupancy(frame_len_no_fcs: usize) -> usize {
    padded_len(frame_len_no_fcs).saturating_add(PREAMBLE_LEN + SFD_LEN + FCS_LEN + MIN_IFG)
}

/// A 48-bit IEEE MAC address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct MacAddr(pub [u8; 6]);

impl MacAddr {
    /// The broadcast address ff:ff:ff:ff:ff:ff.
    pub const BROADCAST: MacAddr = MacAddr([0xFF; 6]);

    /// The six bytes, first-transmitted first.
    pub const fn octets(self) -> [u8; 6] {
        self.0
    }

    /// Whether this is the broadcast address.
    pub fn is_broadcast(self) -> bool {
        self == Self::BROADCAST
    }

    /// Whether the group bit (bit 0 of the first byte) is set.
    pub const fn is_multicast(self) -> bool {
        self.0[0] & 0x01 != 0
    }

    /// Whether this is an individual (unicast) address.
    pub const fn is_unicast(self) -> bool {
        !self.is_multicast()
    }

    /// Whether the locally administered bit (bit 1 of the first byte) is set.
    pub const fn is_local(self) -> bool {
        self.0[0] & 0x02 != 0
    }
}

impl core::fmt::Display for MacAddr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let [a, b, c, d, e, g] = self.0;
        write!(f, "{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{g:02x}")
    }
}

/// An EtherType. Values without a name here decode to `Unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EtherType {
    /// 0x0800: IPv4.
    Ipv4,
    /// 0x0806: ARP.
    Arp,
    /// 0x86DD: IPv6.
    Ipv6,
    /// 0x88B5: HVIA-GE VIA frames (see [`ETHERTYPE_VIA`]).
    Via,
    /// Any other value.
    Unknown(u16),
}

impl EtherType {
    /// Decodes a 16-bit EtherType.
    pub const fn from_raw(raw: u16) -> EtherType {
        match raw {
            0x0800 => EtherType::Ipv4,
            0x0806 => EtherType::Arp,
            0x86DD => EtherType::Ipv6,
            ETHERTYPE_VIA => EtherType::Via,
            other => EtherType::Unknown(other),
        }
    }

    /// The 16-bit value.
    pub const fn raw(self) -> u16 {
        match self {
            EtherType::Ipv4 => 0x0800,
            EtherType::Arp => 0x0806,
            EtherType::Ipv6 => 0x86DD,
            EtherType::Via => ETHERTYPE_VIA,
            EtherType::Unknown(raw) => raw,
        }
    }
}

/// A view of an Ethernet II frame (header + payload, no FCS) over a byte buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buffer: T,
}

view_basics!(EthernetFrame);

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Returns [`Error::Truncated`] unless the buffer holds the 14-byte header.
    pub fn check_len(&self) -> Result<(), Error> {
        require_len(LAYOUT, HEADER_LEN, self.buffer.as_ref().len())
    }

    /// Destination MAC address.
    pub fn dst(&self) -> MacAddr {
        MacAddr(bytes6(self.buffer.as_ref(), field::DST))
    }

    /// Source MAC address.
    pub fn src(&self) -> MacAddr {
        MacAddr(bytes6(self.buffer.as_ref(), field::SRC))
    }

    /// EtherType.
    pub fn ethertype(&self) -> EtherType {
        EtherType::from_raw(u16_be(self.buffer.as_ref(), field::ETHERTYPE))
    }

    /// The bytes after the header (empty if there are none).
    pub fn payload(&self) -> &[u8] {
        self.buffer.as_ref().get(field::PAYLOAD).unwrap_or_default()
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    /// Sets the destination MAC address.
    pub fn set_dst(&mut self, v: MacAddr) {
        set_bytes6(self.buffer.as_mut(), field::DST, v.0);
    }

    /// Sets the source MAC address.
    pub fn set_src(&mut self, v: MacAddr) {
        set_bytes6(self.buffer.as_mut(), field::SRC, v.0);
    }

    /// Sets the EtherType.
    pub fn set_ethertype(&mut self, v: EtherType) {
        set_u16_be(self.buffer.as_mut(), field::ETHERTYPE, v.raw());
    }

    /// The bytes after the header, writable (empty if there are none).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        self.buffer
            .as_mut()
            .get_mut(field::PAYLOAD)
            .unwrap_or_default()
    }
}

/// An Ethernet II header as plain values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EthernetRepr {
    /// Destination MAC address.
    pub dst: MacAddr,
    /// Source MAC address.
    pub src: MacAddr,
    /// EtherType.
    pub ethertype: EtherType,
}

impl EthernetRepr {
    /// Reads the header; fails only if the buffer is shorter than 14 bytes.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(frame: &EthernetFrame<&T>) -> Result<Self, Error> {
        frame.check_len()?;
        Ok(EthernetRepr {
            dst: frame.dst(),
            src: frame.src(),
            ethertype: frame.ethertype(),
        })
    }

    /// Bytes [`EthernetRepr::emit`] writes: the 14-byte header.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header (the payload is left alone).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut EthernetFrame<T>) {
        frame.set_dst(self.dst);
        frame.set_src(self.src);
        frame.set_ethertype(self.ethertype);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const FRAME: [u8; 18] = [
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, // dst broadcast
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // src locally administered
        0x88, 0xB5, // EtherType VIA
        0xDE, 0xAD, 0xBE, 0xEF, // payload
    ];

    #[test]
    fn field_table_covers_header() {
        crate::assert_field_table(FIELDS, HEADER_LEN);
    }

    #[test]
    fn both_ways() {
        let frame = EthernetFrame::new_checked(&FRAME[..]).expect("header present");
        let r = EthernetRepr::parse(&frame).expect("parse");
        assert!(r.dst.is_broadcast());
        assert!(r.dst.is_multicast());
        assert_eq!(r.src, MacAddr([2, 0, 0, 0, 0, 1]));
        assert!(r.src.is_unicast() && r.src.is_local());
        assert_eq!(r.src.to_string(), "02:00:00:00:00:01");
        assert_eq!(r.ethertype, EtherType::Via);
        assert_eq!(frame.payload(), &[0xDE, 0xAD, 0xBE, 0xEF]);
        let mut out = [0u8; 18];
        let mut view = EthernetFrame::new_unchecked(&mut out[..]);
        r.emit(&mut view);
        view.payload_mut()
            .copy_from_slice(&[0xDE, 0xAD, 0xBE, 0xEF]);
        assert_eq!(out, FRAME);
    }

    #[test]
    fn short_and_header_only() {
        assert!(matches!(
            EthernetFrame::new_checked(&FRAME[..13]),
            Err(Error::Truncated {
                need: 14,
                got: 13,
                ..
            })
        ));
        let header_only = EthernetFrame::new_checked(&FRAME[..14]).expect("14 bytes");
        assert!(header_only.payload().is_empty());
        assert!(EthernetFrame::new_unchecked(&FRAME[..3])
            .payload()
            .is_empty());
    }

    #[test]
    fn ethertypes() {
        assert_eq!(EtherType::from_raw(0x0800), EtherType::Ipv4);
        assert_eq!(EtherType::from_raw(0x88B5), EtherType::Via);
        assert_eq!(EtherType::from_raw(0x1234), EtherType::Unknown(0x1234));
        assert_eq!(EtherType::Unknown(0x1234).raw(), 0x1234);
    }

    #[test]
    fn frame_sizes_from_ieee_802_3() {
        assert_eq!(MAX_FRAME_LEN_NO_FCS, 1514);
        assert_eq!(MAX_PAYLOAD_LEN, 1500);
        assert_eq!(MIN_FRAME_LEN_NO_FCS, 60);
        assert_eq!(padded_len(18), 60);
        assert_eq!(padded_len(1514), 1514);
        // Smallest frame: 7 + 1 + 60 + 4 + 12 = 84 bytes of wire time.
        assert_eq!(wire_occupancy(0), 84);
        // Largest: 7 + 1 + 1514 + 4 + 12 = 1538.
        assert_eq!(wire_occupancy(1514), 1538);
        assert_eq!(wire_occupancy(usize::MAX), usize::MAX);
    }

    proptest! {
        #[test]
        fn round_trip(dst in any::<[u8; 6]>(), src in any::<[u8; 6]>(), et in any::<u16>()) {
            let r = EthernetRepr { dst: MacAddr(dst), src: MacAddr(src), ethertype: EtherType::from_raw(et) };
            let mut out = [0u8; HEADER_LEN];
            r.emit(&mut EthernetFrame::new_unchecked(&mut out[..]));
            prop_assert_eq!(EthernetRepr::parse(&EthernetFrame::new_unchecked(&out[..])), Ok(r));
            prop_assert_eq!(r.ethertype.raw(), et);
        }
    }
}
