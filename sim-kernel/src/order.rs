//! [`EventKey`]: an event's place in the order of a run, `(time, priority, sequence)`,
//! the key the queue pops by (see [`crate::queue`]).
//!
//! A component that answers for another one without the event it would have been sent
//! (a bus that reads a device's RAM itself instead of asking the device) needs to know
//! where that event would have stood: [`crate::Ctx::event_key`] is the key of the event
//! being handled, and an event queued from now on gets a sequence number of at least
//! [`crate::Ctx::next_sequence`], so `EventKey { time, priority, sequence:
//! ctx.next_sequence() }` is the key an event queued now at `time` with `priority`
//! would get: every event queued before it compares lower at equal time and priority,
//! every event queued after it (including the very next, which takes that sequence
//! number) compares equal or higher. A component that does not queue such an event but
//! sends what it would have sent marks its place with [`crate::Ctx::reserve_sequence`]
//! and sends with [`crate::Ctx::send_deferred`].

use crate::queue::Priority;
use crate::time::Time;

/// An event's place in a run's order: lower runs first (time, then priority, then the
/// order in which events were queued).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventKey {
    /// When it runs.
    pub time: Time,
    /// Its tie-break priority at that instant.
    pub priority: Priority,
    /// Its insertion sequence number (56 bits).
    pub sequence: u64,
}
