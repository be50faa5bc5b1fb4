//! Host physical memory: real bytes, stored sparsely in 4 KB frames, plus the node's
//! seeded physical-frame allocator.
//!
//! A frame costs memory only once written: 256 MB of host memory is an empty
//! hash map until a page table maps and fills it. Untouched bytes read as zero. Every
//! access is bounds-checked against the configured size and fails with a [`MemError`],
//! never a panic. The frame allocator hands out physically scattered frames from a
//! [`SplitMix64`] stream, so a buffer's pages land where a real OS might put them, the
//! same way on every run with the same seed.
//!
//! `HostMemory` is not a component: it belongs to the node and is passed `&mut` by the
//! World into the handlers that touch it (the host bridge, the host CPU).
//!
//! With lazy commits (`PciBus::set_lazy_commits`, fast untraced stepping) a DMA write
//! the host bridge posted waits here with the instant it becomes visible, so that its
//! bus needs no wake-up for it: the bus applies it when it steps that clock
//! (`HostMemory::settle_through`), and any other reader first applies what is due
//! before its event ([`HostMemory::settle_before`]; the host CPU does, at each event).
//! A poll must not park on a line such a write will change ([`HostMemory::pending_into`]);
//! one into a range watched when it is posted keeps its bus wake-up.

use crate::error::MemError;
use sim_kernel::{Bytes, ComponentId, SplitMix64, Time};
use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

/// Size of a host page and of a physical frame \[bytes\] (IA-32 4 KB pages).
pub const PAGE_SIZE: u64 = 4096;

/// The first byte of the page holding `addr`.
#[must_use]
pub const fn page_base(addr: u64) -> u64 {
    addr & !(PAGE_SIZE - 1)
}

/// Hashes a frame's base address for the frame map: one multiply (the keys are
/// distinct multiples of 4096 chosen by the simulation, not by an adversary), so that
/// finding a frame costs a few instructions instead of a tree search on every access.
#[derive(Clone, Copy, Debug, Default)]
struct FrameHasher(u64);

impl Hasher for FrameHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn write_u64(&mut self, v: u64) {
        // Fibonacci hashing of the frame number: its high bits pick the bucket group,
        // its low bits the tag (both well mixed by the multiply).
        let h = (v >> 12).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = h ^ (h >> 29);
    }
}

/// Host physical memory of one node.
#[derive(Clone, Debug)]
pub struct HostMemory {
    size: u64,
    /// Touched frames by base address (no order: `content_digest` sorts them).
    frames: HashMap<u64, Box<[u8; PAGE_SIZE as usize]>, BuildHasherDefault<FrameHasher>>,
    allocated: BTreeSet<u64>,
    rng: SplitMix64,
    /// Watched ranges `(start, len, watcher)`: a write into one is noted in `hits`
    /// (how a polling CPU that stopped stepping learns its line changed).
    watches: Vec<(u64, u64, ComponentId)>,
    /// Watchers whose range a write touched since the last [`HostMemory::take_hits`] or
    /// [`HostMemory::drain_hits`].
    hits: Vec<ComponentId>,
    /// DMA writes the host bridge posted whose commit is applied lazily (see
    /// [`HostMemory::settle_before`]): (commit instant, address, data), in commit order.
    pending: VecDeque<(Time, u64, Vec<u8>)>,
}

impl HostMemory {
    /// Watches `[start, start + len)` for `who`, replacing `who`'s earlier watch.
    pub fn watch(&mut self, start: u64, len: u64, who: ComponentId) {
        self.unwatch(who);
        self.watches.push((start, len, who));
    }

    /// Watches every range `(start, len)` of `ranges` for `who` (a poll over several
    /// lines), replacing `who`'s earlier watch; a write into any of them is noted once.
    pub fn watch_all(&mut self, ranges: impl IntoIterator<Item = (u64, u64)>, who: ComponentId) {
        self.unwatch(who);
        self.watches
            .extend(ranges.into_iter().map(|(start, len)| (start, len, who)));
    }

    /// Ends `who`'s watch, if any.
    pub fn unwatch(&mut self, who: ComponentId) {
        self.watches.retain(|w| w.2 != who);
    }

    /// The watchers a write touched since the last call, in order, each once.
    pub fn take_hits(&mut self) -> Vec<ComponentId> {
        std::mem::take(&mut self.hits)
    }

