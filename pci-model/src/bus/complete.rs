//! The end of a bus transaction: its data goes to host memory (posted in the bridge),
//! to the device (`TargetWrite`) or into the master's read buffer; the master's request
//! advances (or is reported with `TransactionDone` / `CpuReadData` / `CpuWritePosted`);
//! the counters, the transaction log and the trace spans are updated.
//!
//! A master that was target-terminated (Retry or Disconnect) keeps REQ# deasserted in the
//! transaction's last clock and the idle clock after it (PCI 2.2 §3.4.1); one cut by its
//! latency timer keeps REQ# asserted.

use super::tenure::Tenure;
use super::words::bytes_through;
use super::{DeviceReply, PciBus, Reply, TargetKind};
use crate::bridge::LazyCommit;
use crate::memory::HostMemory;
use crate::msg::{PciMsg, TransactionDone, TxnStatus};
use crate::stats::{TenureEnd, TenureRecord};
use sim_kernel::{ComponentId, Ctx, Duration, MsgId, Time};

impl PciBus {
    /// Ends the transaction in progress, whose last busy clock is `last` (stepped in
    /// clock `c`): moves its data, advances the master's request, counts, traces.
    pub(super) fn finish<M: From<PciMsg>>(
        &mut self,
        c: u64,
        last: u64,
        forced: Option<TenureEnd>,
        ctx: &mut Ctx<'_, M>,
        mem: &mut Option<&mut HostMemory>,
    ) {
        let Some(t) = self.active.take() else {
            return;
        };
        self.finish_tenure(&t, (c, last), forced, ctx, mem);
        self.spare_tenure = Some(t); // its box serves the next transaction
    }

