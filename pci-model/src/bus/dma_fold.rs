//! A DMA master folded into its bus (untraced fast stepping): the card's DMA master only
//! relays, a clock each way (its `Request` lands a bus clock after the `DmaStart` or
//! `TransactionDone` that made it), so a system may hand it to its bus
//! ([`PciBus::fold_dma_master`]) and save those two messages a burst.
//!
//! - `DmaStart` goes to the bus. The bus runs the master's own logic
//!   ([`DmaMaster::start`](crate::DmaMaster)) at that instant; each burst it asks for is
//!   queued with the clock its `Request` would have landed in as its arrival (REQ# and
//!   every bound of the bus honour a request's arrival). A job that ends at once is
//!   reported as the master's send would report it (but see below); a `DmaStart` that
//!   queues no burst (the master's bursts in flight already, a job of no bytes, a bad
//!   page list) does not touch the bus, as it did not before.
//! - A burst's end does not send `TransactionDone`: when the bus steps the burst's last
//!   clock (on time: an output clock has its wake-up), it takes the sequence number the
//!   message would have taken (`Ctx::reserve_sequence`), which marks the place the
//!   master's event would have had in the run's order, and the master's completion logic
//!   runs with the instant that message would have landed at as its `now`
//!   (`ClockDomain::landing`, the kernel's rule); the bursts it asks for are queued with
//!   their landing clock, and each `DmaDone` is queued to land where the master's send
//!   from that instant would have landed, *deferred* to that place
//!   (`Ctx::send_deferred`): the kernel gives it its sequence number when the run passes
//!   the place, so it stands among the events of its receiver's edge exactly where the
//!   master's send put it.
//!
//! The master's logic sees its inputs in the order it saw them before, at the same
//! instants, but a completion is now taken at an earlier event than the reference's: it
//! is taken before a `DmaStart` of the same instant (which the master takes in either
//! order to the same effect: a completion frees a slot, a start adds a job behind the
//! others, and the next burst is the first job's either way, landing in the same clock),
//! except for what it reports: a job the master reports at once (one of no bytes) while
//! a completion's place is still to come would, in the reference, wait behind the job
//! of that completion, so its `DmaDone` is deferred to the same place, after that
//! job's; a job refused for its page list is reported at once in either case
//! (`DmaPort::refused`). The lockstep harness checks the results (it drew case `76b13a38`, where a
//! `DmaDone` sent from the earlier event changed the engine's `recv_fifo_max`).
//! Untraced only: the master's state transitions are not recorded.

use super::PciBus;
use crate::dma::{DmaMaster, DmaPort};
use crate::error::PciError;
use crate::memory::HostMemory;
use crate::msg::{BusRequest, DmaDone, DmaJob, PciMsg, TransactionDone};
use sim_kernel::{ComponentId, Ctx, EventKey, Priority, Time, TransitionSink};

/// The DMA master a bus runs.
#[derive(Clone, Debug)]
pub(crate) struct FoldedDma {
    dma: DmaMaster,
    master: usize,
    /// A buffer for the bursts a `DmaStart` asks for (queued once the bus is stepped).
    held: Vec<BusRequest>,
    /// The place of the last completion taken (where its `TransactionDone` would have
    /// been handled), to which its reports are deferred.
    pass: Option<EventKey>,
}

/// How the folded master's reports go out.
#[derive(Clone, Copy, Debug)]
enum Reports {
    /// Sent now, as the master's send from now (a `DmaStart`'s, the bus not stepped).
    Send,
    /// Sent from the clock the bus is stepping, as `emit` sends its outputs.
    Emit,
    /// Deferred to the place of a completion (`Ctx::send_deferred`).
    Deferred(EventKey),
}

/// The folded master's port: the bus itself, the instant the master takes its input
/// at, the clock its requests land in, and how its reports go out.
struct BusPort<'a, 'c, M> {
    bus: &'a mut PciBus,
    ctx: &'a mut Ctx<'c, M>,
    at: Time,
    arrival: u64,
    reports: Reports,
    /// Requests held back (a `DmaStart`'s, queued once the bus is stepped), else
    /// queued at once (`None`).
    held: Option<Vec<BusRequest>>,
    /// Requests the bus refused, answered once the master is done (it never makes one).
    refused: Vec<TransactionDone>,
}

impl<M> TransitionSink for BusPort<'_, '_, M> {
    fn record_transition(&mut self, _: &'static str, _: &'static str, _: &'static str) {}

    fn records_transitions(&self) -> bool {
        false
    }
}

impl<M: From<PciMsg>> DmaPort for BusPort<'_, '_, M> {
    fn now(&self) -> Time {
        self.at
    }

