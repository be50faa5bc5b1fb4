//! The 24-byte ATT level-1 entry (one per registered region), little-endian. The byte
//! layout is a design choice, documented in the table of the parent module.

use super::PAGE_SIZE;
use crate::endian::{set_u16_le, set_u32_le, set_u64_le, u16_le, u32_le, u64_le};
use crate::handle::{MemAttributes, ProtectionTag};
use crate::{Error, FieldInfo};

/// Byte ranges of the L1 entry fields (design choice, fixed).
pub mod field {
    use crate::Field;

    /// Starting virtual address of the region (8 bytes).
    pub const START_VA: Field = 0..8;
    /// SDRAM byte address of the region's first L2 entry (4 bytes).
    pub const L2_POINTER: Field = 8..12;
    /// Number of physical pages the region touches (4 bytes).
    pub const PAGE_COUNT: Field = 12..16;
    /// Size of the first page \[bytes\], 1..=4096 (2 bytes).
    pub const FIRST_PAGE_SIZE: Field = 16..18;
    /// Memory attributes (2 bytes).
    pub const ATTRIBUTES: Field = 18..20;
    /// Protection tag (2 bytes).
    pub const PTAG: Field = 20..22;
    /// Memory handle generation (2 bytes, 12 bits used).
    pub const GENERATION: Field = 22..24;
}

/// Length of an L1 entry \[bytes\] (HVIA-GE paper: 24 bytes).
pub const L1_ENTRY_LEN: usize = field::GENERATION.end;

/// Field table of the L1 entry, in byte order; names match `hvia layout att`.
pub const FIELDS: &[FieldInfo] = &[
    FieldInfo {
        name: "start_va",
        range: field::START_VA,
    },
    FieldInfo {
        name: "l2_pointer",
        range: field::L2_POINTER,
    },
    FieldInfo {
        name: "page_count",
        range: field::PAGE_COUNT,
    },
    FieldInfo {
        name: "first_page_size",
        range: field::FIRST_PAGE_SIZE,
    },
    FieldInfo {
        name: "attributes",
        range: field::ATTRIBUTES,
    },
    FieldInfo {
        name: "ptag",
        range: field::PTAG,
    },
    FieldInfo {
        name: "generation",
        range: field::GENERATION,
    },
];

const LAYOUT: &str = "ATT level-1 entry";

/// A view of an ATT level-1 entry over a byte buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct L1Entry<T: AsRef<[u8]>> {
    buffer: T,
}

view_basics!(L1Entry, fixed L1_ENTRY_LEN, LAYOUT);

impl<T: AsRef<[u8]>> L1Entry<T> {
    /// Starting virtual address of the region.
    pub fn start_va(&self) -> u64 {
        u64_le(self.buffer.as_ref(), field::START_VA)
    }

    /// SDRAM byte address of the first L2 entry.
    pub fn l2_pointer(&self) -> u32 {
        u32_le(self.buffer.as_ref(), field::L2_POINTER)
    }

    /// Number of physical pages \[pages\].
    pub fn page_count(&self) -> u32 {
        u32_le(self.buffer.as_ref(), field::PAGE_COUNT)
    }

    /// Size of the first page \[bytes\].
    pub fn first_page_size(&self) -> u16 {
        u16_le(self.buffer.as_ref(), field::FIRST_PAGE_SIZE)
    }

    /// Memory attributes (unknown bits kept).
    pub fn attributes(&self) -> MemAttributes {
        MemAttributes::from_bits_retain(u16_le(self.buffer.as_ref(), field::ATTRIBUTES))
    }

    /// Protection tag.
    pub fn ptag(&self) -> ProtectionTag {
        ProtectionTag(u16_le(self.buffer.as_ref(), field::PTAG))
    }