    /// [`PciBus::finish`] of the transaction `t`, taken out of the bus.
    fn finish_tenure<M: From<PciMsg>>(
        &mut self,
        t: &Tenure,
        (c, last): (u64, u64),
        forced: Option<TenureEnd>,
        ctx: &mut Ctx<'_, M>,
        mem: &mut Option<&mut HostMemory>,
    ) {
        let m = t.master;
        let bytes = bytes_through(t.addr, t.end, t.w, t.done_words);
        let end = match (forced, t.stop_end) {
            (Some(f), _) => f,
            (None, Some(TenureEnd::TargetAbort)) => TenureEnd::TargetAbort,
            (None, _) if t.addr + bytes == t.end => TenureEnd::Completed,
            (None, Some(e)) => e,
            (None, None) if t.lt_cut => TenureEnd::LatencyTimer,
            (None, None) => TenureEnd::Disconnect,
        };
        let t_end = self.edge(last + 1);
        let is_bridge = t
            .target
            .is_some_and(|ti| matches!(self.targets[ti].kind, TargetKind::HostBridge));
        let device = t.target.and_then(|ti| match self.targets[ti].kind {
            TargetKind::Device { component, .. } => Some(component),
            TargetKind::HostBridge => None,
        });
        let n = usize::try_from(bytes).unwrap_or(0);

        // Data: reads gather it, writes deliver it (and the log, if it keeps this
        // transaction, a copy).
        let keep = self.log.is_some() && self.log_keeps(t.tag);
        let mut logged = Vec::new();
        let mut read_data = Vec::new();
        if t.command.is_read() {
            if is_bridge {
                // Copied straight from host memory: no zero-filled buffer first, into a
                // spare one (given back by the DMA master once copied into its job, or
                // by the card's engine once it has read it or written its TX run).
                read_data = sim_kernel::spare::take_bytes(n);
                if let Some(mm) = mem.as_deref() {
                    if let Err(e) = mm.read_append(t.addr, n, &mut read_data) {
                        tracing::error!(target: "pci::bridge", %e, "DMA read outside memory");
                        read_data.resize(n, 0);
                    }
                } else {
                    read_data.resize(n, 0);
                    if n > 0 {
                        tracing::error!(target: "pci::bridge", "no host memory wired: DMA read returns zeros");
                    }
                }
                if let (Some(id), Some(b)) = (t.slot, self.bridge.as_mut()) {
                    if bytes > 0 {
                        let used_all = b.slot(id).is_some_and(|s| t.addr + bytes >= s.limit);
                        b.consume(id, used_all);
                    }
                }
            } else if let Some(pos) = self
                .device_reads
                .iter()
                .position(|r| Some(r.tag) == t.read_tag)
            {
                if bytes > 0 {
                    let r = self.device_reads.remove(pos);
                    if let Some(DeviceReply::Data(mut d)) = r.reply {
                        d.resize(n, 0);
                        read_data = d;
                    } else {
                        // A folded read's bytes are taken before its data clock (`fold.rs`).
                        tracing::error!(target: "pci::bus", tag = r.tag, "read data without its bytes: zeros");
                        read_data = vec![0; n];
                    }
                }
            }
        }
        if keep && t.command.is_read() {
            logged.clone_from(&read_data);
        }
        if !t.command.is_read() && n > 0 {
            let slice = self
                .masters
                .get_mut(m)
                .and_then(|p| p.queue.front_mut())
                .and_then(|h| {
                    let from = usize::try_from(h.done).ok()?;
                    let to = from.checked_add(n)?;
                    if from == 0 && to == h.req.data.len() {
                        // The whole request in one transaction (the common case): its
                        // data moves, no copy. Nothing reads it again: the request is
                        // over, and a later range of it would be past its end anyway.
                        return Some(std::mem::take(&mut h.req.data));
                    }
                    h.req.data.get(from..to).map(<[u8]>::to_vec)
                })
                .unwrap_or_default();
            if keep {
                logged.clone_from(&slice);
            }
            if is_bridge {
                let lazy = self.commits_lazily(ctx.tracing());
                let (phase_ps, period_ps) = (self.phase_ps, self.period_ps);
                let skew_ps = self.lazy_commit_skew.saturating_mul(period_ps);
                if let Some(b) = self.bridge.as_mut() {
                    let lazy = mem.as_deref_mut().filter(|_| lazy).map(|mem| LazyCommit {
                        mem,
                        phase_ps,
                        period_ps,
                        skew_ps,
                    });
                    b.post(t.addr, slice, t_end, lazy);
                }
            } else if let Some(component) = device {
                self.emit(
                    ctx,
                    component,
                    t_end,
                    PciMsg::TargetWrite {
                        addr: t.addr,
                        data: slice,
                    },
                );
            }
        }
        if end == TenureEnd::TargetAbort {
            self.device_reads.retain(|r| Some(r.tag) != t.read_tag);
        }
        let Some(head) = self.masters.get_mut(m).and_then(|p| p.queue.front_mut()) else {
            return;
        };
        if head.data.is_empty() {
            head.data = read_data; // the first (often only) transaction: no copy
        } else {
            head.data.extend_from_slice(&read_data);
        }
        head.done += bytes;
        match end {
            TenureEnd::Retry => head.retries += 1,
            TenureEnd::Disconnect => head.disconnects += 1,
            TenureEnd::LatencyTimer => head.lt_cuts += 1,
            TenureEnd::Completed | TenureEnd::MasterAbort | TenureEnd::TargetAbort => {}
        }
        let request_over = head.done >= head.total
            || matches!(end, TenureEnd::MasterAbort | TenureEnd::TargetAbort);

        // Counters.
        self.stats.bytes += bytes;
        if t.command.is_read() {
            self.stats.bytes_read += bytes;
        } else {
            self.stats.bytes_written += bytes;
        }
        if let Some(s) = self.stats.per_master.get_mut(m) {
            s.bytes += bytes;
            match end {
                TenureEnd::Retry => s.retries += 1,
                TenureEnd::Disconnect => s.disconnects += 1,
                TenureEnd::LatencyTimer => s.latency_timer_expirations += 1,
                TenureEnd::MasterAbort => s.master_aborts += 1,
                TenureEnd::TargetAbort => s.target_aborts += 1,
                TenureEnd::Completed => {}
            }
        }
        if end == TenureEnd::Retry && t.retry_window {
            self.stats.write_retry_refusals += 1;
        }
        match end {
            TenureEnd::Retry => self.stats.retries += 1,
            TenureEnd::Disconnect => self.stats.disconnects += 1,
            TenureEnd::LatencyTimer => self.stats.latency_timer_expirations += 1,
            TenureEnd::MasterAbort => self.stats.master_aborts += 1,
            TenureEnd::TargetAbort => self.stats.target_aborts += 1,
            TenureEnd::Completed => {}
        }
        if is_bridge && end == TenureEnd::Retry {
            if let Some(b) = self.bridge.as_mut() {
                if t.command.is_read() {
                    b.stats.read_retries += 1;
                } else {
                    b.stats.write_retries += 1;
                }
            }
        }
        // §3.4.1: after a target termination REQ# is off in the last clock and the idle one.
        if matches!(end, TenureEnd::Retry | TenureEnd::Disconnect) {
            if let Some(p) = self.masters.get_mut(m) {
                p.hold_until = last + 2;
            }
        }
        // A master with a recovery time keeps REQ# off after every transaction it ends.
        if let Some(p) = self.masters.get_mut(m).filter(|p| p.recovery > 0) {
            p.hold_until = p.hold_until.max(last + 1 + p.recovery);
        }
        self.record(t, bytes, last, end, keep.then_some(logged), ctx);
        if request_over {
            let status = match end {
                TenureEnd::MasterAbort => TxnStatus::MasterAbort,
                TenureEnd::TargetAbort => TxnStatus::TargetAbort,
                TenureEnd::Completed
                | TenureEnd::Retry
                | TenureEnd::Disconnect
                | TenureEnd::LatencyTimer => TxnStatus::Ok,
            };
            self.complete(m, status, c, t_end, ctx);
        }
    }

