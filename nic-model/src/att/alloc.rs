//! The two deterministic allocators of the ATT manager: L1 entry indices (with the
//! per-index generation that makes stale handles fail) and extents of the L2 pool.
//!
//! Both offer `peek` (what the next allocation would return, without changing anything)
//! and a separate commit, so a registration can build and check its whole layout before
//! it takes anything.

use std::collections::{BTreeMap, VecDeque};
use via_abi::MemHandle;

/// L1 index allocator: never-used indices first (0, 1, 2, ...), then freed indices in
/// the order they were freed (first in, first out), so an index is reused as late as
/// possible. Each index has a generation, bumped ([`MemHandle::next_generation`]) every
/// time it is handed out: 1 on first use, then 2, ..., 4095, 1, ...
#[derive(Clone, Debug)]
pub struct IndexAllocator {
    limit: u32,
    next_fresh: u32,
    freed: VecDeque<u32>,
    /// Generation last handed out per index (0 = never used); grows with `next_fresh`.
    generations: Vec<u16>,
    /// Whether each used index is currently allocated.
    live: Vec<bool>,
}

impl IndexAllocator {
    /// An allocator of indices `0..limit`.
    #[must_use]
    pub fn new(limit: u32) -> Self {
        Self {
            limit,
            next_fresh: 0,
            freed: VecDeque::new(),
            generations: Vec::new(),
            live: Vec::new(),
        }
    }

    /// The handle the next [`IndexAllocator::alloc`] would return, if an index is free.
    #[must_use]
    pub fn peek(&self) -> Option<MemHandle> {
        let index = if self.next_fresh < self.limit {
            self.next_fresh
        } else {
            *self.freed.front()?
        };
        let old = self.generations.get(index as usize).copied().unwrap_or(0);
        MemHandle::new(index, MemHandle::next_generation(old))
    }

    /// Takes the index [`IndexAllocator::peek`] names and returns its new handle.
    pub fn alloc(&mut self) -> Option<MemHandle> {
        let handle = self.peek()?;
        let index = handle.index();
        if index == self.next_fresh && self.next_fresh < self.limit {
            self.next_fresh += 1;
            self.generations.push(0);
            self.live.push(false);
        } else {
            self.freed.pop_front();
        }
        let i = index as usize;
        if let (Some(g), Some(l)) = (self.generations.get_mut(i), self.live.get_mut(i)) {
            *g = handle.generation();
            *l = true;
        }
        Some(handle)
    }

    /// Whether `handle` is the current, live handle of its index.
    #[must_use]
    pub fn is_live(&self, handle: MemHandle) -> bool {
        let i = handle.index() as usize;
        handle.is_well_formed()
            && self.live.get(i).copied().unwrap_or(false)
            && self.generations.get(i).copied() == Some(handle.generation())
    }

    /// Frees the index of `handle` if it is live; returns whether it was.
    pub fn free(&mut self, handle: MemHandle) -> bool {
        if !self.is_live(handle) {
            return false;
        }
        if let Some(l) = self.live.get_mut(handle.index() as usize) {
            *l = false;
        }
        self.freed.push_back(handle.index());
        true
    }

    /// Number of live indices.
    #[must_use]
    pub fn live_count(&self) -> usize {
        self.live.iter().filter(|&&l| l).count()
    }
}

/// First-fit allocator of extents of L2 entries, free list kept sorted by address and
/// coalesced on free. Units are L2 entries (4 bytes each), addresses are entry numbers
/// from the start of the pool.
#[derive(Clone, Debug)]
pub struct ExtentAllocator {
    /// start -> length of every free extent, no two adjacent.
    free: BTreeMap<u32, u32>,
}

impl ExtentAllocator {
    /// An allocator of `entries` entries, all free.
    #[must_use]
    pub fn new(entries: u32) -> Self {
        let mut free = BTreeMap::new();
        if entries > 0 {
            free.insert(0, entries);
        }
        Self { free }
    }

    /// Start of the lowest free extent of at least `n` entries (`n` >= 1).
    #[must_use]
    pub fn peek(&self, n: u32) -> Option<u32> {
        if n == 0 {
            return None;
        }
        self.free
            .iter()
            .find(|(_, &len)| len >= n)
            .map(|(&start, _)| start)
    }

    /// Takes `n` entries at the start [`ExtentAllocator::peek`] names.
    pub fn alloc(&mut self, n: u32) -> Option<u32> {
        let start = self.peek(n)?;
        let len = self.free.remove(&start)?;
        if len > n {
            self.free.insert(start + n, len - n);
        }
        Some(start)
    }