    fn request(&mut self, _bus: ComponentId, req: BusRequest) {
        if let Some(held) = self.held.as_mut() {
            held.push(req);
        } else if let Some(done) = self.bus.fold_request(req, self.arrival) {
            self.refused.push(done);
        }
    }

    fn refused(&mut self, to: ComponentId, done: DmaDone) {
        // Sent from the `DmaStart` at once, as the master's component sends it, even
        // behind a completion taken early: the reference reports it before that one.
        self.ctx.send(to, PciMsg::DmaDone(done).into());
    }

    fn done(&mut self, to: ComponentId, done: DmaDone) {
        let msg = PciMsg::DmaDone(done);
        match self.reports {
            Reports::Send => self.ctx.send(to, msg.into()),
            Reports::Emit => {
                let land = self.ctx.domain_of(to).landing(self.at, Time::ZERO);
                self.bus.emit(self.ctx, to, land, msg);
            }
            Reports::Deferred(p) => {
                let land = self.ctx.domain_of(to).landing(p.time, Time::ZERO);
                self.bus.emit_deferred(self.ctx, to, land, msg, p);
            }
        }
    }
}

impl PciBus {
    /// Folds the DMA master `dma`, registered with this bus as `dma.master()`, into the
    /// bus (see the module doc): from now on it takes `DmaStart` itself, and the
    /// master's requests and completions stay inside it. For untraced fast stepping
    /// only, where the master lives in the bus's clock domain.
    ///
    /// # Errors
    /// A master that is not registered here with a component, or a second fold.
    pub fn fold_dma_master(&mut self, dma: DmaMaster) -> Result<(), PciError> {
        let m = usize::from(dma.master().0);
        if self.master_components.get(m).copied().flatten().is_none() {
            return Err(PciError::BadParam {
                name: "dma",
                why: format!("master {m} is not a registered DMA master of this bus"),
            });
        }
        if self.folded_dma.is_some() {
            return Err(PciError::BadParam {
                name: "dma",
                why: "a DMA master is folded into this bus already".into(),
            });
        }
        self.folded_dma = Some(Box::new(FoldedDma {
            dma,
            master: m,
            held: Vec::new(),
            pass: None,
        }));
        Ok(())
    }

    /// Test hook: a folded DMA master's requests land `clocks` clocks late, a
    /// deliberately broken fast path that the lockstep harness must catch. 0 (the
    /// default) in every real run.
    pub fn set_dma_fold_skew_clocks(&mut self, clocks: u64) {
        self.dma_fold_skew = clocks;
    }

    /// The DMA master folded into the bus, if any.
    #[must_use]
    pub fn folded_dma(&self) -> Option<&DmaMaster> {
        self.folded_dma.as_ref().map(|f| &f.dma)
    }

    /// Whether master `m`'s completions go to the folded DMA master.
    pub(super) fn folds_master(&self, m: usize) -> bool {
        self.folded_dma.as_ref().is_some_and(|f| f.master == m)
    }

    /// A `DmaStart` landed now (clock `c`): the master takes it as it would have. Its
    /// reports (a job that ends at once) go out as the master's send from now would,
    /// without the bus, or deferred behind a completion taken early (see the module
    /// doc). When it queues no burst (see the module doc), the bus is not
    /// touched: `None`. Else the bursts are queued, the bus first stepped as the
    /// reference's is at this instant (`catch_up`: its idle clocks are counted at its
    /// next input, the burst's `Request`, not here) unless they queue behind another of
    /// the master's with a wake-up queued (as such a `Request` is, `handle`); `Some`:
    /// whether they only queued behind another of the master's (`lands_behind`).
    pub(super) fn dma_start<M: From<PciMsg>>(
        &mut self,
        job: DmaJob,
        c: u64,
        ctx: &mut Ctx<'_, M>,
        mem: &mut Option<&mut HostMemory>,
    ) -> Option<bool> {
        let mut f = self.folded_dma.take()?;
        let master = f.dma.master();
        let arrival = c + 1 + self.dma_fold_skew;
        // A completion whose place is still to come was taken early: what the master
        // reports now it would report there, behind that completion's own reports.
        let reports = match f.pass.filter(|&p| p > ctx.event_key()) {
            Some(p) => Reports::Deferred(p),
            None => Reports::Send,
        };
        let mut port = BusPort {
            at: ctx.now(),
            arrival,
            bus: self,
            ctx,
            reports,
            held: Some(std::mem::take(&mut f.held)),
            refused: Vec::new(),
        };
        f.dma.start(job, &mut port);
        let mut held = port.held.take().unwrap_or_default();
        self.folded_dma = Some(f);
        let behind = if held.is_empty() {
            None
        } else if self.defers(master, ctx.tracing()) {
            Some(true)
        } else {
            if c > 0 {
                self.catch_up(c - 1, ctx, mem);
            }
            Some(self.lands_behind(master))
        };
        let mut refused = Vec::new();
        for req in held.drain(..) {
            if let Some(done) = self.fold_request(req, arrival) {
                refused.push(done);
            }
        }
        if let Some(f) = self.folded_dma.as_mut() {
            f.held = held;
        }
        self.answer_refused(refused, ctx);
        behind
    }