    /// The watchers of [`HostMemory::take_hits`], drained: the list keeps its memory for
    /// the next notices (a polled line is written about once a message, and each write
    /// into a watched line makes one).
    pub fn drain_hits(&mut self) -> std::vec::Drain<'_, ComponentId> {
        self.hits.drain(..)
    }

    /// Whether some write touched a watched range since the last [`HostMemory::take_hits`]
    /// or [`HostMemory::drain_hits`].
    #[must_use]
    pub fn has_hits(&self) -> bool {
        !self.hits.is_empty()
    }

    /// `size` bytes of memory (a positive multiple of 4 KB), frames allocated from a
    /// stream seeded with `seed`.
    ///
    /// # Errors
    /// A size of zero or not a multiple of 4096.
    pub fn new(size: Bytes, seed: u64) -> Result<Self, MemError> {
        if size.0 == 0 || size.0 % PAGE_SIZE != 0 {
            return Err(MemError::BadSize { size: size.0 });
        }
        Ok(Self {
            size: size.0,
            frames: HashMap::default(),
            allocated: BTreeSet::new(),
            rng: SplitMix64::derive(seed, "host-memory.frames"),
            watches: Vec::new(),
            hits: Vec::new(),
            pending: VecDeque::new(),
        })
    }

    /// Queues a DMA write that becomes visible at `at` (the host bridge's commit, applied
    /// lazily: by [`HostMemory::settle_before`] for a reader, or by the bridge when its
    /// bus steps the commit's clock). Commits are queued in commit order.
    ///
    /// # Errors
    /// The range is not inside the memory (nothing is queued then).
    pub(crate) fn post_commit(&mut self, at: Time, pa: u64, data: Vec<u8>) -> Result<(), MemError> {
        self.check(pa, data.len() as u64)?;
        debug_assert!(
            self.pending.back().is_none_or(|p| p.0 <= at),
            "commits out of order"
        );
        self.pending.push_back((at, pa, data));
        Ok(())
    }

    /// Applies every lazily committed write due strictly before `t`: what a reader whose
    /// event is at `t` sees (the bridge commits in its bus's clock at LATE priority, so
    /// a reader's event at the commit instant itself, queued before it, does not see
    /// it). Called by the host CPU before each of its events; nothing to do when no
    /// commit is pending. A commit into a watched range never comes this way: the bus
    /// keeps a wake-up for it (see [`HostMemory::pending_into`]).
    pub fn settle_before(&mut self, t: Time) {
        if self.pending.front().is_some_and(|p| p.0 < t) {
            self.apply_pending(|at| at < t);
            debug_assert!(self.hits.is_empty(), "a lazily committed write hit a watch");
        }
    }

    /// Applies every lazily committed write due at or before `t` (the bridge's commit in
    /// its bus's clock at edge `t`); returns the bytes applied.
    pub(crate) fn settle_through(&mut self, t: Time) -> u64 {
        if self.pending.front().is_some_and(|p| p.0 <= t) {
            self.apply_pending(|at| at <= t)
        } else {
            0
        }
    }

    fn apply_pending(&mut self, due: impl Fn(Time) -> bool) -> u64 {
        let mut bytes = 0;
        while self.pending.front().is_some_and(|p| due(p.0)) {
            let Some((_, pa, data)) = self.pending.pop_front() else {
                break;
            };
            match self.write(pa, &data) {
                Ok(()) => bytes += data.len() as u64,
                Err(e) => tracing::error!(target: "pci::memory", %e, "lazily committed write lost"),
            }
            sim_kernel::spare::give_bytes(data);
        }
        bytes
    }

    /// Whether a lazily committed write not yet applied touches `[start, start + len)`:
    /// a poll may not park on such a line (no wake-up would come for that commit).
    #[must_use]
    pub fn pending_into(&self, start: u64, len: u64) -> bool {
        let end = start.saturating_add(len);
        self.pending
            .iter()
            .any(|(_, pa, d)| *pa < end && start < pa.saturating_add(d.len() as u64))
    }

    /// Whether `[pa, pa + len)` lies inside the memory.
    pub(crate) fn contains(&self, pa: u64, len: u64) -> bool {
        self.check(pa, len).is_ok()
    }

    /// Whether some watch covers a byte of `[start, start + len)`.
    pub(crate) fn watched(&self, start: u64, len: u64) -> bool {
        let end = start.saturating_add(len);
        self.watches
            .iter()
            .any(|&(s, l, _)| start < s.saturating_add(l) && s < end)
    }

    /// A digest (FNV-1a) of every byte written so far, by address: two memories with the
    /// same contents have the same digest (for lockstep comparisons).
    #[must_use]
    pub fn content_digest(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |b: u8| {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        };
        let mut frames: Vec<_> = self.frames.iter().collect();
        frames.sort_unstable_by_key(|&(base, _)| *base);
        for (base, frame) in frames {
            if frame.iter().all(|&b| b == 0) {
                continue; // an all-zero frame reads like an untouched one
            }
            base.to_le_bytes().into_iter().for_each(&mut eat);
            frame.iter().copied().for_each(&mut eat);
        }
        h
    }

    /// Configured size \[bytes\].
    #[must_use]
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Number of 4 KB frames.
    #[must_use]
    pub fn frame_count(&self) -> u64 {
        self.size / PAGE_SIZE
    }

    /// Frames that hold written bytes (the memory actually used by the model).
    #[must_use]
    pub fn touched_frames(&self) -> usize {
        self.frames.len()
    }

    /// Frames handed out by the allocator.
    #[must_use]
    pub fn allocated_frames(&self) -> usize {
        self.allocated.len()
    }

    fn check(&self, addr: u64, len: u64) -> Result<(), MemError> {
        let end = addr
            .checked_add(len)
            .ok_or(MemError::Overflow { addr, len })?;
        if end > self.size {
            return Err(MemError::OutOfRange {
                addr,
                len,
                size: self.size,
            });
        }
        Ok(())
    }

    /// Copies `buf.len()` bytes from physical address `pa` into `buf`.
    ///
    /// # Errors
    /// The range is not inside the memory.
    pub fn read(&self, pa: u64, buf: &mut [u8]) -> Result<(), MemError> {
        self.check(pa, buf.len() as u64)?;
        let mut done = 0usize;
        while done < buf.len() {
            let a = pa + done as u64;
            let off = offset_in_page(a);
            let n = (PAGE_SIZE as usize - off).min(buf.len() - done);
            match self.frames.get(&page_base(a)) {
                Some(frame) => buf[done..done + n].copy_from_slice(&frame[off..off + n]),
                None => buf[done..done + n].fill(0),
            }
            done += n;
        }
        Ok(())
    }

    /// Appends `len` bytes from physical address `pa` to `out`, without zero-filling
    /// them first (what [`HostMemory::read`] into a zeroed buffer gives; an untouched
    /// page reads as zeros).
    ///
    /// # Errors
    /// The range is not inside the memory (nothing is appended then).
    pub fn read_append(&self, pa: u64, len: usize, out: &mut Vec<u8>) -> Result<(), MemError> {
        self.check(pa, len as u64)?;
        out.reserve(len);
        let mut done = 0usize;
        while done < len {
            let a = pa + done as u64;
            let off = offset_in_page(a);
            let n = (PAGE_SIZE as usize - off).min(len - done);
            match self.frames.get(&page_base(a)) {
                Some(frame) => out.extend_from_slice(&frame[off..off + n]),
                None => out.resize(out.len() + n, 0),
            }
            done += n;
        }
        Ok(())
    }

    /// Copies `data` to physical address `pa`.
    ///
    /// # Errors
    /// The range is not inside the memory (nothing is written then).
    pub fn write(&mut self, pa: u64, data: &[u8]) -> Result<(), MemError> {
        self.check(pa, data.len() as u64)?;
        let end = pa + data.len() as u64;
        for &(start, len, who) in &self.watches {
            if pa < start.saturating_add(len) && start < end && !self.hits.contains(&who) {
                self.hits.push(who);
            }
        }
        let mut done = 0usize;
        while done < data.len() {
            let a = pa + done as u64;
            let off = offset_in_page(a);
            let n = (PAGE_SIZE as usize - off).min(data.len() - done);
            let piece = &data[done..done + n];
            match self.frames.entry(page_base(a)) {
                Entry::Occupied(e) => e.into_mut()[off..off + n].copy_from_slice(piece),
                Entry::Vacant(e) => {
                    e.insert(new_frame(off, piece));
                }
            }
            done += n;
        }
        Ok(())
    }

    /// Reads `len` bytes at `pa` into a new vector.
    ///
    /// # Errors
    /// The range is not inside the memory.
    pub fn read_vec(&self, pa: u64, len: usize) -> Result<Vec<u8>, MemError> {
        let mut v = vec![0u8; len];
        self.read(pa, &mut v)?;
        Ok(v)
    }

    /// Allocates one free frame, chosen pseudo-randomly (scattered, deterministic), and
    /// returns its physical base address.
    ///
    /// # Errors
    /// Every frame is allocated.
    pub fn alloc_frame(&mut self) -> Result<u64, MemError> {
        let frames = self.frame_count();
        if self.allocated.len() as u64 >= frames {
            return Err(MemError::OutOfFrames { frames });
        }
        // Random probes first; when memory is nearly full, scan on from a random frame.
        let mut pick = self.rng.below(frames);
        let mut probes = 0;
        while self.allocated.contains(&pick) {
            probes += 1;
            pick = if probes < 64 {
                self.rng.below(frames)
            } else {
                (pick + 1) % frames
            };
        }
        self.allocated.insert(pick);
        Ok(pick * PAGE_SIZE)
    }

    /// Marks the frame holding `pa` as allocated (for fixed buffers of a scenario);
    /// returns whether it was free.
    ///
    /// # Errors
    /// `pa` is outside the memory.
    pub fn reserve_frame(&mut self, pa: u64) -> Result<bool, MemError> {
        self.check(pa, 1)?;
        Ok(self.allocated.insert(pa / PAGE_SIZE))
    }
}

