//! The card's DMA master: turns a DMA job (a physical page list and a length) into PCI
//! bursts and hands them to the bus.
//!
//! ```text
//!  DmaStart(job) --> split at 4 KB pages --> bursts of <= burst_bytes --> Request --> PciBus
//!  DmaDone       <-- gather read data, first error <------------ TransactionDone <--
//! ```
//!
//! - A burst never crosses a physical page (the next page is elsewhere) and is at most
//!   `burst_bytes` long; bursts are cut sequentially from the start of each page piece.
//! - Read command by length (PCI 2.2 §3.1.2 usage guidelines): one data phase or less ->
//!   Memory Read; within one cache line -> Memory Read Line; more -> Memory Read
//!   Multiple. Writes use Memory Write, or Memory Write and Invalidate for whole aligned
//!   cache lines when enabled.
//! - Up to `max_outstanding` bursts are queued at the bus, so REQ# stays asserted and
//!   the next burst starts right after the idle clock that ends the previous one.
//! - Jobs run in arrival order; a failed burst (master or target abort) ends its job
//!   with the error, bytes before it counted.
//!
//! The component is clocked by the PCI domain of its bus. In untraced fast stepping a
//! system may fold it into its bus instead (`PciBus::fold_dma_master`, `bus/dma_fold.rs`):
//! the same logic runs there, its requests queued at the bus and its completions taken
//! without the two messages between them. Its effects go through a `DmaPort`, which
//! the component's handler and the fold implement.

use crate::error::MemError;
use crate::memory::PAGE_SIZE;
use crate::msg::{
    BusRequest, Command, DmaDirection, DmaDone, DmaJob, DmaStatus, MasterId, PciMsg,
    TransactionDone, TxnStatus,
};
use crate::page_table::{check_page_list, PhysSegment};
use crate::params::{BusWidth, DmaParams};
use sim_kernel::{ComponentId, Ctx, Fsm, StateName, Time, TransitionSink};
use std::collections::VecDeque;

/// Where a DMA master's effects go: the kernel, when it is a component of its own
/// ([`DmaMaster::handle`]), or its bus, when folded into it (`bus/dma_fold.rs`).
pub(crate) trait DmaPort: TransitionSink {
    /// The instant the input being handled arrives at the DMA master.
    fn now(&self) -> Time;
    /// Sends `req` to the bus (landing one bus clock later).
    fn request(&mut self, bus: ComponentId, req: BusRequest);
    /// Sends `done` to `to` (landing one of its clocks later): the report of a job,
    /// in the order the jobs came.
    fn done(&mut self, to: ComponentId, done: DmaDone);
    /// Sends `done` to `to` at once, as [`DmaPort::done`] does: a job refused when it
    /// arrives, reported outside the order of the jobs in flight (its page list is bad).
    fn refused(&mut self, to: ComponentId, done: DmaDone) {
        self.done(to, done);
    }
}

/// The port of a DMA master that is a component: messages through the kernel.
struct CtxPort<'a, 'b, M>(&'a mut Ctx<'b, M>);

impl<M> TransitionSink for CtxPort<'_, '_, M> {
    fn record_transition(&mut self, machine: &'static str, from: &'static str, to: &'static str) {
        self.0.record_transition(machine, from, to);
    }

    fn records_transitions(&self) -> bool {
        self.0.records_transitions()
    }
}

impl<M: From<PciMsg>> DmaPort for CtxPort<'_, '_, M> {
    fn now(&self) -> Time {
        self.0.now()
    }

    fn request(&mut self, bus: ComponentId, req: BusRequest) {
        self.0.send(bus, PciMsg::Request(req).into());
    }

    fn done(&mut self, to: ComponentId, done: DmaDone) {
        self.0.send(to, PciMsg::DmaDone(done).into());
    }
}

/// Whether the DMA master has work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DmaState {
    /// No job.
    Idle,
    /// At least one job in progress.
    Busy,
}

