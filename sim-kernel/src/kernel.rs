//! The simulation kernel: clock domains, component ids, the run loop, and the [`Ctx`]
//! through which a component sends messages and asks to be woken.
//!
//! The kernel is generic over the message type `M` of one simulated system and knows
//! nothing of what components are: a [`World`] owns them and routes each delivered
//! message to its target. Rules it enforces:
//!
//! - every message is delivered on an edge of the *receiving* component's clock domain,
//!   at least one cycle of that domain after it was sent (registered interfaces, as in
//!   synchronous hardware), so the order of components within one edge cannot change
//!   results;
//! - a component runs only when a message (or the wake-up it asked for) arrives: there is
//!   no global tick;
//! - events at one instant run in (priority, insertion) order, so a run is a pure
//!   function of its inputs; a message sent in place of an event that is not queued can
//!   take the insertion order that event's send would have had ([`Ctx::send_deferred`]).
//!
//! ```text
//!  World::deliver(to, msg, ctx) --ctx.send(peer, m)--> queue (time, prio, seq) --pop--+
//!        ^                                                                            |
//!        +----------------------------------------------------------------------------+
//! ```

use crate::clock::{first_edge_at_or_after, ClockDomain};
use crate::order::EventKey;
use crate::queue::{Entry, EventQueue, EventToken, Priority};
use crate::time::{Cycles, Duration, Time};
use crate::trace::{MsgId, Span, TraceSink};
use core::fmt;

/// Identifies a component within one kernel (an index, in order of registration).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ComponentId(pub u32);

/// Identifies a clock domain within one kernel (an index, in order of registration).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DomainId(pub u16);

impl fmt::Display for ComponentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "c{}", self.0)
    }
}

/// The owner of a system's components: the kernel hands it every message to route.
pub trait World<M> {
    /// Delivers `msg` to component `to`, at `ctx.now()`, an edge of `to`'s domain.
    fn deliver(&mut self, to: ComponentId, msg: M, ctx: &mut Ctx<'_, M>);
}

/// What the run loop did, for reports ("simulated time per wall second").
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RunStats {
    /// Events delivered so far.
    pub events: u64,
    /// Simulated time reached.
    pub simulated: Time,
    /// Wall-clock time spent in the run loop.
    pub wall: std::time::Duration,
}

impl RunStats {
    /// Events per wall-clock second (0 if no wall time elapsed).
    #[must_use]
    #[allow(clippy::cast_precision_loss)]
    pub fn events_per_second(&self) -> f64 {
        let s = self.wall.as_secs_f64();
        if s > 0.0 {
            self.events as f64 / s
        } else {
            0.0
        }
    }
}

/// Why a call to [`Kernel::run`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunOutcome {
    /// No event is left.
    Idle,
    /// A component called [`Ctx::stop`].
    Stopped,
    /// The next event lies beyond the time limit (it stays queued).
    TimeLimit,
    /// The event budget was used up.
    EventLimit,
}

/// Where a run stops if nothing stops it sooner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunLimit {
    /// Events later than this stay queued.
    pub until: Time,
    /// At most this many events are delivered in this call.
    pub max_events: u64,
}

impl RunLimit {
    /// No limit: run until idle or stopped.
    pub const NONE: RunLimit = RunLimit {
        until: Time::MAX,
        max_events: u64::MAX,
    };
}

/// A domain's period and phase, and an instant a message was queued for it with that
/// domain's first edge at or after it (most messages queued at one instant, or within
/// one period of the domain, go to a few domains: this saves a division per message).
#[derive(Clone, Copy)]
struct Edges {
    period: Duration,
    phase: Duration,
    at: Time,
    edge: Time,
}

struct ComponentInfo {
    name: String,
}

/// The event kernel of one simulated system.
pub struct Kernel<M> {
    now: Time,
    queue: EventQueue<M>,
    domains: Vec<ClockDomain>,
    /// Per domain, what a push needs of it in one place (see [`Edges`]).
    edges: Vec<Edges>,
    components: Vec<ComponentInfo>,
    /// Per component, its domain (the one lookup of a push).
    component_domains: Vec<DomainId>,
    /// Per component, its clock grid: the first domain registered with its domain's
    /// period and phase (components with the same grid share every edge).
    component_grids: Vec<u16>,
    trace: TraceSink,
    stats: RunStats,
    stop: bool,
    /// The key of the event being delivered, packed as the queue orders it (see
    /// [`Ctx::event_key`]; unpacked only when a component asks).
    current: u128,
    /// Every event at or before this instant is delivered in the run in progress unless
    /// a component stops it ([`Ctx::horizon`]).
    horizon: Time,
    /// Deferred entries waiting for the run to pass their place
    /// ([`Ctx::send_deferred`]), sorted by that place, latest first (the run loop
    /// looks at them only when there are any: one compare an event).
    passes: Vec<Pass>,
}

