//! The DP83820's transmit DMA engine (bus side): descriptor fetch, data bursts into the
//! TX FIFO, status write-back. See the parent module doc for the behaviour.
//!
//! ```text
//!  Idle --TXE--> DescFetch --OWN--> DataFetch <--room--> FifoFull
//!   ^               |  not OWN          | all data read: TXDP = link
//!   +---------------+                   v
//!   (TXE latched: fetch again)     DescFetch (next) / RingWait (its write-back pending)
//!  status from the MAC side (any state) --> cmdsts write-back (OWN cleared, OK/TFU)
//! ```

use super::bus::{Dp83820Bus, Req};
use super::port::BusPort;
use super::regs::isr;
use super::TxOutcome;
use crate::msg::MacMsg;
use crate::tags::AddrTags;
use pci_model::TransactionDone;
use sim_kernel::{Fsm, MsgId, StateName, Time};
use std::collections::VecDeque;
use via_abi::dp83820::{CmdSts, Descriptor, DescriptorRepr};

/// TX status bit 25, TFU: transmit FIFO underrun (DP83820 datasheet, transmit cmdsts).
pub const CMDSTS_TFU: u32 = 1 << 25;
/// TX status bit 26, TXA: transmit abort (DP83820 datasheet, transmit cmdsts).
pub const CMDSTS_TXA: u32 = 1 << 26;

/// Offset of cmdsts within a descriptor \[bytes\].
const CMDSTS_OFFSET: u64 = 8;

/// The transmit engine's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TxState {
    /// Stopped at TXDP (no descriptor owned); TXE restarts it.
    Idle,
    /// Reading the descriptor at TXDP.
    DescFetch,
    /// Reading the frame's data in bursts.
    DataFetch,
    /// Waiting for room in the TX FIFO.
    FifoFull,
    /// The next descriptor's previous frame is not written back yet.
    RingWait,
}

impl StateName for TxState {
    fn name(self) -> &'static str {
        match self {
            TxState::Idle => "idle",
            TxState::DescFetch => "desc-fetch",
            TxState::DataFetch => "data-fetch",
            TxState::FifoFull => "fifo-full",
            TxState::RingWait => "ring-wait",
        }
    }
}

#[derive(Clone, Debug)]
struct TxJob {
    seq: u64,
    desc: u64,
    cmdsts: CmdSts,
    link: u32,
    bufptr: u32,
    len: u64,
    issued: u64,
    received: u64,
    msg: MsgId,
    since: Time,
    early_status: Option<TxOutcome>,
}

#[derive(Clone, Debug)]
struct Awaiting {
    seq: u64,
    desc: u64,
    cmdsts: CmdSts,
    msg: MsgId,
}

#[derive(Clone, Copy, Debug)]
struct Tag {
    msg: MsgId,
    ready_at: Option<Time>,
}

/// State of the transmit engine.
#[derive(Clone, Debug)]
pub(super) struct TxDma {
    pub(super) fsm: Fsm<TxState>,
    latched: bool,
    job: Option<TxJob>,
    fifo_used: u64,
    in_flight: usize,
    awaiting: VecDeque<Awaiting>,
    writing_back: Vec<(u64, Time, MsgId)>,
    ring_wait: Option<u64>,
    next_seq: u64,
    tags: AddrTags<Tag>,
    fetch: Option<(u64, Time, MsgId)>,
}

impl TxDma {
    pub(super) fn new() -> Self {
        Self {
            fsm: Fsm::new("dp83820.tx", TxState::Idle),
            latched: false,
            job: None,
            fifo_used: 0,
            in_flight: 0,
            awaiting: VecDeque::new(),
            writing_back: Vec::new(),
            ring_wait: None,
            next_seq: 0,
            tags: AddrTags::default(),
            fetch: None,
        }
    }
}

impl Dp83820Bus {
    /// A trace tag for the transmit descriptor at `descriptor`.
    pub(super) fn tx_tag(&mut self, descriptor: u64, msg: MsgId) {
        self.tx.tags.insert(
            descriptor,
            Tag {
                msg,
                ready_at: None,
            },
        );
    }

    /// CR.TXE was written.
    pub(super) fn tx_enable<P: BusPort + ?Sized>(&mut self, ctx: &mut P) {
        let now = ctx.now();
        for t in self.tx.tags.values_mut() {
            t.ready_at.get_or_insert(now);
        }
        if self.tx.fsm.state() == TxState::Idle {
            let at = u64::from(self.regs.txdp);
            self.tx_fetch(at, ctx);
        } else {
            self.tx.latched = true;
        }
    }