    /// The wake-up after a `DmaStart` in clock `c` whose bursts land in clock `c + 1`
    /// (untraced fast stepping: the fold is used nowhere else). They can have no output
    /// before clock `c + 2`, where the reference's bus, woken by their `Request` at
    /// `c + 1`, steps on at the earliest; an output of other work before that has the
    /// wake-up queued before, which stays where it is earlier. `behind`: they only
    /// queued behind another of the master's (`lands_behind`).
    pub(super) fn fold_wake<M: From<PciMsg>>(
        &mut self,
        c: u64,
        behind: bool,
        ctx: &mut Ctx<'_, M>,
    ) {
        if behind && self.tick.is_some() {
            return;
        }
        let last = self.clk_next.saturating_sub(1);
        if let Some(k) = self.next_tick(last, false) {
            self.ensure_tick(k.max(c + 2), ctx);
        }
    }

    /// The folded master's request is over, its `TransactionDone` sent at `t_end` from
    /// now (the clock being stepped): the master takes it now, as at the instant it
    /// would have landed, its reports deferred to the place that event would have had.
    pub(super) fn dma_completion<M: From<PciMsg>>(
        &mut self,
        done: TransactionDone,
        t_end: Time,
        ctx: &mut Ctx<'_, M>,
    ) {
        // As `emit` checks for every output: the clock is stepped on time, so the
        // message's landing (and the master's instant) is the reference's.
        #[cfg(debug_assertions)]
        if self.capture.is_none() {
            debug_assert!(
                self.clk_next >= self.now_clk,
                "a folded DMA completion of clock {} stepped late at clock {}",
                self.clk_next,
                self.now_clk
            );
        }
        let at = ctx.my_domain().landing(ctx.now(), t_end);
        // The place the master's event would have had: `emit` would have queued the
        // message now, taking this sequence number.
        let pass = EventKey {
            time: at,
            priority: Priority::NORMAL,
            sequence: ctx.reserve_sequence(),
        };
        if let Some(f) = self.folded_dma.as_mut() {
            f.pass = Some(pass);
        }
        self.run_folded(done, at, Reports::Deferred(pass), ctx);
    }

    /// Hands the folded master the completion `done` at instant `at` (its requests
    /// queued at once, landing a clock later; its reports sent as `reports` says), then
    /// answers any request the bus refused.
    fn run_folded<M: From<PciMsg>>(
        &mut self,
        done: TransactionDone,
        at: Time,
        reports: Reports,
        ctx: &mut Ctx<'_, M>,
    ) {
        let Some(mut f) = self.folded_dma.take() else {
            return;
        };
        let mut port = BusPort {
            at,
            arrival: self.clock_at(at) + 1 + self.dma_fold_skew,
            bus: self,
            ctx,
            reports,
            held: None,
            refused: Vec::new(),
        };
        f.dma.burst_done(done, &mut port);
        let refused = std::mem::take(&mut port.refused);
        self.folded_dma = Some(f);
        self.answer_refused(refused, ctx);
    }

    /// Answers the requests the bus refused, as the bus answers each at its landing
    /// (the master never makes one: its answer is sent from the clock being stepped, not
    /// deferred to the place of the bus's event).
    #[inline]
    fn answer_refused<M: From<PciMsg>>(
        &mut self,
        refused: Vec<TransactionDone>,
        ctx: &mut Ctx<'_, M>,
    ) {
        if refused.is_empty() {
            return;
        }
        self.answer_each(refused, ctx);
    }

    /// [`PciBus::answer_refused`]'s loop (out of line: the master never makes a request
    /// the bus refuses).
    #[cold]
    #[inline(never)]
    fn answer_each<M: From<PciMsg>>(
        &mut self,
        refused: Vec<TransactionDone>,
        ctx: &mut Ctx<'_, M>,
    ) {
        for done in refused {
            let at = ctx.my_domain().landing(done.end, Time::ZERO);
            self.run_folded(done, at, Reports::Emit, ctx);
        }
    }

    /// Queues a request of the folded master that lands in clock `arrival`; a bad one
    /// (as `queue_request` refuses it: the master never makes one) is not queued, and
    /// its `TransactionDone`, sent at the landing, is returned.
    pub(super) fn fold_request(
        &mut self,
        req: BusRequest,
        arrival: u64,
    ) -> Option<TransactionDone> {
        let landed = self.edge(arrival);
        self.queue_request(req, arrival, landed)
            .err()
            .flatten()
            .map(|(_, done)| done)
    }
}
