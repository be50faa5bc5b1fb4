//! The event queue: a priority queue ordered by `(time, priority, sequence)`.
//!
//! The three keys are packed into one `u128` so that ordering is a single integer
//! compare: time in the high 64 bits, priority in the next 8, and a 56-bit insertion
//! sequence number in the low bits. Equal time and priority therefore pop first in,
//! first out, whatever the heap's internal layout: the order of a run is a pure function
//! of the order of `push` calls.
//!
//! The queue orders only the key and a slot index (16 and 4 bytes, kept in two arrays),
//! in a short sorted array that holds up to 32 queued events (a run keeps a handful
//! queued: popping is then taking its last entry) and a binary heap for the rest; the
//! payloads wait with their targets in a slab of slots reused through a free list, so
//! ordering moves small entries and no event allocates once the slab has grown to the
//! run's peak; a push moves its payload once, into its slot, and a pop once, out of it.
//!
//! An event can be cancelled by the [`EventToken`] its push returned: its payload is
//! dropped at once and its heap entry is skipped when it reaches the top (its slot is
//! reused only then), so it is never delivered and the order of the others is unchanged.
//! [`EventQueue::reschedule`] moves a queued event: cancel and push in one, the same
//! order as the two, but the old entry leaves the sorted array at once, its slot reused.

use crate::kernel::ComponentId;
use crate::order::EventKey;
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
/// The sequence number a deferred entry sorts by until it is rekeyed
/// ([`EventQueue::push_deferred`]): above every one a push takes.
const DEFERRED_SEQ: u64 = SEQ_MASK;

/// The packed key of `(time, priority, seq)`: the queue's order is this integer's.
#[inline(always)]
pub(crate) fn pack(time: Time, priority: Priority, seq: u64) -> u128 {
    (u128::from(time.0) << 64) | (u128::from(priority.0) << SEQ_BITS) | u128::from(seq & SEQ_MASK)
}

/// One queued event: when, in which order, for whom, carrying what.
#[derive(Debug)]
pub struct Entry<T> {
    key: u128,
    /// Its target.
    pub to: ComponentId,
    /// The payload (the message, as the kernel defines it).
    pub item: T,
}

impl<T> Entry<T> {
    /// Its place in the order, packed as the queue orders it (see [`unpack`]).
    #[inline]
    #[must_use]
    pub(crate) fn packed_key(&self) -> u128 {
        self.key
    }

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

/// The [`EventKey`] of a packed key (of [`Entry::packed_key`]).
#[inline]
#[must_use]
#[allow(clippy::cast_possible_truncation)]
pub(crate) fn unpack(key: u128) -> EventKey {
    EventKey {
        time: Time((key >> 64) as u64),
        priority: Priority((key >> SEQ_BITS) as u8),
        sequence: (key as u64) & SEQ_MASK,
    }
}

/// A queued event's handle, to cancel it ([`EventQueue::cancel`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventToken {
    slot: u32,
    seq: u64,
}

/// A slab slot: the sequence number of the event that holds it, its target and its
/// payload (`None` once popped or cancelled). The target is a field of its own, not a
/// tuple with the payload, so that a push moves the payload once, straight into the slot.
/// A free slot names the next free one (the free list lives in the slab: freeing and
/// reusing a slot touches only the slot).
#[derive(Debug)]
struct Slot<T> {
    seq: u64,
    to: ComponentId,
    /// The free slot after this one, when this one is free ([`NO_SLOT`]: none).
    next_free: u32,
    item: Option<T>,
}

/// The end of the free list.
const NO_SLOT: u32 = u32::MAX;

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
    /// unique, the sequence number in them, but for deferred entries not rekeyed yet:
    /// `BinaryHeap::peek` and `pop` agree on which of tied keys is first).
    fn cmp(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key)
    }
}

/// Entries a `Keys` keeps in its sorted array before it spills into its heap.
const NEAR_CAP: usize = 32;

/// The queued keys: up to `NEAR_CAP` in an array sorted by key, largest first (the
/// smallest pops from its end without sifting; a push shifts the entries above its
/// place), the rest in a binary heap. A run keeps a handful of events queued at a time
/// (5 to 10 in a 1 MiB ping-pong, never more than 13), so the array holds nearly all of
/// them; the heap bounds the cost of a long queue. A pop takes the smaller of the two
/// tops: the order is the keys' order, whichever side holds an entry.
///
/// The array is kept as two, the keys and their slots (an insertion moves 16 and 4
/// bytes an entry instead of a padded 32, and the keys it compares lie together).
#[derive(Debug)]
struct Keys {
    /// `keys[..n]`, sorted, largest first.
    keys: [u128; NEAR_CAP],
    /// The slot of each of `keys`.
    slots: [u32; NEAR_CAP],
    n: usize,
    far: BinaryHeap<Keyed>,
}