impl StateName for DmaState {
    fn name(self) -> &'static str {
        match self {
            DmaState::Idle => "idle",
            DmaState::Busy => "busy",
        }
    }
}

/// Counters of a DMA master.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DmaStats {
    /// Jobs finished (any status).
    pub jobs: u64,
    /// Jobs that failed.
    pub failed_jobs: u64,
    /// Bursts issued.
    pub bursts: u64,
    /// Bytes read from the bus.
    pub bytes_read: u64,
    /// Bytes written to the bus.
    pub bytes_written: u64,
    /// Messages of a kind this component does not take (a wiring bug): counted and
    /// traced as errors; any of them fails a system run.
    pub wrong_inputs: u64,
    /// Completions of a burst this master has not issued (warned and dropped).
    pub unknown_completions: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Burst {
    addr: u64,
    offset: u64,
    len: u64,
}

/// A job's bursts, computed on demand from its page list: memory grows with the number
/// of pages, not with the number of bursts (a 256 MB job in 4-byte bursts has 67 M
/// bursts but 65 536 pages). The list is the job's own (ATT form: entry 0 the physical
/// start, later entries page bases), checked as
/// [`page_segments`](crate::page_table::page_segments) checks it
/// ([`BurstPlan::new`]); its pieces are `page_segments`' without being built: the first
/// runs to its page's end, every later one is a whole page but the last, so the piece
/// of a burst and its offset follow from the burst's index by arithmetic.
#[derive(Clone, Debug, Default)]
struct BurstPlan {
    /// The job's page list.
    pages: Vec<u64>,
    /// Bytes of the job.
    len: u64,
    /// Bytes of the first piece.
    first_len: u64,
    /// Bursts of the first piece.
    first_bursts: usize,
    /// Bursts of a whole page.
    page_bursts: usize,
    /// Bursts in all.
    total: usize,
    /// Longest burst \[bytes\].
    burst_bytes: u64,
}

impl BurstPlan {
    /// The plan of `len` bytes at `pages`, or why `page_segments` refuses the list (the
    /// same error: both check with `check_page_list`).
    fn new(pages: Vec<u64>, len: u64, burst_bytes: u64) -> Result<Self, MemError> {
        let burst_bytes = burst_bytes.max(1);
        let bursts = |n: u64| usize::try_from(n.div_ceil(burst_bytes)).unwrap_or(usize::MAX);
        let mut plan = Self {
            pages,
            len,
            first_len: 0,
            first_bursts: 0,
            page_bursts: bursts(PAGE_SIZE),
            total: 0,
            burst_bytes,
        };
        if len == 0 {
            return Ok(plan);
        }
        let first_len = check_page_list(&plan.pages, len)?;
        // Every piece after the first is a whole page but the last.
        let rest = len - first_len;
        let whole = rest / PAGE_SIZE;
        let total = bursts(first_len)
            .saturating_add(
                plan.page_bursts
                    .saturating_mul(usize::try_from(whole).unwrap_or(usize::MAX)),
            )
            .saturating_add(bursts(rest % PAGE_SIZE));
        plan.first_len = first_len;
        plan.first_bursts = bursts(first_len);
        plan.total = total;
        Ok(plan)
    }

    fn len(&self) -> usize {
        self.total
    }

    /// Page piece `k`: its physical start and length.
    fn piece(&self, k: usize) -> Option<PhysSegment> {
        let addr = *self.pages.get(k)?;
        if k == 0 {
            return Some(PhysSegment {
                addr,
                len: self.first_len,
            });
        }
        let before = self.first_len + (k as u64 - 1) * PAGE_SIZE;
        Some(PhysSegment {
            addr,
            len: self.len.checked_sub(before)?.min(PAGE_SIZE),
        })
    }

