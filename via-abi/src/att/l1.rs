//! The 24-byte ATT level-1 entry (one per registered region), little-endian. The byte
//! layout is a design choice, documented in the table of the parent module; bytes 12..16
//! are one packed 32-bit word holding the page count (bits 19:0) and the length of the
//! region's last page minus one (bits 31:20), so that an entry bounds its region to the
//! byte.

use super::l2::L2_ENTRY_LEN;
use super::PAGE_SIZE;
use crate::endian::{set_u16_le, set_u32_le, set_u64_le, u16_le, u32_le, u64_le};
use crate::handle::{MemAttributes, ProtectionTag};
use crate::{Error, Field, FieldInfo};

/// Byte ranges of the L1 entry fields (design choice, fixed).
pub mod field {
    use crate::Field;

    /// Starting virtual address of the region (8 bytes).
    pub const START_VA: Field = 0..8;
    /// SDRAM byte address of the region's first L2 entry (4 bytes).
    pub const L2_POINTER: Field = 8..12;
    /// The packed page word (4 bytes): page count in bits 19:0, last page length - 1 in
    /// bits 31:20 (see [`super::bits`]).
    pub const PAGE_WORD: Field = 12..16;
    /// Number of physical pages the region touches: bits 19:0 of [`PAGE_WORD`].
    pub const PAGE_COUNT: Field = PAGE_WORD;
    /// Bytes of the region in its last page, minus one: bits 31:20 of [`PAGE_WORD`].
    pub const LAST_PAGE_LEN: Field = PAGE_WORD;
    /// Size of the first page \[bytes\], 1..=4096 (2 bytes).
    pub const FIRST_PAGE_SIZE: Field = 16..18;
    /// Memory attributes (2 bytes).
    pub const ATTRIBUTES: Field = 18..20;
    /// Protection tag (2 bytes).
    pub const PTAG: Field = 20..22;
    /// Memory handle generation (2 bytes, 12 bits used).
    pub const GENERATION: Field = 22..24;
}

/// Bit positions inside the packed page word ([`field::PAGE_WORD`], little-endian `u32`).
pub mod bits {
    /// Lowest bit of the page count.
    pub const PAGE_COUNT_SHIFT: u32 = 0;
    /// Width of the page count \[bits\].
    pub const PAGE_COUNT_BITS: u32 = 20;
    /// Mask of the page count (bits 19:0), after shifting.
    pub const PAGE_COUNT_MASK: u32 = (1 << PAGE_COUNT_BITS) - 1;
    /// Lowest bit of the last page length minus one.
    pub const LAST_PAGE_LEN_SHIFT: u32 = 20;
    /// Width of the last page length minus one \[bits\].
    pub const LAST_PAGE_LEN_BITS: u32 = 12;
    /// Mask of the last page length minus one (bits 31:20), after shifting.
    pub const LAST_PAGE_LEN_MASK: u32 = (1 << LAST_PAGE_LEN_BITS) - 1;
}

pub use page_word::PageWord;

/// The packed page word's bit-field type (its own module: the bitfield macro's expansion
/// trips `unused_parens`).
mod page_word {
    #![allow(unused_parens)]
    use modular_bitfield::specifiers::{B12, B20};

    /// The packed page word (bytes 12..16) as hardware bit fields: the page count in bits
    /// 19:0 and the last page length minus one in bits 31:20 (`modular-bitfield`, fields
    /// from the least significant bit; little-endian bytes as the entry stores them).
    #[modular_bitfield::bitfield(bits = 32)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct PageWord {
        /// Number of physical pages (20 bits).
        pub page_count: B20,
        /// Bytes in the last page, minus one (12 bits).
        pub last_page_len_m1: B12,
    }
}

/// Length of an L1 entry \[bytes\] (HVIA-GE paper: 24 bytes).
pub const L1_ENTRY_LEN: usize = field::GENERATION.end;

/// Field table of the L1 entry, in byte order; names match `hvia layout att`.
///
/// `page_count` and `last_page_len` share the packed word at bytes 12..16 (both rows give
/// its range); [`PACKED_FIELDS`] says which bits of it each one holds.
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
        name: "last_page_len",
        range: field::LAST_PAGE_LEN,
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

/// A field packed into some bits of a little-endian word of a layout.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PackedFieldInfo {
    /// Stable, snake_case field name (as in [`FIELDS`]).
    pub name: &'static str,
    /// Byte range of the little-endian word holding the field.
    pub word: Field,
    /// Lowest bit of the field within the word.
    pub shift: u32,
    /// Width of the field \[bits\].
    pub width: u32,
    /// What the stored bits mean (e.g. "value - 1").
    pub encoding: &'static str,
}

