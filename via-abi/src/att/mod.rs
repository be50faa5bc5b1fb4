//! The address translation table (ATT) that HVIA-GE keeps in its card SDRAM: two levels,
//! both little-endian (HVIA-GE paper; field order and widths are a design choice).
//!
//! * **Level 1** ([`L1Entry`], 24 bytes): one per registered region, found by the
//!   memory handle's index (see [`crate::handle`]). The paper lists its contents (number
//!   of physical pages, size of the first page, memory attributes, starting VA, pointer to
//!   the L2 entries) but not their order; this crate fixes it, adding the protection tag
//!   and the handle generation in the bytes left:
//!
//!   | bytes | bits | field | name | unit |
//!   |---|---|---|---|---|
//!   | 0..8 | | starting virtual address | `start_va` | host VA |
//!   | 8..12 | | SDRAM byte address of the first L2 entry | `l2_pointer` | card SDRAM address |
//!   | 12..16 | 19:0 | number of physical pages (0..=1 048 575; 0 = empty entry) | `page_count` | pages |
//!   | 12..16 | 31:20 | bytes of the region in its last page, minus one (1..=4096 stored as 0..=4095) | `last_page_len` | bytes |
//!   | 16..18 | | size of the first page (`4096 - start_va % 4096`, 1..=4096) | `first_page_size` | bytes |
//!   | 18..20 | | memory attributes ([`MemAttributes`](crate::handle::MemAttributes)) | `attributes` | flags |
//!   | 20..22 | | protection tag | `ptag` | - |
//!   | 22..24 | | handle generation (1..=4095) | `generation` | - |
//!
//!   Bytes 12..16 are one little-endian 32-bit word ([`l1_field::PAGE_WORD`]) packing the
//!   page count and the last page length ([`L1_PACKED_FIELDS`]).
//!
//! * **Level 2** ([`L2Entry`], 4 bytes): one per physical page of the region, stored
//!   consecutively from `l2_pointer`: the 32-bit physical address where the region's
//!   piece in that page starts (the region's own start, with the VA's page offset, for
//!   the first page; the page base for every later page).
//!
//! **Bounds are exact to the byte** (design choice): the paper's L1 contents (page count,
//! first page size) only bound a region to its last page, which would let a write past
//! the registered length but inside the last page through. The last page length closes
//! that gap, so the region is exactly `start_va .. start_va + len` with
//! `len = last_page_len` for one page and `first_page_size + (page_count - 2) * 4096 +
//! last_page_len` otherwise ([`L1Repr::region_len`]). An entry whose geometry fields
//! disagree ([`L1Repr::is_well_formed`]) covers nothing.
//!
//! Files: `l1` (L1 view and repr), `l2` (L2 view and repr), `region` (building both levels
//! for one registration), this file (page arithmetic and [`AttError`]).

mod l1;
mod l2;
mod region;

pub use l1::{
    bits as l1_bits, field as l1_field, pack_page_word, L1Entry, L1Repr, PackedFieldInfo, PageSlot,
    FIELDS as L1_FIELDS, L1_ENTRY_LEN, PACKED_FIELDS as L1_PACKED_FIELDS,
};
pub use l2::{field as l2_field, L2Entry, L2Repr, FIELDS as L2_FIELDS, L2_ENTRY_LEN};
pub use region::{AttRegionRepr, RegionSpec};

/// Host page size \[bytes\] (x86 4 KB pages, HVIA-GE paper).
pub const PAGE_SIZE: u64 = 4096;

