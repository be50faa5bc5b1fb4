//! The DP83820 gigabit MAC's buffer descriptor, 32-bit addressing mode (National
//! DP83820 datasheet): 16 bytes, little-endian, the same shape for transmit and receive.
//!
//! | bytes | field | name |
//! |---|---|---|
//! | 0..4 | physical address of the next descriptor (0 ends the list) | `link` |
//! | 4..8 | physical address of the data buffer | `bufptr` |
//! | 8..12 | command/status ([`CmdSts`]) | `cmdsts` |
//! | 12..16 | extended status (VLAN/checksum results; kept raw) | `extsts` |
//!
//! The host sets OWN to hand a transmit descriptor to the MAC; on receive the MAC sets OWN
//! when it has filled the buffer. The MAC fetches descriptors and data as a PCI bus master
//! and writes `cmdsts` back.

use crate::endian::{set_u32_le, u32_le};
use crate::{Error, FieldInfo};
use bitflags::bitflags;

/// Byte ranges of the DP83820 descriptor fields (datasheet, 32-bit addressing).
pub mod field {
    use crate::Field;

    /// Link to the next descriptor (4 bytes).
    pub const LINK: Field = 0..4;
    /// Buffer pointer (4 bytes).
    pub const BUFPTR: Field = 4..8;
    /// Command/status (4 bytes).
    pub const CMDSTS: Field = 8..12;
    /// Extended status (4 bytes).
    pub const EXTSTS: Field = 12..16;
}

/// Length of a DP83820 descriptor in 32-bit addressing mode \[bytes\].
pub const DESCRIPTOR_LEN: usize = field::EXTSTS.end;

/// Field table of the DP83820 descriptor, in byte order.
pub const FIELDS: &[FieldInfo] = &[
    FieldInfo {
        name: "link",
        range: field::LINK,
    },
    FieldInfo {
        name: "bufptr",
        range: field::BUFPTR,
    },
    FieldInfo {
        name: "cmdsts",
        range: field::CMDSTS,
    },
    FieldInfo {
        name: "extsts",
        range: field::EXTSTS,
    },
];

const LAYOUT: &str = "DP83820 descriptor";

bitflags! {
    /// The `cmdsts` word of a DP83820 descriptor. Bits 15:0 hold the buffer size
    /// (read it with [`CmdSts::size`]); the per-direction status bits 26:16 are not
    /// named here and are kept as unknown bits.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct CmdSts: u32 {
        /// Bit 31, OWN: TX - the MAC owns the descriptor; RX - the MAC has filled it.
        const OWN = 1 << 31;
        /// Bit 30, MORE: the packet continues in the next descriptor.
        const MORE = 1 << 30;
        /// Bit 29, INTR: interrupt when the MAC is done with this descriptor.
        const INTR = 1 << 29;
        /// Bit 28, ERR (name from the simulator's hardware notes; the datasheet names this
        /// bit per direction, e.g. the CRC control/indication bit).
        const ERR = 1 << 28;
        /// Bit 27, OK: the packet was sent / received without error.
        const OK = 1 << 27;
    }
}

impl CmdSts {
    /// Mask of the size field, bits 15:0 \[bytes\].
    pub const SIZE_MASK: u32 = 0x0000_FFFF;

    /// Buffer size (TX: bytes to send; RX: buffer size, then bytes received) \[bytes\].
    pub const fn size(self) -> u16 {
        (self.bits() & Self::SIZE_MASK) as u16
    }

    /// The same word with bits 15:0 replaced by `size`.
    pub const fn with_size(self, size: u16) -> CmdSts {
        CmdSts::from_bits_retain((self.bits() & !Self::SIZE_MASK) | size as u32)
    }
}

/// A view of a DP83820 descriptor over a byte buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Descriptor<T: AsRef<[u8]>> {
    buffer: T,
}

view_basics!(Descriptor, fixed DESCRIPTOR_LEN, LAYOUT);

impl<T: AsRef<[u8]>> Descriptor<T> {
    /// Physical address of the next descriptor.
    pub fn link(&self) -> u32 {
        u32_le(self.buffer.as_ref(), field::LINK)
    }

    /// Physical address of the data buffer.
    pub fn bufptr(&self) -> u32 {
        u32_le(self.buffer.as_ref(), field::BUFPTR)
    }

    /// Command/status word.
    pub fn cmdsts(&self) -> CmdSts {
        CmdSts::from_bits_retain(u32_le(self.buffer.as_ref(), field::CMDSTS))
    }