/// A deferred entry of the queue and the place in the run's order where it is queued
/// for real (see [`Ctx::send_deferred`]).
#[derive(Clone, Copy, Debug)]
struct Pass {
    /// The place, packed as the queue orders keys.
    at: u128,
    /// The entry's instant and priority, and its token.
    time: Time,
    priority: Priority,
    token: EventToken,
    /// For a message deferred through two places ([`Ctx::send_deferred_via`]), the
    /// instant and priority of the second: passing `at` takes its sequence number, and
    /// the entry then waits for the run to pass it.
    via: Option<(Time, Priority)>,
}

impl<M> Kernel<M> {
    /// An empty kernel at time zero; `trace` says whether the trace sink records.
    #[must_use]
    pub fn new(trace: bool) -> Self {
        Self {
            now: Time::ZERO,
            queue: EventQueue::new(),
            domains: Vec::new(),
            edges: Vec::new(),
            components: Vec::new(),
            component_domains: Vec::new(),
            component_grids: Vec::new(),
            trace: TraceSink::new(trace),
            stats: RunStats::default(),
            stop: false,
            current: 0,
            horizon: Time::ZERO,
            passes: Vec::new(),
        }
    }

    /// Registers a clock domain.
    ///
    /// # Panics
    /// More than 65 536 domains (a wiring bug, not an input).
    pub fn add_domain(&mut self, domain: ClockDomain) -> DomainId {
        let id = DomainId(u16::try_from(self.domains.len()).expect("at most 65536 clock domains"));
        self.edges.push(Edges {
            period: domain.period(),
            phase: domain.phase(),
            at: Time::ZERO,
            edge: domain.edge_at_or_after(Time::ZERO),
        });
        self.domains.push(domain);
        id
    }

    /// The domain `id`.
    ///
    /// # Panics
    /// An id this kernel did not hand out.
    #[must_use]
    pub fn domain(&self, id: DomainId) -> &ClockDomain {
        &self.domains[usize::from(id.0)]
    }

    /// All domains, indexed by [`DomainId`].
    #[must_use]
    pub fn domains(&self) -> &[ClockDomain] {
        &self.domains
    }

    /// The id of the domain called `name`, if any.
    #[must_use]
    pub fn domain_by_name(&self, name: &str) -> Option<DomainId> {
        self.domains
            .iter()
            .position(|d| d.name() == name)
            .and_then(|i| u16::try_from(i).ok())
            .map(DomainId)
    }

    /// Registers a component clocked by `domain`; messages to it land on that domain's edges.
    ///
    /// # Panics
    /// A domain id this kernel did not hand out, or more than 2^32 components.
    pub fn add_component(&mut self, name: impl Into<String>, domain: DomainId) -> ComponentId {
        assert!(
            usize::from(domain.0) < self.domains.len(),
            "unknown clock domain"
        );
        let id =
            ComponentId(u32::try_from(self.components.len()).expect("at most 2^32 components"));
        self.components.push(ComponentInfo { name: name.into() });
        self.component_domains.push(domain);
        let e = self.edges[usize::from(domain.0)];
        // The first domain with the same period and phase (at the latest `domain`).
        let grid = (0..=domain.0)
            .find(|&g| {
                let o = &self.edges[usize::from(g)];
                o.period == e.period && o.phase == e.phase
            })
            .unwrap_or(domain.0);
        self.component_grids.push(grid);
        id
    }

    /// The name component `id` was registered with.
    #[must_use]
    pub fn component_name(&self, id: ComponentId) -> &str {
        self.components
            .get(id.0 as usize)
            .map_or("?", |c| c.name.as_str())
    }

    /// The clock domain of component `id`.
    ///
    /// # Panics
    /// An id this kernel did not hand out.
    #[must_use]
    pub fn component_domain(&self, id: ComponentId) -> DomainId {
        self.component_domains[id.0 as usize]
    }

