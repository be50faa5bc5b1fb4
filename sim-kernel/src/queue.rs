//! The event queue: a binary min-heap ordered by `(time, priority, sequence)`.
//!
//! The three keys are packed into one `u128` so that ordering is a single integer
//! compare: time in the high 64 bits, priority in the next 8, and a 56-bit insertion
//! sequence number in the low bits. Equal time and priority therefore pop first in,
//! first out, whatever the heap's internal layout: the order of a run is a pure function
//! of the order of `push` calls.
//!
//! The heap holds only the key and a slot index (24 bytes an entry); the payloads wait
//! in a slab of slots reused through a free list, so sifting moves small entries and no
//! event allocates once the slab has grown to the run's peak.

use crate::time::Time;
use core::cmp::Ordering;
use std::collections::BinaryHeap;

/// Tie-break between events at the same instant: lower runs first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Priority(pub u8);

impl Priority {
    /// Runs before default-priority events of the same instant.
    pub const EARLY: Priority = Priority(64);
    /// The priority of ordinary messages.
    pub const NORMAL: Priority = Priority(128);
    /// Runs after default-priority events of the same instant (e.g. end-of-edge checks).
    pub const LATE: Priority = Priority(192);
}

const SEQ_BITS: u32 = 56;
const SEQ_MASK: u64 = (1 << SEQ_BITS) - 1;

/// One queued event: when, in which order, for whom, carrying what.
#[derive(Debug)]
pub struct Entry<T> {
    key: u128,
    /// The payload (target and message, as the kernel defines it).
    pub item: T,
}

impl<T> Entry<T> {
    /// When the event fires.
    #[must_use]
    #[allow(clippy::cast_possible_truncation)]
    pub fn time(&self) -> Time {
        Time((self.key >> 64) as u64)
    }

    /// Its priority.
    #[must_use]
    #[allow(clippy::cast_possible_truncation)]
    pub fn priority(&self) -> Priority {
        Priority((self.key >> SEQ_BITS) as u8)
    }

    /// Its insertion sequence number.
    #[must_use]
    #[allow(clippy::cast_possible_truncation)]
    pub fn sequence(&self) -> u64 {
        (self.key as u64) & SEQ_MASK
    }
}

/// A heap entry: the key and the slab slot of its payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Keyed {
    key: u128,
    slot: u32,
}

impl PartialOrd for Keyed {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Keyed {
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the smallest key (keys are
    /// unique: the sequence number is in them).
    fn cmp(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key)
    }
}

/// A deterministic priority queue of events.
#[derive(Debug)]
pub struct EventQueue<T> {
    heap: BinaryHeap<Keyed>,
    /// Payloads by slot; `None` is a free slot.
    slab: Vec<Option<T>>,
    /// Free slots, reused last freed first.
    free: Vec<u32>,
    next_seq: u64,
}

impl<T> Default for EventQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> EventQueue<T> {
    /// An empty queue.
    #[must_use]
    pub fn new() -> Self {
        Self {
            heap: BinaryHeap::with_capacity(256),
            slab: Vec::with_capacity(256),
            free: Vec::with_capacity(256),
            next_seq: 0,
        }
    }

    /// Queues `item` at `time` with `priority`; returns its sequence number.
    ///
    /// # Panics
    /// With 2^32 events queued at once (far beyond any run's memory).
    pub fn push(&mut self, time: Time, priority: Priority, item: T) -> u64 {
        let seq = self.next_seq & SEQ_MASK;
        // 2^56 events is about 10^17: wrap-around is beyond any run's reach.
        self.next_seq = self.next_seq.wrapping_add(1);
        let key =
            (u128::from(time.0) << 64) | (u128::from(priority.0) << SEQ_BITS) | u128::from(seq);
        let slot = match self.free.pop() {
            Some(s) => {
                if let Some(cell) = self.slab.get_mut(s as usize) {
                    *cell = Some(item);
                }
                s
            }
            None => {
                // More than 2^32 events queued at once is beyond any run's memory.
                let s = u32::try_from(self.slab.len()).expect("fewer than 2^32 queued events");
                self.slab.push(Some(item));
                s
            }
        };
        self.heap.push(Keyed { key, slot });
        seq
    }

    /// Removes and returns the earliest event.
    pub fn pop(&mut self) -> Option<Entry<T>> {
        let Keyed { key, slot } = self.heap.pop()?;
        let item = self.slab.get_mut(slot as usize).and_then(Option::take);
        self.free.push(slot);
        // Every heap entry's slot holds its payload until it is popped.
        item.map(|item| Entry { key, item })
    }

    /// The time of the earliest event, if any.
    #[must_use]
    #[allow(clippy::cast_possible_truncation)]
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|k| Time((k.key >> 64) as u64))
    }

    /// Number of queued events.
    #[must_use]
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Every queued item, in no particular order (for inspection, e.g. stall detection).
    pub fn items(&self) -> impl Iterator<Item = &T> {
        self.slab.iter().flatten()
    }

    /// Whether no event is queued.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ties_pop_first_in_first_out() {
        let mut q = EventQueue::new();
        for i in 0..10 {
            q.push(Time(5), Priority::NORMAL, i);
        }
        q.push(Time(5), Priority::EARLY, 100);
        q.push(Time(4), Priority::LATE, 200);
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|e| e.item)).collect();
        assert_eq!(order, vec![200, 100, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    }

    proptest! {
        /// Whatever the insertion order, pops come out sorted by (time, priority,
        /// insertion order), and the accessors give back what was pushed.
        #[test]
        fn pops_in_key_order(events in prop::collection::vec((0u64..50, 0u8..4), 0..300)) {
            let mut q = EventQueue::new();
            for (i, (t, p)) in events.iter().enumerate() {
                q.push(Time(*t), Priority(*p), i);
            }
            let mut expected: Vec<(u64, u8, usize)> =
                events.iter().enumerate().map(|(i, (t, p))| (*t, *p, i)).collect();
            expected.sort_unstable();
            let mut got = Vec::new();
            while let Some(e) = q.pop() {
                prop_assert_eq!(e.sequence(), e.item as u64);
                got.push((e.time().0, e.priority().0, e.item));
            }
            prop_assert_eq!(got, expected);
        }
    }
}
