//! Per-process page tables: virtual 4 KB pages mapped to scattered physical frames.
//!
//! [`PageTable::pages_of`] gives the physical page list of a buffer in exactly the form
//! the HVIA-GE address translation table stores (hardware.md, "Address translation
//! table"): the first entry is the physical address of the buffer's first byte (same
//! offset within its page as the virtual address), each later entry is the base of the
//! next page. [`page_segments`] turns such a list back into physically contiguous pieces
//! and is the reference for which lists are valid: its checks are [`check_page_list`],
//! which the DMA master's burst plan in `dma.rs` also calls before it computes the pieces
//! by arithmetic; [`PageTable::segments`] builds the same pieces straight from the table
//! without a page list in between.

use crate::error::MemError;
use crate::memory::{page_base, HostMemory, PAGE_SIZE};
use std::collections::BTreeMap;

/// One physically contiguous piece of a transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhysSegment {
    /// First byte [physical address].
    pub addr: u64,
    /// Length \[bytes\], never crossing a 4 KB boundary.
    pub len: u64,
}

/// Virtual-to-physical mapping of one process (4 KB pages).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageTable {
    map: BTreeMap<u64, u64>,
}

impl PageTable {
    /// An empty page table.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of mapped pages.
    #[must_use]
    pub fn mapped_pages(&self) -> usize {
        self.map.len()
    }

    /// Maps every page that `[va, va + len)` touches and is not mapped yet to a fresh
    /// frame from `mem`'s allocator.
    ///
    /// # Errors
    /// Overflow, or the memory has no free frame left (pages mapped so far stay mapped).
    pub fn map_range(&mut self, va: u64, len: u64, mem: &mut HostMemory) -> Result<(), MemError> {
        if len == 0 {
            return Ok(());
        }
        let last = va
            .checked_add(len - 1)
            .ok_or(MemError::Overflow { addr: va, len })?;
        let mut page = page_base(va);
        loop {
            if let std::collections::btree_map::Entry::Vacant(e) = self.map.entry(page) {
                e.insert(mem.alloc_frame()?);
            }
            if page == page_base(last) {
                return Ok(());
            }
            page += PAGE_SIZE;
        }
    }

    /// Maps the virtual page holding `va` to the frame holding `pa`.
    ///
    /// # Errors
    /// The virtual page is already mapped.
    pub fn map_page(&mut self, va: u64, pa: u64) -> Result<(), MemError> {
        let vp = page_base(va);
        if self.map.contains_key(&vp) {
            return Err(MemError::AlreadyMapped { va: vp });
        }
        self.map.insert(vp, page_base(pa));
        Ok(())
    }

    /// The physical address of `va`.
    ///
    /// # Errors
    /// The page is not mapped.
    pub fn translate(&self, va: u64) -> Result<u64, MemError> {
        self.map
            .get(&page_base(va))
            .map(|frame| frame + va % PAGE_SIZE)
            .ok_or(MemError::Unmapped { va })
    }

    /// The physical page list of `[va, va + len)`: entry 0 is the physical address of
    /// `va`, each later entry the base of the next page. Empty for `len == 0`.
    ///
    /// # Errors
    /// Overflow or an unmapped page.
    pub fn pages_of(&self, va: u64, len: u64) -> Result<Vec<u64>, MemError> {
        if len == 0 {
            return Ok(Vec::new());
        }
        let last = va
            .checked_add(len - 1)
            .ok_or(MemError::Overflow { addr: va, len })?;
        let mut pages = vec![self.translate(va)?];
        let mut page = page_base(va);
        while page != page_base(last) {
            page += PAGE_SIZE;
            pages.push(self.translate(page)?);
        }
        Ok(pages)
    }