    /// The clock domain component `id` is clocked by (one lookup for `post`, `push_to`, `Ctx`).
    ///
    /// # Panics
    /// An id this kernel did not hand out.
    #[inline]
    fn clock_of(&self, id: ComponentId) -> &ClockDomain {
        self.domain(self.component_domain(id))
    }

    /// Number of registered components.
    #[must_use]
    pub fn component_count(&self) -> usize {
        self.components.len()
    }

    /// The current simulated time.
    #[must_use]
    pub fn now(&self) -> Time {
        self.now
    }

    /// Run statistics so far.
    #[must_use]
    pub fn stats(&self) -> RunStats {
        self.stats
    }

    /// The trace sink.
    #[must_use]
    pub fn trace(&self) -> &TraceSink {
        &self.trace
    }

    /// The trace sink, to enable, clear or read it between runs.
    pub fn trace_mut(&mut self) -> &mut TraceSink {
        &mut self.trace
    }

    /// Number of queued events.
    #[must_use]
    pub fn pending(&self) -> usize {
        self.queue.len()
    }

    /// The time of the earliest queued event, if any.
    #[must_use]
    pub fn next_event_time(&self) -> Option<Time> {
        self.queue.peek_time()
    }

    /// The receivers of the queued events, in no particular order (one entry per
    /// event). A run loop uses it to tell a stalled system (only idle loops left) from
    /// one that still has work.
    pub fn pending_targets(&self) -> impl Iterator<Item = ComponentId> + '_ {
        self.queue.items().map(|(to, _)| to)
    }

    /// Injects a message from outside the system (a testbench), delivered on the first
    /// edge of the receiver's domain at or after `max(at, now)`.
    pub fn post(&mut self, to: ComponentId, at: Time, msg: M) {
        let d = self.clock_of(to);
        let t = d.edge_at_or_after(at.max(self.now));
        self.queue.push(t, Priority::NORMAL, to, msg);
    }

    /// Runs `f` as component `me` at the current instant, outside any event (nothing is
    /// delivered or counted): for work a component does when a run ends, such as a
    /// lazily stepped bus catching up with the clocks the reference has stepped. What it
    /// queues is queued as from an event of `me` now; the event key it sees is the last
    /// delivered event's.
    ///
    /// # Panics
    /// An id this kernel did not hand out.
    pub fn call<R>(&mut self, me: ComponentId, f: impl FnOnce(&mut Ctx<'_, M>) -> R) -> R {
        assert!(
            (me.0 as usize) < self.component_domains.len(),
            "unknown component {me:?}"
        );
        let mut ctx = Ctx { kernel: self, me };
        f(&mut ctx)
    }

    /// [`Kernel::call`] as at instant `at` (not before now): what `f` records is stamped
    /// `at`, and what it queues lands as if sent then. Now is back where it was after.
    pub fn call_at<R>(
        &mut self,
        me: ComponentId,
        at: Time,
        f: impl FnOnce(&mut Ctx<'_, M>) -> R,
    ) -> R {
        let was = self.now;
        debug_assert!(at >= was, "call_at {at:?} before now {was:?}");
        self.now = was.max(at);
        let r = self.call(me, f);
        self.now = was;
        r
    }

    /// Delivers events to `world` in order until the queue is empty, a component calls
    /// [`Ctx::stop`], or `limit` is reached.
    pub fn run<W: World<M>>(&mut self, world: &mut W, limit: RunLimit) -> RunOutcome {
        let wall = std::time::Instant::now();
        self.stop = false;
        // A run with an event budget may end at any event: it promises no instant.
        self.horizon = if limit.max_events == u64::MAX {
            limit.until
        } else {
            Time::ZERO
        };
        let mut budget = limit.max_events;
        let outcome = loop {
            if budget == 0 {
                break RunOutcome::EventLimit;
            }
            if !self.passes.is_empty() {
                self.pass(limit.until);
            }
            let Some(entry) = self.queue.pop_due(limit.until) else {
                break if self.queue.is_empty() {
                    RunOutcome::Idle
                } else {
                    RunOutcome::TimeLimit
                };
            };
            debug_assert!(entry.time() >= self.now, "time went backwards");
            self.now = entry.time();
            self.current = entry.packed_key();
            let Entry { to, item: msg, .. } = entry;
            budget -= 1;
            let mut ctx = Ctx {
                kernel: self,
                me: to,
            };
            world.deliver(to, msg, &mut ctx);
            if self.stop {
                break RunOutcome::Stopped;
            }
        };
        // Outside a run (`Kernel::call`), no instant is promised.
        self.horizon = Time::ZERO;
        // Components cannot read the statistics during a run: counted once here.
        self.stats.events += limit.max_events - budget;
        self.stats.simulated = self.now;
        self.stats.wall += wall.elapsed();
        outcome
    }

    /// Queues for real every deferred entry whose place the run passes before its next
    /// event (or, that event beyond `until`, by `until`): each takes the next sequence
    /// number, as the event it was deferred for would have given it when handled there
    /// (no event lies between that place and the next event, so no push either). An
    /// entry deferred through two places ([`Ctx::send_deferred_via`]) takes nothing at
    /// its first: the next number goes to its second place, which it then waits for.
    #[cold]
    #[inline(never)]
    fn pass(&mut self, until: Time) {
        // The places packed, an instant is their high 64 bits.
        let by = (u128::from(until.0) << 64) | u128::from(u64::MAX);
        while let Some(&p) = self.passes.last() {
            // A rekeyed entry may come before the next event: asked again each time.
            let next = self.queue.peek_key().unwrap_or(u128::MAX);
            if p.at >= next || p.at > by {
                break;
            }
            self.passes.pop();
            match p.via {
                None => {
                    self.queue.rekey(p.token, p.time, p.priority);
                }
                // The first place of two: the event that stood there would have queued
                // the second's event, taking the next sequence number. A cancelled
                // entry's event was queued for real instead (`Ctx::wake_at_place`):
                // nothing is taken for it.
                Some((time, priority)) => {
                    if self.queue.is_live(p.token) {
                        let seq = self.queue.reserve_sequence();
                        let at = crate::queue::pack(time, priority, seq);
                        self.insert_pass(Pass { at, via: None, ..p });
                    }
                }
            }
        }
    }

    /// Files `p` among the passes: latest place first; among equal places the one
    /// deferred first is last.
    fn insert_pass(&mut self, p: Pass) {
        let i = self.passes.partition_point(|q| q.at > p.at);
        self.passes.insert(i, p);
    }

    /// Runs until idle or stopped.
    pub fn run_to_idle<W: World<M>>(&mut self, world: &mut W) -> RunOutcome {
        self.run(world, RunLimit::NONE)
    }

    /// Runs every event at or before `until`.
    pub fn run_until<W: World<M>>(&mut self, world: &mut W, until: Time) -> RunOutcome {
        self.run(
            world,
            RunLimit {
                until,
                max_events: u64::MAX,
            },
        )
    }

    fn push_to(
        &mut self,
        from: ComponentId,
        to: ComponentId,
        earliest: Time,
        min_cycles: Cycles,
        prio: Priority,
        msg: M,
    ) -> EventToken {
        let t = self.landing(from, to, earliest, min_cycles);
        self.queue.push_token(t, prio, to, msg)
    }

    /// [`Kernel::push_self`] for a wake-up that replaces the queued event of `token`
    /// ([`EventQueue::reschedule`]). Out of line: inlined, its code weighed on every
    /// call of its caller (the bus's `set_tick`, inlined into its message handler),
    /// which measured slower.
    #[inline(never)]
    fn move_to(
        &mut self,
        token: EventToken,
        to: ComponentId,
        min_cycles: Cycles,
        prio: Priority,
        msg: M,
    ) -> EventToken {
        let t = self.landing_self(to, Time::ZERO, min_cycles);
        self.queue.reschedule(token, t, prio, to, msg)
    }

    /// [`Kernel::push_to`] for a message from the component being run to itself (a
    /// wake-up): now is an edge of its domain, the one the message lands on (every
    /// event is delivered on an edge of its receiver's), so the floor of the landing
    /// edge needs neither the cached edge nor a division; only an `earliest` past it
    /// costs one.
    fn push_self(
        &mut self,
        me: ComponentId,
        earliest: Time,
        min_cycles: Cycles,
        prio: Priority,
        msg: M,
    ) -> EventToken {
        let t = self.landing_self(me, earliest, min_cycles);
        self.queue.push_token(t, prio, me, msg)
    }

    /// [`Kernel::landing`] for the component being run (see [`Kernel::push_self`]).
    #[inline(always)]
    fn landing_self(&self, me: ComponentId, earliest: Time, min_cycles: Cycles) -> Time {
        let e = &self.edges[usize::from(self.component_domains[me.0 as usize].0)];
        debug_assert_eq!(
            first_edge_at_or_after(e.period, e.phase, self.now),
            self.now,
            "an event off its receiver's edge"
        );
        land(e.period, e.phase, self.now, earliest, min_cycles)
    }

    /// The edge of `to`'s domain a message sent now by `from` (the component being
    /// run) lands on: the first at or after `earliest`, and at least `min_cycles` of its
    /// cycles after the first edge at or after now.
    #[inline(always)]
    fn landing(
        &mut self,
        from: ComponentId,
        to: ComponentId,
        earliest: Time,
        min_cycles: Cycles,
    ) -> Time {
        let now = self.now;
        let same_grid =
            self.component_grids[from.0 as usize] == self.component_grids[to.0 as usize];
        let e = &mut self.edges[usize::from(self.component_domains[to.0 as usize].0)];
        // Now is an edge of `from`'s domain (every event is delivered on an edge of its
        // receiver's), so also of `to`'s when they share a grid. Else `e.edge` is the
        // first edge at or after `e.at`, and time only moves forward: it is still the
        // first at or after now while now has not passed it, and the edge after it is
        // when now lies in the period that follows. A division only when the domain
        // has not been sent to for longer.
        let now_edge = if same_grid {
            now
        } else if e.at <= now && now <= e.edge {
            e.edge
        } else {
            let edge = match e.edge.0.checked_add(e.period.0) {
                Some(next) if e.at <= now && now <= Time(next) => Time(next),
                _ => first_edge_at_or_after(e.period, e.phase, now),
            };
            e.at = now;
            e.edge = edge;
            edge
        };
        land(e.period, e.phase, now_edge, earliest, min_cycles)
    }
}

/// What a component may do while it handles a message: read the time, send messages,
/// ask to be woken, record trace spans, stop the run.
pub struct Ctx<'a, M> {
    kernel: &'a mut Kernel<M>,
    me: ComponentId,
}