impl Keys {
    fn new() -> Self {
        Self {
            keys: [0; NEAR_CAP],
            slots: [0; NEAR_CAP],
            n: 0,
            far: BinaryHeap::with_capacity(256),
        }
    }

    /// The entry at `i` of the array.
    #[inline]
    fn near(&self, i: usize) -> Keyed {
        Keyed {
            key: self.keys[i],
            slot: self.slots[i],
        }
    }

    #[inline]
    fn len(&self) -> usize {
        self.n + self.far.len()
    }

    #[inline]
    fn push(&mut self, e: Keyed) {
        let n = self.n;
        if n < NEAR_CAP {
            // New events are mostly among the soonest: from the end, move each sooner
            // entry up one place until the place of `e` (one insertion-sort step).
            let mut j = n;
            while j > 0 {
                let prev = self.keys[j - 1];
                if prev > e.key {
                    break;
                }
                self.keys[j] = prev;
                self.slots[j] = self.slots[j - 1];
                j -= 1;
            }
            self.keys[j] = e.key;
            self.slots[j] = e.slot;
            self.n = n + 1;
        } else {
            self.push_far(e);
        }
    }

    /// Removes the entry of `slot` from the sorted array if it is there (the others
    /// keep their order); whether it was.
    #[inline]
    fn remove_near(&mut self, slot: u32) -> bool {
        let n = self.n;
        let Some(i) = self.slots[..n].iter().rposition(|&k| k == slot) else {
            return false;
        };
        self.keys.copy_within(i + 1..n, i);
        self.slots.copy_within(i + 1..n, i);
        self.n = n - 1;
        true
    }

    /// Gives the entry of `slot` in the sorted array the key `key`, no larger than its
    /// own, keeping the array sorted; whether it was there.
    #[inline]
    fn lower_near(&mut self, slot: u32, key: u128) -> bool {
        let n = self.n;
        let Some(mut i) = self.slots[..n].iter().rposition(|&k| k == slot) else {
            return false;
        };
        debug_assert!(key <= self.keys[i], "a key lowered");
        // Smaller keys lie towards the end: move it past the larger ones there.
        while i + 1 < n && self.keys[i + 1] > key {
            self.keys[i] = self.keys[i + 1];
            self.slots[i] = self.slots[i + 1];
            i += 1;
        }
        self.keys[i] = key;
        self.slots[i] = slot;
        true
    }

    /// A push past the array (out of line: a run rarely has that many queued).
    #[cold]
    #[inline(never)]
    fn push_far(&mut self, e: Keyed) {
        self.far.push(e);
    }

    /// The entry with the smallest key: the one [`Keys::pop`] takes. Keys tie between
    /// deferred entries of one instant and priority not rekeyed yet (their sequence is
    /// `DEFERRED_SEQ`); on a tie both take the array's entry (`purge` frees the slot of
    /// the entry it peeked at and pops: they must be the same entry).
    #[inline]
    fn peek(&self) -> Option<Keyed> {
        let n = self.n.checked_sub(1).map(|i| self.near(i));
        match self.far.peek() {
            None => n,
            Some(&f) => match n {
                Some(n) if n.key <= f.key => Some(n),
                _ => Some(f),
            },
        }
    }

    /// Pops the entry with the smallest key if its time is at or before `until`; when
    /// the heap is empty (nearly always), from the array alone.
    #[inline]
    #[allow(clippy::cast_possible_truncation)]
    fn pop_due(&mut self, until: u64) -> Option<Keyed> {
        if !self.far.is_empty() {
            return self.pop_due_far(until);
        }
        let i = self.n.checked_sub(1)?;
        let top = self.near(i);
        if (top.key >> 64) as u64 > until {
            return None;
        }
        self.n = i;
        Some(top)
    }