    /// The physically contiguous pieces of `[va, va + len)`.
    ///
    /// # Errors
    /// Overflow or an unmapped page.
    pub fn segments(&self, va: u64, len: u64) -> Result<Vec<PhysSegment>, MemError> {
        // What `page_segments(&self.pages_of(va, len)?, len)` gives, errors included,
        // with one vector instead of two: every page is translated first (an unmapped
        // page wins over an overflow), then each piece is checked in order.
        if len == 0 {
            return Ok(Vec::new());
        }
        let last = va
            .checked_add(len - 1)
            .ok_or(MemError::Overflow { addr: va, len })?;
        let pages = (page_base(last) - page_base(va)) / PAGE_SIZE + 1;
        // No more room than the table has pages: a huge range fails at its first
        // unmapped page without a huge allocation first.
        let room = pages.min(self.map.len() as u64);
        let mut segs = Vec::with_capacity(usize::try_from(room).unwrap_or(0));
        let mut addr = self.translate(va)?;
        let mut page = page_base(va);
        let mut left = len;
        loop {
            let n = (PAGE_SIZE - addr % PAGE_SIZE).min(left);
            segs.push(PhysSegment { addr, len: n });
            left -= n;
            if left == 0 {
                break;
            }
            page += PAGE_SIZE;
            addr = self.translate(page)?;
        }
        for s in &segs {
            s.addr.checked_add(s.len).ok_or(MemError::Overflow {
                addr: s.addr,
                len: s.len,
            })?;
        }
        Ok(segs)
    }

    /// The pieces of [`PageTable::segments`], one at a time: the whole range is
    /// checked first, with the same errors in the same order (every page is
    /// translated, and an unmapped page wins over an overflow; then each piece is
    /// checked in order), so an error is known before the first piece is used. A range
    /// of one or two pages (nearly every access of a program) needs no vector: its
    /// pieces are kept as the check finds them.
    ///
    /// # Errors
    /// Overflow or an unmapped page.
    pub fn pieces(&self, va: u64, len: u64) -> Result<Pieces, MemError> {
        if len == 0 {
            return Ok(Pieces(Walk::Listed(Vec::new().into_iter())));
        }
        let last = va
            .checked_add(len - 1)
            .ok_or(MemError::Overflow { addr: va, len })?;
        if page_base(last) - page_base(va) > PAGE_SIZE {
            return Ok(Pieces(Walk::Listed(self.segments(va, len)?.into_iter())));
        }
        let addr = self.translate(va)?;
        let n = (PAGE_SIZE - addr % PAGE_SIZE).min(len);
        let first = PhysSegment { addr, len: n };
        let first_overflows = addr.checked_add(n).is_none();
        let mut few = Walk::Few {
            segs: [first, first],
            count: 1,
            next: 0,
        };
        if n < len {
            // The second page's frame: page-aligned, so its piece is the rest.
            let second = PhysSegment {
                addr: self.translate(page_base(va) + PAGE_SIZE)?,
                len: len - n,
            };
            if !first_overflows && second.addr.checked_add(second.len).is_none() {
                return Err(MemError::Overflow {
                    addr: second.addr,
                    len: second.len,
                });
            }
            few = Walk::Few {
                segs: [first, second],
                count: 2,
                next: 0,
            };
        }
        if first_overflows {
            return Err(MemError::Overflow { addr, len: n });
        }
        Ok(Pieces(few))
    }

    /// Reads `buf.len()` bytes of virtual memory at `va`.
    ///
    /// # Errors
    /// Unmapped pages or physical range errors.
    pub fn read(&self, mem: &HostMemory, va: u64, buf: &mut [u8]) -> Result<(), MemError> {
        let mut done = 0usize;
        for seg in self.pieces(va, buf.len() as u64)? {
            let n = usize::try_from(seg.len).unwrap_or(usize::MAX);
            mem.read(seg.addr, &mut buf[done..done + n])?;
            done += n;
        }
        Ok(())
    }