/// Problems with a region or an ATT computation. None of them panics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum AttError {
    /// A region must be at least one byte long.
    #[error("region length is 0")]
    ZeroLength,
    /// `va + len` does not fit in 64 bits.
    #[error("region {va:#x} + {len:#x} overflows the 64-bit address space")]
    AddressOverflow {
        /// Start virtual address.
        va: u64,
        /// Length \[bytes\].
        len: u64,
    },
    /// The region touches more pages than the L1 page count can hold (32 bits for
    /// [`page_count`], 20 bits, 1 048 575 pages, for an L1 entry).
    #[error("region touches {pages} pages, more than the L1 page count can hold")]
    TooManyPages {
        /// Pages the region touches.
        pages: u64,
    },
    /// The page list does not have one entry per page the region touches.
    #[error("expected {expected} physical pages, got {got}")]
    PageListLength {
        /// Pages the region touches.
        expected: u32,
        /// Entries given.
        got: usize,
    },
    /// The first physical address does not have the start VA's offset within its page.
    #[error(
        "first physical address {pa:#x} has page offset {pa_offset:#x}, the VA has {va_offset:#x}"
    )]
    FirstPageOffset {
        /// The first physical address given.
        pa: u64,
        /// Its offset within its page \[bytes\].
        pa_offset: u64,
        /// The start VA's offset within its page \[bytes\].
        va_offset: u64,
    },
    /// A later physical address is not a page base.
    #[error("physical page {index} at {pa:#x} is not 4 KB aligned")]
    UnalignedPage {
        /// Position in the page list.
        index: usize,
        /// The address given.
        pa: u64,
    },
    /// A physical address does not fit the 32-bit L2 entry (32-bit PCI addressing).
    #[error("physical address {pa:#x} (page {index}) does not fit in 32 bits")]
    PhysAddrTooWide {
        /// Position in the page list.
        index: usize,
        /// The address given.
        pa: u64,
    },
    /// Generations are 1..=4095 (see [`crate::handle::MemHandle`]).
    #[error("generation {0} is outside 1..=4095")]
    InvalidGeneration(u16),
    /// Design choice: L2 entries are 32-bit words, so the L2 pointer is 4-byte aligned.
    #[error("L2 pointer {0:#x} is not 4-byte aligned")]
    UnalignedL2Pointer(u32),
    /// The L2 entries would run past the 32-bit SDRAM address space.
    #[error("{entries} L2 entries at {l2_pointer:#x} overflow the 32-bit SDRAM address space")]
    L2TableOverflow {
        /// SDRAM address of the first L2 entry.
        l2_pointer: u32,
        /// Number of entries.
        entries: u32,
    },
}

/// Offset of `va` within its 4 KB page \[bytes\].
pub const fn page_offset(va: u64) -> u64 {
    va % PAGE_SIZE
}

/// Size of the first page of a region starting at `va` \[bytes\]: the bytes from `va` to the
/// end of its page, `4096 - va % 4096`, always in 1..=4096 (HVIA-GE paper).
pub const fn first_page_size(va: u64) -> u16 {
    // PAGE_SIZE - page_offset is in 1..=4096, which fits in u16.
    (PAGE_SIZE - page_offset(va)) as u16
}

/// Bytes of a region of `len` bytes starting at `va` that lie in its last page
/// \[bytes\], 1..=4096: the whole length for a one-page region. Same errors as
/// [`page_count`].
pub fn last_page_len(va: u64, len: u64) -> Result<u16, AttError> {
    let pages = page_count(va, len)?;
    // page_count succeeded, so len >= 1 and va + len - 1 fits in 64 bits.
    let last = va + (len - 1);
    let start_in_page = if pages == 1 { page_offset(va) } else { 0 };
    // page_offset(last) >= start_in_page; the difference + 1 is in 1..=4096.
    let n = page_offset(last) - start_in_page + 1;
    u16::try_from(n).map_err(|_| AttError::TooManyPages {
        pages: u64::from(pages),
    })
}

/// Number of 4 KB pages a region of `len` bytes starting at `va` touches.
///
/// Errors: [`AttError::ZeroLength`] if `len == 0`, [`AttError::AddressOverflow`] if the
/// last byte `va + len - 1` does not fit in 64 bits, [`AttError::TooManyPages`] if the
/// count does not fit in 32 bits.
pub fn page_count(va: u64, len: u64) -> Result<u32, AttError> {
    let last_offset = len.checked_sub(1).ok_or(AttError::ZeroLength)?;
    let last = va
        .checked_add(last_offset)
        .ok_or(AttError::AddressOverflow { va, len })?;
    // last >= va, so this cannot underflow; +1 cannot overflow (at most 2^52).
    let pages = last / PAGE_SIZE - va / PAGE_SIZE + 1;
    u32::try_from(pages).map_err(|_| AttError::TooManyPages { pages })
}

