//! A master's completions run by its bus (untraced fast stepping): where nothing can
//! reach the master between the bus's event that ends its request and the
//! `TransactionDone` that event sends, the bus runs the master's completion logic itself
//! ([`FoldedMaster`], lent by the system for the bus's event, `PciBus::handle_local`) and
//! the message is not sent. The card's DP83820 is such a master on its local bus.
//!
//! - **When.** The bus ends a request in the event at the edge of the transaction's last
//!   clock; its `TransactionDone` would land one clock later (the master shares the bus's
//!   clock), at a place `P` (that instant, normal priority, the sequence number its push
//!   takes). The bus folds it only when no event for the master, nor for the bus, is
//!   queued before `P` ([`Ctx::queued_for_before`]): whatever is queued from now on lands
//!   at least a clock from now, so at `P` or later, after `P` by its sequence number.
//!   The master then sees nothing between the two in the reference either, and takes the
//!   completion in the state it has now. The run must also reach `P`
//!   ([`Ctx::horizon`]): a run that ended in between would leave the master a
//!   completion ahead of the reference. Else the message is sent as before.
//! - **How.** The bus takes `P`'s sequence number (`Ctx::reserve_sequence`), so no later
//!   key moves, and once the wake-up's clocks are stepped, before it computes its next
//!   wake-up, hands the master the completion with `P`'s instant as its `now`
//!   ([`FoldPort`]). What the master sends (to its MAC, to itself) is queued *deferred*
//!   to `P` (`Ctx::send_deferred`): each takes, when the run passes `P`, the sequence
//!   number the master's send at `P` would have taken. Its bus requests are queued
//!   straight into the bus with the clock their `Request` would land in as their
//!   arrival, as the folded DMA master's are (`dma_fold.rs`), so the next wake-up sees
//!   them; a request the bus would refuse (no bytes) is sent as its `Request` message
//!   instead, deferred to `P`, and refused where the reference refuses it.
//! - **Register writes.** A write into the master's own target range (the DP83820's
//!   registers) lands the same way and is run the same way
//!   ([`FoldedMaster::target_write`]).
//!
//! The order of everything else is the reference's: the events the skipped messages
//! would have been are gone, and the pushes after them take lower sequence numbers,
//! which keeps their relative order. The lockstep harness checks it
//! ([`PciBus::set_local_fold_skew_clocks`] breaks it by a clock for the test that shows
//! it is caught); traced runs and exact stepping never fold.
//!
//! What the argument needs of the master and the system, and what is checked: `P` is
//! the master's first edge after the bus's event (checked at each fold: a message whose
//! landing is later, or a master in another clock, is sent); the master sends its
//! `Request`s with `Ctx::send` (one clock), so none of its own is still on its way past
//! `P` (the DP83820 does); no component stops the run (`Ctx::stop`) between the bus's
//! event and `P`, which the horizon does not cover (none in the system does).

use super::PciBus;
use crate::error::PciError;
use crate::msg::{BusRequest, PciMsg, TransactionDone};
use crate::params::Stepping;
use sim_kernel::{ComponentId, Ctx, Cycles, Duration, EventKey, Priority, Time};

/// What a master whose completions its bus may run offers the bus (see the module doc:
/// it sends its `Request`s with `Ctx::send`, one clock).
pub trait FoldedMaster<M> {
    /// Takes the completion `done` of its oldest request at `port.now()`, as its handler
    /// of `PciMsg::TransactionDone` would, acting through `port`.
    fn completion(&mut self, done: TransactionDone, port: &mut dyn FoldPort<M>);

    /// Takes a write of `data` at `addr` into its own target range (its registers) at
    /// `port.now()`, as its handler of `PciMsg::TargetWrite` would.
    fn target_write(&mut self, addr: u64, data: &[u8], port: &mut dyn FoldPort<M>);
}

/// The kernel as a folded master sees it while the bus runs its completion.
pub trait FoldPort<M> {
    /// The instant the completion is taken at (where its message would have landed).
    fn now(&self) -> Time;
    /// The period of the master's clock (the bus's).
    fn period(&self) -> Duration;
    /// Sends `msg` to `to`, landing `n` (>= 1) of `to`'s cycles after now's edge, as
    /// `Ctx::send_after` from the master would.
    fn send(&mut self, to: ComponentId, n: Cycles, msg: M);
    /// The master's own wake-up, as `Ctx::wake_at` from the master would queue it.
    fn wake_at(&mut self, at: Time, msg: M);
    /// Queues a bus request, as the master's `Request` message would.
    fn request(&mut self, req: BusRequest);
}

/// The bus as a folded master's port for one completion.
struct Port<'a, 'c, M> {
    bus: &'a mut PciBus,
    ctx: &'a mut Ctx<'c, M>,
    /// The master.
    me: ComponentId,
    /// The master's instant.
    at: Time,
    /// Where its event would have stood.
    pass: EventKey,
    /// The clock its requests land in.
    arrival: u64,
}

impl<M: From<PciMsg>> FoldPort<M> for Port<'_, '_, M> {
    fn now(&self) -> Time {
        self.at
    }

    fn period(&self) -> Duration {
        self.ctx.domain_of(self.me).period()
    }

