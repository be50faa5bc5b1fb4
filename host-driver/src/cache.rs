//! The CPU's view of host memory: a set-associative cache model that knows which lines
//! the CPU holds, so a load costs a hit, a miss, or a miss because a DMA write changed
//! the line since the CPU last read it.
//!
//! The P6 caches are coherent with PCI bus-master writes: the host bridge snoops, so a
//! line the card writes is invalidated in the CPU cache and the CPU's next load of it
//! misses to memory. `pci-model`'s `HostMemory` does not record who wrote a line or
//! when, so this model keeps a copy of each cached line's bytes and treats a line whose
//! memory content differs from that copy as invalidated (only the bridge, committing a
//! DMA write, changes memory behind the CPU's back). A DMA write of bytes equal to the
//! old ones goes unnoticed (counted as a hit): an approximation that a per-line write
//! generation in `HostMemory` would remove.
//!
//! Geometry: the Pentium III (Coppermine) 256 KB, 8-way, 32-byte-line L2, one level
//! (L1 hits and L2 hits cost the same `cache_hit`), least-recently-used replacement.

use std::collections::VecDeque;

/// Cache geometry (Pentium III Coppermine L2 by default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheParams {
    /// Line size \[bytes\], a power of two >= 4. Source: Intel P6 family, 32-byte lines.
    pub line_bytes: u64,
    /// Capacity \[bytes\]. Source: Pentium III Coppermine, 256 KB on-die L2.
    pub size_bytes: u64,
    /// Associativity \[ways\]. Source: Pentium III Coppermine L2, 8-way.
    pub ways: usize,
}

impl Default for CacheParams {
    fn default() -> Self {
        Self {
            line_bytes: 32,
            size_bytes: 256 << 10,
            ways: 8,
        }
    }
}

impl CacheParams {
    /// The line size actually used: a power of two from 4 bytes to one 4 KB page.
    #[must_use]
    pub fn line(&self) -> u64 {
        self.line_bytes.clamp(4, 4096).next_power_of_two()
    }

    /// Number of sets (at least 1).
    #[must_use]
    pub fn sets(&self) -> usize {
        let per_set = self.line().saturating_mul(self.ways.max(1) as u64);
        usize::try_from((self.size_bytes / per_set.max(1)).max(1)).unwrap_or(1)
    }
}

/// How one line access went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineAccess {
    /// The line was cached with the bytes memory holds.
    Hit,
    /// The line was not cached (cold, or evicted).
    Miss,
    /// The line was cached but memory changed under it: a DMA write invalidated it.
    DmaMiss,
}

#[derive(Clone, Debug)]
struct Line {
    addr: u64,
    bytes: Vec<u8>,
}

/// The cache model (see the module doc).
#[derive(Clone, Debug)]
pub struct CacheModel {
    line: u64,
    ways: usize,
    /// Each set in LRU order: most recently used first.
    sets: Vec<VecDeque<Line>>,
}

impl CacheModel {
    /// An empty cache of the given geometry.
    #[must_use]
    pub fn new(params: CacheParams) -> Self {
        Self {
            line: params.line(),
            ways: params.ways.max(1),
            sets: vec![VecDeque::new(); params.sets()],
        }
    }

    /// The line size \[bytes\].
    #[must_use]
    pub fn line_bytes(&self) -> u64 {
        self.line
    }

    /// The physical address of the line holding `pa`.
    #[must_use]
    pub fn line_of(&self, pa: u64) -> u64 {
        pa & !(self.line - 1)
    }

    fn set_of(&self, line_pa: u64) -> usize {
        let n = self.sets.len() as u64;
        usize::try_from((line_pa / self.line) % n.max(1)).unwrap_or(0)
    }

    /// A load of the line at `line_pa` whose bytes in memory are now `memory`: hit if the
    /// cached copy equals them; afterwards the line is cached with these bytes.
    pub fn load(&mut self, line_pa: u64, memory: &[u8]) -> LineAccess {
        let ways = self.ways;
        let s = self.set_of(line_pa);
        let Some(set) = self.sets.get_mut(s) else {
            return LineAccess::Miss;
        };
        match set.iter().position(|l| l.addr == line_pa) {
            Some(i) => {
                let mut l = set.remove(i).unwrap_or(Line {
                    addr: line_pa,
                    bytes: Vec::new(),
                });
                let access = if l.bytes == memory {
                    LineAccess::Hit
                } else {
                    l.bytes.clear();
                    l.bytes.extend_from_slice(memory); // the line's buffer reused
                    LineAccess::DmaMiss
                };
                set.push_front(l);
                access
            }
            None => {
                // The line evicted (the set's least recently used, the one `truncate`
                // would drop) lends its buffer to the new one: no allocation once the
                // set is full.
                let mut bytes = if set.len() >= ways {
                    set.pop_back().map(|l| l.bytes).unwrap_or_default()
                } else {
                    Vec::new()
                };
                bytes.clear();
                bytes.extend_from_slice(memory);
                set.push_front(Line {
                    addr: line_pa,
                    bytes,
                });
                set.truncate(ways);
                LineAccess::Miss
            }
        }
    }

