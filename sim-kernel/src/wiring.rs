//! The declarative wiring of a simulated system ([`Wiring`]): which component sits at
//! each [`ComponentId`], the storage they are given (host memory, a card's buffer RAM:
//! shared by the components of one node, so no component owns it), and what happens to a
//! message that reaches a component that does not take its kind.
//!
//! A system (or a test harness) describes its components as one enum and says, in one
//! [`Part::take`] match, which message kinds each variant takes and with which storage;
//! everything else (looking the target up, counting and reporting a message of the wrong
//! kind, a message to an empty slot) is here, once:
//!
//! ```text
//!  kernel --deliver(to, msg)--> Wiring: parts[to].take(msg, ctx, &mut store)
//!                                  |-- taken
//!                                  +-- refused (wrong kind) or no part at `to`:
//!                                        Counting: counted, traced error, the run fails
//!                                        Strict:   panics naming target and message
//! ```
//!
//! Components often need each other's ids when they are built (their ports), so ids can
//! be handed out by the kernel first and the parts placed at them later
//! ([`Wiring::place`]); a slot left empty is itself a wiring error when a message reaches
//! it.

use crate::kernel::{Ctx, DomainId, Kernel, World};
use crate::time::Time;
use crate::ComponentId;
use core::fmt;

/// One kind of component of a system: the variants of an enum, each taking some kinds of
/// the system message `M`, with the system's storage `S` at hand.
pub trait Part<M, S> {
    /// Handles `msg` at `ctx.now()`, using `store` (the system's storage, e.g. every
    /// node's memories; the part knows which is its own). Gives the message back if this
    /// part does not take its kind: the wiring counts or reports it.
    fn take(&mut self, msg: M, ctx: &mut Ctx<'_, M>, store: &mut S) -> Option<M>;
}

/// What the wiring does with a message of the wrong kind for its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnMisroute {
    /// Count it and trace an error; the run's owner fails the run
    /// ([`Wiring::misroutes`]). For systems that report their errors.
    Count,
    /// Panic at once, naming the target and the message. For test harnesses, where a
    /// wiring error is a failing test.
    Panic,
}

/// A message that reached a component that does not take it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Misroute {
    /// When it was delivered.
    pub at: Time,
    /// Its target.
    pub to: ComponentId,
    /// The message, as `Debug` prints it.
    pub msg: String,
}

impl fmt::Display for Misroute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at {} ps, {} got {}", self.at.as_ps(), self.to, self.msg)
    }
}

/// Misroutes kept in full (the count goes on).
const KEEP: usize = 16;

/// The components of a system by id, their storage, and what went to the wrong place.
#[derive(Clone, Debug)]
pub struct Wiring<P, S = ()> {
    /// Component at each id (`None`: an id handed out but not placed yet).
    parts: Vec<Option<P>>,
    /// The system's storage (shared by the parts; `()` if none).
    pub store: S,
    on_misroute: OnMisroute,
    misrouted: u64,
    first: Vec<Misroute>,
}

impl<P, S> Wiring<P, S> {
    /// An empty wiring over `store`.
    #[must_use]
    pub fn new(store: S, on_misroute: OnMisroute) -> Self {
        Self {
            parts: Vec::new(),
            store,
            on_misroute,
            misrouted: 0,
            first: Vec::new(),
        }
    }

    /// Registers a component with the kernel (name, clock domain) and places `part` at
    /// its id.
    pub fn add<M>(
        &mut self,
        kernel: &mut Kernel<M>,
        name: impl Into<String>,
        domain: DomainId,
        part: P,
    ) -> ComponentId {
        let id = kernel.add_component(name, domain);
        self.place(id, part);
        id
    }

    /// A wiring of `parts` at ids 0, 1, ... in order (the order they were registered
    /// with the kernel).
    #[must_use]
    pub fn of(parts: Vec<P>, store: S, on_misroute: OnMisroute) -> Self {
        let mut w = Self::new(store, on_misroute);
        w.parts = parts.into_iter().map(Some).collect();
        w
    }

    /// Places `part` at the next id (the one the kernel hands out next, when every
    /// component is registered here) and returns that id.
    pub fn push(&mut self, part: P) -> ComponentId {
        let id = ComponentId(u32::try_from(self.parts.len()).unwrap_or(u32::MAX));
        self.parts.push(Some(part));
        id
    }

