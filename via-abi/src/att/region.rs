//! Building both ATT levels for one registration (`VipRegisterMem`): from a region
//! (start VA, length, the physical address of each page it touches) to the L1 entry and
//! the L2 entries the ATT manager writes into SDRAM. Also the reference translation
//! VA -> PA over the result, used to test the ATT manager.

use super::l1::{L1Repr, L1_ENTRY_LEN};
use super::l2::{L2Entry, L2Repr, L2_ENTRY_LEN};
use super::{first_page_size, last_page_len, page_count, page_offset, AttError};
use crate::handle::{MemAttributes, MemHandle, ProtectionTag};

/// What a registration provides: the region and the values to store with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RegionSpec<'a> {
    /// Starting virtual address of the region.
    pub va: u64,
    /// Length of the region \[bytes\], at least 1.
    pub len: u64,
    /// One physical address per page the region touches: the first is the region's own
    /// physical start (same offset within its page as `va`), the others page bases.
    pub pages: &'a [u64],
    /// Memory attributes to store (include [`MemAttributes::VALID`] for a live entry).
    pub attributes: MemAttributes,
    /// Protection tag to store.
    pub ptag: ProtectionTag,
    /// Handle generation to store, 1..=4095.
    pub generation: u16,
    /// SDRAM byte address where the L2 entries will be written (4-byte aligned).
    pub l2_pointer: u32,
}

/// The ATT entries of one registered region: its L1 entry and its L2 entries in order.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct AttRegionRepr {
    /// The level-1 entry.
    pub l1: L1Repr,
    /// The level-2 entries, one per page, written consecutively from `l1.l2_pointer`.
    pub l2: Vec<L2Repr>,
}

impl AttRegionRepr {
    /// Builds the entries for `spec`, checking in this order: generation in 1..=4095,
    /// 4-byte aligned L2 pointer, length >= 1 and no address overflow (see
    /// [`page_count`]), at most [`L1Repr::MAX_PAGE_COUNT`] pages, one physical address
    /// per page, every physical address within 32
    /// bits, the first with the VA's page offset, the others page aligned, and the L2
    /// table within the 32-bit SDRAM address space.
    pub fn build(spec: &RegionSpec<'_>) -> Result<Self, AttError> {
        if spec.generation == 0 || spec.generation > MemHandle::MAX_GENERATION {
            return Err(AttError::InvalidGeneration(spec.generation));
        }
        if spec.l2_pointer % 4 != 0 {
            return Err(AttError::UnalignedL2Pointer(spec.l2_pointer));
        }
        let pages = page_count(spec.va, spec.len)?;
        if pages > L1Repr::MAX_PAGE_COUNT {
            return Err(AttError::TooManyPages {
                pages: u64::from(pages),
            });
        }
        let last_len = last_page_len(spec.va, spec.len)?;
        if usize::try_from(pages).ok() != Some(spec.pages.len()) {
            return Err(AttError::PageListLength {
                expected: pages,
                got: spec.pages.len(),
            });
        }
        let mut l2 = Vec::with_capacity(spec.pages.len());
        for (index, &pa) in spec.pages.iter().enumerate() {
            let phys_addr =
                u32::try_from(pa).map_err(|_| AttError::PhysAddrTooWide { index, pa })?;
            if index == 0 {
                if page_offset(pa) != page_offset(spec.va) {
                    return Err(AttError::FirstPageOffset {
                        pa,
                        pa_offset: page_offset(pa),
                        va_offset: page_offset(spec.va),
                    });
                }
            } else if page_offset(pa) != 0 {
                return Err(AttError::UnalignedPage { index, pa });
            }
            l2.push(L2Repr { phys_addr });
        }
        let table_end = u64::from(spec.l2_pointer) + u64::from(pages) * L2_ENTRY_LEN as u64;
        if table_end > u64::from(u32::MAX) + 1 {
            return Err(AttError::L2TableOverflow {
                l2_pointer: spec.l2_pointer,
                entries: pages,
            });
        }
        let l1 = L1Repr {
            start_va: spec.va,
            l2_pointer: spec.l2_pointer,
            page_count: pages,
            last_page_len: last_len,
            first_page_size: first_page_size(spec.va),
            attributes: spec.attributes,
            ptag: spec.ptag,
            generation: spec.generation,
        };
        Ok(AttRegionRepr { l1, l2 })
    }

    /// The 24 bytes of the L1 entry.
    pub fn l1_bytes(&self) -> [u8; L1_ENTRY_LEN] {
        self.l1.to_bytes()
    }

