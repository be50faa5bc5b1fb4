//! A DMA master folded into its bus (untraced fast stepping): the card's DMA master only
//! relays, a clock each way (its `Request` lands a bus clock after the `DmaStart` or
//! `TransactionDone` that made it), so a system may hand it to its bus
//! ([`PciBus::fold_dma_master`]) and save those two messages a burst.
//!
//! - `DmaStart` goes to the bus. The bus runs the master's own logic
//!   ([`DmaMaster::start`](crate::DmaMaster)) at that instant; each burst it asks for is
//!   queued with the clock its `Request` would have landed in as its arrival (REQ# and
//!   every bound of the bus honour a request's arrival). A job that ends at once is
//!   reported as the master's send would report it; a `DmaStart` that queues no burst
//!   (the master's bursts in flight already) does not touch the bus, as it did not
//!   before.
//! - A burst's end does not send `TransactionDone`: when the bus steps the burst's last
//!   clock (on time: an output clock has its wake-up), the master's completion logic
//!   runs with the instant that message would have landed at as its `now`
//!   (`ClockDomain::landing`, the kernel's rule); the bursts it asks for are queued with
//!   their landing clock, and each `DmaDone` is sent to land where the master's send from
//!   that instant would have landed.
//!
//! The master's logic sees its inputs in the order it saw them before, at the same
//! instants, but a completion is now taken at an earlier event than the reference's: it
//! is taken before a `DmaStart` of the same instant (which the master takes in either
//! order to the same effect: a completion frees a slot, a start adds a job behind the
//! others, and the next burst is the first job's either way), and its `DmaDone` is queued
//! before the events of its receiver's edge that were queued in between. The census of
//! step 6 (docs/speed-plan.md) found no `DmaDone` meeting another event of the engine at
//! the same instant; the lockstep harness checks the results. Untraced only: the master's
//! state transitions are not recorded.

use super::{PciBus, Reply};
use crate::dma::{DmaMaster, DmaPort};
use crate::error::PciError;
use crate::memory::HostMemory;
use crate::msg::{BusRequest, DmaDone, DmaJob, PciMsg, TransactionDone, TxnStatus};
use sim_kernel::{ComponentId, Ctx, Time, TransitionSink};

/// The DMA master a bus runs, and the buffers its effects are collected in.
#[derive(Clone, Debug)]
pub(crate) struct FoldedDma {
    dma: DmaMaster,
    master: usize,
    requests: Vec<BusRequest>,
    dones: Vec<(ComponentId, DmaDone)>,
}

/// The folded master's port: the instant it handles its input at, and what it sends.
struct FoldPort<'a> {
    at: Time,
    requests: &'a mut Vec<BusRequest>,
    dones: &'a mut Vec<(ComponentId, DmaDone)>,
}

impl TransitionSink for FoldPort<'_> {
    fn record_transition(&mut self, _: &'static str, _: &'static str, _: &'static str) {}

    fn records_transitions(&self) -> bool {
        false
    }
}

impl DmaPort for FoldPort<'_> {
    fn now(&self) -> Time {
        self.at
    }

    fn request(&mut self, _bus: ComponentId, req: BusRequest) {
        self.requests.push(req);
    }

    fn done(&mut self, to: ComponentId, done: DmaDone) {
        self.dones.push((to, done));
    }
}

/// What the folded master sent: requests, and `DmaDone`s with their receivers.
type Sent = (Vec<BusRequest>, Vec<(ComponentId, DmaDone)>);

/// What the folded master is handed.
enum Input {
    Start(DmaJob),
    Done(TransactionDone),
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
            requests: Vec::new(),
            dones: Vec::new(),
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
    /// without the bus. When it queues no burst (its bursts in flight already), the bus
    /// is not touched: `None`. Else the bus is stepped up to clock `c - 1` and the
    /// bursts queued; `Some`: whether they only queued behind another of the master's
    /// (`lands_behind`).
    pub(super) fn dma_start<M: From<PciMsg>>(
        &mut self,
        job: DmaJob,
        c: u64,
        ctx: &mut Ctx<'_, M>,
        mem: &mut Option<&mut HostMemory>,
    ) -> Option<bool> {
        let at = ctx.now();
        let master = self.folded_dma.as_ref().map(|f| f.dma.master())?;
        let (requests, mut dones) = self.call_folded(Input::Start(job), at)?;
        for (to, done) in dones.drain(..) {
            ctx.send(to, PciMsg::DmaDone(done).into());
        }
        if requests.is_empty() {
            self.keep_buffers(requests, dones);
            return None;
        }
        if c > 0 {
            self.run_to(c - 1, ctx, mem);
        }
        let behind = self.lands_behind(master);
        self.apply_folded((requests, dones), at, c, ctx);
        Some(behind)
    }