    fn tx_fetch<P: BusPort + ?Sized>(&mut self, addr: u64, ctx: &mut P) {
        let now = ctx.now();
        self.regs.txdp = u32::try_from(addr).unwrap_or(0);
        if addr == 0 {
            tracing::debug!(target: "mac::tx", "end of the descriptor list");
            self.tx.fsm.set(TxState::Idle, ctx);
            return;
        }
        let busy = self.tx.awaiting.iter().any(|a| a.desc == addr)
            || self.tx.writing_back.iter().any(|w| w.0 == addr);
        if busy {
            self.tx.ring_wait = Some(addr);
            self.tx.fsm.set(TxState::RingWait, ctx);
            return;
        }
        // The trace tag is looked up again when the descriptor has been read: the GEC
        // may hand this descriptor over while the read is already on its way.
        let msg = self.tx.tags.get(addr).map_or(MsgId(0), |t| t.msg);
        self.tx.fetch = Some((addr, now, msg));
        self.tx.fsm.set(TxState::DescFetch, ctx);
        tracing::debug!(target: "mac::tx", addr, at = %now, "descriptor fetch");
        self.issue(Req::TxDesc, msg.0, addr, 16, Vec::new(), ctx);
    }

    pub(super) fn tx_desc_done<P: BusPort + ?Sized>(
        &mut self,
        done: &TransactionDone,
        ctx: &mut P,
    ) {
        let now = ctx.now();
        let Some((addr, start, msg)) = self.tx.fetch.take() else {
            return;
        };
        let repr = Descriptor::new_checked(&done.data[..])
            .ok()
            .and_then(|d| DescriptorRepr::parse(&d).ok());
        let Some(d) = repr.filter(|_| done.status == pci_model::TxnStatus::Ok) else {
            self.tx.fsm.set(TxState::Idle, ctx);
            return;
        };
        if !d.cmdsts.contains(CmdSts::OWN) {
            if std::mem::take(&mut self.tx.latched) {
                self.tx_fetch(addr, ctx);
            } else {
                self.regs.isr |= isr::TXIDLE;
                tracing::debug!(target: "mac::tx", addr, "descriptor not owned: idle");
                self.tx.fsm.set(TxState::Idle, ctx);
            }
            return;
        }
        let (msg, ready_at) = self
            .tx
            .tags
            .remove(addr)
            .map_or((msg, None), |t| (t.msg, t.ready_at));
        // Spans: waiting for the engine (TXE seen before the fetch began), or the part of
        // the fetch after TXE was seen (the descriptor was read while TXE was on its way).
        let from = match ready_at {
            Some(r) if r < start => {
                Self::span(ctx, msg, "tx dma wait", r, start);
                start
            }
            Some(r) if r <= now => r,
            _ => start,
        };
        Self::span(ctx, msg, "mac descriptor fetch", from, now);
        self.stats.tx_descriptors += 1;
        let seq = self.tx.next_seq;
        self.tx.next_seq += 1;
        let len = u64::from(d.cmdsts.size());
        if d.cmdsts.contains(CmdSts::MORE) || len == 0 {
            self.stats.tx_unsupported += 1;
            tracing::warn!(target: "mac::tx", addr, cmdsts = d.cmdsts.bits(), "multi-fragment or empty descriptor refused");
            self.tx.awaiting.push_back(Awaiting {
                seq,
                desc: addr,
                cmdsts: d.cmdsts,
                msg,
            });
            self.tx_write_back(seq, TxOutcome::Aborted, ctx);
            self.tx_fetch(u64::from(d.link), ctx);
            return;
        }
        self.tx.job = Some(TxJob {
            seq,
            desc: addr,
            cmdsts: d.cmdsts,
            link: d.link,
            bufptr: d.bufptr,
            len,
            issued: 0,
            received: 0,
            msg,
            since: now,
            early_status: None,
        });
        self.tx.fsm.set(TxState::DataFetch, ctx);
        self.tx_pump(ctx);
    }

    /// Issues data bursts while the FIFO has room (FLTH) and the engine has slots.
    fn tx_pump<P: BusPort + ?Sized>(&mut self, ctx: &mut P) {
        let cfg = self.txcfg();
        loop {
            let Some(job) = self.tx.job.as_ref() else {
                return;
            };
            if job.issued >= job.len || self.tx.in_flight >= self.params.max_outstanding.max(1) {
                break;
            }
            let free = self.params.tx_fifo_bytes.saturating_sub(self.tx.fifo_used);
            let mut n = cfg.mxdma.min(job.len - job.issued);
            if free < n {
                if free == 0 || free < cfg.fill.max(4) {
                    self.tx.fsm.set(TxState::FifoFull, ctx);
                    return;
                }
                n = free;
            }
            let (addr, msg) = (u64::from(job.bufptr) + job.issued, job.msg);
            if let Some(j) = self.tx.job.as_mut() {
                j.issued += n;
            }
            self.tx.fifo_used += n;
            self.tx.in_flight += 1;
            self.issue(Req::TxData { len: n }, msg.0, addr, n, Vec::new(), ctx);
        }
        self.tx.fsm.set(TxState::DataFetch, ctx);
    }