    /// The L2 entries as the bytes written from `l1.l2_pointer` (4 bytes each).
    pub fn l2_bytes(&self) -> Vec<u8> {
        let mut buf = vec![0u8; self.l2.len().saturating_mul(L2_ENTRY_LEN)];
        for (entry, chunk) in self.l2.iter().zip(buf.chunks_exact_mut(L2_ENTRY_LEN)) {
            entry.emit(&mut L2Entry::new_unchecked(chunk));
        }
        buf
    }

    /// Reference translation of `va` to a physical address: pick the L2 entry of the page
    /// holding `va` and add the offset. `None` outside the region (exact, byte-granular
    /// bounds, see [`L1Repr::locate`]), if the L2 list is shorter than the page count, or
    /// on 32-bit overflow.
    /// Attribute, tag and generation checks are the ATT manager's, not done here.
    pub fn translate(&self, va: u64) -> Option<u32> {
        let slot = self.l1.locate(va)?;
        let entry = self.l2.get(usize::try_from(slot.index).ok()?)?;
        entry.phys_addr.checked_add(slot.offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::att::PAGE_SIZE;
    use proptest::prelude::*;

    fn spec(va: u64, len: u64, pages: &[u64]) -> RegionSpec<'_> {
        RegionSpec {
            va,
            len,
            pages,
            attributes: MemAttributes::VALID | MemAttributes::ENABLE_RDMA_WRITE,
            ptag: ProtectionTag(7),
            generation: 1,
            l2_pointer: 0x0010_0000,
        }
    }

    #[test]
    fn three_page_region_from_hand() {
        // 10 000 bytes at VA 0x0804_A100: 0xF00 bytes in the first page, then two pages.
        let pages = [0x053A_7100, 0x0123_4000, 0x0777_0000];
        let r = AttRegionRepr::build(&spec(0x0804_A100, 10_000, &pages)).expect("valid");
        assert_eq!(r.l1.page_count, 3);
        assert_eq!(r.l1.first_page_size, 0xF00);
        // 10 000 - 0xF00 - 4096 = 2064 = 0x810 bytes in the last page.
        assert_eq!(r.l1.last_page_len, 0x810);
        assert_eq!(r.l1.start_va, 0x0804_A100);
        assert_eq!(r.l1.region_len(), 10_000);
        assert_eq!(
            r.l1_bytes(),
            [
                0x00, 0xA1, 0x04, 0x08, 0, 0, 0, 0, // start VA
                0x00, 0x00, 0x10, 0x00, // L2 pointer
                0x03, 0x00, 0xF0, 0x80, // page word 0x80F0_0003: 3 pages, last 0x810 bytes
                0x00, 0x0F, // first page size
                0x03, 0x00, 0x07, 0x00, 0x01, 0x00, // attributes, ptag, generation
            ]
        );
        assert_eq!(
            r.l2_bytes(),
            vec![0x00, 0x71, 0x3A, 0x05, 0x00, 0x40, 0x23, 0x01, 0x00, 0x00, 0x77, 0x07]
        );
        assert_eq!(r.translate(0x0804_A100), Some(0x053A_7100));
        assert_eq!(r.translate(0x0804_AFFF), Some(0x053A_7FFF));
        assert_eq!(r.translate(0x0804_B000), Some(0x0123_4000));
        assert_eq!(r.translate(0x0804_C80F), Some(0x0777_080F), "last byte");
        assert_eq!(r.translate(0x0804_C810), None, "one byte past the end");
        assert_eq!(r.translate(0x0804_A0FF), None);
        assert_eq!(r.translate(0x0804_D000), None);
    }

    #[test]
    fn rejects_bad_page_lists() {
        let va = 0x0804_A100;
        assert_eq!(
            AttRegionRepr::build(&spec(va, 10_000, &[0x053A_7100, 0x0123_4000])),
            Err(AttError::PageListLength {
                expected: 3,
                got: 2
            })
        );
        assert_eq!(
            AttRegionRepr::build(&spec(va, 10, &[0x053A_7000])),
            Err(AttError::FirstPageOffset {
                pa: 0x053A_7000,
                pa_offset: 0,
                va_offset: 0x100
            })
        );
        assert_eq!(
            AttRegionRepr::build(&spec(va, 4000, &[0x053A_7100, 0x0123_4008])),
            Err(AttError::UnalignedPage {
                index: 1,
                pa: 0x0123_4008
            })
        );
        assert_eq!(
            AttRegionRepr::build(&spec(va, 10, &[0x1_053A_7100])),
            Err(AttError::PhysAddrTooWide {
                index: 0,
                pa: 0x1_053A_7100
            })
        );
        assert_eq!(
            AttRegionRepr::build(&spec(va, 0, &[])),
            Err(AttError::ZeroLength)
        );
        assert_eq!(
            AttRegionRepr::build(&spec(u64::MAX, 2, &[0xFFF, 0x1000])),
            Err(AttError::AddressOverflow {
                va: u64::MAX,
                len: 2
            })
        );
    }

    #[test]
    fn rejects_regions_beyond_the_20_bit_page_count() {
        // 2^20 pages from a page-aligned VA: one more than the L1 page count holds.
        let len = (u64::from(L1Repr::MAX_PAGE_COUNT) + 1) * PAGE_SIZE;
        assert_eq!(
            AttRegionRepr::build(&spec(0x1000, len, &[])),
            Err(AttError::TooManyPages { pages: 1 << 20 })
        );
        assert_eq!(
            AttRegionRepr::build(&spec(0x1000, len - PAGE_SIZE, &[])),
            Err(AttError::PageListLength {
                expected: L1Repr::MAX_PAGE_COUNT,
                got: 0
            })
        );
    }

    #[test]
    fn rejects_bad_bookkeeping() {
        let pages = [0x100];
        let mut s = spec(0x100, 1, &pages);
        s.generation = 0;
        assert_eq!(
            AttRegionRepr::build(&s),
            Err(AttError::InvalidGeneration(0))
        );
        s.generation = 0x1000;
        assert_eq!(
            AttRegionRepr::build(&s),
            Err(AttError::InvalidGeneration(0x1000))
        );
        s.generation = 0xFFF;
        s.l2_pointer = 2;
        assert_eq!(
            AttRegionRepr::build(&s),
            Err(AttError::UnalignedL2Pointer(2))
        );
        s.l2_pointer = u32::MAX - 3;
        assert!(AttRegionRepr::build(&s).is_ok(), "last word of SDRAM space");
        let two = [0x100, 0x1000];
        let mut s = spec(0x100, 4000, &two);
        s.l2_pointer = u32::MAX - 3;
        assert_eq!(
            AttRegionRepr::build(&s),
            Err(AttError::L2TableOverflow {
                l2_pointer: u32::MAX - 3,
                entries: 2
            })
        );
    }

    /// Regions with random, page-scattered physical pages (32-bit).
    fn arb_region() -> impl Strategy<Value = (u64, u64, Vec<u64>)> {
        (0u64..(1 << 48), 1u64..40_000).prop_flat_map(|(va, len)| {
            let n = page_count(va, len).expect("small region") as usize;
            (
                Just(va),
                Just(len),
                proptest::collection::vec(0u64..0xFFFFF, n).prop_map(move |frames| {
                    frames
                        .iter()
                        .enumerate()
                        .map(|(i, f)| f * PAGE_SIZE + if i == 0 { page_offset(va) } else { 0 })
                        .collect::<Vec<_>>()
                }),
            )
        })
    }

    proptest! {
        #[test]
        fn translation_matches_naive_walk((va, len, pages) in arb_region(), probe in any::<u64>()) {
            let r = AttRegionRepr::build(&spec(va, len, &pages)).expect("valid region");
            prop_assert_eq!(r.l2.len(), pages.len());
            prop_assert_eq!(r.l1.region_len(), len);
            prop_assert!(r.l1.is_well_formed());
            // First byte, last byte and one random byte of the region against the naive rule.
            let off = probe % len;
            for o in [0, off, len - 1] {
                let a = va + o;
                let page = (a / PAGE_SIZE - va / PAGE_SIZE) as usize;
                let expect = if page == 0 { pages[0] + o } else { pages[page] + a % PAGE_SIZE };
                prop_assert_eq!(r.translate(a).map(u64::from), Some(expect));
            }
            if va > 0 {
                prop_assert_eq!(r.translate(va - 1), None);
            }
            // Exact bounds: the byte right after the region is refused, even when it lies
            // in the region's last page.
            prop_assert_eq!(r.translate(va + len), None);
        }

        #[test]
        fn l1_and_l2_bytes_parse_back((va, len, pages) in arb_region()) {
            let r = AttRegionRepr::build(&spec(va, len, &pages)).expect("valid region");
            let l1 = L1Repr::parse(&crate::att::L1Entry::new_unchecked(&r.l1_bytes()[..]));
            prop_assert_eq!(l1, Ok(r.l1));
            prop_assert_eq!(L2Repr::parse_table(&r.l2_bytes()), Ok(r.l2.clone()));
        }

        #[test]
        fn build_never_panics(va in any::<u64>(), len in any::<u64>(),
                              pages in proptest::collection::vec(any::<u64>(), 0..4),
                              generation in any::<u16>(), l2_pointer in any::<u32>()) {
            let s = RegionSpec { generation, l2_pointer, ..spec(va, len, &pages) };
            if let Ok(r) = AttRegionRepr::build(&s) {
                prop_assert_eq!(r.l2.len(), pages.len());
                let _ = r.translate(va);
            }
        }
    }
}