/// The edge a message lands on: `min_cycles` periods after `now_edge` (an edge of the
/// receiver's domain), or the first edge at or after `earliest` if that is later. The
/// floor is an edge, so an `earliest` not past it costs no division.
#[inline(always)]
fn land(
    period: Duration,
    phase: Duration,
    now_edge: Time,
    earliest: Time,
    min_cycles: Cycles,
) -> Time {
    let floor = now_edge + period * min_cycles.0;
    if earliest <= floor {
        floor
    } else {
        first_edge_at_or_after(period, phase, earliest)
    }
}

impl<M> Ctx<'_, M> {
    /// The current instant (an edge of this component's domain).
    #[inline]
    #[must_use]
    pub fn now(&self) -> Time {
        self.kernel.now
    }

    /// The place of the event being handled in the run's order (see [`EventKey`]).
    #[inline]
    #[must_use]
    pub fn event_key(&self) -> EventKey {
        crate::queue::unpack(self.kernel.current)
    }

    /// The sequence number of the next event queued: an event queued now at time `t`
    /// with priority `p` has the key `EventKey { time: t, priority: p, sequence:
    /// ctx.next_sequence() }`; every event queued before it has a lower sequence.
    #[inline]
    #[must_use]
    pub fn next_sequence(&self) -> u64 {
        self.kernel.queue.next_sequence()
    }

    /// Takes the next sequence number without queueing anything, as a push would: the
    /// place `EventKey { time, priority, sequence: ctx.reserve_sequence() }` is where an
    /// event queued now at `time` with `priority` would stand, and every event queued
    /// later at that time and priority comes after it. For a component that answers in
    /// place of an event it does not queue, to mark that event's place (see
    /// [`Ctx::send_deferred`]).
    #[inline]
    pub fn reserve_sequence(&mut self) -> u64 {
        self.kernel.queue.reserve_sequence()
    }

    /// The instant up to which the run in progress delivers every event, unless a
    /// component stops it ([`Ctx::stop`]): its time limit, or zero for a run with an
    /// event budget (which may end at any event) and outside a run
    /// ([`Kernel::call`]). A fold that changes a component's
    /// state before the place of the event it skips (`pci_model`'s folded master, the
    /// ATT's translations computed ahead, the GEC's inputs taken in the engine's event)
    /// asks it, so that no run ends between the two.
    #[must_use]
    pub fn horizon(&self) -> Time {
        self.kernel.horizon
    }

    /// Whether an event for `to` is queued with a key below `key` (cancelled ones
    /// aside): false means that nothing reaches `to` between the event being run and
    /// `key` but what is queued from now on (which lands at least a cycle from now). A
    /// deferred message not yet given its sequence number is judged by its provisional
    /// key (after every event of its instant and priority), which is right for a `key`
    /// whose sequence number was taken now (`Ctx::next_sequence`): that message's place
    /// is still to come, so it will take a higher one.
    #[must_use]
    pub fn queued_for_before(&self, to: ComponentId, key: EventKey) -> bool {
        let k = crate::queue::pack(key.time, key.priority, key.sequence);
        self.kernel.queue.any_for_before(to, k)
    }

    /// Queues `msg` for `to` on its edge `at` with `prio` as if it were pushed at the
    /// place `pass` of the run's order, a place still to come (an event this component
    /// does not queue would have stood there and sent `msg`; `pass` from
    /// [`Ctx::reserve_sequence`]): until the run reaches `pass` the message sorts after
    /// every event queued at its instant and priority, and then takes the next sequence
    /// number, as that event's send would have. Messages deferred to one place are
    /// queued in the order they were deferred. Returns the token that cancels it until
    /// the run passes `pass` (the message then takes a new place in the queue, and the
    /// token names it no more).
    ///
    /// `(at, prio)` must come after `pass` (a message lands at least a cycle after it is
    /// sent), and `at` must be an edge of `to`'s domain.
    pub fn send_deferred(
        &mut self,
        to: ComponentId,
        at: Time,
        prio: Priority,
        msg: M,
        pass: EventKey,
    ) -> EventToken {
        self.defer(to, at, prio, msg, pass, None)
    }

    /// [`Ctx::send_deferred`] with normal priority for a message sent by a component
    /// whose event at instant `from` (not before now) is not queued: it lands where a
    /// send at `from` would have landed, on `to`'s first edge at or after `earliest`,
    /// at least `min_cycles` (at least one) of its cycles after its first edge at or
    /// after `from` ([`ClockDomain::landing_after`]; `earliest` = 0 for
    /// [`Ctx::send_after`]'s rule, `min_cycles` = 1 for [`Ctx::send_at`]'s). A fold's
    /// port for the component whose event it runs sends through this.
    pub fn send_deferred_from(
        &mut self,
        to: ComponentId,
        from: Time,
        min_cycles: Cycles,
        earliest: Time,
        msg: M,
        pass: EventKey,
    ) -> EventToken {
        let at = self
            .kernel
            .clock_of(to)
            .landing_after(from, min_cycles, earliest);
        self.defer(to, at, Priority::NORMAL, msg, pass, None)
    }

    /// Like [`Ctx::send_deferred`] for a message that the event which is not queued at
    /// `pass` would not have sent itself: it would have queued a wake-up of its
    /// component at `then` (instant, priority), and that wake-up's event would have
    /// sent `msg`. When the run passes `pass` the second place takes the next sequence
    /// number, as that wake-up's push would have; when it passes the second place the
    /// message takes its own, as [`Ctx::send_deferred`]'s does. Until then,
    /// [`Ctx::deferred_place`] tells which of the two places is to come next.
    ///
    /// `then` must come after `pass`, and `(at, prio)` after `then`. A cancelled
    /// message takes no sequence number at `pass`: the component then queues the
    /// wake-up for real at `pass` ([`Ctx::wake_at_place`]) and sends the message from
    /// it.
    pub fn send_deferred_via(
        &mut self,
        to: ComponentId,
        at: Time,
        prio: Priority,
        msg: M,
        pass: EventKey,
        then: (Time, Priority),
    ) -> EventToken {
        debug_assert!(
            then > (pass.time, pass.priority),
            "a second place before the first"
        );
        debug_assert!(
            (at, prio) > then,
            "a deferred message landing before its place"
        );
        self.defer(to, at, prio, msg, pass, Some(then))
    }

    /// The next place the run has to pass before the deferred message of `token` is
    /// queued for real: `pass`, or for [`Ctx::send_deferred_via`] once `pass` is passed
    /// the second place with its sequence number. `None` once the message is queued
    /// for real (or was never deferred).
    #[must_use]
    pub fn deferred_place(&self, token: EventToken) -> Option<EventKey> {
        self.kernel
            .passes
            .iter()
            .find(|p| p.token == token)
            .map(|p| crate::queue::unpack(p.at))
    }

    fn defer(
        &mut self,
        to: ComponentId,
        at: Time,
        prio: Priority,
        msg: M,
        pass: EventKey,
        via: Option<(Time, Priority)>,
    ) -> EventToken {
        let k = &mut *self.kernel;
        let place = crate::queue::pack(pass.time, pass.priority, pass.sequence);
        debug_assert!(
            place > k.current,
            "a deferred send to a place already passed"
        );
        debug_assert!(
            (at, prio) > (pass.time, pass.priority),
            "a deferred message landing before its place"
        );
        debug_assert_eq!(
            k.clock_of(to).edge_at_or_after(at),
            at,
            "a deferred message off its receiver's edge"
        );
        let token = k.queue.push_deferred(at, prio, to, msg);
        k.insert_pass(Pass {
            at: place,
            time: at,
            priority: prio,
            token,
            via,
        });
        token
    }

    /// The component being run.
    #[inline]
    #[must_use]
    pub fn me(&self) -> ComponentId {
        self.me
    }

    /// This component's clock domain id.
    #[must_use]
    pub fn my_domain_id(&self) -> DomainId {
        self.kernel.component_domain(self.me)
    }

    /// This component's clock domain.
    #[must_use]
    pub fn my_domain(&self) -> &ClockDomain {
        self.kernel.clock_of(self.me)
    }

    /// The clock domain of component `id`.
    #[must_use]
    pub fn domain_of(&self, id: ComponentId) -> &ClockDomain {
        self.kernel.clock_of(id)
    }

    /// A domain by id.
    #[must_use]
    pub fn domain(&self, id: DomainId) -> &ClockDomain {
        self.kernel.domain(id)
    }

    /// Sends `msg` to `to`: it arrives one cycle of `to`'s domain later (on the edge after
    /// the first edge at or after now).
    #[inline]
    pub fn send(&mut self, to: ComponentId, msg: M) {
        let me = self.me;
        self.kernel
            .push_to(me, to, Time::ZERO, Cycles(1), Priority::NORMAL, msg);
    }

    /// Sends `msg` to `to`, arriving `n` cycles of `to`'s domain later (`n` < 1 counts as 1).
    #[inline]
    pub fn send_after(&mut self, to: ComponentId, n: Cycles, msg: M) {
        let me = self.me;
        self.kernel.push_to(
            me,
            to,
            Time::ZERO,
            Cycles(n.0.max(1)),
            Priority::NORMAL,
            msg,
        );
    }

    /// Sends `msg` to `to` with a tie-break priority, `n` (>= 1) of its cycles later.
    #[inline]
    pub fn send_after_with(&mut self, to: ComponentId, n: Cycles, prio: Priority, msg: M) {
        let me = self.me;
        self.kernel
            .push_to(me, to, Time::ZERO, Cycles(n.0.max(1)), prio, msg);
    }

    /// Sends `msg` to `to`, arriving on `to`'s first edge at or after `at`, but never
    /// sooner than one of its cycles from now (for links with a latency of their own,
    /// such as a cable).
    #[inline]
    pub fn send_at(&mut self, to: ComponentId, at: Time, msg: M) {
        let me = self.me;
        self.kernel
            .push_to(me, to, at, Cycles(1), Priority::NORMAL, msg);
    }

    /// Asks to be woken with `msg` after `n` (>= 1) cycles of this component's domain.
    #[inline]
    pub fn wake_after(&mut self, n: Cycles, msg: M) {
        let me = self.me;
        self.kernel
            .push_self(me, Time::ZERO, Cycles(n.0.max(1)), Priority::NORMAL, msg);
    }

    /// Asks to be woken with `msg` after `n` (>= 1) cycles, with a tie-break priority.
    #[inline]
    pub fn wake_after_with(&mut self, n: Cycles, prio: Priority, msg: M) {
        let me = self.me;
        self.kernel
            .push_self(me, Time::ZERO, Cycles(n.0.max(1)), prio, msg);
    }

    /// Asks to be woken with `msg` on this domain's first edge at or after `at` (and at
    /// least one cycle from now).
    #[inline]
    pub fn wake_at(&mut self, at: Time, msg: M) {
        let me = self.me;
        self.kernel
            .push_self(me, at, Cycles(1), Priority::NORMAL, msg);
    }

    /// Queues the wake-up `msg` at `place`, whose sequence number this component took
    /// with [`Ctx::reserve_sequence`] where it would have queued that wake-up and did
    /// not (it might never be needed), or the kernel took for it (the second place of
    /// [`Ctx::send_deferred_via`], from [`Ctx::deferred_place`]): the entry is the one
    /// that push would have made,
    /// so every event keeps its place in the run's order. `place` must still be to come
    /// and lie on an edge of this component's domain.
    pub fn wake_at_place(&mut self, place: EventKey, msg: M) -> EventToken {
        let me = self.me;
        self.send_at_place(me, place, msg)
    }

    /// Queues `msg` for `to` at `place`, whose sequence number this component took with
    /// [`Ctx::reserve_sequence`] where it would have sent `msg` and did not (another
    /// component may have taken it in its stead: a fold): the entry the send would have
    /// made, so every event keeps its place in the run's order. `place` must still be to
    /// come and lie on an edge of `to`'s domain.
    pub fn send_at_place(&mut self, to: ComponentId, place: EventKey, msg: M) -> EventToken {
        let k = &mut *self.kernel;
        debug_assert!(
            crate::queue::pack(place.time, place.priority, place.sequence) > k.current,
            "a message placed in the past"
        );
        debug_assert_eq!(
            k.clock_of(to).edge_at_or_after(place.time),
            place.time,
            "a message off its receiver's edge"
        );
        k.queue
            .push_reserved(place.time, place.priority, place.sequence, to, msg)
    }

    /// Like [`Ctx::wake_after_with`], and returns the token that cancels the wake-up
    /// ([`Ctx::cancel`]), e.g. when a later input makes it unnecessary.
    #[inline]
    pub fn wake_after_cancellable(&mut self, n: Cycles, prio: Priority, msg: M) -> EventToken {
        let me = self.me;
        self.kernel
            .push_self(me, Time::ZERO, Cycles(n.0.max(1)), prio, msg)
    }

    /// Moves the wake-up of `token` (from [`Ctx::wake_after_cancellable`] or this) to
    /// `n` (>= 1) cycles from now with `prio` and `msg`, and returns the token that
    /// cancels or moves it again: the same as [`Ctx::cancel`] then
    /// [`Ctx::wake_after_cancellable`] (the same events in the same order), without the
    /// cancelled entry left in the queue until it reaches the top when it is in the
    /// queue's sorted array (nearly always: a run keeps a handful of events queued). A
    /// token whose event was delivered or cancelled is ignored (a plain wake-up).
    #[inline]
    pub fn move_wake(
        &mut self,
        token: EventToken,
        n: Cycles,
        prio: Priority,
        msg: M,
    ) -> EventToken {
        let me = self.me;
        self.kernel
            .move_to(token, me, Cycles(n.0.max(1)), prio, msg)
    }

    /// Cancels a queued event of this run by its token: it is never delivered (nor
    /// counted); the order of the others is unchanged. Returns whether it was still
    /// queued.
    #[inline]
    pub fn cancel(&mut self, token: EventToken) -> bool {
        self.kernel.queue.cancel(token)
    }

    /// The trace sink.
    #[inline]
    pub fn trace(&mut self) -> &mut TraceSink {
        &mut self.kernel.trace
    }

    /// Records that this component's level `name` (in `unit`) is `value` from now on
    /// (nothing when tracing is off).
    #[inline]
    pub fn record_level(&mut self, name: &'static str, unit: &'static str, value: u64) {
        if self.kernel.trace.enabled() {
            let l = crate::trace::Level {
                time: self.now(),
                component: self.me(),
                name,
                unit,
                value,
            };
            self.kernel.trace.level(l);
        }
    }

    /// Whether tracing is on (check before building costly trace data).
    #[inline]
    #[must_use]
    pub fn tracing(&self) -> bool {
        self.kernel.trace.enabled()
    }

    /// Records a span of work by this component, in its own domain.
    #[inline]
    pub fn span(&mut self, msg: MsgId, stage: &'static str, start: Time, end: Time) {
        if self.kernel.trace.enabled() {
            let domain = self.kernel.component_domain(self.me);
            self.kernel.trace.span(Span {
                msg,
                stage,
                component: self.me,
                domain,
                start,
                end,
            });
        }
    }

    /// Records a span of work by this component, clocked in another domain (e.g. a PCI
    /// transfer run by the card).
    #[inline]
    pub fn span_in(
        &mut self,
        msg: MsgId,
        stage: &'static str,
        domain: DomainId,
        start: Time,
        end: Time,
    ) {
        let component = self.me;
        self.kernel.trace.span_with(|| Span {
            msg,
            stage,
            component,
            domain,
            start,
            end,
        });
    }

    /// Ends the run after this message has been handled (the queue keeps its events).
    pub fn stop(&mut self) {
        self.kernel.stop = true;
    }
}