    /// Trace spans and the transaction log.
    fn record<M: From<PciMsg>>(
        &mut self,
        t: &Tenure,
        bytes: u64,
        last: u64,
        end: TenureEnd,
        logged: Option<Vec<u8>>,
        ctx: &mut Ctx<'_, M>,
    ) {
        tracing::trace!(target: "pci::bus", master = t.master, addr = t.addr, bytes, last, end = end.name(), "transaction end");
        if ctx.tracing() {
            let id = MsgId(t.tag);
            let a = t.a_clk;
            ctx.span(id, "pci.address", self.edge(a), self.edge(a + 1));
            let (data_from, data_to) = match (t.first_data, t.last_data) {
                (Some(f), Some(l)) => (f, l + 1),
                _ => (a + 1, a + 1),
            };
            if data_from > a + 1 {
                ctx.span(id, "pci.wait", self.edge(a + 1), self.edge(data_from));
            }
            if data_to > data_from {
                ctx.span(id, "pci.data", self.edge(data_from), self.edge(data_to));
            }
            if last + 1 > data_to {
                let stage = match end {
                    TenureEnd::Retry => "pci.retry",
                    TenureEnd::MasterAbort => "pci.master-abort",
                    TenureEnd::Completed
                    | TenureEnd::Disconnect
                    | TenureEnd::LatencyTimer
                    | TenureEnd::TargetAbort => "pci.termination",
                };
                ctx.span(id, stage, self.edge(data_to), self.edge(last + 1));
            }
        }
        if let (Some(log), Some(data)) = (self.log.as_mut(), logged) {
            log.push(TenureRecord {
                master: u16::try_from(t.master).unwrap_or(u16::MAX),
                tag: t.tag,
                command: t.command,
                addr: t.addr,
                bytes,
                data_phases: t.done_words,
                address_clock: t.a_clk,
                first_data_clock: t.first_data,
                last_data_clock: t.last_data,
                last_clock: last,
                end,
                devsel_clock: t.target.map(|_| t.a_clk + t.devsel),
                phase_bytes: t.w,
                data,
            });
        }
    }