    /// A store to the line at `line_pa`: `before` is what memory held, `after` what it
    /// holds now. The access is classified like a load of `before` (write-allocate), and
    /// the line is then cached with `after`.
    pub fn store(&mut self, line_pa: u64, before: &[u8], after: &[u8]) -> LineAccess {
        let access = self.load(line_pa, before);
        let s = self.set_of(line_pa);
        if let Some(l) = self
            .sets
            .get_mut(s)
            .and_then(|set| set.iter_mut().find(|l| l.addr == line_pa))
        {
            l.bytes.clear();
            l.bytes.extend_from_slice(after); // the line's buffer reused
        }
        access
    }

    /// Whether the line at `line_pa` is cached (the model is not changed).
    #[must_use]
    pub fn holds(&self, line_pa: u64) -> bool {
        self.sets
            .get(self.set_of(line_pa))
            .is_some_and(|set| set.iter().any(|l| l.addr == line_pa))
    }

    /// Replaces the cached copy of the line at `line_pa` with `memory`, if it is cached
    /// (a write the CPU made outside the cost model, e.g. instrumentation).
    pub fn refresh(&mut self, line_pa: u64, memory: &[u8]) {
        let s = self.set_of(line_pa);
        if let Some(l) = self
            .sets
            .get_mut(s)
            .and_then(|set| set.iter_mut().find(|l| l.addr == line_pa))
        {
            l.bytes.clear();
            l.bytes.extend_from_slice(memory); // reuses the line's buffer
        }
    }

    /// Forgets the line at `line_pa` if cached (e.g. after a write the CPU did not see).
    pub fn forget(&mut self, line_pa: u64) {
        let s = self.set_of(line_pa);
        if let Some(set) = self.sets.get_mut(s) {
            set.retain(|l| l.addr != line_pa);
        }
    }

    /// Whether a load of the line at `line_pa` whose bytes in memory are `memory` would
    /// hit (the model is not changed).
    #[must_use]
    pub fn would_hit(&self, line_pa: u64, memory: &[u8]) -> bool {
        self.sets
            .get(self.set_of(line_pa))
            .and_then(|set| set.iter().find(|l| l.addr == line_pa))
            .is_some_and(|l| l.bytes == memory)
    }

    /// A load of the cached line at `line_pa` that hit at an instant already past (its
    /// cached copy was what memory held then): the line becomes the most recently used
    /// of its set, its bytes unchanged. Returns whether it was cached.
    pub fn touch(&mut self, line_pa: u64) -> bool {
        let s = self.set_of(line_pa);
        let Some(set) = self.sets.get_mut(s) else {
            return false;
        };
        match set.iter().position(|l| l.addr == line_pa) {
            Some(i) => {
                if let Some(l) = set.remove(i) {
                    set.push_front(l);
                }
                true
            }
            None => false,
        }
    }

    /// Lines currently cached.
    #[must_use]
    pub fn cached_lines(&self) -> usize {
        self.sets.iter().map(VecDeque::len).sum()
    }

    /// The cached lines that a write of the physical ranges `ranges` (start, length)
    /// touches, in the order of the write's lines (range by range, ascending; a line two
    /// ranges touch comes once for each). Walks the write's lines, or the cache's lines
    /// when there are fewer of those (a write larger than the cache): same answer.
    #[must_use]
    pub fn held_lines_of(&self, ranges: &[(u64, u64)]) -> Vec<u64> {
        let mut out = Vec::new();
        self.held_lines_into(ranges, &mut out);
        out
    }