    /// Returns `n` entries at `start` to the free list, merging with its neighbours.
    /// Returns `false` (and changes nothing) if any of them is already free.
    pub fn free(&mut self, start: u32, n: u32) -> bool {
        let Some(end) = start.checked_add(n) else {
            return false;
        };
        if n == 0 {
            return false;
        }
        let before = self.free.range(..=start).next_back().map(|(&s, &l)| (s, l));
        if let Some((s, l)) = before {
            if u64::from(s) + u64::from(l) > u64::from(start) {
                return false;
            }
        }
        let after = self.free.range(start..).next().map(|(&s, &l)| (s, l));
        if let Some((s, _)) = after {
            if s < end {
                return false;
            }
        }
        let (mut new_start, mut new_len) = (start, n);
        if let Some((s, l)) = before {
            if s + l == start {
                self.free.remove(&s);
                new_start = s;
                new_len += l;
            }
        }
        if let Some((s, l)) = after {
            if s == end {
                self.free.remove(&s);
                new_len += l;
            }
        }
        self.free.insert(new_start, new_len);
        true
    }

    /// Free entries in total.
    #[must_use]
    pub fn free_entries(&self) -> u64 {
        self.free.values().map(|&l| u64::from(l)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn indices_fresh_first_then_fifo_with_new_generations() {
        let mut a = IndexAllocator::new(3);
        let h: Vec<_> = (0..3).map(|_| a.alloc().expect("free")).collect();
        assert_eq!(h, [0, 1, 2].map(|i| MemHandle::new(i, 1).expect("ok")));
        assert_eq!(a.alloc(), None, "full");
        assert!(a.free(h[2]));
        assert!(a.free(h[0]));
        assert!(!a.free(h[0]), "double free");
        assert!(!a.is_live(h[0]));
        assert_eq!(a.peek(), MemHandle::new(2, 2));
        assert_eq!(a.alloc(), MemHandle::new(2, 2));
        assert_eq!(a.alloc(), MemHandle::new(0, 2));
        assert!(!a.is_live(h[2]), "old generation is stale");
        assert!(a.is_live(MemHandle::new(2, 2).expect("ok")));
        assert!(!a.is_live(MemHandle::NULL));
        assert_eq!(a.live_count(), 3);
    }

    #[test]
    fn generation_wraps_after_4095_reuses() {
        let mut a = IndexAllocator::new(1);
        let mut last = a.alloc().expect("free");
        for _ in 0..4094 {
            assert!(a.free(last));
            last = a.alloc().expect("free");
        }
        assert_eq!(last.generation(), 4095);
        assert!(a.free(last));
        assert_eq!(a.alloc().map(MemHandle::generation), Some(1));
    }

    #[test]
    fn extents_first_fit_and_coalesce() {
        let mut e = ExtentAllocator::new(100);
        assert_eq!(e.alloc(10), Some(0));
        assert_eq!(e.alloc(20), Some(10));
        assert_eq!(e.alloc(5), Some(30));
        assert!(e.free(10, 20));
        assert_eq!(e.peek(25), Some(35));
        assert_eq!(e.alloc(15), Some(10), "first fit reuses the hole");
        assert!(!e.free(26, 2), "already free (inside the hole 25..30)");
        assert!(!e.free(20, 10), "overlaps the free 25..30");
        assert!(e.free(10, 15));
        assert!(e.free(0, 10));
        assert!(e.free(30, 5));
        assert_eq!(e.free_entries(), 100);
        assert_eq!(e.peek(100), Some(0), "everything merged back");
        assert_eq!(e.alloc(0), None);
        assert_eq!(e.alloc(101), None);
        assert!(!e.free(u32::MAX, 2));
    }

    proptest! {
        /// Random alloc/free sequences never hand out overlapping extents and the free
        /// count always matches.
        #[test]
        fn extents_never_overlap(ops in proptest::collection::vec((any::<bool>(), 1u32..40), 1..200)) {
            let mut e = ExtentAllocator::new(500);
            let mut taken: Vec<(u32, u32)> = Vec::new();
            for (alloc, n) in ops {
                if alloc || taken.is_empty() {
                    if let Some(s) = e.alloc(n) {
                        for &(t, m) in &taken {
                            prop_assert!(s + n <= t || t + m <= s, "overlap");
                        }
                        prop_assert!(s + n <= 500);
                        taken.push((s, n));
                    }
                } else {
                    let (s, m) = taken.remove(n as usize % taken.len());
                    prop_assert!(e.free(s, m));
                }
                let used: u64 = taken.iter().map(|&(_, m)| u64::from(m)).sum();
                prop_assert_eq!(e.free_entries() + used, 500);
            }
        }
    }
}