    /// The folded master's request is over, its `TransactionDone` sent at `t_end` from
    /// now (the clock being stepped): the master takes it now, as at the instant it
    /// would have landed.
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
        self.run_folded(Input::Done(done), at, ctx);
    }

    /// Runs the folded master on `input` at instant `at` and applies what it sends.
    fn run_folded<M: From<PciMsg>>(&mut self, input: Input, at: Time, ctx: &mut Ctx<'_, M>) {
        if let Some(sent) = self.call_folded(input, at) {
            self.apply_folded(sent, at, self.clock_at(at), ctx);
        }
    }

    /// Runs the folded master on `input` at instant `at`: what it sends, or `None` when
    /// it sends nothing.
    fn call_folded(&mut self, input: Input, at: Time) -> Option<Sent> {
        let f = self.folded_dma.as_mut()?;
        let (mut requests, mut dones) = (
            std::mem::take(&mut f.requests),
            std::mem::take(&mut f.dones),
        );
        let mut port = FoldPort {
            at,
            requests: &mut requests,
            dones: &mut dones,
        };
        match input {
            Input::Start(job) => f.dma.start(job, &mut port),
            Input::Done(done) => f.dma.burst_done(done, &mut port),
        }
        if requests.is_empty() && dones.is_empty() {
            (f.requests, f.dones) = (requests, dones);
            return None;
        }
        Some((requests, dones))
    }

    /// Applies what the folded master sent at instant `at` (clock `c`): its requests
    /// land a clock later, its `DmaDone`s where a send from `at` lands. A request the bus
    /// refuses is answered after the others are queued, as the bus answers each at its
    /// landing.
    fn apply_folded<M: From<PciMsg>>(
        &mut self,
        (mut requests, mut dones): Sent,
        at: Time,
        c: u64,
        ctx: &mut Ctx<'_, M>,
    ) {
        for (to, done) in dones.drain(..) {
            let land = ctx.domain_of(to).landing(at, Time::ZERO);
            self.emit(ctx, to, land, PciMsg::DmaDone(done));
        }
        let arrival = c + 1 + self.dma_fold_skew;
        let mut refused = Vec::new();
        for req in requests.drain(..) {
            if let Some(done) = self.fold_request(req, arrival) {
                refused.push(done);
            }
        }
        self.keep_buffers(requests, dones);
        for done in refused {
            let at = ctx.my_domain().landing(done.end, Time::ZERO);
            self.run_folded(Input::Done(done), at, ctx);
        }
    }

    /// Gives the (drained) buffers back to the folded master for its next input.
    fn keep_buffers(&mut self, requests: Vec<BusRequest>, dones: Vec<(ComponentId, DmaDone)>) {
        if let Some(f) = self.folded_dma.as_mut() {
            if f.requests.capacity() < requests.capacity() {
                f.requests = requests;
            }
            if f.dones.capacity() < dones.capacity() {
                f.dones = dones;
            }
        }
    }

    /// Queues a request of the folded master that lands in clock `arrival`; a bad one
    /// (as `enqueue_request` refuses it: the master never makes one) is not queued, and
    /// its `TransactionDone`, sent at the landing, is returned.
    fn fold_request(&mut self, req: BusRequest, arrival: u64) -> Option<TransactionDone> {
        let m = usize::from(req.master.0);
        let Some(component) = self.master_components.get(m).copied().flatten() else {
            tracing::warn!(target: "pci::bus", master = m, "folded DMA request from an unknown master dropped");
            self.stats.dropped_inputs += 1;
            return None;
        };
        let total = req.bytes();
        if total == 0 || req.addr.checked_add(total).is_none() {
            let landed = self.edge(arrival);
            return Some(TransactionDone {
                tag: req.tag,
                status: TxnStatus::BadRequest,
                bytes: 0,
                data: Vec::new(),
                transactions: 0,
                retries: 0,
                disconnects: 0,
                latency_timer_expirations: 0,
                start: landed,
                end: landed,
            });
        }
        self.push_queued(m, req, total, Reply::Master(component), arrival);
        None
    }
}