    /// Burst `i`: cut sequentially from the start of its page piece.
    fn get(&self, i: usize) -> Option<Burst> {
        if i >= self.total {
            return None;
        }
        // The piece `k` holding burst `i`, the index of its first burst and its offset.
        let (k, first, offset) = if i < self.first_bursts {
            (0, 0, 0)
        } else {
            let pages = (i - self.first_bursts) / self.page_bursts.max(1);
            (
                pages + 1,
                self.first_bursts + pages * self.page_bursts,
                self.first_len + pages as u64 * PAGE_SIZE,
            )
        };
        let seg = self.piece(k)?;
        let at = (i - first) as u64 * self.burst_bytes;
        Some(Burst {
            addr: seg.addr + at,
            offset: offset + at,
            len: (seg.len - at).min(self.burst_bytes),
        })
    }
}

#[derive(Clone, Debug)]
struct Job {
    seq: u64,
    tag: u64,
    reply_to: ComponentId,
    write: bool,
    /// Bytes of the job (a read's buffer holds this many once its first data landed).
    len: usize,
    data: Vec<u8>,
    bursts: BurstPlan,
    issued: usize,
    completed: usize,
    status: DmaStatus,
    moved: u64,
    start: Time,
    end: Time,
}

#[derive(Clone, Copy, Debug)]
struct InFlight {
    bus_tag: u64,
    job: u64,
    burst: usize,
}

/// A read burst's `data` landed at byte `from` of `job`: copied into the job's buffer
/// (zeros where nothing landed yet, as many bytes as the buffer has room for). The
/// first data at the start of the job becomes the buffer itself instead of a copy.
fn read_landed(job: &mut Job, from: usize, mut data: Vec<u8>) {
    let n = data.len().min(job.len.saturating_sub(from));
    if job.data.is_empty() && from == 0 {
        data.truncate(n);
        data.resize(job.len, 0);
        job.data = data;
        return;
    }
    if job.data.len() < job.len {
        job.data.resize(job.len, 0);
    }
    if let Some(dst) = job.data.get_mut(from..from + n) {
        dst.copy_from_slice(&data[..n]);
    }
    sim_kernel::spare::give_bytes(data); // copied: the burst's buffer goes back
}

/// The read command for `len` bytes at `addr` (`word`: bytes per data phase).
#[must_use]
pub fn read_command(addr: u64, len: u64, word: u64, cache_line: u64) -> Command {
    let last = addr.saturating_add(len.max(1) - 1);
    if len <= word && addr / word == last / word {
        Command::MemoryRead
    } else if addr / cache_line == last / cache_line {
        Command::MemoryReadLine
    } else {
        Command::MemoryReadMultiple
    }
}

/// The write command for `len` bytes at `addr`.
#[must_use]
pub fn write_command(addr: u64, len: u64, cache_line: u64, invalidate: bool) -> Command {
    if invalidate && addr % cache_line == 0 && len % cache_line == 0 && len > 0 {
        Command::MemoryWriteInvalidate
    } else {
        Command::MemoryWrite
    }
}

/// The card's DMA master (see the module doc).
#[derive(Clone, Debug)]
pub struct DmaMaster {
    params: DmaParams,
    bus: ComponentId,
    master: MasterId,
    word: u64,
    jobs: VecDeque<Job>,
    in_flight: VecDeque<InFlight>,
    next_tag: u64,
    next_seq: u64,
    fsm: Fsm<DmaState>,
    stats: DmaStats,
}

impl DmaMaster {
    /// A DMA master that is `master` on the bus component `bus` of width `width`.
    #[must_use]
    pub fn new(params: DmaParams, bus: ComponentId, master: MasterId, width: BusWidth) -> Self {
        Self {
            params,
            bus,
            master,
            word: width.bytes(),
            jobs: VecDeque::new(),
            in_flight: VecDeque::new(),
            next_tag: 0,
            next_seq: 0,
            fsm: Fsm::new("pci.dma", DmaState::Idle),
            stats: DmaStats::default(),
        }
    }

    /// The master registration to give [`crate::PciBus::add_master`] for a DMA master
    /// that is component `component`.
    #[must_use]
    pub fn master_config(
        name: &str,
        component: ComponentId,
        params: &DmaParams,
    ) -> crate::MasterConfig {
        crate::MasterConfig {
            name: name.to_owned(),
            component,
            latency_timer: params.latency_timer,
            supports_64bit: params.supports_64bit,
            recovery: params.recovery,
        }
    }