    /// [`CacheModel::held_lines_of`] into `out` (emptied first), a buffer the caller
    /// keeps.
    pub fn held_lines_into(&self, ranges: &[(u64, u64)], out: &mut Vec<u64>) {
        out.clear();
        let span = |&(addr, len): &(u64, u64)| (self.line_of(addr), addr.saturating_add(len));
        let write_lines: u64 = ranges
            .iter()
            .map(|r| {
                let (first, end) = span(r);
                end.saturating_sub(first).div_ceil(self.line)
            })
            .sum();
        // The cache's walk costs at least a step for each set, so a write of no more
        // lines than there are sets walks its own lines, without counting the cached
        // ones (which takes a step for each set too).
        let sets = self.sets.len() as u64;
        let walk_cache = write_lines > sets && {
            let held = self.cached_lines() as u64;
            held.saturating_mul(ranges.len() as u64) + sets < write_lines
        };
        if walk_cache {
            let mut hits: Vec<(usize, u64)> = Vec::new();
            for l in self.sets.iter().flat_map(|set| set.iter().map(|l| l.addr)) {
                for (i, r) in ranges.iter().enumerate() {
                    let (first, end) = span(r);
                    if (first..end).contains(&l) {
                        hits.push((i, l));
                    }
                }
            }
            hits.sort_unstable();
            out.extend(hits.into_iter().map(|(_, l)| l));
            return;
        }
        for r in ranges {
            let (mut l, end) = span(r);
            while l < end {
                if self.holds(l) {
                    out.push(l);
                }
                l = l.saturating_add(self.line);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cold_hit_and_dma_invalidation() {
        let mut c = CacheModel::new(CacheParams::default());
        assert_eq!(c.line_of(0x1234), 0x1220);
        let a = [0u8; 32];
        let mut b = a;
        assert_eq!(c.load(0x1220, &a), LineAccess::Miss);
        assert_eq!(c.load(0x1220, &a), LineAccess::Hit);
        b[31] = 7; // the bridge committed a DMA write
        assert_eq!(c.load(0x1220, &b), LineAccess::DmaMiss);
        assert_eq!(c.load(0x1220, &b), LineAccess::Hit);
        // the CPU's own store does not invalidate its copy
        let mut d = b;
        d[0] = 9;
        assert_eq!(c.store(0x1220, &b, &d), LineAccess::Hit);
        assert_eq!(c.load(0x1220, &d), LineAccess::Hit);
        assert!(c.holds(0x1220) && !c.holds(0x1240));
        c.forget(0x1220);
        assert!(!c.holds(0x1220));
        assert_eq!(c.load(0x1220, &d), LineAccess::Miss);
    }

    #[test]
    fn lru_eviction_within_a_set() {
        let p = CacheParams {
            line_bytes: 32,
            size_bytes: 64,
            ways: 2,
        };
        assert_eq!(p.sets(), 1);
        let mut c = CacheModel::new(p);
        let z = [0u8; 32];
        for a in [0, 32, 64] {
            assert_eq!(c.load(a, &z), LineAccess::Miss);
        }
        assert_eq!(c.cached_lines(), 2);
        assert_eq!(c.load(64, &z), LineAccess::Hit);
        assert_eq!(
            c.load(0, &z),
            LineAccess::Miss,
            "evicted as least recently used"
        );
    }

    #[test]
    fn would_hit_and_touch_keep_the_lru_order_of_loads() {
        let p = CacheParams {
            line_bytes: 32,
            size_bytes: 64,
            ways: 2,
        };
        let z = [0u8; 32];
        let mut one = [0u8; 32];
        one[3] = 1;
        let mut a = CacheModel::new(p);
        assert!(!a.would_hit(0, &z), "cold");
        a.load(0, &z);
        a.load(32, &z);
        assert!(
            a.would_hit(0, &z) && !a.would_hit(0, &one),
            "changed bytes miss"
        );
        let mut b = a.clone();
        // A hit load of line 0 and a touch of it leave the same model behind: line 32
        // is then the one a new line evicts.
        assert_eq!(a.load(0, &z), LineAccess::Hit);
        assert!(b.touch(0));
        assert!(!b.touch(64), "not cached");
        for c in [&mut a, &mut b] {
            assert_eq!(c.load(64, &z), LineAccess::Miss);
            assert_eq!(c.load(0, &z), LineAccess::Hit);
            assert_eq!(c.load(32, &z), LineAccess::Miss);
        }
    }

    #[test]
    fn odd_geometries_do_not_panic() {
        let p = CacheParams {
            line_bytes: 0,
            size_bytes: 0,
            ways: 0,
        };
        assert_eq!(p.line(), 4);
        assert_eq!(p.sets(), 1);
        let mut c = CacheModel::new(p);
        assert_eq!(c.load(!3, &[1, 2, 3, 4]), LineAccess::Miss);
    }
    #[test]
    fn held_lines_of_a_write_are_the_same_from_either_walk() {
        let mut c = CacheModel::new(CacheParams::default());
        let z = [0u8; 32];
        for l in [0x1000u64, 0x1fe0, 0x2000, 0x5020, 0x9_0000, 0x20_0040] {
            c.load(l, &z);
        }
        // Small writes walk their own lines; a large one walks the cache.
        let small = [(0x1010u64, 0x20u64), (0x1fe8, 0x30)];
        assert_eq!(c.held_lines_of(&small), vec![0x1000, 0x1fe0, 0x2000]);
        let large: Vec<(u64, u64)> = (0..64u64).map(|p| ((p ^ 5) * 4096 + 8, 4096)).collect();
        let mut naive = Vec::new();
        for &(addr, len) in &large {
            let mut l = c.line_of(addr);
            while l < addr + len {
                if c.holds(l) {
                    naive.push(l);
                }
                l += 32;
            }
        }
        assert_eq!(
            naive.len(),
            6,
            "0x1000 and 0x2000 are in two pages' ranges each"
        );
        assert_eq!(c.held_lines_of(&large), naive);
    }
}