/// The fields that share the packed page word at bytes 12..16.
pub const PACKED_FIELDS: &[PackedFieldInfo] = &[
    PackedFieldInfo {
        name: "page_count",
        word: field::PAGE_WORD,
        shift: bits::PAGE_COUNT_SHIFT,
        width: bits::PAGE_COUNT_BITS,
        encoding: "pages, 0..=1048575 (0: the entry covers nothing)",
    },
    PackedFieldInfo {
        name: "last_page_len",
        word: field::PAGE_WORD,
        shift: bits::LAST_PAGE_LEN_SHIFT,
        width: bits::LAST_PAGE_LEN_BITS,
        encoding:
            "bytes of the region in its last page minus one (stored 0..=4095 = 1..=4096 bytes)",
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

    /// The raw packed page word (bytes 12..16).
    pub fn page_word(&self) -> u32 {
        u32_le(self.buffer.as_ref(), field::PAGE_WORD)
    }

    /// Number of physical pages \[pages\], 0..=1 048 575 (bits 19:0 of the page word).
    pub fn page_count(&self) -> u32 {
        PageWord::from_bytes(self.page_word().to_le_bytes()).page_count()
    }

    /// Bytes of the region in its last page \[bytes\], 1..=4096 (bits 31:20 of the page
    /// word, plus one). For a one-page region this is the region's whole length.
    pub fn last_page_len(&self) -> u16 {
        // A 12-bit field: at most 4095, so plus one fits in u16.
        PageWord::from_bytes(self.page_word().to_le_bytes()).last_page_len_m1() + 1
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

/// Packs a page count and a last page length into the page word: `page_count` is masked
/// to 20 bits and `last_page_len - 1` to 12 bits (so 0 is stored as 4096); values
/// outside 0..=1 048 575 and 1..=4096 do not round-trip, and
/// [`AttRegionRepr::build`](super::AttRegionRepr::build) never produces them.
pub fn pack_page_word(page_count: u32, last_page_len: u16) -> u32 {
    #[allow(clippy::cast_possible_truncation)] // masked to 12 bits first
    let last = (u32::from(last_page_len.wrapping_sub(1)) & bits::LAST_PAGE_LEN_MASK) as u16;
    let word = PageWord::new()
        .with_page_count(page_count & bits::PAGE_COUNT_MASK)
        .with_last_page_len_m1(last);
    u32::from_le_bytes(word.into_bytes())
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

    /// Sets the raw packed page word (bytes 12..16).
    pub fn set_page_word(&mut self, v: u32) {
        set_u32_le(self.buffer.as_mut(), field::PAGE_WORD, v);
    }

    /// Sets the number of physical pages (masked to 20 bits; the last page length is kept).
    pub fn set_page_count(&mut self, v: u32) {
        let last = self.last_page_len();
        self.set_page_word(pack_page_word(v, last));
    }

    /// Sets the bytes of the region in its last page, 1..=4096 (see [`pack_page_word`]
    /// for out-of-range values; the page count is kept).
    pub fn set_last_page_len(&mut self, v: u16) {
        let pages = self.page_count();
        self.set_page_word(pack_page_word(pages, v));
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
    /// Number of physical pages \[pages\], 0..=[`L1Repr::MAX_PAGE_COUNT`].
    pub page_count: u32,
    /// Bytes of the region in its last page \[bytes\], 1..=4096; for a one-page region,
    /// the region's whole length.
    pub last_page_len: u16,
    /// Size of the first page \[bytes\], `4096 - start_va % 4096` for a well-formed entry.
    pub first_page_size: u16,
    /// Memory attributes.
    pub attributes: MemAttributes,
    /// Protection tag.
    pub ptag: ProtectionTag,
    /// Memory handle generation.
    pub generation: u16,
}

impl L1Repr {
    /// Largest page count the 20-bit field holds (a region of up to 4 GiB - 4 KiB).
    pub const MAX_PAGE_COUNT: u32 = bits::PAGE_COUNT_MASK;

    /// Reads every field; fails only if the buffer is shorter than 24 bytes.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(entry: &L1Entry<&T>) -> Result<Self, Error> {
        entry.check_len()?;
        Ok(L1Repr {
            start_va: entry.start_va(),
            l2_pointer: entry.l2_pointer(),
            page_count: entry.page_count(),
            last_page_len: entry.last_page_len(),
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

    /// Writes every field (page count and last page length packed by
    /// [`pack_page_word`]).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, entry: &mut L1Entry<T>) {
        entry.set_start_va(self.start_va);
        entry.set_l2_pointer(self.l2_pointer);
        entry.set_page_word(pack_page_word(self.page_count, self.last_page_len));
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

    /// Whether the geometry fields are consistent, so that the entry describes exactly
    /// one region: `1 <= page_count <= MAX_PAGE_COUNT`, `first_page_size == 4096 -
    /// start_va % 4096`, `1 <= last_page_len <= 4096`, for one page `last_page_len <=
    /// first_page_size`, and the region's last byte fits in 64 bits. Attributes, tag and
    /// generation are not looked at. A zeroed entry is not well formed.
    pub fn is_well_formed(&self) -> bool {
        let pages_ok = self.page_count >= 1 && self.page_count <= Self::MAX_PAGE_COUNT;
        let first_ok = self.first_page_size == super::first_page_size(self.start_va);
        let last_ok = self.last_page_len >= 1 && u64::from(self.last_page_len) <= PAGE_SIZE;
        let single_ok = self.page_count != 1 || self.last_page_len <= self.first_page_size;
        pages_ok
            && first_ok
            && last_ok
            && single_ok
            && self
                .start_va
                .checked_add(self.raw_len().saturating_sub(1))
                .is_some()
    }

    /// The length formula on the raw fields (0 for no pages).
    fn raw_len(&self) -> u64 {
        match self.page_count {
            0 => 0,
            1 => u64::from(self.last_page_len),
            n => {
                u64::from(self.first_page_size)
                    + u64::from(n - 2) * PAGE_SIZE
                    + u64::from(self.last_page_len)
            }
        }
    }

    /// Exact length of the region \[bytes\]: `last_page_len` for one page, else
    /// `first_page_size + (page_count - 2) * 4096 + last_page_len`; 0 if the entry is
    /// not well formed ([`L1Repr::is_well_formed`]), so such an entry covers nothing.
    pub fn region_len(&self) -> u64 {
        if self.is_well_formed() {
            self.raw_len()
        } else {
            0
        }
    }

    /// Bytes of the region in page `index` \[bytes\] (the first page's share, whole 4 KB
    /// pages in the middle, `last_page_len` for the last), or `None` if `index` is not a
    /// page of a well-formed entry.
    pub fn page_len(&self, index: u32) -> Option<u32> {
        if !self.is_well_formed() || index >= self.page_count {
            return None;
        }
        let len = if index + 1 == self.page_count {
            u32::from(self.last_page_len)
        } else if index == 0 {
            u32::from(self.first_page_size)
        } else {
            PAGE_SIZE as u32
        };
        Some(len)
    }

    /// Which L2 entry holds `va` and the offset to add to it, or `None` if `va` is outside
    /// `start_va .. start_va + region_len()` (exact, byte-granular bounds) or the entry is
    /// not well formed.
    pub fn locate(&self, va: u64) -> Option<PageSlot> {
        let delta = va.checked_sub(self.start_va)?;
        if delta >= self.region_len() {
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
        self.l2_pointer
            .checked_add(index.checked_mul(L2_ENTRY_LEN as u32)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An L1 entry written by hand from the layout table: a 10 000-byte region at VA
    /// 0x0804_A100, 3 pages, first page 0xF00 bytes, last page 10 000 - 0xF00 - 4096 =
    /// 2064 = 0x810 bytes, RDMA write enabled, ptag 7, generation 1, L2 entries at SDRAM
    /// 0x0010_0000. Page word = 3 | (0x810 - 1) << 20 = 0x80F0_0003.
    const BYTES: [u8; 24] = [
        0x00, 0xA1, 0x04, 0x08, 0x00, 0x00, 0x00, 0x00, // start VA
        0x00, 0x00, 0x10, 0x00, // L2 pointer
        0x03, 0x00, 0xF0, 0x80, // page word: 3 pages, last page 0x810 bytes
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
            last_page_len: 0x810,
            first_page_size: 0xF00,
            attributes: MemAttributes::VALID | MemAttributes::ENABLE_RDMA_WRITE,
            ptag: ProtectionTag(7),
            generation: 1,
        }
    }

    #[test]
    fn field_table_covers_24_bytes() {
        // Rows in byte order, no gaps; the two packed rows share bytes 12..16 exactly.
        let mut next = 0;
        for f in FIELDS {
            let packed = PACKED_FIELDS.iter().any(|p| p.name == f.name);
            if packed && f.range.end == next {
                assert_eq!(f.range, field::PAGE_WORD, "{}", f.name);
                continue;
            }
            assert_eq!(f.range.start, next, "gap or overlap before {}", f.name);
            next = f.range.end;
        }
        assert_eq!(next, 24);
        // The packed fields tile their 32-bit word.
        let mut bit = 0;
        for p in PACKED_FIELDS {
            assert_eq!(p.shift, bit, "{}", p.name);
            bit += p.width;
        }
        assert_eq!(bit, 32);
    }

    #[test]
    fn both_ways() {
        assert_eq!(
            L1Repr::parse(&L1Entry::new_checked(&BYTES[..]).expect("24")),
            Ok(repr())
        );
        assert_eq!(repr().to_bytes(), BYTES);
        let view = L1Entry::new_unchecked(&BYTES[..]);
        assert_eq!(view.page_word(), 0x80F0_0003);
        assert_eq!(view.page_count(), 3);
        assert_eq!(view.last_page_len(), 0x810);
    }

    #[test]
    fn packed_setters_keep_the_other_half() {
        let mut buf = [0u8; 24];
        let mut e = L1Entry::new_unchecked(&mut buf[..]);
        e.set_page_count(0xF_FFFF);
        e.set_last_page_len(4096);
        assert_eq!(e.page_word(), 0xFFFF_FFFF);
        e.set_page_count(1);
        assert_eq!(e.last_page_len(), 4096);
        e.set_last_page_len(1);
        assert_eq!(e.page_count(), 1);
        assert_eq!(e.page_word(), 0x0000_0001);
        // Out-of-range values are masked, never a panic.
        assert_eq!(pack_page_word(0x10_0001, 0), 0xFFF0_0001);
        assert_eq!(pack_page_word(0, 4097), 0);
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
    fn locate_is_exact_to_the_byte() {
        let r = repr();
        assert_eq!(r.region_len(), 10_000);
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
        // Last byte of the region: 0x0804_A100 + 9 999 = 0x0804_C80F, page 2 offset 0x80F.
        assert_eq!(
            r.locate(0x0804_C80F),
            Some(PageSlot {
                index: 2,
                offset: 0x80F
            })
        );
        // One byte past the end, still inside the last page: refused.
        assert_eq!(r.locate(0x0804_C810), None);
        assert_eq!(r.locate(0x0804_CFFF), None);
        assert_eq!(r.locate(0x0804_D000), None);
        assert_eq!(r.page_len(0), Some(0xF00));
        assert_eq!(r.page_len(1), Some(4096));
        assert_eq!(r.page_len(2), Some(0x810));
        assert_eq!(r.page_len(3), None);
        assert_eq!(r.l2_entry_addr(2), Some(0x0010_0008));
        assert_eq!(r.l2_entry_addr(3), None);
    }

    #[test]
    fn malformed_entries_cover_nothing() {
        assert_eq!(L1Repr::default().locate(0), None, "zeroed entry");
        assert!(!L1Repr::default().is_well_formed());
        let bad_first = L1Repr {
            first_page_size: 0x1000,
            ..repr()
        };
        assert_eq!(bad_first.region_len(), 0);
        assert_eq!(bad_first.locate(0x0804_A100), None);
        // One page whose "last page length" runs past the end of that page.
        let one = L1Repr {
            page_count: 1,
            last_page_len: 0xF01,
            ..repr()
        };
        assert!(!one.is_well_formed());
        let one_ok = L1Repr {
            last_page_len: 0xF00,
            ..one
        };
        assert_eq!(one_ok.region_len(), 0xF00);
        assert_eq!(one_ok.page_len(0), Some(0xF00));
        // A region whose last byte would pass 2^64.
        let wrap = L1Repr {
            start_va: u64::MAX - 0xFFF,
            first_page_size: 0x1000,
            page_count: 2,
            last_page_len: 1,
            ..repr()
        };
        assert!(!wrap.is_well_formed());
        let too_many = L1Repr {
            page_count: L1Repr::MAX_PAGE_COUNT + 1,
            ..repr()
        };
        assert!(!too_many.is_well_formed());
    }

    proptest! {
        #[test]
        fn round_trip(va in any::<u64>(), l2 in any::<u32>(), pages in 0..=L1Repr::MAX_PAGE_COUNT,
                      last in 1u16..=4096, fps in any::<u16>(), attr in any::<u16>(),
                      ptag in any::<u16>(), generation in any::<u16>()) {
            let r = L1Repr {
                start_va: va, l2_pointer: l2, page_count: pages, last_page_len: last,
                first_page_size: fps, attributes: MemAttributes::from_bits_retain(attr),
                ptag: ProtectionTag(ptag), generation,
            };
            let bytes = r.to_bytes();
            prop_assert_eq!(L1Repr::parse(&L1Entry::new_unchecked(&bytes[..])), Ok(r));
        }

        #[test]
        fn bytes_round_trip(bytes in proptest::array::uniform24(any::<u8>())) {
            let r = L1Repr::parse(&L1Entry::new_unchecked(&bytes[..])).expect("24 bytes");
            prop_assert_eq!(r.to_bytes(), bytes);
        }

        #[test]
        fn locate_never_panics_nor_leaves_the_region(
            bytes in proptest::array::uniform24(any::<u8>()), va in any::<u64>()) {
            let r = L1Repr::parse(&L1Entry::new_unchecked(&bytes[..])).expect("24 bytes");
            if let Some(slot) = r.locate(va) {
                prop_assert!(slot.index < r.page_count);
                let page = r.page_len(slot.index).expect("well formed");
                prop_assert!(slot.offset < page);
                prop_assert!(va - r.start_va < r.region_len());
            }
        }
    }
}