/// A new frame holding `piece` at `off`, zeros elsewhere: a whole page's bytes are
/// copied straight in, without zero-filling the frame first.
fn new_frame(off: usize, piece: &[u8]) -> Box<[u8; PAGE_SIZE as usize]> {
    if piece.len() == PAGE_SIZE as usize {
        if let Ok(whole) = Box::<[u8]>::from(piece).try_into() {
            return whole; // off is 0: the piece is the page
        }
    }
    let mut frame = Box::new([0u8; PAGE_SIZE as usize]);
    frame[off..off + piece.len()].copy_from_slice(piece);
    frame
}

#[allow(clippy::cast_possible_truncation)]
fn offset_in_page(addr: u64) -> usize {
    (addr % PAGE_SIZE) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_and_bounds_checked() {
        let mut m = HostMemory::new(Bytes(256 << 20), 1).unwrap();
        assert_eq!(m.touched_frames(), 0);
        let mut b = [0xAAu8; 8];
        m.read(0x1000_0000 - 8, &mut b).unwrap();
        assert_eq!(b, [0; 8]);
        // A write across a page boundary touches two frames.
        m.write(0x2FFE, &[1, 2, 3, 4]).unwrap();
        assert_eq!(m.touched_frames(), 2);
        assert_eq!(m.read_vec(0x2FFD, 6).unwrap(), vec![0, 1, 2, 3, 4, 0]);
        assert_eq!(
            m.write(0x1000_0000 - 2, &[0; 4]),
            Err(MemError::OutOfRange {
                addr: 0x1000_0000 - 2,
                len: 4,
                size: 0x1000_0000
            })
        );
        assert!(matches!(
            m.read(u64::MAX, &mut b),
            Err(MemError::Overflow { .. })
        ));
        assert!(HostMemory::new(Bytes(1000), 1).is_err());
        assert!(HostMemory::new(Bytes(0), 1).is_err());
    }

    #[test]
    fn new_frames_hold_the_piece_and_zeros() {
        let mut m = HostMemory::new(Bytes(64 * PAGE_SIZE), 1).unwrap();
        let page: Vec<u8> = (0..PAGE_SIZE)
            .map(|i| u8::try_from(i % 251).unwrap() + 1)
            .collect();
        // A whole page into a new frame (copied straight in), one spilling into the next
        // frame, and a piece inside a new frame.
        m.write(0x3000, &page).unwrap();
        m.write(0x5800, &page).unwrap();
        m.write(0x8010, &[7, 8]).unwrap();
        assert_eq!(m.touched_frames(), 4);
        assert_eq!(m.read_vec(0x3000, page.len()).unwrap(), page);
        assert_eq!(m.read_vec(0x5800, page.len()).unwrap(), page);
        assert_eq!(m.read_vec(0x5000, 0x800).unwrap(), vec![0; 0x800]);
        assert_eq!(m.read_vec(0x6800, 0x800).unwrap(), vec![0; 0x800]);
        let mut want = vec![0u8; PAGE_SIZE as usize];
        want[0x10..0x12].copy_from_slice(&[7, 8]);
        assert_eq!(m.read_vec(0x8000, want.len()).unwrap(), want);
        // A whole page over an existing frame replaces every byte.
        m.write(0x8000, &page).unwrap();
        assert_eq!(m.read_vec(0x8000, page.len()).unwrap(), page);
    }

    #[test]
    fn read_append_equals_read() {
        let mut m = HostMemory::new(Bytes(256 << 20), 1).unwrap();
        m.write(0x2FFE, &[1, 2, 3, 4]).unwrap();
        // Across a written page, into an untouched one, after bytes already there.
        let mut out = vec![9u8];
        m.read_append(0x2FF0, 0x1020, &mut out).unwrap();
        let mut want = vec![9u8];
        want.extend(m.read_vec(0x2FF0, 0x1020).unwrap());
        assert_eq!(out, want);
        assert_eq!(&out[15..19], &[1, 2, 3, 4]);
        assert!(m.read_append(0x1000_0000 - 2, 4, &mut out).is_err());
        assert_eq!(out.len(), 0x1021, "nothing appended on an error");
    }

    #[test]
    fn watches_of_several_ranges_note_each_watcher_once() {
        let mut m = HostMemory::new(Bytes(64 * PAGE_SIZE), 1).unwrap();
        let (a, b) = (ComponentId(3), ComponentId(4));
        m.watch(0x100, 32, b);
        m.watch_all([(0x1000, 32), (0x2000, 32)], a);
        m.write(0x1020, &[1]).unwrap(); // just past the first range
        assert!(!m.has_hits());
        m.write(0x201F, &[1, 2]).unwrap(); // straddles the second range's end
        m.write(0x1000, &[1]).unwrap();
        assert_eq!(m.take_hits(), vec![a], "one notice for both ranges");
        m.watch_all([(0x3000, 32)], a); // replaces a's ranges
        m.write(0x1000, &[2]).unwrap();
        assert!(!m.has_hits());
        m.write(0x3000, &[2]).unwrap();
        m.write(0x100, &[2]).unwrap();
        assert_eq!(
            m.drain_hits().collect::<Vec<_>>(),
            vec![a, b],
            "drained in order"
        );
        assert!(!m.has_hits(), "and gone");
        m.unwatch(a);
        m.write(0x3000, &[3]).unwrap();
        assert!(!m.has_hits());
    }

    #[test]
    fn lazy_commits_apply_in_order_strictly_before_a_reader() {
        let mut m = HostMemory::new(Bytes(64 * PAGE_SIZE), 1).unwrap();
        m.post_commit(Time(100), 0x100, vec![1, 2]).unwrap();
        m.post_commit(Time(200), 0x101, vec![3]).unwrap();
        assert!(m.post_commit(Time(300), 64 * PAGE_SIZE, vec![9]).is_err());
        assert!(m.pending_into(0x101, 1) && !m.pending_into(0x102, 32));
        // A reader at a commit's own instant does not see it (the bridge commits at
        // LATE priority); one after it does, in commit order.
        m.settle_before(Time(100));
        assert_eq!(m.read_vec(0x100, 2).unwrap(), vec![0, 0]);
        m.settle_before(Time(101));
        assert_eq!(m.read_vec(0x100, 2).unwrap(), vec![1, 2]);
        // The bridge's own commit at the clock edge includes it.
        assert_eq!(m.settle_through(Time(200)), 1);
        assert_eq!(m.read_vec(0x100, 2).unwrap(), vec![1, 3]);
        assert!(!m.pending_into(0, PAGE_SIZE));
        // A commit the bridge applies into a watched range is noted.
        let who = ComponentId(5);
        m.watch(0x200, 32, who);
        assert!(m.watched(0x21F, 4) && !m.watched(0x220, 4));
        m.post_commit(Time(400), 0x210, vec![7]).unwrap();
        assert_eq!(m.settle_through(Time(400)), 1);
        assert_eq!(m.take_hits(), vec![who]);
    }

    #[test]
    fn allocator_is_scattered_deterministic_and_exhaustible() {
        let mut a = HostMemory::new(Bytes(64 * PAGE_SIZE), 7).unwrap();
        let mut b = HostMemory::new(Bytes(64 * PAGE_SIZE), 7).unwrap();
        let fa: Vec<u64> = (0..64).map(|_| a.alloc_frame().unwrap()).collect();
        let fb: Vec<u64> = (0..64).map(|_| b.alloc_frame().unwrap()).collect();
        assert_eq!(fa, fb);
        let mut sorted = fa.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 64, "no frame twice");
        assert_ne!(fa, sorted, "not handed out in order");
        assert_eq!(a.alloc_frame(), Err(MemError::OutOfFrames { frames: 64 }));
    }
}