    /// Slots so far (placed or not): the id the next [`Wiring::push`] takes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.parts.len()
    }

    /// Whether nothing is placed.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.parts.iter().all(Option::is_none)
    }

    /// Places `part` at `id` (an id the kernel handed out), replacing what was there.
    pub fn place(&mut self, id: ComponentId, part: P) {
        let i = id.0 as usize;
        if self.parts.len() <= i {
            self.parts.resize_with(i + 1, || None);
        }
        self.parts[i] = Some(part);
    }

    /// The component at `id`.
    #[must_use]
    pub fn get(&self, id: ComponentId) -> Option<&P> {
        self.parts.get(id.0 as usize).and_then(Option::as_ref)
    }

    /// The component at `id`, mutably.
    pub fn get_mut(&mut self, id: ComponentId) -> Option<&mut P> {
        self.parts.get_mut(id.0 as usize).and_then(Option::as_mut)
    }

    /// Every placed component with its id, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (ComponentId, &P)> {
        self.parts.iter().enumerate().filter_map(|(i, p)| {
            let id = ComponentId(u32::try_from(i).ok()?);
            Some((id, p.as_ref()?))
        })
    }

    /// Every placed component with its id, mutably.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (ComponentId, &mut P)> {
        self.parts.iter_mut().enumerate().filter_map(|(i, p)| {
            let id = ComponentId(u32::try_from(i).ok()?);
            Some((id, p.as_mut()?))
        })
    }

    /// Every placed component with its id, mutably, and the storage beside them (for
    /// work outside an event that needs both, as a run's end does).
    pub fn parts_and_store_mut(&mut self) -> (impl Iterator<Item = (ComponentId, &mut P)>, &mut S) {
        let parts = self.parts.iter_mut().enumerate().filter_map(|(i, p)| {
            let id = ComponentId(u32::try_from(i).ok()?);
            Some((id, p.as_mut()?))
        });
        (parts, &mut self.store)
    }

    /// Messages that reached a component that does not take their kind (or no
    /// component at all).
    #[must_use]
    pub fn misrouted(&self) -> u64 {
        self.misrouted
    }

    /// The first misroutes, in full.
    #[must_use]
    pub fn misroutes(&self) -> &[Misroute] {
        &self.first
    }

    fn misroute<M: fmt::Debug>(&mut self, to: ComponentId, at: Time, msg: &M) {
        let m = Misroute {
            at,
            to,
            msg: format!("{msg:?}"),
        };
        match self.on_misroute {
            OnMisroute::Panic => panic!("wiring: a message of the wrong kind: {m}"),
            OnMisroute::Count => {
                tracing::error!(target: "kernel::wiring", %m, "message of the wrong kind for its target");
                self.misrouted += 1;
                if self.first.len() < KEEP {
                    self.first.push(m);
                }
            }
        }
    }
}

impl<M: fmt::Debug, P: Part<M, S>, S> World<M> for Wiring<P, S> {
    fn deliver(&mut self, to: ComponentId, msg: M, ctx: &mut Ctx<'_, M>) {
        let refused = match self.parts.get_mut(to.0 as usize) {
            Some(Some(part)) => part.take(msg, ctx, &mut self.store),
            _ => Some(msg),
        };
        if let Some(msg) = refused {
            self.misroute(to, ctx.now(), &msg);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ClockDomain;

    /// A tiny system: a counter taking `Msg::Count` (adding into its node's store) and
    /// a sink taking `Msg::Note`.
    #[derive(Debug)]
    enum Msg {
        Count(u32),
        Note,
    }

    enum Comp {
        Counter { node: usize, peer: ComponentId },
        Sink(u32),
    }

    impl Part<Msg, Vec<u64>> for Comp {
        fn take(&mut self, msg: Msg, ctx: &mut Ctx<'_, Msg>, stores: &mut Vec<u64>) -> Option<Msg> {
            match (self, msg) {
                (Comp::Counter { node, peer }, Msg::Count(n)) => {
                    stores[*node] += u64::from(n);
                    ctx.send(*peer, Msg::Note);
                    ctx.send(*peer, Msg::Count(1));
                }
                (Comp::Sink(seen), Msg::Note) => *seen += 1,
                (_, m) => return Some(m),
            }
            None
        }
    }

    fn system(
        on: OnMisroute,
    ) -> (
        Kernel<Msg>,
        Wiring<Comp, Vec<u64>>,
        ComponentId,
        ComponentId,
    ) {
        let mut k = Kernel::new(false);
        let d = k.add_domain(ClockDomain::from_mhz("core", 100.0).expect("clock"));
        let mut w = Wiring::new(vec![0, 0], on);
        let counter = k.add_component("counter", d);
        let sink = w.add(&mut k, "sink", d, Comp::Sink(0));
        w.place(
            counter,
            Comp::Counter {
                node: 1,
                peer: sink,
            },
        );
        k.post(counter, Time::ZERO, Msg::Count(5));
        (k, w, counter, sink)
    }

    #[test]
    fn messages_reach_their_part_with_its_store_and_wrong_kinds_are_counted() {
        let (mut k, mut w, counter, sink) = system(OnMisroute::Count);
        k.run_to_idle(&mut w);
        assert_eq!(w.store, vec![0, 5], "the counter's node store");
        assert!(matches!(w.get(sink), Some(Comp::Sink(1))));
        assert!(matches!(w.get(counter), Some(Comp::Counter { .. })));
        assert_eq!(w.misrouted(), 1, "the Count sent to the sink");
        let m = &w.misroutes()[0];
        assert_eq!((m.to, m.msg.as_str()), (sink, "Count(1)"));
        assert_eq!(m.at, Time(10_000), "one 100 MHz cycle after the post");
        assert_eq!(w.iter().count(), 2);
    }

    #[test]
    #[should_panic(expected = "wiring: a message of the wrong kind")]
    fn a_strict_wiring_panics_at_the_first_wrong_kind() {
        let (mut k, mut w, ..) = system(OnMisroute::Panic);
        k.run_to_idle(&mut w);
    }

    #[test]
    fn a_message_to_an_empty_slot_is_a_misroute() {
        let mut k: Kernel<Msg> = Kernel::new(false);
        let d = k.add_domain(ClockDomain::from_mhz("core", 100.0).expect("clock"));
        let mut w: Wiring<Comp, Vec<u64>> = Wiring::new(vec![], OnMisroute::Count);
        let ghost = k.add_component("never placed", d);
        k.post(ghost, Time::ZERO, Msg::Note);
        k.run_to_idle(&mut w);
        assert_eq!(w.misrouted(), 1);
        assert_eq!(w.misroutes()[0].to, ghost);
    }
}
