//! `sim-kernel`: the clocked discrete-event kernel hvia-sim runs on.
//!
//! - [`time`]: [`Time`] and [`Duration`] in picoseconds, [`Cycles`], [`Bytes`];
//! - [`clock`]: [`ClockDomain`] with exact edge arithmetic;
//! - [`queue`]: the `(time, priority, sequence)` event queue, ties first in first out;
//!   [`order`]: [`EventKey`], an event's place in that order;
//! - [`kernel`]: [`Kernel`], [`Ctx`], [`World`]; messages land on the receiver's edges,
//!   at least one of its cycles after they are sent;
//! - [`trace`]: spans and state transitions for reports, one branch when off;
//! - [`fsm`]: explicit state machines whose every transition is traced;
//! - [`rng`]: the seeded generator every random choice comes from;
//! - [`spare`]: a per-thread cache of emptied byte and page-list buffers (allocations
//!   only, never a result);
//! - [`wiring`]: [`Wiring`], the components of a system by id with their storage, and
//!   the one place a message of the wrong kind for its target is caught.
//!
//! A run is a pure function of its configuration and seed: no wall clock, no hash-map
//! iteration order and no threads influence it.

#![forbid(unsafe_code)]

pub mod clock;
pub mod fsm;
pub mod kernel;
pub mod order;
pub mod queue;
pub mod rng;
pub mod spare;
pub mod time;
pub mod trace;
pub mod wiring;

pub use clock::{ClockDomain, ClockError};
pub use fsm::{Fsm, StateName, TransitionSink};
pub use kernel::{ComponentId, Ctx, DomainId, Kernel, RunLimit, RunOutcome, RunStats, World};
pub use order::EventKey;
pub use queue::{EventToken, Priority};
pub use rng::SplitMix64;
pub use time::{Bytes, Cycles, Duration, Time};
pub use trace::{Level, MsgId, Span, TraceSink, Transition};
pub use wiring::{Misroute, OnMisroute, Part, Wiring};