    /// Its counters.
    #[must_use]
    pub fn stats(&self) -> &DmaStats {
        &self.stats
    }

    /// Its parameters.
    #[must_use]
    pub fn params(&self) -> &DmaParams {
        &self.params
    }

    /// Whether a job is in progress.
    #[must_use]
    pub fn busy(&self) -> bool {
        self.fsm.state() == DmaState::Busy
    }

    /// The master id it has on its bus.
    #[must_use]
    pub fn master(&self) -> MasterId {
        self.master
    }

    /// Handles one message.
    pub fn handle<M: From<PciMsg>>(&mut self, msg: PciMsg, ctx: &mut Ctx<'_, M>) {
        let port = &mut CtxPort(ctx);
        match msg {
            PciMsg::DmaStart(job) => self.start(job, port),
            PciMsg::TransactionDone(done) => self.burst_done(done, port),
            PciMsg::Tick { .. }
            | PciMsg::WatchedWrite { .. }
            | PciMsg::Request(_)
            | PciMsg::TargetWrite { .. }
            | PciMsg::TargetRead { .. }
            | PciMsg::TargetReadData { .. }
            | PciMsg::TargetAbort { .. }
            | PciMsg::TargetWriteRetry { .. }
            | PciMsg::CpuWrite { .. }
            | PciMsg::CpuWritePosted { .. }
            | PciMsg::CpuRead { .. }
            | PciMsg::CpuReadData { .. }
            | PciMsg::DmaDone(_) => {
                self.stats.wrong_inputs += 1;
                tracing::error!(target: "pci::dma", ?msg, "not a DMA master input: dropped");
            }
        }
    }

    /// A job arrives: its first bursts go to the bus.
    pub(crate) fn start<P: DmaPort>(&mut self, job: DmaJob, ctx: &mut P) {
        let now = ctx.now();
        let (write, data, len) = match job.direction {
            DmaDirection::Read { len } => (false, Vec::new(), len),
            DmaDirection::Write { data } => {
                let len = data.len() as u64;
                (true, data, len)
            }
        };
        let bursts = match BurstPlan::new(job.pages, len, self.params.burst_bytes) {
            Ok(b) => b,
            Err(e) => {
                self.stats.jobs += 1;
                self.stats.failed_jobs += 1;
                let done = DmaDone {
                    tag: job.tag,
                    status: DmaStatus::BadPageList(e),
                    bytes: 0,
                    data: Vec::new(),
                    bursts: 0,
                    start: now,
                    end: now,
                };
                ctx.refused(job.reply_to, done);
                return;
            }
        };
        // A read's buffer is made when its first burst's data lands (`read_landed`).
        let data = if write { data } else { Vec::new() };
        let seq = self.next_seq;
        self.next_seq += 1;
        tracing::debug!(target: "pci::dma", tag = job.tag, len, bursts = bursts.len(), write, "job start");
        self.jobs.push_back(Job {
            seq,
            tag: job.tag,
            reply_to: job.reply_to,
            write,
            len: usize::try_from(len).unwrap_or(0),
            data,
            bursts,
            issued: 0,
            completed: 0,
            status: DmaStatus::Ok,
            moved: 0,
            start: now,
            end: now,
        });
        self.fsm.set(DmaState::Busy, ctx);
        self.finish_jobs(ctx);
        self.pump(ctx);
    }