    /// Memory handle generation.
    pub fn generation(&self) -> u16 {
        u16_le(self.buffer.as_ref(), field::GENERATION)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> L1Entry<T> {
    /// Sets the starting virtual address.
    pub fn set_start_va(&mut self, v: u64) {
        set_u64_le(self.buffer.as_mut(), field::START_VA, v);
    }

    /// Sets the SDRAM byte address of the first L2 entry.
    pub fn set_l2_pointer(&mut self, v: u32) {
        set_u32_le(self.buffer.as_mut(), field::L2_POINTER, v);
    }

    /// Sets the number of physical pages.
    pub fn set_page_count(&mut self, v: u32) {
        set_u32_le(self.buffer.as_mut(), field::PAGE_COUNT, v);
    }

    /// Sets the size of the first page \[bytes\].
    pub fn set_first_page_size(&mut self, v: u16) {
        set_u16_le(self.buffer.as_mut(), field::FIRST_PAGE_SIZE, v);
    }

    /// Sets the memory attributes.
    pub fn set_attributes(&mut self, v: MemAttributes) {
        set_u16_le(self.buffer.as_mut(), field::ATTRIBUTES, v.bits());
    }

    /// Sets the protection tag.
    pub fn set_ptag(&mut self, v: ProtectionTag) {
        set_u16_le(self.buffer.as_mut(), field::PTAG, v.raw());
    }

    /// Sets the memory handle generation.
    pub fn set_generation(&mut self, v: u16) {
        set_u16_le(self.buffer.as_mut(), field::GENERATION, v);
    }
}

/// Where a virtual address falls inside a region: which L2 entry, and the byte offset to
/// add to that entry's physical address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PageSlot {
    /// Index of the L2 entry (0 = first page).
    pub index: u32,
    /// Bytes to add to the L2 entry's physical address.
    pub offset: u32,
}

/// The fields of an ATT level-1 entry as plain values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct L1Repr {
    /// Starting virtual address of the region.
    pub start_va: u64,
    /// SDRAM byte address of the first L2 entry.
    pub l2_pointer: u32,
    /// Number of physical pages \[pages\].
    pub page_count: u32,
    /// Size of the first page \[bytes\], 1..=4096 for a well-formed entry.
    pub first_page_size: u16,
    /// Memory attributes.
    pub attributes: MemAttributes,
    /// Protection tag.
    pub ptag: ProtectionTag,
    /// Memory handle generation.
    pub generation: u16,
}