    /// Master `m`'s current request is over: tell whoever waits for it.
    fn complete<M: From<PciMsg>>(
        &mut self,
        m: usize,
        status: TxnStatus,
        c: u64,
        t_end: Time,
        ctx: &mut Ctx<'_, M>,
    ) {
        let Some(q) = self.masters.get_mut(m).and_then(|p| p.queue.pop_front()) else {
            return;
        };
        self.queued -= 1;
        self.stats.requests += 1;
        if let Some(s) = self.stats.per_master.get_mut(m) {
            s.requests += 1;
        }
        match q.reply {
            Reply::Master(component) => {
                let done = TransactionDone {
                    tag: q.req.tag,
                    status,
                    bytes: q.done,
                    data: q.data,
                    transactions: q.transactions,
                    retries: q.retries,
                    disconnects: q.disconnects,
                    latency_timer_expirations: q.lt_cuts,
                    start: q.start.unwrap_or(t_end),
                    end: t_end,
                };
                if self.folds_master(m) {
                    self.dma_completion(done, t_end, ctx);
                } else {
                    self.emit(ctx, component, t_end, PciMsg::TransactionDone(done));
                }
            }
            Reply::CpuRead(reply_to) => {
                let data = if status == TxnStatus::Ok {
                    q.data
                } else {
                    vec![0xFF; usize::try_from(q.total).unwrap_or(0)]
                };
                // The host side of the read (FSB request, decode, crossing back).
                let back = self
                    .bridge
                    .as_ref()
                    .map_or(Duration::ZERO, |b| b.params().cpu_read_latency);
                self.emit(
                    ctx,
                    reply_to,
                    t_end + back,
                    PciMsg::CpuReadData {
                        tag: q.req.tag,
                        data,
                        status,
                    },
                );
            }
            Reply::CpuWrite => {
                let waiting = self.bridge.as_mut().and_then(|b| {
                    b.cpu_writes_queued = b.cpu_writes_queued.saturating_sub(1);
                    let w = b.cpu_waiting.pop_front();
                    if w.is_some() {
                        b.cpu_writes_queued += 1;
                    }
                    w
                });
                if let Some(w) = waiting {
                    let (tag, reply_to) = (w.tag, w.reply_to);
                    self.queue_cpu_write(m, w, c);
                    self.emit(ctx, reply_to, t_end, PciMsg::CpuWritePosted { tag });
                }
            }
        }
    }

    /// Sends `msg` to `to` on its first edge at or after `at` (an output of the clock
    /// being stepped, which must be the current one).
    pub(super) fn emit<M: From<PciMsg>>(
        &mut self,
        ctx: &mut Ctx<'_, M>,
        to: ComponentId,
        at: Time,
        msg: PciMsg,
    ) {
        // A debug check collects the outputs of a copy of the bus (`whole.rs`).
        #[cfg(debug_assertions)]
        if let Some(out) = self.capture.as_mut() {
            out.push((to, at, msg, None));
            return;
        }
        debug_assert!(
            self.clk_next >= self.now_clk,
            "output of clock {} emitted late at clock {}",
            self.clk_next,
            self.now_clk
        );
        if let Some(pass) = self.keeps_for_master(ctx, to, at, &msg) {
            self.local_done.push((msg, pass));
            return;
        }
        if self.fold_on && matches!(msg, PciMsg::TargetWrite { .. }) {
            self.fold_write(ctx, to, at, msg);
            return;
        }
        ctx.send_at(to, at, msg.into());
    }

    /// [`PciBus::emit`] for a message that lands at `at` (an edge of `to`'s domain) with
    /// normal priority, deferred to the place `pass` of the run's order
    /// ([`Ctx::send_deferred`]).
    pub(super) fn emit_deferred<M: From<PciMsg>>(
        &mut self,
        ctx: &mut Ctx<'_, M>,
        to: ComponentId,
        at: Time,
        msg: PciMsg,
        pass: sim_kernel::EventKey,
    ) {
        #[cfg(debug_assertions)]
        if let Some(out) = self.capture.as_mut() {
            out.push((to, at, msg, Some(pass)));
            return;
        }
        ctx.send_deferred(to, at, sim_kernel::Priority::NORMAL, msg.into(), pass);
    }
}