    /// A burst's completion arrives: finished jobs are reported, more bursts go out.
    pub(crate) fn burst_done<P: DmaPort>(&mut self, mut done: TransactionDone, ctx: &mut P) {
        let Some(pos) = self.in_flight.iter().position(|f| f.bus_tag == done.tag) else {
            tracing::warn!(target: "pci::dma", tag = done.tag, "completion of an unknown burst dropped");
            self.stats.unknown_completions += 1;
            return;
        };
        let Some(f) = self.in_flight.remove(pos) else {
            return;
        };
        if let Some(job) = self.jobs.iter_mut().find(|j| j.seq == f.job) {
            job.completed += 1;
            job.end = done.end;
            if let Some(b) = job.bursts.get(f.burst) {
                if !job.write {
                    let from = usize::try_from(b.offset).unwrap_or(usize::MAX);
                    read_landed(job, from, std::mem::take(&mut done.data));
                    self.stats.bytes_read += done.bytes;
                } else {
                    self.stats.bytes_written += done.bytes;
                }
                if job.status == DmaStatus::Ok {
                    job.moved = b.offset + done.bytes;
                    match done.status {
                        TxnStatus::Ok => {}
                        TxnStatus::MasterAbort | TxnStatus::BadRequest => {
                            job.status = DmaStatus::MasterAbort {
                                addr: b.addr + done.bytes,
                            };
                        }
                        TxnStatus::TargetAbort => {
                            job.status = DmaStatus::TargetAbort {
                                addr: b.addr + done.bytes,
                            };
                        }
                    }
                }
            }
        }
        self.finish_jobs(ctx);
        self.pump(ctx);
    }

    /// Reports the jobs at the front that are over.
    fn finish_jobs<P: DmaPort>(&mut self, ctx: &mut P) {
        while let Some(job) = self.jobs.front() {
            let failed = job.status != DmaStatus::Ok;
            let all_issued = job.issued == job.bursts.len() || failed;
            if !(all_issued && job.completed == job.issued) {
                break;
            }
            let Some(mut job) = self.jobs.pop_front() else {
                break;
            };
            // The page list (the engine's, from the thread's spare lists) goes back.
            sim_kernel::spare::give_words(std::mem::take(&mut job.bursts.pages));
            self.stats.jobs += 1;
            if failed {
                self.stats.failed_jobs += 1;
            }
            let data = if job.write {
                sim_kernel::spare::give_bytes(std::mem::take(&mut job.data));
                Vec::new()
            } else {
                let moved = usize::try_from(job.moved).unwrap_or(0);
                if job.data.len() < moved {
                    job.data.resize(job.len, 0);
                }
                job.data.truncate(moved);
                job.data
            };
            tracing::debug!(target: "pci::dma", tag = job.tag, bytes = job.moved, "job done");
            let done = DmaDone {
                tag: job.tag,
                status: job.status,
                bytes: job.moved,
                data,
                bursts: u32::try_from(job.issued).unwrap_or(u32::MAX),
                start: job.start,
                end: job.end,
            };
            ctx.done(job.reply_to, done);
        }
        if self.jobs.is_empty() {
            self.fsm.set(DmaState::Idle, ctx);
        }
    }