    /// [`Keys::pop_due`] with entries in the heap (out of line: a run rarely has that
    /// many queued; inlined, its result would pass through memory on every pop).
    #[cold]
    #[inline(never)]
    #[allow(clippy::cast_possible_truncation)]
    fn pop_due_far(&mut self, until: u64) -> Option<Keyed> {
        if (self.peek()?.key >> 64) as u64 > until {
            return None;
        }
        self.pop()
    }

    #[inline]
    fn pop(&mut self) -> Option<Keyed> {
        let near = self.n.checked_sub(1).map(|i| (i, self.near(i)));
        match (near, self.far.peek()) {
            (Some((_, n)), Some(f)) if f.key < n.key => self.far.pop(),
            (Some((i, n)), _) => {
                self.n = i;
                Some(n)
            }
            (None, _) => self.far.pop(),
        }
    }
}

/// A deterministic priority queue of events.
#[derive(Debug)]
pub struct EventQueue<T> {
    heap: Keys,
    /// Payloads by slot; a `None` payload is a free slot or a cancelled event's.
    slab: Vec<Slot<T>>,
    /// The first free slot ([`NO_SLOT`]: none), the others chained through
    /// [`Slot::next_free`]: reused last freed first.
    free: u32,
    next_seq: u64,
    /// Cancelled events whose heap entries are still queued (never at the top).
    cancelled: usize,
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
            heap: Keys::new(),
            slab: Vec::with_capacity(256),
            free: NO_SLOT,
            next_seq: 0,
            cancelled: 0,
        }
    }

    /// The sequence number the next push gets: every event queued so far has a lower
    /// one (see [`crate::EventKey`]).
    #[must_use]
    pub fn next_sequence(&self) -> u64 {
        self.next_seq & SEQ_MASK
    }

    /// Queues `item` for `to` at `time` with `priority`; returns its sequence number.
    ///
    /// # Panics
    /// With 2^32 events queued at once (far beyond any run's memory).
    pub fn push(&mut self, time: Time, priority: Priority, to: ComponentId, item: T) -> u64 {
        self.push_token(time, priority, to, item).seq
    }

    /// Queues `item` for `to` at `time` with `priority`; returns the token that cancels
    /// it.
    ///
    /// # Panics
    /// With 2^32 events queued at once (far beyond any run's memory).
    #[inline(always)]
    pub fn push_token(
        &mut self,
        time: Time,
        priority: Priority,
        to: ComponentId,
        item: T,
    ) -> EventToken {
        let (key, seq) = self.next_key(time, priority);
        self.push_keyed(key, seq, to, item)
    }

    /// Queues `item` for `to` at `time` with `priority` as a *deferred* entry: it sorts
    /// after every event queued at that time and priority until [`EventQueue::rekey`]
    /// gives it the next sequence number (its token's sequence is drawn as a push's,
    /// so it names this entry alone). The kernel rekeys it where the run passes the
    /// place it stands for ([`crate::Ctx::send_deferred`]).
    ///
    /// # Panics
    /// With 2^32 events queued at once (far beyond any run's memory).
    pub fn push_deferred(
        &mut self,
        time: Time,
        priority: Priority,
        to: ComponentId,
        item: T,
    ) -> EventToken {
        let seq = self.reserve_sequence();
        self.push_keyed(pack(time, priority, DEFERRED_SEQ), seq, to, item)
    }

    /// Gives the queued entry of `token` (at `time` with `priority`, as it was queued)
    /// the next sequence number, as if it were pushed now: the same as cancelling it and
    /// pushing its payload again, the payload kept. A token that no longer names a
    /// queued event is ignored (`None`).
    pub fn rekey(
        &mut self,
        token: EventToken,
        time: Time,
        priority: Priority,
    ) -> Option<EventToken> {
        let c = self.slab.get(token.slot as usize)?;
        if c.seq != token.seq || c.item.is_none() {
            return None;
        }
        let (key, seq) = self.next_key(time, priority);
        if self.heap.lower_near(token.slot, key) {
            if let Some(c) = self.slab.get_mut(token.slot as usize) {
                c.seq = seq;
            }
            return Some(EventToken {
                slot: token.slot,
                seq,
            });
        }
        // In the heap: its entry stays behind as a cancelled one, the payload moves to a
        // new slot under the new key.
        let c = self.slab.get_mut(token.slot as usize)?;
        let (to, item) = (c.to, c.item.take()?);
        self.cancelled += 1;
        let t = self.push_keyed(key, seq, to, item);
        self.purge();
        Some(t)
    }

    /// Whether `token` names an entry still queued (not delivered, not cancelled).
    pub(crate) fn is_live(&self, token: EventToken) -> bool {
        self.slab
            .get(token.slot as usize)
            .is_some_and(|c| c.seq == token.seq && c.item.is_some())
    }

    /// Queues `item` for `to` at `time` with `priority` under the sequence number `seq`
    /// taken earlier ([`EventQueue::reserve_sequence`]): the entry a push at that
    /// moment would have made ([`crate::Ctx::wake_at_place`]).
    pub(crate) fn push_reserved(
        &mut self,
        time: Time,
        priority: Priority,
        seq: u64,
        to: ComponentId,
        item: T,
    ) -> EventToken {
        self.push_keyed(pack(time, priority, seq), seq, to, item)
    }

    /// Whether an event for `to` is queued (not cancelled) with a key below `key`,
    /// packed: the sorted array is looked at from its smallest key up to `key`, the
    /// heap (empty in nearly every run) entry by entry.
    pub(crate) fn any_for_before(&self, to: ComponentId, key: u128) -> bool {
        let h = &self.heap;
        let is_for = |slot: u32| {
            self.slab
                .get(slot as usize)
                .is_some_and(|c| c.to == to && c.item.is_some())
        };
        for i in (0..h.n).rev() {
            if h.keys[i] >= key {
                break;
            }
            if is_for(h.slots[i]) {
                return true;
            }
        }
        h.far.iter().any(|e| e.key < key && is_for(e.slot))
    }

    /// The smallest queued key, packed (see [`Entry::packed_key`]).
    #[inline]
    pub(crate) fn peek_key(&self) -> Option<u128> {
        self.heap.peek().map(|k| k.key)
    }

    /// Queues `item` for `to` under `key`, its slot holding sequence number `seq` (the
    /// token's).
    #[inline(always)]
    fn push_keyed(&mut self, key: u128, seq: u64, to: ComponentId, item: T) -> EventToken {
        let slot = self.alloc_slot(seq, to, item);
        self.heap.push(Keyed { key, slot });
        EventToken { slot, seq }
    }

    /// A slot holding `item` for `to`, its event's sequence number `seq`.
    #[inline(always)]
    fn alloc_slot(&mut self, seq: u64, to: ComponentId, item: T) -> u32 {
        // A free slot's payload is `None` (taken or dropped): its fields are written in
        // place, the payload moved once (known to overwrite a `None`, nothing is dropped
        // first, so nothing has to be kept aside).
        let s = self.free;
        match self.slab.get_mut(s as usize) {
            Some(c) if c.item.is_none() => {
                self.free = c.next_free;
                c.seq = seq;
                c.to = to;
                c.item = Some(item);
                s
            }
            Some(_) => unreachable!("a free slot's payload is taken or dropped"),
            // `NO_SLOT` is past the slab (it holds fewer than 2^32 - 1 slots: `grow`).
            None => self.grow(seq, to, item),
        }
    }

    /// The key of an event queued now at `time` with `priority`, and its sequence
    /// number (taken).
    #[inline(always)]
    fn next_key(&mut self, time: Time, priority: Priority) -> (u128, u64) {
        let seq = self.reserve_sequence();
        (pack(time, priority, seq), seq)
    }

    /// Takes the next sequence number without queueing anything (see
    /// [`crate::Ctx::reserve_sequence`]); every push takes its number here.
    #[inline(always)]
    pub fn reserve_sequence(&mut self) -> u64 {
        let seq = self.next_seq & SEQ_MASK;
        // 2^56 events is about 10^17: wrap-around is beyond any run's reach.
        self.next_seq = self.next_seq.wrapping_add(1);
        seq
    }

    /// A new slot for an event when none is free (out of line: only while the slab grows
    /// to the run's peak).
    ///
    /// # Panics
    /// With 2^32 events queued at once (far beyond any run's memory).
    #[cold]
    #[inline(never)]
    fn grow(&mut self, seq: u64, to: ComponentId, item: T) -> u32 {
        let s = u32::try_from(self.slab.len())
            .ok()
            .filter(|&s| s != NO_SLOT)
            .expect("fewer than 2^32 - 1 queued events");
        self.slab.push(Slot {
            seq,
            to,
            next_free: NO_SLOT,
            item: Some(item),
        });
        s
    }

    /// Puts `slot` (its payload taken or dropped) first on the free list.
    #[inline]
    fn free_slot(&mut self, slot: u32) {
        if let Some(c) = self.slab.get_mut(slot as usize) {
            c.next_free = self.free;
            self.free = slot;
        }
    }

    /// Cancels the event of `token` if it is still queued (its payload is dropped; it
    /// will never pop). Returns whether it was.
    pub fn cancel(&mut self, token: EventToken) -> bool {
        let Some(cell) = self.slab.get_mut(token.slot as usize) else {
            return false;
        };
        if cell.seq != token.seq || cell.item.is_none() {
            return false;
        }
        cell.item = None;
        self.cancelled += 1;
        self.purge();
        true
    }

    /// Moves the queued event of `token` to `time` with `priority`, for `to` with
    /// `item` (its old payload is dropped): exactly [`EventQueue::cancel`] followed by
    /// [`EventQueue::push_token`] (the moved event takes the next sequence number, as a
    /// new push would, so every pop comes in the same order), but when the old entry is
    /// in the sorted array (nearly always) it is taken out at once and its slot reused,
    /// instead of lingering until it reaches the top. A token that no longer names a
    /// queued event (popped or cancelled) is a plain push.
    ///
    /// # Panics
    /// With 2^32 events queued at once (far beyond any run's memory).
    #[inline]
    pub fn reschedule(
        &mut self,
        token: EventToken,
        time: Time,
        priority: Priority,
        to: ComponentId,
        item: T,
    ) -> EventToken {
        let live = self
            .slab
            .get(token.slot as usize)
            .is_some_and(|c| c.seq == token.seq && c.item.is_some());
        if live {
            if self.heap.remove_near(token.slot) {
                let (key, seq) = self.next_key(time, priority);
                if let Some(c) = self.slab.get_mut(token.slot as usize) {
                    c.seq = seq;
                    c.to = to;
                    c.item = Some(item);
                }
                self.heap.push(Keyed {
                    key,
                    slot: token.slot,
                });
                // The old entry may have been the top: a cancelled one under it comes
                // up (the top is always a live event).
                if self.cancelled > 0 {
                    self.purge();
                }
                return EventToken {
                    slot: token.slot,
                    seq,
                };
            }
            self.cancel(token);
        }
        self.push_token(time, priority, to, item)
    }

    /// Drops cancelled entries from the top of the heap, freeing their slots, so the
    /// top is always a live event.
    fn purge(&mut self) {
        while self.cancelled > 0 {
            let Some(Keyed { slot, .. }) = self.heap.peek() else {
                return;
            };
            if self
                .slab
                .get(slot as usize)
                .is_some_and(|c| c.item.is_some())
            {
                return;
            }
            let popped = self.heap.pop();
            debug_assert_eq!(
                popped.map(|k| k.slot),
                Some(slot),
                "purge pops the entry it peeked at"
            );
            self.free_slot(slot);
            self.cancelled -= 1;
        }
    }

    /// Removes and returns the earliest event if it fires at or before `until` (it stays
    /// queued otherwise): [`EventQueue::pop`] with the run loop's time limit, the top
    /// looked at once.
    #[inline]
    pub fn pop_due(&mut self, until: Time) -> Option<Entry<T>> {
        let popped = self.heap.pop_due(until.0)?;
        self.take(popped)
    }

    /// Removes and returns the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<Entry<T>> {
        let popped = self.heap.pop()?;
        self.take(popped)
    }

    /// The payload of a popped key, its slot freed.
    #[inline]
    fn take(&mut self, Keyed { key, slot }: Keyed) -> Option<Entry<T>> {
        // The slot is freed, and cancelled entries that came to the top dropped, before
        // the payload is moved out: nothing between that move and the entry it builds,
        // so the payload is copied once, straight into the entry (the slot is not
        // reused before the next push). Every heap entry's slot holds its payload until
        // it is popped (the top is never a cancelled event: `purge`).
        let c = self.slab.get_mut(slot as usize)?;
        c.next_free = self.free;
        self.free = slot;
        if self.cancelled == 0 {
            return Some(Entry {
                key,
                to: c.to,
                item: c.item.take()?,
            });
        }
        self.purge();
        let c = self.slab.get_mut(slot as usize)?;
        Some(Entry {
            key,
            to: c.to,
            item: c.item.take()?,
        })
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
        self.heap.len() - self.cancelled
    }

    /// Every queued item with its target, in no particular order (for inspection, e.g.
    /// stall detection).
    pub fn items(&self) -> impl Iterator<Item = (ComponentId, &T)> {
        self.slab
            .iter()
            .filter_map(|c| c.item.as_ref().map(|item| (c.to, item)))
    }

    /// Whether no event is queued.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The target of the tests' events (the queue hands it back with each).
    const TO: ComponentId = ComponentId(7);

    #[test]
    fn ties_pop_first_in_first_out() {
        let mut q = EventQueue::new();
        for i in 0..10 {
            q.push(Time(5), Priority::NORMAL, TO, i);
        }
        q.push(Time(5), Priority::EARLY, TO, 100);
        q.push(Time(4), Priority::LATE, TO, 200);
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|e| e.item)).collect();
        assert_eq!(order, vec![200, 100, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    }

    #[test]
    fn cancelled_events_never_pop_and_keep_the_order() {
        let mut q = EventQueue::new();
        let a = q.push_token(Time(5), Priority::NORMAL, TO, 1);
        let b = q.push_token(Time(3), Priority::NORMAL, TO, 2);
        q.push(Time(5), Priority::NORMAL, TO, 3);
        assert!(q.cancel(b));
        assert!(!q.cancel(b), "twice");
        assert_eq!(q.len(), 2);
        assert_eq!(q.peek_time(), Some(Time(5)), "the top is a live event");
        assert_eq!(q.items().count(), 2);
        let first = q.pop().map(|e| e.item);
        assert_eq!(first, Some(1));
        assert!(!q.cancel(a), "already popped");
        // The slot of a popped event is reused: the old token does not cancel the new.
        let c = q.push_token(Time(9), Priority::NORMAL, TO, 4);
        assert!(!q.cancel(a));
        assert_eq!(q.pop().map(|e| e.item), Some(3));
        assert!(q.cancel(c));
        assert!(q.is_empty());
        assert!(q.pop().is_none());
    }

    proptest! {
        /// `any_for_before` answers as a scan of every live entry would: in the sorted
        /// array and the heap alike (up to 80 entries, 32 of them in the array),
        /// cancelled entries aside, popped ones gone.
        #[test]
        fn any_for_before_answers_as_a_scan(
            evs in prop::collection::vec((0u64..20, 0u8..3, 0u32..3, any::<bool>()), 0..80),
            pops in 0usize..10,
            probe in (0u64..22, 0u8..3, 0u64..100, 0u32..3),
        ) {
            let prio = |p: u8| Priority(64 * (p + 1));
            let mut q = EventQueue::new();
            let mut live = Vec::new();
            for (t, p, to, cancel) in evs {
                let tok = q.push_token(Time(t), prio(p), ComponentId(to), 0u8);
                if cancel {
                    q.cancel(tok);
                } else {
                    live.push((pack(Time(t), prio(p), tok.seq), ComponentId(to)));
                }
            }
            live.sort();
            for _ in 0..pops {
                if q.pop().is_some() {
                    live.remove(0);
                }
            }
            let (t, p, seq, to) = probe;
            let key = pack(Time(t), prio(p), seq);
            let want = live.iter().any(|&(k, c)| c == ComponentId(to) && k < key);
            prop_assert_eq!(q.any_for_before(ComponentId(to), key), want);
        }
    }

    /// A deferred entry sorts after every entry of its instant and priority until it is
    /// rekeyed, then as a push made then, in the sorted array and in the heap alike.
    #[test]
    fn a_deferred_entry_sorts_last_until_rekeyed_then_as_a_push_then() {
        for filler in [0u64, 40] {
            let mut q = EventQueue::new();
            // Fillers at a later instant push the entries below into the heap.
            for i in 0..filler {
                q.push(Time(100), Priority::NORMAL, TO, 1000 + i);
            }
            let d = q.push_deferred(Time(5), Priority::NORMAL, TO, 1);
            q.push(Time(5), Priority::NORMAL, TO, 2);
            let t = q.rekey(d, Time(5), Priority::NORMAL).expect("still queued");
            q.push(Time(5), Priority::NORMAL, TO, 3);
            let e = q.push_deferred(Time(5), Priority::NORMAL, TO, 4);
            q.push(Time(5), Priority::NORMAL, TO, 5);
            assert_eq!(q.rekey(d, Time(5), Priority::NORMAL), None, "an old token");
            let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|x| x.item))
                .take_while(|&i| i < 1000)
                .collect();
            assert_eq!(order, vec![2, 1, 3, 5, 4], "filler {filler}");
            assert!(!q.cancel(t), "popped");
            assert!(!q.cancel(e), "popped");
        }
    }

    /// Two deferred entries of one instant and priority share a key until rekeyed; with
    /// one in the sorted array and one in the heap, cancelling the heap's one drops it
    /// (not the other), and every slot is freed once.
    #[test]
    fn a_cancelled_deferred_entry_tied_with_another_across_array_and_heap() {
        let mut q = EventQueue::new();
        for i in 0..31 {
            q.push(Time(100), Priority::NORMAL, TO, i);
        }
        // The 32nd entry fills the sorted array; the 33rd goes to the heap, same key.
        let kept = q.push_deferred(Time(5), Priority::NORMAL, TO, 1000);
        let gone = q.push_deferred(Time(5), Priority::NORMAL, TO, 1001);
        assert!(q.cancel(gone));
        assert_eq!(q.len(), 32);
        assert!(
            q.rekey(kept, Time(5), Priority::NORMAL).is_some(),
            "still queued"
        );
        let later = q.push_token(Time(200), Priority::NORMAL, TO, 2000);
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|e| e.item)).collect();
        let mut want = vec![1000];
        want.extend(0..31);
        want.push(2000);
        assert_eq!(order, want);
        assert!(q.is_empty());
        assert!(!q.cancel(later), "popped");
    }

    proptest! {
        /// Pushes and pops interleaved (the queue growing past its sorted array into
        /// its heap and shrinking again): every pop is the smallest key queued, as a
        /// sorted reference says.
        #[test]
        fn interleaved_pushes_and_pops_follow_the_key_order(
            ops in prop::collection::vec((0u64..40, 0u8..3, 0u8..4), 0..600),
        ) {
            let mut q = EventQueue::new();
            let mut reference = std::collections::BTreeSet::new();
            let mut now = 0u64;
            for (i, (dt, p, pops)) in ops.iter().enumerate() {
                q.push(Time(now + dt), Priority(*p), TO, i);
                reference.insert((now + dt, *p, i));
                // The first 64 only push: past the sorted vector's 32 entries.
                let n = if i < 64 { 0 } else { *pops % 3 };
                for _ in 0..n {
                    let want = reference.pop_first();
                    let got = q.pop().map(|e| (e.time().0, e.priority().0, e.item));
                    prop_assert_eq!(got, want);
                    if let Some((t, _, _)) = want {
                        now = t;
                    }
                }
                prop_assert_eq!(q.len(), reference.len());
                prop_assert_eq!(q.peek_time().map(|t| t.0), reference.first().map(|e| e.0));
            }
            while let Some(want) = reference.pop_first() {
                let got = q.pop().map(|e| (e.time().0, e.priority().0, e.item));
                prop_assert_eq!(got, Some(want));
            }
            prop_assert!(q.pop().is_none());
        }

        /// `pop_due` pops the smallest key only when its time is at or before the limit,
        /// and leaves the queue as it was otherwise; with cancellations mixed in, across
        /// the sorted array and the heap.
        #[test]
        fn pop_due_takes_only_what_is_due(
            ops in prop::collection::vec((0u64..40, 0u8..3, 0u64..50, any::<bool>()), 0..400),
        ) {
            let mut q = EventQueue::new();
            let mut reference = std::collections::BTreeMap::new();
            let mut tokens = Vec::new();
            for (i, (t, p, until, cancel)) in ops.iter().enumerate() {
                let tok = q.push_token(Time(*t), Priority(*p), TO, i);
                reference.insert((*t, *p, i), tok);
                tokens.push(((*t, *p, i), tok));
                if *cancel && i % 3 == 0 {
                    let (k, tok) = tokens[i / 2];
                    prop_assert_eq!(q.cancel(tok), reference.remove(&k).is_some());
                }
                if i < 40 {
                    continue;
                }
                let want = match reference.first_key_value() {
                    Some((&k, _)) if k.0 <= *until => reference.pop_first().map(|(k, _)| k),
                    _ => None,
                };
                let got = q.pop_due(Time(*until)).map(|e| (e.time().0, e.priority().0, e.item));
                prop_assert_eq!(got, want);
                prop_assert_eq!(q.len(), reference.len());
                prop_assert_eq!(
                    q.peek_time().map(|t| t.0),
                    reference.first_key_value().map(|(k, _)| k.0)
                );
            }
        }

        /// Moving an event (`reschedule`) delivers exactly what cancelling it and
        /// pushing anew delivers, in the same order with the same sequence numbers:
        /// two queues fed the same operations, one with moves, one with cancel + push,
        /// across the sorted array and the heap, with stale tokens (popped, cancelled,
        /// moved) and other cancellations mixed in.
        #[test]
        fn reschedule_is_cancel_then_push(
            ops in prop::collection::vec(
                (0u8..6, 0u64..40, 0u8..3, any::<prop::sample::Index>()),
                0..500,
            ),
        ) {
            let mut moved: EventQueue<usize> = EventQueue::new();
            let mut plain: EventQueue<usize> = EventQueue::new();
            // Tokens of both queues, pushed in step (a stale one stays in the list).
            let mut tokens: Vec<(EventToken, EventToken)> = Vec::new();
            let mut now = 0u64;
            for (i, (op, dt, p, pick)) in ops.iter().enumerate() {
                let (t, prio) = (Time(now + dt), Priority(*p));
                match op {
                    0 | 1 => {
                        let a = moved.push_token(t, prio, TO, i);
                        let b = plain.push_token(t, prio, TO, i);
                        tokens.push((a, b));
                    }
                    2 | 3 if !tokens.is_empty() => {
                        let k = pick.index(tokens.len());
                        let (a, b) = tokens[k];
                        let a = moved.reschedule(a, t, prio, ComponentId(u32::from(*p)), i);
                        plain.cancel(b);
                        let b = plain.push_token(t, prio, ComponentId(u32::from(*p)), i);
                        tokens[k] = (a, b);
                    }
                    4 if !tokens.is_empty() => {
                        let (a, b) = tokens[pick.index(tokens.len())];
                        prop_assert_eq!(moved.cancel(a), plain.cancel(b));
                    }
                    _ => {
                        let got = moved.pop_due(Time(now + dt));
                        let want = plain.pop_due(Time(now + dt));
                        let key = |e: &Entry<usize>| (e.packed_key(), e.to, e.item);
                        prop_assert_eq!(got.as_ref().map(key), want.as_ref().map(key));
                        if let Some(e) = want {
                            now = e.time().0;
                        }
                    }
                }
                prop_assert_eq!(moved.len(), plain.len());
                prop_assert_eq!(moved.peek_time(), plain.peek_time());
                prop_assert_eq!(moved.next_sequence(), plain.next_sequence());
            }
            loop {
                let (got, want) = (moved.pop(), plain.pop());
                let key = |e: &Entry<usize>| (e.packed_key(), e.to, e.item);
                prop_assert_eq!(got.as_ref().map(key), want.as_ref().map(key));
                if want.is_none() {
                    break;
                }
            }
        }

        /// Whatever the insertion order, with any events cancelled, the others pop in
        /// key order.
        #[test]
        fn cancelled_events_leave_the_others_in_order(
            events in prop::collection::vec((0u64..50, 0u8..4, any::<bool>()), 0..300),
        ) {
            let mut q = EventQueue::new();
            let tokens: Vec<_> = events
                .iter()
                .enumerate()
                .map(|(i, (t, p, _))| q.push_token(Time(*t), Priority(*p), TO, i))
                .collect();
            for (tok, (_, _, cancel)) in tokens.iter().zip(&events) {
                if *cancel {
                    prop_assert!(q.cancel(*tok));
                }
            }
            let mut expected: Vec<(u64, u8, usize)> = events
                .iter()
                .enumerate()
                .filter(|(_, e)| !e.2)
                .map(|(i, (t, p, _))| (*t, *p, i))
                .collect();
            expected.sort_unstable();
            prop_assert_eq!(q.len(), expected.len());
            let mut got = Vec::new();
            while let Some(e) = q.pop() {
                got.push((e.time().0, e.priority().0, e.item));
            }
            prop_assert_eq!(got, expected);
        }

        /// Whatever the insertion order, pops come out sorted by (time, priority,
        /// insertion order), and the accessors give back what was pushed.
        #[test]
        fn pops_in_key_order(events in prop::collection::vec((0u64..50, 0u8..4), 0..300)) {
            let mut q = EventQueue::new();
            for (i, (t, p)) in events.iter().enumerate() {
                q.push(Time(*t), Priority(*p), TO, i);
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
