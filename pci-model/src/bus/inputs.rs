//! Messages into the bus: master requests (validated and queued: REQ# from the clock
//! they land), device read answers, and the CPU's accesses to the host bridge (posted
//! writes acknowledged at once while the bridge has room, reads queued behind them).
//! (A folded DMA master's jobs are taken in `dma_fold.rs`.)

use super::{DeviceReply, PciBus, Queued, Reply};
use crate::bridge::WaitingCpuWrite;
use crate::msg::{BusRequest, Command, MasterId, PciMsg, TransactionDone, TxnStatus};
use sim_kernel::{ComponentId, Ctx, Time};

impl PciBus {
    /// Records a message that landed at clock `c` (seen by the clock steps from `c` on).
    pub(super) fn accept<M: From<PciMsg>>(&mut self, msg: PciMsg, c: u64, ctx: &mut Ctx<'_, M>) {
        match msg {
            PciMsg::Request(req) => self.enqueue_request(req, c, ctx),
            PciMsg::TargetReadData { tag, data } => {
                self.device_answer(tag, DeviceReply::Data(data))
            }
            PciMsg::TargetAbort { tag } => self.device_answer(tag, DeviceReply::Abort),
            PciMsg::TargetWriteRetry { start, end, on } => self.set_write_retry(start, end, on),
            PciMsg::CpuWrite {
                tag,
                addr,
                data,
                reply_to,
            } => self.cpu_write(
                WaitingCpuWrite {
                    tag,
                    addr,
                    data,
                    reply_to,
                },
                c,
                ctx,
            ),
            PciMsg::CpuRead {
                tag,
                addr,
                len,
                reply_to,
            } => self.cpu_read(tag, addr, len, reply_to, c, ctx),
            PciMsg::Tick { .. }
            | PciMsg::WatchedWrite { .. }
            | PciMsg::TransactionDone(_)
            | PciMsg::TargetWrite { .. }
            | PciMsg::TargetRead { .. }
            | PciMsg::CpuWritePosted { .. }
            | PciMsg::CpuReadData { .. }
            | PciMsg::DmaStart(_)
            | PciMsg::DmaDone(_) => {
                self.stats.wrong_inputs += 1;
                tracing::error!(target: "pci::bus", ?msg, "not a bus input: dropped");
            }
        }
    }

    /// Turns a write-retry window on or off (see [`PciMsg::TargetWriteRetry`]).
    fn set_write_retry(&mut self, start: u64, end: u64, on: bool) {
        if end <= start {
            tracing::warn!(target: "pci::bus", start, end, "empty write-retry window ignored");
            self.stats.dropped_inputs += 1;
            return;
        }
        let present = self.write_retry.iter().position(|&w| w == (start, end));
        match (on, present) {
            (true, None) => self.write_retry.push((start, end)),
            (false, Some(i)) => {
                self.write_retry.remove(i);
            }
            (true, Some(_)) | (false, None) => {}
        }
        tracing::trace!(target: "pci::bus", start, end, on, "write-retry window");
    }

    fn device_answer(&mut self, tag: u64, reply: DeviceReply) {
        match self.device_reads.iter_mut().find(|r| r.tag == tag) {
            Some(r) => r.reply = Some(reply),
            None => {
                tracing::warn!(target: "pci::bus", tag, "answer to an unknown read dropped");
                self.stats.dropped_inputs += 1;
            }
        }
    }

    fn enqueue_request<M: From<PciMsg>>(&mut self, req: BusRequest, c: u64, ctx: &mut Ctx<'_, M>) {
        if let Err(Some((component, done))) = self.queue_request(req, c, ctx.now()) {
            ctx.send(component, PciMsg::TransactionDone(done).into());
        }
    }

    /// Queues master request `req`, landing in clock `c` at instant `t`, or refuses it:
    /// `Err(Some(..))` with the `TransactionDone` its master gets (no bytes, or a range
    /// past the address space), `Err(None)` when its master is unknown (dropped).
    pub(super) fn queue_request(
        &mut self,
        req: BusRequest,
        c: u64,
        t: Time,
    ) -> Result<(), Option<(ComponentId, TransactionDone)>> {
        let m = usize::from(req.master.0);
        let Some(component) = self.master_components.get(m).copied().flatten() else {
            tracing::warn!(target: "pci::bus", master = m, "request from an unknown master dropped");
            self.stats.dropped_inputs += 1;
            return Err(None);
        };
        if req.is_refused() {
            let done = TransactionDone {
                tag: req.tag,
                status: TxnStatus::BadRequest,
                bytes: 0,
                data: Vec::new(),
                transactions: 0,
                retries: 0,
                disconnects: 0,
                latency_timer_expirations: 0,
                start: t,
                end: t,
            };
            return Err(Some((component, done)));
        }
        let total = req.bytes();
        self.push_queued(m, req, total, Reply::Master(component), c);
        Ok(())
    }