    /// Queues bursts at the bus up to `max_outstanding`.
    fn pump<P: DmaPort>(&mut self, ctx: &mut P) {
        while self.in_flight.len() < self.params.max_outstanding {
            let Some(job) = self
                .jobs
                .iter_mut()
                .find(|j| j.status == DmaStatus::Ok && j.issued < j.bursts.len())
            else {
                return;
            };
            let idx = job.issued;
            let Some(b) = job.bursts.get(idx) else {
                return;
            };
            job.issued += 1;
            let (command, data) = if job.write {
                let from = usize::try_from(b.offset).unwrap_or(usize::MAX);
                let n = usize::try_from(b.len).unwrap_or(0);
                // A job of one burst hands its buffer over (a write job's data is not
                // used again); others copy their burst's part.
                let data = if from == 0 && n == job.data.len() && job.bursts.len() == 1 {
                    std::mem::take(&mut job.data)
                } else {
                    job.data
                        .get(from..from + n)
                        .map(<[u8]>::to_vec)
                        .unwrap_or_default()
                };
                (
                    write_command(
                        b.addr,
                        b.len,
                        self.params.cache_line_bytes,
                        self.params.write_invalidate,
                    ),
                    data,
                )
            } else {
                (
                    read_command(b.addr, b.len, self.word, self.params.cache_line_bytes),
                    Vec::new(),
                )
            };
            let bus_tag = self.next_tag;
            self.next_tag += 1;
            self.in_flight.push_back(InFlight {
                bus_tag,
                job: job.seq,
                burst: idx,
            });
            self.stats.bursts += 1;
            let req = BusRequest {
                master: self.master,
                tag: bus_tag,
                command,
                addr: b.addr,
                len: b.len,
                data,
            };
            ctx.request(self.bus, req);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page_table::page_segments;
    use proptest::prelude::{Just, Strategy};

    #[test]
    fn command_choice_by_length() {
        assert_eq!(read_command(0x100, 4, 4, 32), Command::MemoryRead);
        assert_eq!(
            read_command(0x102, 4, 4, 32),
            Command::MemoryReadLine,
            "two data phases"
        );
        assert_eq!(read_command(0x100, 32, 4, 32), Command::MemoryReadLine);
        assert_eq!(read_command(0x110, 32, 4, 32), Command::MemoryReadMultiple);
        assert_eq!(read_command(0x100, 512, 4, 32), Command::MemoryReadMultiple);
        assert_eq!(
            write_command(0x100, 64, 32, true),
            Command::MemoryWriteInvalidate
        );
        assert_eq!(write_command(0x104, 64, 32, true), Command::MemoryWrite);
        assert_eq!(write_command(0x100, 64, 32, false), Command::MemoryWrite);
    }

    /// The bursts cut eagerly, as the plan must reproduce them one by one.
    fn eager(segs: &[PhysSegment], burst: u64) -> Vec<Burst> {
        let mut out = Vec::new();
        let mut offset = 0;
        for s in segs {
            let mut at = 0;
            while at < s.len {
                let n = (s.len - at).min(burst);
                out.push(Burst {
                    addr: s.addr + at,
                    offset,
                    len: n,
                });
                at += n;
                offset += n;
            }
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn the_burst_plan_cuts_like_the_eager_list(
            start in 0u64..4096,
            frames in proptest::collection::vec(0u64..4096, 1..12),
            len in 1u64..40_000,
            burst_log in 2u32..13,
        ) {
            let mut pages = vec![frames[0] * 4096 + start];
            pages.extend(frames.iter().skip(1).map(|f| f * 4096));
            let burst = 1u64 << burst_log;
            let Ok(segs) = page_segments(&pages, len) else {
                return Ok(()); // page list too short for len: refused elsewhere
            };
            let want = eager(&segs, burst);
            let plan = BurstPlan::new(pages, len, burst);
            proptest::prop_assert!(plan.is_ok());
            let plan = plan.unwrap_or_default();
            proptest::prop_assert_eq!(plan.len(), want.len());
            for (i, b) in want.iter().enumerate() {
                proptest::prop_assert_eq!(plan.get(i), Some(*b));
            }
            proptest::prop_assert_eq!(plan.get(want.len()), None);
            for (k, seg) in segs.iter().enumerate() {
                proptest::prop_assert_eq!(plan.piece(k), Some(*seg));
            }
        }

        /// A page list the plan refuses is one `page_segments` refuses, with the same
        /// error (short lists, unaligned pages, ranges past 2^64, empty jobs).
        #[test]
        fn the_burst_plan_checks_the_page_list_like_page_segments(
            pages in proptest::collection::vec(
                proptest::prop_oneof![
                    (0u64..64).prop_map(|f| f * 4096),
                    0u64..(64 * 4096),
                    (u64::MAX - 3 * 4096)..=u64::MAX,
                ],
                0..6,
            ),
            len in proptest::prop_oneof![Just(0u64), 1u64..(5 * 4096)],
        ) {
            let want = page_segments(&pages, len).map(|_| ());
            let got = BurstPlan::new(pages, len, 512).map(|_| ());
            proptest::prop_assert_eq!(got, want);
        }
    }
}
