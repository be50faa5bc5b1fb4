//! Spare buffers: a per-thread cache of emptied `Vec<u8>` and `Vec<u64>` buffers, so the
//! byte and page lists that cross components on every data frame (a folded read's
//! sample, a receive-data write, a DMA job's page list, a burst's data on its way to
//! host memory) are allocated once and then circulate instead of going through the
//! allocator each time.
//!
//! A buffer is created by one component and dropped by another (the bus copies a
//! sample, the MAC consumes it), so a component's own free list cannot take it back
//! without a return message; the cache is the return path. It holds no model state:
//! [`take_bytes`] and [`take_words`] hand out empty vectors, and nothing in a model may
//! read a vector's capacity, so which buffer comes back changes allocations, never a
//! result. Each thread has its own (a parallel sweep runs one size a thread), bounded in
//! count and in the capacity of a kept buffer, so a burst cannot leave it holding more
//! memory than a few frames' worth.
//!
//! Measured (the 1 MiB run of README "Simulation speed", callgrind): see
//! docs/speed-plan.md, seventeenth round.

use std::cell::RefCell;
use std::thread::LocalKey;

/// How many buffers of each kind a thread keeps: more than a system's data frames in
/// flight need (a frame's buffers are on their way through a few components at once).
/// Not a model number: it changes allocations, never a result.
const KEPT: usize = 256;

/// The largest capacity kept, in bytes: a frame's data and a DMA burst fit, a large
/// host-memory write does not come back to sit here.
const MAX_KEPT_BYTES: usize = 16 * 1024;

/// The capacity of every byte buffer the cache makes, at the least, and the smallest it
/// keeps: a whole 1518-byte frame fits, so any buffer kept serves any taker of a frame's
/// bytes or less (buffers of mixed sizes would leave a small one on top, and the next
/// taker of a larger one would allocate after all).
const MIN_KEPT_BYTES: usize = 2048;

/// Below this many bytes a taker gets a new buffer of its own size: a descriptor's or a
/// status word's few bytes are cheap for the allocator, and would take a frame's buffer
/// out of circulation.
const SMALL_BYTES: usize = 64;

thread_local! {
    static BYTES: Cache<u8> = const { RefCell::new(Vec::new()) };
    static WORDS: Cache<u64> = const { RefCell::new(Vec::new()) };
}

/// One kind of kept buffers, the last kept on top.
type Cache<T> = RefCell<Vec<Vec<T>>>;

/// The buffer on top of `cache` if it has room for `cap` items.
fn take_from<T: 'static>(cache: &'static LocalKey<Cache<T>>, cap: usize) -> Option<Vec<T>> {
    cache.with(|c| {
        let mut c = c.borrow_mut();
        if c.last().is_some_and(|v| v.capacity() >= cap) {
            c.pop()
        } else {
            None
        }
    })
}

/// Keeps `buf`, emptied, on top of `cache` unless enough are kept already.
fn keep_in<T: 'static>(cache: &'static LocalKey<Cache<T>>, mut buf: Vec<T>) {
    buf.clear();
    cache.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() < KEPT {
            c.push(buf);
        }
    });
}

/// An empty byte buffer with room for at least `cap` bytes: a kept one if the last kept
/// is large enough, a new one otherwise (of at least the smallest capacity kept, so it
/// can circulate; for fewer than [`SMALL_BYTES`], one of its own size).
#[must_use]
pub fn take_bytes(cap: usize) -> Vec<u8> {
    if cap < SMALL_BYTES {
        return Vec::with_capacity(cap);
    }
    take_from(&BYTES, cap).unwrap_or_else(|| Vec::with_capacity(cap.max(MIN_KEPT_BYTES)))
}

/// Gives `buf` back for a later [`take_bytes`]: kept emptied, or dropped if it is too
/// small or too large to keep or enough are kept already.
pub fn give_bytes(buf: Vec<u8>) {
    if (MIN_KEPT_BYTES..=MAX_KEPT_BYTES).contains(&buf.capacity()) {
        keep_in(&BYTES, buf);
    }
}

/// An empty list of words (a DMA job's pages) with room for at least `cap`: a kept one
/// if the last kept is large enough, a new one otherwise.
#[must_use]
pub fn take_words(cap: usize) -> Vec<u64> {
    take_from(&WORDS, cap).unwrap_or_else(|| Vec::with_capacity(cap))
}

/// Gives `list` back for a later [`take_words`]: kept emptied, or dropped if it holds no
/// memory, is larger than a frame's lists or enough are kept already.
pub fn give_words(list: Vec<u64>) {
    if (1..=MAX_KEPT_BYTES / 8).contains(&list.capacity()) {
        keep_in(&WORDS, list);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Empties this thread's cache (tests may share a thread).
    fn drain() {
        BYTES.with(|b| b.borrow_mut().clear());
        WORDS.with(|w| w.borrow_mut().clear());
    }

    #[test]
    fn a_given_buffer_comes_back_empty_with_its_capacity() {
        drain();
        give_bytes(vec![7; 3000]);
        let b = take_bytes(1000);
        assert!(b.is_empty());
        assert!(b.capacity() >= 3000, "the kept buffer, not a new one");
        let n = take_bytes(100_000);
        assert!(
            n.is_empty() && n.capacity() >= 100_000,
            "too small a kept one is left"
        );
        give_bytes(vec![7; 3000]);
        assert!(
            take_bytes(16).capacity() < 3000,
            "a few bytes take no kept buffer"
        );
        assert!(take_bytes(1500).capacity() >= 3000);
        assert!(
            take_bytes(100).capacity() >= MIN_KEPT_BYTES,
            "made to circulate"
        );
        give_bytes(vec![7; 1500]);
        assert_eq!(BYTES.with(|b| b.borrow().len()), 0, "too small to keep");
        give_words(vec![1, 2, 3]);
        let w = take_words(2);
        assert!(w.is_empty() && w.capacity() >= 3);
    }

    #[test]
    fn the_cache_is_bounded_in_count_and_size() {
        drain();
        for _ in 0..KEPT + 10 {
            give_bytes(Vec::with_capacity(MIN_KEPT_BYTES));
            give_words(Vec::with_capacity(4));
        }
        give_bytes(Vec::with_capacity(MAX_KEPT_BYTES + 1));
        give_bytes(Vec::with_capacity(MIN_KEPT_BYTES - 1));
        assert_eq!(BYTES.with(|b| b.borrow().len()), KEPT);
        assert_eq!(WORDS.with(|w| w.borrow().len()), KEPT);
        assert!(BYTES.with(|b| b
            .borrow()
            .iter()
            .all(|v| v.capacity() == MIN_KEPT_BYTES && v.is_empty())));
    }
}
