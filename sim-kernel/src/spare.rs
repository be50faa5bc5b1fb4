//! Spare buffers: a per-thread cache of emptied `Vec<u8>` and `Vec<u64>` buffers, so the
//! byte buffers and page lists that cross components on every data frame (a DMA read's
//! data, a folded read's sample, a receive-data write, a receive chunk on its way to
//! host memory, a DMA job's page list) are allocated once and then circulate instead of
//! going through the allocator each time.
//!
//! A buffer is made by one component and dropped by another (the card's buffer RAM
//! copies a sample, the DP83820's MAC consumes it), so a component's own free list
//! cannot take it back without a return message; the cache is the return path. It holds
//! no model state: [`take_bytes`] and [`take_words`] hand out empty vectors, and nothing
//! in a model may read a vector's capacity, so which buffer comes back changes
//! allocations, never a result. Each thread has its own (a parallel sweep runs one size
//! a thread), bounded in count and in the capacity of a kept
//! buffer, so it holds at most a few MiB (256 byte buffers of up to 16 KiB, 256 lists
//! of up to 2,048 words); in a run it settles at the buffers in flight, 2 KiB each.
//!
//! Measured (the callgrind runs of README "Simulation speed"): see docs/speed-plan.md,
//! seventeenth round.

use std::cell::RefCell;
use std::thread::LocalKey;

/// How many buffers of each kind a thread keeps: more than a system's data frames in
/// flight need (a frame's buffers are on their way through a few components at once, and
/// host memory holds a message's lazily committed chunks until they are due). Not a
/// model number: it changes allocations, never a result.
const KEPT: usize = 256;

/// The largest capacity kept, in bytes: a frame's data and a DMA burst fit, a large
/// host-memory write does not come back to sit here.
const MAX_KEPT_BYTES: usize = 16 * 1024;

/// The capacity of every byte buffer the cache makes, at the least, and the smallest it
/// keeps: a whole 1518-byte frame fits, so any buffer kept serves any taker of a frame's
/// bytes or less (buffers of mixed sizes would leave a small one on top, and the next
/// taker of a larger one would allocate after all).
const MIN_KEPT_BYTES: usize = 2048;

/// Below this many bytes a taker gets a new buffer of its own size: a few bytes (the
/// DP83820's 16-byte descriptors) are cheap for the allocator, and their takers drop
/// them without giving them back.
const SMALL_BYTES: usize = 64;

/// The largest page list kept, in words (a 8 MiB job's; the engine's lists have one or
/// two pages).
const MAX_KEPT_WORDS: usize = 2048;

/// The capacity of every page list the cache makes, at the least, and the smallest it
/// keeps (the engine's lists are made with room for four).
const MIN_KEPT_WORDS: usize = 4;

thread_local! {
    static BYTES: Cache<u8> = const { RefCell::new(Vec::new()) };
    static WORDS: Cache<u64> = const { RefCell::new(Vec::new()) };
}

/// One kind of kept buffers, the last kept on top.
type Cache<T> = RefCell<Vec<Vec<T>>>;

/// The buffer on top of `cache` if it has room for `cap` items (none while the thread
/// is being torn down).
fn take_from<T: 'static>(cache: &'static LocalKey<Cache<T>>, cap: usize) -> Option<Vec<T>> {
    cache
        .try_with(|c| {
            let mut c = c.borrow_mut();
            if c.last().is_some_and(|v| v.capacity() >= cap) {
                c.pop()
            } else {
                None
            }
        })
        .ok()
        .flatten()
}

/// Keeps `buf`, emptied, on top of `cache` unless enough are kept already (or the
/// thread is being torn down: then it is dropped).
fn keep_in<T: 'static>(cache: &'static LocalKey<Cache<T>>, mut buf: Vec<T>) {
    buf.clear();
    let _ = cache.try_with(|c| {
        let mut c = c.borrow_mut();
        if c.len() < KEPT {
            c.push(buf);
        }
    });
}

/// An empty byte buffer with room for at least `cap` bytes: a kept one if the last kept
/// is large enough, a new one otherwise (of at least the smallest capacity kept, so it
/// can circulate; for fewer than 64 bytes, one of its own size).
#[must_use]
pub fn take_bytes(cap: usize) -> Vec<u8> {
    if cap < SMALL_BYTES {
        return Vec::with_capacity(cap);
    }
    take_from(&BYTES, cap).unwrap_or_else(|| Vec::with_capacity(cap.max(MIN_KEPT_BYTES)))
}