    pub(super) fn tx_data_done<P: BusPort + ?Sized>(
        &mut self,
        done: TransactionDone,
        len: u64,
        ctx: &mut P,
    ) {
        self.tx.in_flight = self.tx.in_flight.saturating_sub(1);
        let Some(job) = self.tx.job.as_mut() else {
            return;
        };
        let mut data = done.data;
        let want = usize::try_from(len).unwrap_or(0);
        // A failed read delivers what arrived and says so; it is never padded into a
        // frame of made-up bytes.
        let failed = done.status != pci_model::TxnStatus::Ok || data.len() < want;
        data.truncate(want);
        if failed {
            self.stats.tx_read_failures += 1;
            tracing::error!(target: "mac::tx", frame = job.seq, status = ?done.status, got = data.len(), want, "transmit data read failed: frame aborted");
        }
        let chunk = super::TxChunk {
            frame: job.seq,
            offset: u32::try_from(job.received).unwrap_or(u32::MAX),
            data,
            len: u32::try_from(job.len).unwrap_or(u32::MAX),
            msg: job.msg,
            since: job.since,
            burst: u32::try_from(len).unwrap_or(u32::MAX),
            failed,
        };
        job.received += len;
        ctx.send_mac(self.mac, MacMsg::MacTxData(chunk));
        if job.received < job.len {
            self.tx_pump(ctx);
            return;
        }
        let Some(job) = self.tx.job.take() else {
            return;
        };
        self.tx.awaiting.push_back(Awaiting {
            seq: job.seq,
            desc: job.desc,
            cmdsts: job.cmdsts,
            msg: job.msg,
        });
        if let Some(outcome) = job.early_status {
            self.tx_write_back(job.seq, outcome, ctx);
        }
        self.tx_fetch(u64::from(job.link), ctx);
    }

    /// The MAC side reports frame `seq` sent (or failed) and `fifo_bytes` freed.
    pub(super) fn tx_status<P: BusPort + ?Sized>(
        &mut self,
        seq: u64,
        outcome: TxOutcome,
        fifo_bytes: u64,
        ctx: &mut P,
    ) {
        self.tx.fifo_used = self.tx.fifo_used.saturating_sub(fifo_bytes);
        if self.tx.awaiting.iter().any(|a| a.seq == seq) {
            self.tx_write_back(seq, outcome, ctx);
        } else if let Some(j) = self.tx.job.as_mut().filter(|j| j.seq == seq) {
            j.early_status = Some(outcome);
        } else {
            self.stats.unexpected += 1;
            tracing::warn!(target: "mac::tx", seq, "status for an unknown frame");
        }
        if self.tx.fsm.state() == TxState::FifoFull {
            self.tx_pump(ctx);
        }
    }

    fn tx_write_back<P: BusPort + ?Sized>(&mut self, seq: u64, outcome: TxOutcome, ctx: &mut P) {
        let ok = outcome == TxOutcome::Sent;
        let Some(pos) = self.tx.awaiting.iter().position(|a| a.seq == seq) else {
            return;
        };
        let Some(a) = self.tx.awaiting.remove(pos) else {
            return;
        };
        let keep = a.cmdsts.bits() & !(CmdSts::OWN | CmdSts::OK | CmdSts::ERR).bits();
        let status = match outcome {
            TxOutcome::Sent => CmdSts::OK.bits(),
            TxOutcome::Underrun => CMDSTS_TFU,
            TxOutcome::Aborted => CMDSTS_TXA,
        };
        self.regs.isr |= match outcome {
            TxOutcome::Sent => isr::TXOK,
            TxOutcome::Underrun => isr::TXERR | isr::TXURN,
            TxOutcome::Aborted => isr::TXERR,
        };
        let bytes = (keep | status).to_le_bytes().to_vec();
        self.tx.writing_back.push((a.desc, ctx.now(), a.msg));
        tracing::debug!(target: "mac::tx", desc = a.desc, ok, "status write-back");
        self.issue(
            Req::TxWriteBack { desc: a.desc },
            a.msg.0,
            a.desc + CMDSTS_OFFSET,
            4,
            bytes,
            ctx,
        );
    }

    pub(super) fn tx_write_back_done<P: BusPort + ?Sized>(&mut self, desc: u64, ctx: &mut P) {
        let now = ctx.now();
        if let Some(pos) = self.tx.writing_back.iter().position(|w| w.0 == desc) {
            let (_, start, msg) = self.tx.writing_back.remove(pos);
            Self::span(ctx, msg, "tx write-back", start, now);
        }
        self.stats.tx_write_backs += 1;
        if self.tx.ring_wait == Some(desc) {
            self.tx.ring_wait = None;
            self.tx_fetch(desc, ctx);
        }
    }
}
