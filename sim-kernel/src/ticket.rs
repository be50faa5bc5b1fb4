//! Deferred reservations ([`Ticket`] and the kernel's table of them): a sequence number
//! reserved for a place of the run's order that is still to come.
//!
//! A component that answers in place of an event it does not queue sends that event's
//! messages deferred to its place ([`crate::Ctx::send_deferred`]); a ticket is the same
//! for a push that is not a message: something the skipped event would have queued
//! under its next sequence number, which another model must know the place of before
//! the run gets there (a RAM write folded into the RAM, ordered against its readers by
//! the key its message would have had). [`crate::Ctx::reserve_at`] defers a ticket to a
//! place; when the run passes the place the ticket takes the next sequence number, in
//! the order it was deferred among the messages and tickets deferred to that place, as
//! the skipped event's pushes would have taken theirs; [`crate::Ctx::ticket`] reads it
//! from then on. A ticket released before its place takes no number (the skipped event
//! runs after all, and pushes for itself).
//!
//! The table is a slab reused through a free list; a ticket names its slot and the
//! slot's generation, so a released ticket never reads a later one's number.

/// A sequence number reserved for a place still to come ([`crate::Ctx::reserve_at`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ticket {
    slot: u32,
    generation: u32,
}

/// What a ticket's slot holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Free (on the free list).
    Free,
    /// Deferred to a place the run has not passed yet.
    Pending,
    /// The sequence number it took where the run passed its place.
    Resolved(u64),
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    generation: u32,
    state: State,
}

/// The kernel's tickets (see the module doc).
#[derive(Debug, Default)]
pub(crate) struct TicketTable {
    slots: Vec<Slot>,
    free: Vec<u32>,
}

impl TicketTable {
    /// A new pending ticket.
    ///
    /// # Panics
    /// With 2^32 tickets held at once (far beyond any run's memory).
    pub(crate) fn issue(&mut self) -> Ticket {
        if let Some(slot) = self.free.pop() {
            if let Some(s) = self.slots.get_mut(slot as usize) {
                s.state = State::Pending;
                return Ticket {
                    slot,
                    generation: s.generation,
                };
            }
        }
        let slot = u32::try_from(self.slots.len()).expect("fewer than 2^32 tickets held");
        self.slots.push(Slot {
            generation: 0,
            state: State::Pending,
        });
        Ticket {
            slot,
            generation: 0,
        }
    }

    fn get(&self, t: Ticket) -> Option<&Slot> {
        self.slots
            .get(t.slot as usize)
            .filter(|s| s.generation == t.generation && s.state != State::Free)
    }

    /// Whether `t` is held and still waits for its place.
    pub(crate) fn is_pending(&self, t: Ticket) -> bool {
        self.get(t).is_some_and(|s| s.state == State::Pending)
    }

    /// Gives the pending ticket `t` the sequence number `seq` (the run passes its
    /// place); a released one is ignored.
    pub(crate) fn resolve(&mut self, t: Ticket, seq: u64) {
        if let Some(s) = self
            .slots
            .get_mut(t.slot as usize)
            .filter(|s| s.generation == t.generation && s.state == State::Pending)
        {
            s.state = State::Resolved(seq);
        }
    }

    /// The sequence number `t` took, once the run has passed its place.
    pub(crate) fn sequence(&self, t: Ticket) -> Option<u64> {
        match self.get(t)?.state {
            State::Resolved(seq) => Some(seq),
            State::Pending | State::Free => None,
        }
    }

    /// Frees `t`'s slot; a pending ticket then takes no sequence number. Returns whether
    /// it was held.
    pub(crate) fn release(&mut self, t: Ticket) -> bool {
        let Some(s) = self
            .slots
            .get_mut(t.slot as usize)
            .filter(|s| s.generation == t.generation && s.state != State::Free)
        else {
            return false;
        };
        s.state = State::Free;
        s.generation = s.generation.wrapping_add(1);
        self.free.push(t.slot);
        true
    }

    /// Tickets held (pending or resolved).
    pub(crate) fn held(&self) -> usize {
        self.slots.len() - self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_released_ticket_names_nothing_and_its_slot_serves_the_next() {
        let mut t = TicketTable::default();
        let a = t.issue();
        assert!(t.is_pending(a));
        assert_eq!(t.sequence(a), None);
        t.resolve(a, 7);
        assert_eq!(t.sequence(a), Some(7));
        assert!(!t.is_pending(a));
        assert!(t.release(a));
        assert!(!t.release(a), "released once");
        assert_eq!(t.sequence(a), None);
        let b = t.issue();
        assert_ne!(a, b, "the slot's generation moved on");
        t.resolve(a, 9); // the old ticket's place passes: ignored
        assert!(t.is_pending(b));
        assert_eq!(t.held(), 1);
    }
}
