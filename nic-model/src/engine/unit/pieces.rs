//! Unit **segment pieces**: the translation of one data segment (its physically
//! contiguous pieces, in VA order) with the offset each piece ends at, so the page list
//! of a chunk of the segment ([`SegPieces::pages`]) starts at the chunk's piece, found by
//! a binary search, instead of scanning every piece from the segment's first: a 1 MiB
//! segment has 257 pieces and is fetched in a few thousand chunks.

use super::outstanding::{pages_for, pages_from};
use crate::att::Piece;
use core::ops::Deref;

/// A data segment's translated pieces and their end offsets (see the module doc).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SegPieces {
    pieces: Vec<Piece>,
    /// `ends[i]`: the byte offset, in the segment, just past piece `i` (empty when a
    /// sum overflows, and then [`SegPieces::pages`] scans like [`pages_for`]).
    ends: Vec<u64>,
}

impl SegPieces {
    /// The translation `pieces` of a segment.
    pub(crate) fn new(pieces: Vec<Piece>) -> Self {
        let mut ends = Vec::with_capacity(pieces.len());
        let mut at = 0u64;
        for p in &pieces {
            match at.checked_add(u64::from(p.len)) {
                Some(e) => {
                    ends.push(e);
                    at = e;
                }
                None => {
                    ends.clear();
                    break;
                }
            }
        }
        Self { pieces, ends }
    }

    /// The ATT-style page list of bytes `[off, off + len)` of the segment: the same as
    /// [`pages_for`] over its pieces.
    pub(crate) fn pages(&self, off: u64, len: u64) -> Option<Vec<u64>> {
        if self.ends.len() != self.pieces.len() {
            return pages_for(&self.pieces, off, len);
        }
        // The pieces ending at or before `off` add nothing to the list: skip them.
        let first = self.ends.partition_point(|&e| e <= off);
        let at = first
            .checked_sub(1)
            .and_then(|i| self.ends.get(i))
            .copied()
            .unwrap_or(0);
        pages_from(&self.pieces, first, at, off, len)
    }
}

impl Deref for SegPieces {
    type Target = [Piece];

    fn deref(&self) -> &[Piece] {
        &self.pieces
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every sub-range (and some beyond the end) gets the page list of the scan.
    #[test]
    fn pages_equal_the_scan_from_the_first_piece() {
        let lens = [256u32, 4096, 4096, 1, 4096, 100, 0, 7];
        let pieces: Vec<Piece> = lens
            .iter()
            .enumerate()
            .map(|(i, &len)| Piece {
                pa: 0x10_0000 * (i as u64 + 1) + 0x40 * i as u64,
                len,
            })
            .collect();
        let total: u64 = lens.iter().map(|&l| u64::from(l)).sum();
        let seg = SegPieces::new(pieces.clone());
        assert_eq!(&*seg, pieces.as_slice());
        let mut lists = 0;
        for off in (0..=total + 2)
            .step_by(3)
            .chain([255, 256, 4351, 4352, 8448])
        {
            for len in [0, 1, 2, 100, 255, 256, 4095, 4096, 4097, 9000, total] {
                let want = pages_for(&pieces, off, len);
                assert_eq!(seg.pages(off, len), want, "off {off} len {len}");
                lists += usize::from(want.is_some_and(|p| p.len() > 1));
            }
        }
        assert!(lists > 1000, "the cases cross pieces: {lists}");
        assert_eq!(seg.pages(u64::MAX, 2), None);
        assert_eq!(SegPieces::default().pages(0, 0), Some(vec![]));
        assert_eq!(SegPieces::default().pages(0, 1), None);
    }

    /// Pieces whose lengths overflow the offsets fall back to the scan.
    #[test]
    fn an_overflowing_sum_falls_back_to_the_scan() {
        let pieces = vec![Piece { pa: 0, len: 4096 }; 3];
        let mut seg = SegPieces::new(pieces.clone());
        seg.ends.clear();
        assert_eq!(seg.pages(5000, 10), pages_for(&pieces, 5000, 10));
        assert_eq!(seg.pages(5000, 10), Some(vec![5000 - 4096]));
    }
}