    fn send(&mut self, to: ComponentId, n: Cycles, msg: M) {
        self.ctx
            .send_deferred_from(to, self.at, n, Time::ZERO, msg, self.pass);
    }

    fn wake_at(&mut self, at: Time, msg: M) {
        self.ctx
            .send_deferred_from(self.me, self.at, Cycles(1), at, msg, self.pass);
    }

    fn request(&mut self, req: BusRequest) {
        if req.is_refused() {
            // Refused where it lands, as the reference's message is.
            let bus = self.ctx.me();
            let msg = PciMsg::Request(req).into();
            self.ctx
                .send_deferred_from(bus, self.at, Cycles(1), Time::ZERO, msg, self.pass);
            return;
        }
        let done = self.bus.fold_request(req, self.arrival);
        debug_assert!(done.is_none(), "a folded master's request refused");
    }
}

impl PciBus {
    /// Lets the bus run the completions of master `m` (registered here with a
    /// component) itself, where nothing can reach the master in between (see the module
    /// doc), in untraced fast stepping, when the system lends it the master
    /// ([`PciBus::handle_local`]).
    ///
    /// # Errors
    /// A master not registered here with a component, or a second master.
    pub fn fold_master_completions(&mut self, m: crate::MasterId) -> Result<(), PciError> {
        let i = usize::from(m.0);
        let Some(component) = self.master_components.get(i).copied().flatten() else {
            return Err(PciError::BadParam {
                name: "master",
                why: format!("master {i} is not registered on this bus with a component"),
            });
        };
        if self.local_master.is_some() {
            return Err(PciError::BadParam {
                name: "master",
                why: "the bus runs another master's completions already".into(),
            });
        }
        self.local_master = Some(component);
        Ok(())
    }

    /// Test hook: a folded master takes its completions `clocks` clocks late, a
    /// deliberately broken fast path that the lockstep harness must catch. 0 (the
    /// default) in every real run.
    pub fn set_local_fold_skew_clocks(&mut self, clocks: u64) {
        self.local_fold_skew = clocks;
    }

    /// Completions and register writes the bus ran for its folded master, and those it
    /// sent as messages because something could reach the master first or the run could
    /// end first.
    #[must_use]
    pub fn folded_completions(&self) -> (u64, u64) {
        (self.local_folded, self.local_sent)
    }

    /// Whether `msg` for `to`, sent from the clock being stepped to land at `at`, is
    /// the folded master's completion, or a write into its registers, to be kept and run
    /// once the clocks are stepped (see the module doc): the place it takes; `None`: it
    /// is to be sent.
    #[inline]
    pub(super) fn keeps_for_master<M>(
        &mut self,
        ctx: &mut Ctx<'_, M>,
        to: ComponentId,
        at: Time,
        msg: &PciMsg,
    ) -> Option<EventKey> {
        if !self.local_on || self.local_master != Some(to) {
            return None;
        }
        if !matches!(msg, PciMsg::TransactionDone(_) | PciMsg::TargetWrite { .. }) {
            return None;
        }
        self.completion_place(ctx, to, at)
    }

    /// [`PciBus::keeps_for_master`]'s check of the place (out of line: one master's).
    #[inline(never)]
    fn completion_place<M>(
        &mut self,
        ctx: &mut Ctx<'_, M>,
        to: ComponentId,
        at: Time,
    ) -> Option<EventKey> {
        if ctx.tracing() || self.params.stepping != Stepping::FastForward {
            return None;
        }
        let target = ctx.domain_of(to);
        let pass = EventKey {
            time: target.landing(ctx.now(), at),
            priority: Priority::NORMAL,
            sequence: ctx.next_sequence(),
        };
        // The master's first edge after now: nothing sent from now on lands before it.
        let first = target.edge_after(ctx.now(), Cycles(1));
        if pass.time != first
            || pass.time > ctx.horizon()
            || ctx.queued_for_before(to, pass)
            || ctx.queued_for_before(ctx.me(), pass)
        {
            self.local_sent += 1;
            return None;
        }
        let seq = ctx.reserve_sequence();
        debug_assert_eq!(seq, pass.sequence);
        Some(pass)
    }

    /// Runs the kept completions on `master` (the system's lent master), in order,
    /// before the bus computes its next wake-up (which sees their requests).
    pub(super) fn run_completions<M: From<PciMsg>>(
        &mut self,
        ctx: &mut Ctx<'_, M>,
        master: &mut dyn FoldedMaster<M>,
    ) {
        let Some(me) = self.local_master else {
            return;
        };
        let skew = self.local_fold_skew;
        let mut kept = std::mem::take(&mut self.local_done);
        for (k, pass) in kept.drain(..) {
            self.local_folded += 1;
            let at = pass.time + ctx.domain_of(me).period() * skew;
            let arrival = self.clock_at(pass.time) + 1 + skew;
            let mut port = Port {
                bus: self,
                ctx,
                me,
                at,
                pass,
                arrival,
            };
            match k {
                PciMsg::TransactionDone(done) => master.completion(done, &mut port),
                PciMsg::TargetWrite { addr, data } => {
                    master.target_write(addr, &data, &mut port);
                    sim_kernel::spare::give_bytes(data);
                }
                _ => {}
            }
        }
        self.local_done = kept;
    }
}