/// Gives `buf` back for a later [`take_bytes`]: kept emptied, or dropped if its capacity
/// is outside 2-16 KiB or enough are kept already.
pub fn give_bytes(buf: Vec<u8>) {
    if (MIN_KEPT_BYTES..=MAX_KEPT_BYTES).contains(&buf.capacity()) {
        keep_in(&BYTES, buf);
    }
}

/// An empty list of words (a DMA job's pages) with room for at least `cap`: a kept one
/// if the last kept is large enough, a new one otherwise (of at least the smallest
/// capacity kept).
#[must_use]
pub fn take_words(cap: usize) -> Vec<u64> {
    take_from(&WORDS, cap).unwrap_or_else(|| Vec::with_capacity(cap.max(MIN_KEPT_WORDS)))
}

/// Gives `list` back for a later [`take_words`]: kept emptied, or dropped if its
/// capacity is outside 4-2,048 words or enough are kept already.
pub fn give_words(list: Vec<u64>) {
    if (MIN_KEPT_WORDS..=MAX_KEPT_WORDS).contains(&list.capacity()) {
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

    /// The capacities kept in `cache`, the last kept last.
    fn kept<T: 'static>(cache: &'static LocalKey<Cache<T>>) -> Vec<usize> {
        cache.with(|c| c.borrow().iter().map(Vec::capacity).collect())
    }

    fn kept_bytes() -> Vec<usize> {
        kept(&BYTES)
    }

    fn kept_words() -> Vec<usize> {
        kept(&WORDS)
    }

    #[test]
    fn a_given_buffer_comes_back_empty_with_its_capacity() {
        drain();
        give_bytes(vec![7; 3000]);
        let b = take_bytes(1000);
        assert!(b.is_empty());
        assert_eq!(b.capacity(), 3000, "the kept buffer, not a new one");
        give_bytes(b);
        let n = take_bytes(5000);
        assert!(
            n.is_empty() && n.capacity() >= 5000,
            "a new one for a larger taker"
        );
        assert_eq!(kept_bytes(), [3000], "and the kept one stays");
        give_words(vec![1, 2, 3, 4, 5]);
        let w = take_words(2);
        assert!(w.is_empty() && w.capacity() >= 5);
    }

    #[test]
    fn small_takers_get_their_own_buffer_and_new_ones_circulate() {
        drain();
        give_bytes(vec![7; 3000]);
        assert!(take_bytes(SMALL_BYTES - 1).capacity() < SMALL_BYTES);
        assert_eq!(kept_bytes(), [3000], "a few bytes take no kept buffer");
        assert_eq!(take_bytes(SMALL_BYTES).capacity(), 3000);
        assert!(
            take_bytes(SMALL_BYTES).capacity() >= MIN_KEPT_BYTES,
            "made to circulate"
        );
        assert!(take_words(1).capacity() >= MIN_KEPT_WORDS);
    }

    #[test]
    fn only_capacities_in_range_are_kept() {
        drain();
        let bytes = [
            MIN_KEPT_BYTES - 1,
            MIN_KEPT_BYTES,
            MAX_KEPT_BYTES,
            MAX_KEPT_BYTES + 1,
        ];
        bytes
            .into_iter()
            .for_each(|cap| give_bytes(Vec::with_capacity(cap)));
        assert_eq!(kept_bytes(), [MIN_KEPT_BYTES, MAX_KEPT_BYTES]);
        let words = [
            0,
            MIN_KEPT_WORDS - 1,
            MIN_KEPT_WORDS,
            MAX_KEPT_WORDS,
            MAX_KEPT_WORDS + 1,
        ];
        words
            .into_iter()
            .for_each(|cap| give_words(Vec::with_capacity(cap)));
        assert_eq!(kept_words(), [MIN_KEPT_WORDS, MAX_KEPT_WORDS]);
    }

    #[test]
    fn the_cache_is_bounded_in_count() {
        drain();
        for _ in 0..KEPT + 10 {
            give_bytes(vec![1; MIN_KEPT_BYTES]);
            give_words(vec![1; MIN_KEPT_WORDS]);
        }
        assert_eq!(kept_bytes().len(), KEPT);
        assert_eq!(kept_words().len(), KEPT);
        assert!(BYTES.with(|b| b.borrow().iter().all(Vec::is_empty)));
        assert!(WORDS.with(|w| w.borrow().iter().all(Vec::is_empty)));
    }
}