    pub(crate) fn push_queued(
        &mut self,
        m: usize,
        req: BusRequest,
        total: u64,
        reply: Reply,
        c: u64,
    ) {
        if let Some(port) = self.masters.get_mut(m) {
            self.queued += 1;
            port.queue.push_back(Queued {
                req,
                total,
                arrival: c,
                done: 0,
                data: Vec::new(),
                reply,
                transactions: 0,
                retries: 0,
                disconnects: 0,
                lt_cuts: 0,
                start: None,
            });
        }
    }

    fn cpu_write<M: From<PciMsg>>(&mut self, w: WaitingCpuWrite, c: u64, ctx: &mut Ctx<'_, M>) {
        let (Some(bridge), Some(m)) = (self.bridge.as_mut(), self.bridge_master) else {
            tracing::warn!(target: "pci::bridge", addr = w.addr, "CPU write on a bus without host bridge dropped");
            self.stats.dropped_inputs += 1;
            ctx.send(w.reply_to, PciMsg::CpuWritePosted { tag: w.tag }.into());
            return;
        };
        bridge.stats.cpu_writes += 1;
        if w.data.is_empty() {
            ctx.send(w.reply_to, PciMsg::CpuWritePosted { tag: w.tag }.into());
            return;
        }
        if bridge.cpu_writes_queued < bridge.params().cpu_write_buffer_entries {
            bridge.cpu_writes_queued += 1;
            ctx.send(w.reply_to, PciMsg::CpuWritePosted { tag: w.tag }.into());
            self.queue_cpu_write(m, w, c);
        } else {
            bridge.stats.cpu_write_stalls += 1;
            bridge.cpu_waiting.push_back(w);
        }
    }

    pub(crate) fn queue_cpu_write(&mut self, m: usize, w: WaitingCpuWrite, c: u64) {
        let total = w.data.len() as u64;
        let req = BusRequest {
            master: MasterId(u16::try_from(m).unwrap_or(u16::MAX)),
            tag: w.tag,
            command: Command::MemoryWrite,
            addr: w.addr,
            len: total,
            data: w.data,
        };
        if w.addr.checked_add(total).is_none() {
            tracing::warn!(target: "pci::bridge", addr = w.addr, "CPU write overflows the address space: dropped");
            self.stats.dropped_inputs += 1;
            if let Some(b) = self.bridge.as_mut() {
                b.cpu_writes_queued = b.cpu_writes_queued.saturating_sub(1);
            }
            return;
        }
        self.push_queued(m, req, total, Reply::CpuWrite, c);
    }

    fn cpu_read<M: From<PciMsg>>(
        &mut self,
        tag: u64,
        addr: u64,
        len: u64,
        reply_to: ComponentId,
        c: u64,
        ctx: &mut Ctx<'_, M>,
    ) {
        let Some(m) = self.bridge_master else {
            tracing::warn!(target: "pci::bridge", addr, "CPU read on a bus without host bridge");
            self.stats.dropped_inputs += 1;
            let data = vec![0xFF; usize::try_from(len.min(1 << 16)).unwrap_or(0)];
            ctx.send(
                reply_to,
                PciMsg::CpuReadData {
                    tag,
                    data,
                    status: TxnStatus::MasterAbort,
                }
                .into(),
            );
            return;
        };
        if let Some(b) = self.bridge.as_mut() {
            b.stats.cpu_reads += 1;
        }
        if len == 0 || addr.checked_add(len).is_none() {
            ctx.send(
                reply_to,
                PciMsg::CpuReadData {
                    tag,
                    data: Vec::new(),
                    status: TxnStatus::BadRequest,
                }
                .into(),
            );
            return;
        }
        let req = BusRequest {
            master: MasterId(u16::try_from(m).unwrap_or(u16::MAX)),
            tag,
            command: Command::MemoryRead,
            addr,
            len,
            data: Vec::new(),
        };
        self.push_queued(m, req, len, Reply::CpuRead(reply_to), c);
    }
}