    /// Writes `data` to virtual memory at `va`.
    ///
    /// # Errors
    /// Unmapped pages or physical range errors (pieces before the error are written).
    pub fn write(&self, mem: &mut HostMemory, va: u64, data: &[u8]) -> Result<(), MemError> {
        let mut done = 0usize;
        for seg in self.pieces(va, data.len() as u64)? {
            let n = usize::try_from(seg.len).unwrap_or(usize::MAX);
            mem.write(seg.addr, &data[done..done + n])?;
            done += n;
        }
        Ok(())
    }
}

/// The physically contiguous pieces of a checked range ([`PageTable::pieces`]), in
/// order: a piece per page the range touches.
#[derive(Clone, Debug)]
pub struct Pieces(Walk);

/// Where [`Pieces`] keeps its pieces.
#[derive(Clone, Debug)]
enum Walk {
    /// The first `count` of `segs` (a range of one or two pages), from `next` on.
    Few {
        segs: [PhysSegment; 2],
        count: usize,
        next: usize,
    },
    /// A list made when the range was checked (a longer range, or none).
    Listed(std::vec::IntoIter<PhysSegment>),
}

impl Iterator for Pieces {
    type Item = PhysSegment;

    fn next(&mut self) -> Option<PhysSegment> {
        match &mut self.0 {
            Walk::Listed(list) => list.next(),
            Walk::Few { segs, count, next } => {
                let seg = segs.get(*next).filter(|_| *next < *count).copied()?;
                *next += 1;
                Some(seg)
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = match &self.0 {
            Walk::Listed(list) => list.len(),
            Walk::Few { count, next, .. } => count.saturating_sub(*next),
        };
        (n, Some(n))
    }
}

impl ExactSizeIterator for Pieces {}

/// Splits a transfer of `len` bytes described by an ATT-style page list (entry 0 = the
/// physical start, later entries = page bases) into page-bounded physical segments.
///
/// # Errors
/// The list is too short, a later entry is not page-aligned, or an address overflows.
pub fn page_segments(pages: &[u64], len: u64) -> Result<Vec<PhysSegment>, MemError> {
    if len == 0 {
        return Ok(Vec::new());
    }
    let first_len = check_page_list(pages, len)?;
    let pieces = 1 + (len - first_len).div_ceil(PAGE_SIZE);
    let mut segs = Vec::with_capacity(usize::try_from(pieces).map_or(0, |n| n.min(pages.len())));
    let mut left = len;
    for (i, &addr) in pages.iter().enumerate() {
        if left == 0 {
            break;
        }
        let n = if i == 0 {
            first_len
        } else {
            left.min(PAGE_SIZE)
        };
        segs.push(PhysSegment { addr, len: n });
        left -= n;
    }
    Ok(segs)
}

/// Checks the page list of a transfer of `len` (> 0) bytes as [`page_segments`] reads
/// it, and returns the bytes of its first piece (from entry 0 to the end of its page, at
/// most `len`); every later piece is a whole page but the last. The DMA master's burst
/// plan checks its job's list with it, so both refuse a list with the same error.
///
/// # Errors
/// The list is too short, a later entry is not page-aligned, or an address overflows
/// (the first of these in the list's order).
pub fn check_page_list(pages: &[u64], len: u64) -> Result<u64, MemError> {
    let first = *pages.first().ok_or(MemError::ShortPageList {
        needed: 1,
        given: 0,
    })?;
    let first_len = (PAGE_SIZE - first % PAGE_SIZE).min(len);
    let needed = 1 + (len - first_len).div_ceil(PAGE_SIZE);
    if (pages.len() as u64) < needed {
        return Err(MemError::ShortPageList {
            needed,
            given: pages.len() as u64,
        });
    }
    first.checked_add(first_len).ok_or(MemError::Overflow {
        addr: first,
        len: first_len,
    })?;
    let mut left = len - first_len;
    for (index, &addr) in pages.iter().enumerate().skip(1) {
        if left == 0 {
            break;
        }
        if addr % PAGE_SIZE != 0 {
            return Err(MemError::UnalignedPage { index, addr });
        }
        let n = left.min(PAGE_SIZE);
        addr.checked_add(n)
            .ok_or(MemError::Overflow { addr, len: n })?;
        left -= n;
    }
    Ok(first_len)
}

/// The ATT-style page list of a physically contiguous buffer at `pa`.
#[must_use]
pub fn contiguous_pages(pa: u64, len: u64) -> Vec<u64> {
    let mut pages = vec![pa];
    let mut page = page_base(pa);
    let end = pa.saturating_add(len.max(1) - 1);
    while page + PAGE_SIZE <= end {
        page += PAGE_SIZE;
        pages.push(page);
    }
    pages
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim_kernel::Bytes;

    #[test]
    fn pages_of_follows_the_att_layout() {
        let mut mem = HostMemory::new(Bytes(1 << 24), 3).unwrap();
        let mut pt = PageTable::new();
        let va = 0x4000_0F00;
        pt.map_range(va, 0x2200, &mut mem).unwrap(); // 0x4000_0F00..0x4000_3100: 4 pages
        assert_eq!(pt.mapped_pages(), 4);
        let pages = pt.pages_of(va, 0x2200).unwrap();
        assert_eq!(pages.len(), 4);
        assert_eq!(pages[0] % PAGE_SIZE, 0xF00, "same offset as the VA");
        assert_eq!(pages[1] % PAGE_SIZE, 0);
        assert_eq!(pages[1], pt.translate(0x4000_1000).unwrap());
        let segs = page_segments(&pages, 0x2200).unwrap();
        assert_eq!(
            segs.iter().map(|s| s.len).collect::<Vec<_>>(),
            vec![0x100, 0x1000, 0x1000, 0x100]
        );
        assert_eq!(
            pt.translate(0x5000_0000),
            Err(MemError::Unmapped { va: 0x5000_0000 })
        );
        assert!(pt.pages_of(va, 0).unwrap().is_empty());
    }

    #[test]
    fn virtual_reads_and_writes_cross_scattered_frames() {
        let mut mem = HostMemory::new(Bytes(1 << 24), 9).unwrap();
        let mut pt = PageTable::new();
        pt.map_range(0x1000_0FFC, 8, &mut mem).unwrap();
        pt.write(&mut mem, 0x1000_0FFC, &[1, 2, 3, 4, 5, 6, 7, 8])
            .unwrap();
        let mut b = [0u8; 8];
        pt.read(&mem, 0x1000_0FFC, &mut b).unwrap();
        assert_eq!(b, [1, 2, 3, 4, 5, 6, 7, 8]);
        let p0 = pt.translate(0x1000_0FFC).unwrap();
        let p1 = pt.translate(0x1000_1000).unwrap();
        assert_eq!(mem.read_vec(p0, 4).unwrap(), vec![1, 2, 3, 4]);
        assert_eq!(mem.read_vec(p1, 4).unwrap(), vec![5, 6, 7, 8]);
        assert!(pt.map_page(0x1000_1234, 0).is_err());
    }

    #[test]
    fn segments_equal_page_segments_of_pages_of() {
        let mut mem = HostMemory::new(Bytes(1 << 24), 5).unwrap();
        let mut pt = PageTable::new();
        pt.map_range(0x4000_0F00, 0x3200, &mut mem).unwrap(); // 0x4000_0000..0x4000_5000
        pt.map_page(0x7000_0000, u64::MAX).unwrap(); // a frame at the top: pieces overflow
        pt.map_page(0x7000_1000, 0x5000).unwrap();
        pt.map_page(0x6FFF_F000, 0x9000).unwrap();
        pt.map_page(0x7000_F000, u64::MAX).unwrap(); // two pages on the top frame
        pt.map_page(0x7001_0000, u64::MAX).unwrap();
        let old = |va: u64, len: u64| page_segments(&pt.pages_of(va, len)?, len);
        for (va, len) in [
            (0x4000_0F00, 0x3200),
            (0x4000_0000, 0x5000),
            (0x4000_0FFF, 2),
            (0x4000_1000, 1),
            (0x4000_4FFF, 1),
            (0x4000_4FFF, 2), // runs into an unmapped page
            (0x3FFF_FFFF, 2), // starts in one
            (0x4000_0000, 0),
            (u64::MAX, 2), // overflows
            (0x7000_0000, 4096),
            (0x7000_0FFF, 2),      // overflowing piece, then a mapped page
            (0x7000_0FFF, 0x1002), // overflowing piece, then an unmapped page
            (0x4000_0000, 1 << 40),
            (0x4000_0FF0, 0x20),   // two pages
            (0x4000_1000, 0x1000), // one whole page
            (0x4000_1800, 0x1800), // two pages, the second whole
            (0x6FFF_FFF0, 0x20),   // a mapped page, then the top frame's first bytes
            (0x6FFF_FFF0, 0x1010), // a mapped page, then the whole top frame: overflows
            (0x6FFF_EFF0, 0x20),   // an unmapped page, then a mapped one
            (0x7000_0FF0, 0x20),   // an overflowing piece, then a mapped page
            (0x7000_1FF0, 0x20),   // a mapped page, then an unmapped one
            (0x7000_FFFF, 0x1001), // both pieces overflow: the first's error
        ] {
            assert_eq!(pt.segments(va, len), old(va, len), "{va:#x} + {len:#x}");
            // The pieces one at a time: the same pieces, or the same error, before any.
            let pieces = pt.pieces(va, len).map(|p| {
                let n = p.len();
                let v: Vec<PhysSegment> = p.collect();
                assert_eq!(n, v.len(), "exact size of {va:#x} + {len:#x}");
                v
            });
            assert_eq!(pieces, old(va, len), "pieces of {va:#x} + {len:#x}");
        }
        // The error cases above are the ones meant: an unmapped page wins over an
        // overflowing piece before it.
        assert_eq!(
            pt.segments(0x7000_0FFF, 0x1002),
            Err(MemError::Unmapped { va: 0x7000_2000 })
        );
        assert!(matches!(
            pt.segments(0x7000_0FFF, 2),
            Err(MemError::Overflow { .. })
        ));
        assert_eq!(pt.segments(0x4000_0F00, 0x3200).unwrap().len(), 5);
        assert_eq!(
            pt.pieces(0x6FFF_FFF0, 0x1010).map(|_| ()),
            Err(MemError::Overflow {
                addr: 0xFFFF_FFFF_FFFF_F000,
                len: 0x1000
            }),
            "the second piece's overflow"
        );
        assert_eq!(
            pt.pieces(0x7000_FFFF, 0x1001).map(|_| ()),
            Err(MemError::Overflow {
                addr: u64::MAX,
                len: 1
            }),
            "the first piece's overflow wins"
        );
    }

    #[test]
    fn bad_page_lists_are_errors() {
        assert_eq!(
            page_segments(&[0x1F00], 0x200),
            Err(MemError::ShortPageList {
                needed: 2,
                given: 1
            })
        );
        assert_eq!(
            page_segments(&[0x1F00, 0x3004], 0x200),
            Err(MemError::UnalignedPage {
                index: 1,
                addr: 0x3004
            })
        );
        assert!(page_segments(&[], 4).is_err());
        assert!(page_segments(&[u64::MAX - 2], 2).is_ok());
        assert!(page_segments(&[u64::MAX], 2).is_err());
    }

    #[test]
    fn contiguous_page_lists() {
        assert_eq!(contiguous_pages(0x1F00, 0x100), vec![0x1F00]);
        assert_eq!(contiguous_pages(0x1F00, 0x101), vec![0x1F00, 0x2000]);
        assert_eq!(contiguous_pages(0x1000, 0x2000), vec![0x1000, 0x2000]);
        let pages = contiguous_pages(0x1F00, 0x3000);
        assert_eq!(page_segments(&pages, 0x3000).unwrap().len(), 4);
    }
}