    /// Extended status word (raw).
    pub fn extsts(&self) -> u32 {
        u32_le(self.buffer.as_ref(), field::EXTSTS)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Descriptor<T> {
    /// Sets the link.
    pub fn set_link(&mut self, v: u32) {
        set_u32_le(self.buffer.as_mut(), field::LINK, v);
    }

    /// Sets the buffer pointer.
    pub fn set_bufptr(&mut self, v: u32) {
        set_u32_le(self.buffer.as_mut(), field::BUFPTR, v);
    }

    /// Sets the command/status word.
    pub fn set_cmdsts(&mut self, v: CmdSts) {
        set_u32_le(self.buffer.as_mut(), field::CMDSTS, v.bits());
    }

    /// Sets the extended status word.
    pub fn set_extsts(&mut self, v: u32) {
        set_u32_le(self.buffer.as_mut(), field::EXTSTS, v);
    }
}

/// A DP83820 descriptor as plain values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DescriptorRepr {
    /// Physical address of the next descriptor.
    pub link: u32,
    /// Physical address of the data buffer.
    pub bufptr: u32,
    /// Command/status word.
    pub cmdsts: CmdSts,
    /// Extended status word.
    pub extsts: u32,
}

impl DescriptorRepr {
    /// Reads every field; fails only if the buffer is shorter than 16 bytes.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(d: &Descriptor<&T>) -> Result<Self, Error> {
        d.check_len()?;
        Ok(DescriptorRepr {
            link: d.link(),
            bufptr: d.bufptr(),
            cmdsts: d.cmdsts(),
            extsts: d.extsts(),
        })
    }

    /// Bytes [`DescriptorRepr::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        DESCRIPTOR_LEN
    }

    /// Writes every field.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, d: &mut Descriptor<T>) {
        d.set_link(self.link);
        d.set_bufptr(self.bufptr);
        d.set_cmdsts(self.cmdsts);
        d.set_extsts(self.extsts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A TX descriptor handed to the MAC: OWN | INTR, 1514 bytes.
    const BYTES: [u8; 16] = [
        0x10, 0x00, 0x20, 0x00, // link 0x0020_0010
        0x00, 0x08, 0x30, 0x00, // bufptr 0x0030_0800
        0xEA, 0x05, 0x00, 0xA0, // cmdsts OWN | INTR | size 0x5EA
        0x00, 0x00, 0x00, 0x00, // extsts
    ];

    #[test]
    fn field_table_covers_16_bytes() {
        crate::assert_field_table(FIELDS, 16);
    }

    #[test]
    fn both_ways() {
        let r =
            DescriptorRepr::parse(&Descriptor::new_checked(&BYTES[..]).expect("16")).expect("ok");
        assert_eq!(r.link, 0x0020_0010);
        assert_eq!(r.bufptr, 0x0030_0800);
        assert_eq!(r.cmdsts, (CmdSts::OWN | CmdSts::INTR).with_size(1514));
        assert_eq!(r.cmdsts.size(), 1514);
        assert!(!r.cmdsts.contains(CmdSts::MORE));
        let mut out = [0u8; 16];
        r.emit(&mut Descriptor::new_unchecked(&mut out[..]));
        assert_eq!(out, BYTES);
    }

    #[test]
    fn cmdsts_bits_from_datasheet() {
        assert_eq!(CmdSts::OWN.bits(), 0x8000_0000);
        assert_eq!(CmdSts::MORE.bits(), 0x4000_0000);
        assert_eq!(CmdSts::INTR.bits(), 0x2000_0000);
        assert_eq!(CmdSts::ERR.bits(), 0x1000_0000);
        assert_eq!(CmdSts::OK.bits(), 0x0800_0000);
        let c = CmdSts::from_bits_retain(0x0841_0040); // OK, an unnamed status bit, 64 bytes
        assert!(c.contains(CmdSts::OK));
        assert_eq!(c.size(), 64);
        assert_eq!(c.bits() & 0x07FF_0000, 0x0041_0000, "unknown bits kept");
        assert_eq!(c.with_size(0xFFFF).bits(), 0x0841_FFFF);
    }

    #[test]
    fn short_buffer_is_an_error() {
        assert!(matches!(
            Descriptor::new_checked(&BYTES[..8]),
            Err(Error::Truncated {
                need: 16,
                got: 8,
                ..
            })
        ));
    }

    proptest! {
        #[test]
        fn round_trip(link in any::<u32>(), buf in any::<u32>(), cs in any::<u32>(), ext in any::<u32>()) {
            let r = DescriptorRepr { link, bufptr: buf, cmdsts: CmdSts::from_bits_retain(cs), extsts: ext };
            let mut out = [0u8; 16];
            r.emit(&mut Descriptor::new_unchecked(&mut out[..]));
            prop_assert_eq!(DescriptorRepr::parse(&Descriptor::new_unchecked(&out[..])), Ok(r));
            prop_assert_eq!(r.cmdsts.with_size(r.cmdsts.size()), r.cmdsts);
        }
    }
}