impl L1Repr {
    /// Reads every field; fails only if the buffer is shorter than 24 bytes.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(entry: &L1Entry<&T>) -> Result<Self, Error> {
        entry.check_len()?;
        Ok(L1Repr {
            start_va: entry.start_va(),
            l2_pointer: entry.l2_pointer(),
            page_count: entry.page_count(),
            first_page_size: entry.first_page_size(),
            attributes: entry.attributes(),
            ptag: entry.ptag(),
            generation: entry.generation(),
        })
    }

    /// Bytes [`L1Repr::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        L1_ENTRY_LEN
    }

    /// Writes every field.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, entry: &mut L1Entry<T>) {
        entry.set_start_va(self.start_va);
        entry.set_l2_pointer(self.l2_pointer);
        entry.set_page_count(self.page_count);
        entry.set_first_page_size(self.first_page_size);
        entry.set_attributes(self.attributes);
        entry.set_ptag(self.ptag);
        entry.set_generation(self.generation);
    }

    /// The 24 bytes of this entry.
    pub fn to_bytes(&self) -> [u8; L1_ENTRY_LEN] {
        let mut buf = [0u8; L1_ENTRY_LEN];
        self.emit(&mut L1Entry::new_unchecked(&mut buf[..]));
        buf
    }

    /// Bytes of virtual address space the entry covers \[bytes\]:
    /// `first_page_size + (page_count - 1) * 4096`, 0 if `page_count` is 0.
    pub fn covered_len(&self) -> u64 {
        match self.page_count.checked_sub(1) {
            None => 0,
            Some(later) => u64::from(self.first_page_size) + u64::from(later) * PAGE_SIZE,
        }
    }

    /// Which L2 entry holds `va` and the offset to add to it, or `None` if `va` is outside
    /// `start_va .. start_va + covered_len()` (page-granular bounds, see the module docs).
    pub fn locate(&self, va: u64) -> Option<PageSlot> {
        let delta = va.checked_sub(self.start_va)?;
        if delta >= self.covered_len() {
            return None;
        }
        let first = u64::from(self.first_page_size);
        let (index, offset) = match delta.checked_sub(first) {
            None => (0, delta),
            Some(rest) => (rest / PAGE_SIZE + 1, rest % PAGE_SIZE),
        };
        Some(PageSlot {
            index: u32::try_from(index).ok()?,
            offset: u32::try_from(offset).ok()?,
        })
    }

    /// SDRAM byte address of L2 entry `index` (`l2_pointer + 4 * index`), or `None` if
    /// `index >= page_count` or the address overflows 32 bits.
    pub fn l2_entry_addr(&self, index: u32) -> Option<u32> {
        if index >= self.page_count {
            return None;
        }
        self.l2_pointer.checked_add(index.checked_mul(4)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An L1 entry written by hand from the layout table: a 10 000-byte region at VA
    /// 0x0804_A100, 3 pages, first page 0xF00 bytes, RDMA write enabled, ptag 7,
    /// generation 1, L2 entries at SDRAM 0x0010_0000.
    const BYTES: [u8; 24] = [
        0x00, 0xA1, 0x04, 0x08, 0x00, 0x00, 0x00, 0x00, // start VA
        0x00, 0x00, 0x10, 0x00, // L2 pointer
        0x03, 0x00, 0x00, 0x00, // page count
        0x00, 0x0F, // first page size 3840
        0x03, 0x00, // attributes VALID | ENABLE_RDMA_WRITE
        0x07, 0x00, // ptag
        0x01, 0x00, // generation
    ];

    fn repr() -> L1Repr {
        L1Repr {
            start_va: 0x0804_A100,
            l2_pointer: 0x0010_0000,
            page_count: 3,
            first_page_size: 0xF00,
            attributes: MemAttributes::VALID | MemAttributes::ENABLE_RDMA_WRITE,
            ptag: ProtectionTag(7),
            generation: 1,
        }
    }

    #[test]
    fn field_table_covers_24_bytes() {
        crate::assert_field_table(FIELDS, 24);
    }

    #[test]
    fn both_ways() {
        assert_eq!(
            L1Repr::parse(&L1Entry::new_checked(&BYTES[..]).expect("24")),
            Ok(repr())
        );
        assert_eq!(repr().to_bytes(), BYTES);
    }

    #[test]
    fn short_buffer_is_an_error() {
        assert!(matches!(
            L1Entry::new_checked(&BYTES[..23]),
            Err(Error::Truncated {
                need: 24,
                got: 23,
                ..
            })
        ));
        assert!(L1Repr::parse(&L1Entry::new_unchecked(&BYTES[..8])).is_err());
    }

    #[test]
    fn locate_pages() {
        let r = repr();
        assert_eq!(r.covered_len(), 0xF00 + 2 * 4096);
        assert_eq!(r.locate(0x0804_A0FF), None);
        assert_eq!(
            r.locate(0x0804_A100),
            Some(PageSlot {
                index: 0,
                offset: 0
            })
        );
        assert_eq!(
            r.locate(0x0804_AFFF),
            Some(PageSlot {
                index: 0,
                offset: 0xEFF
            })
        );
        assert_eq!(
            r.locate(0x0804_B000),
            Some(PageSlot {
                index: 1,
                offset: 0
            })
        );
        assert_eq!(
            r.locate(0x0804_C123),
            Some(PageSlot {
                index: 2,
                offset: 0x123
            })
        );
        assert_eq!(
            r.locate(0x0804_CFFF),
            Some(PageSlot {
                index: 2,
                offset: 0xFFF
            })
        );
        assert_eq!(r.locate(0x0804_D000), None);
        assert_eq!(
            L1Repr::default().locate(0),
            None,
            "empty entry covers nothing"
        );
        assert_eq!(r.l2_entry_addr(2), Some(0x0010_0008));
        assert_eq!(r.l2_entry_addr(3), None);
    }

    proptest! {
        #[test]
        fn round_trip(va in any::<u64>(), l2 in any::<u32>(), pages in any::<u32>(),
                      fps in any::<u16>(), attr in any::<u16>(), ptag in any::<u16>(),
                      generation in any::<u16>()) {
            let r = L1Repr {
                start_va: va, l2_pointer: l2, page_count: pages, first_page_size: fps,
                attributes: MemAttributes::from_bits_retain(attr), ptag: ProtectionTag(ptag),
                generation,
            };
            let bytes = r.to_bytes();
            prop_assert_eq!(L1Repr::parse(&L1Entry::new_unchecked(&bytes[..])), Ok(r));
        }

        #[test]
        fn locate_never_panics(bytes in proptest::array::uniform24(any::<u8>()), va in any::<u64>()) {
            let r = L1Repr::parse(&L1Entry::new_unchecked(&bytes[..])).expect("24 bytes");
            if let Some(slot) = r.locate(va) {
                prop_assert!(slot.index < r.page_count);
            }
        }
    }
}