/// SDRAM byte address of L1 entry `index` in a table starting at `table_base`
/// (`table_base + 24 * index`), or `None` if it overflows 32 bits.
pub fn l1_entry_addr(table_base: u32, index: u32) -> Option<u32> {
    let offset = u32::try_from(L1_ENTRY_LEN).ok()?.checked_mul(index)?;
    table_base.checked_add(offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn first_page_sizes() {
        assert_eq!(first_page_size(0x1000), 4096);
        assert_eq!(first_page_size(0x1001), 4095);
        assert_eq!(first_page_size(0x1FFF), 1);
        assert_eq!(first_page_size(u64::MAX), 1);
    }

    #[test]
    fn page_counts() {
        assert_eq!(page_count(0x1000, 1), Ok(1));
        assert_eq!(page_count(0x1000, 4096), Ok(1));
        assert_eq!(page_count(0x1000, 4097), Ok(2));
        assert_eq!(page_count(0x1FFF, 2), Ok(2));
        assert_eq!(page_count(0x1FFF, 1), Ok(1));
        assert_eq!(page_count(0x1800, 8192), Ok(3));
        assert_eq!(page_count(0x1000, 0), Err(AttError::ZeroLength));
        assert_eq!(
            page_count(u64::MAX, 2),
            Err(AttError::AddressOverflow {
                va: u64::MAX,
                len: 2
            })
        );
        assert_eq!(page_count(u64::MAX, 1), Ok(1));
        assert_eq!(
            page_count(0, u64::MAX),
            Err(AttError::TooManyPages { pages: 1 << 52 })
        );
    }

    #[test]
    fn last_page_lengths() {
        assert_eq!(last_page_len(0x1000, 1), Ok(1));
        assert_eq!(last_page_len(0x1000, 4096), Ok(4096));
        assert_eq!(last_page_len(0x1000, 4097), Ok(1));
        assert_eq!(last_page_len(0x1FFF, 2), Ok(1));
        assert_eq!(last_page_len(0x1800, 0x800), Ok(0x800));
        assert_eq!(last_page_len(0x1800, 0x801), Ok(1));
        assert_eq!(last_page_len(0x1800, 8192), Ok(0x800));
        assert_eq!(last_page_len(0x1000, 0), Err(AttError::ZeroLength));
    }

    #[test]
    fn l1_entry_addresses() {
        assert_eq!(l1_entry_addr(0x100, 0), Some(0x100));
        assert_eq!(l1_entry_addr(0x100, 2), Some(0x100 + 48));
        assert_eq!(l1_entry_addr(u32::MAX, 1), None);
        assert_eq!(l1_entry_addr(0, u32::MAX), None);
    }

    proptest! {
        #[test]
        fn page_count_matches_naive(va in 0u64..(1 << 40), len in 1u64..20_000) {
            // Walk every byte and count page-number changes.
            let mut naive = 0u32;
            let mut prev = None;
            for a in va..va + len {
                if prev != Some(a / PAGE_SIZE) {
                    naive += 1;
                    prev = Some(a / PAGE_SIZE);
                }
            }
            prop_assert_eq!(page_count(va, len), Ok(naive));
            // Bytes in the last page: count them one by one.
            let last_page = (va + len - 1) / PAGE_SIZE;
            let in_last = (va..va + len).filter(|a| a / PAGE_SIZE == last_page).count() as u64;
            prop_assert_eq!(last_page_len(va, len).map(u64::from), Ok(in_last));
        }

        #[test]
        fn page_count_never_panics(va in any::<u64>(), len in any::<u64>()) {
            let _ = page_count(va, len);
            let fps = first_page_size(va);
            prop_assert!((1..=4096).contains(&fps));
        }
    }
}
