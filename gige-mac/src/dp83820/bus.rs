//! [`Dp83820Bus`]: the DP83820's bus side, a component in the local PCI clock domain:
//! the register file (a device target on the local bus), the PCI master interface both
//! DMA engines share, and the dispatch of messages to the engines ([`super::tx_dma`],
//! [`super::rx_dma`]).
//!
//! Ports: `bus` (the local [`pci_model::PciBus`]; it is master `master` there and the
//! target of its register BAR at `regs_base`), `mac` (its [`super::Dp83820Mac`]), `gec`
//! (optional: where receive [`MacMsg::TraceTag`]s go). Parameters: [`Dp83820Params`].
//! Statistics: [`BusSideStats`]. Its handlers act through a [`BusPort`]: the kernel's
//! context as a component, or the local bus when it runs the completions itself
//! ([`pci_model::FoldedMaster`], `super::port`).
//!
//! Bus requests complete in the order they were queued (the bus serves one master's
//! requests first in, first out), so completions are matched to the head of `pending`.
//! Frame-related requests carry the frame's message id as their bus tag, so the bus's
//! own `pci.*` spans are attributed to the frame.

use super::params::Dp83820Params;
use super::port::BusPort;
use super::regs::{self, cr, isr, Registers, RxCfg, TxCfg};
use super::rx_dma::RxDma;
use super::tx_dma::TxDma;
use crate::msg::MacMsg;
use pci_model::{read_command, write_command, BusRequest, MasterId, PciMsg, TransactionDone};
use sim_kernel::{ComponentId, Cycles, Time};
use std::collections::VecDeque;

/// What the bus side counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BusSideStats {
    /// Transmit descriptors read with OWN set.
    pub tx_descriptors: u64,
    /// Transmit status write-backs done.
    pub tx_write_backs: u64,
    /// Transmit descriptors refused (MORE set or zero size): written back with an error.
    pub tx_unsupported: u64,
    /// Good frames written to a receive buffer and written back.
    pub rx_frames: u64,
    /// Frames dropped after their receive DMA had started (bad frame): descriptor reused.
    pub rx_rewinds: u64,
    /// Frames discarded because the receiver was disabled.
    pub rx_disabled_drops: u64,
    /// Good frames larger than their receive buffer: discarded.
    pub rx_too_big: u64,
    /// Bus requests that ended with master or target abort.
    pub bus_errors: u64,
    /// Register reads served.
    pub register_reads: u64,
    /// Register writes served.
    pub register_writes: u64,
    /// Register writes the model does not act on (resets, unknown offsets).
    pub unsupported_writes: u64,
    /// Messages it had no use for.
    pub unexpected: u64,
    /// Bus completions whose tag was not the oldest request's (taken as that request's
    /// completion, traced).
    pub completions_out_of_order: u64,
    /// Messages of a kind this component does not take (a wiring bug): counted and
    /// traced as errors; any of them fails a system run.
    pub wrong_inputs: u64,
    /// Transmit data reads that failed on the bus (their frames aborted, never padded).
    pub tx_read_failures: u64,
}

/// What a queued bus request is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Req {
    TxDesc,
    TxData { len: u64 },
    TxWriteBack { desc: u64 },
    RxDesc,
    RxData { len: u64 },
    RxWriteBack,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Pending {
    pub tag: u64,
    pub req: Req,
}

/// The DP83820's bus side (see the module doc).
#[derive(Clone, Debug)]
pub struct Dp83820Bus {
    pub(super) params: Dp83820Params,
    pub(super) bus: ComponentId,
    pub(super) master: MasterId,
    pub(super) mac: ComponentId,
    pub(super) gec: Option<ComponentId>,
    pub(super) regs_base: u64,
    pub(super) regs: Registers,
    pub(super) pending: VecDeque<Pending>,
    pub(super) tx: TxDma,
    pub(super) rx: RxDma,
    pub(super) stats: BusSideStats,
    /// The tag of the last request issued untraced: untraced, requests are numbered in
    /// order (traced, a request's tag is its frame's message id, for the bus's spans),
    /// so that a completion out of order is seen in every mode.
    untraced_tag: u64,
}

impl Dp83820Bus {
    /// The bus side of a DP83820 that is master `master` on local bus component `bus`,
    /// decodes its registers at `regs_base`, and pairs with MAC side `mac`; `gec` gets
    /// the receive trace tags.
    #[must_use]
    pub fn new(
        params: Dp83820Params,
        bus: ComponentId,
        master: MasterId,
        regs_base: u64,
        mac: ComponentId,
        gec: Option<ComponentId>,
    ) -> Self {
        Self {
            params,
            bus,
            master,
            mac,
            gec,
            regs_base,
            regs: Registers::default(),
            pending: VecDeque::new(),
            tx: TxDma::new(),
            rx: RxDma::new(),
            stats: BusSideStats::default(),
            untraced_tag: 0,
        }
    }

    /// What it counted.
    #[must_use]
    pub fn stats(&self) -> &BusSideStats {
        &self.stats
    }

    /// The register values.
    #[must_use]
    pub fn registers(&self) -> &Registers {
        &self.regs
    }

    /// The transmit engine's state.
    #[must_use]
    pub fn tx_state(&self) -> super::TxState {
        self.tx.fsm.state()
    }

    /// The receive engine's state.
    #[must_use]
    pub fn rx_state(&self) -> super::RxState {
        self.rx.fsm.state()
    }

    /// Frames waiting in (or arriving into) the receive FIFO.
    #[must_use]
    pub fn rx_fifo_frames(&self) -> usize {
        self.rx.fifo.len()
    }

    /// Handles a bus message: register accesses and its own requests' completions.
    pub fn handle_pci<P: BusPort + ?Sized>(&mut self, msg: PciMsg, ctx: &mut P) {
        match msg {
            PciMsg::TargetWrite { addr, data } => self.register_write(addr, &data, ctx),
            PciMsg::TargetRead { tag, addr, len, .. } => self.register_read(tag, addr, len, ctx),
            PciMsg::TransactionDone(done) => self.completion(done, ctx),
            other => {
                self.stats.wrong_inputs += 1;
                tracing::error!(target: "mac::tx", ?other, "DP83820 bus side: PCI message dropped");
            }
        }
    }

    /// Handles a message from its MAC side, the GEC (trace tags) or itself.
    pub fn handle_mac<P: BusPort + ?Sized>(&mut self, msg: MacMsg, ctx: &mut P) {
        match msg {
            MacMsg::TraceTag { descriptor, msg } => self.tx_tag(descriptor, msg),
            MacMsg::MacTxStatus {
                frame,
                outcome,
                fifo_bytes,
            } => self.tx_status(frame, outcome, u64::from(fifo_bytes), ctx),
            MacMsg::MacRxFrame { frame, rx } => self.rx_frame(frame, rx, ctx),
            MacMsg::MacRxEnd { frame, status } => self.rx_end(frame, status, ctx),
            MacMsg::MacBusWake => self.rx_wake(ctx),
            other => {
                self.stats.wrong_inputs += 1;
                tracing::error!(target: "mac::rx", msg = other.name(), "DP83820 bus side: message dropped");
            }
        }
    }

    /// The CR value a read returns: TXE while the transmit engine runs, RXE while the
    /// receiver is enabled.
    fn cr_read(&self) -> u32 {
        let mut v = 0;
        if self.tx.fsm.state() != super::TxState::Idle {
            v |= cr::TXE;
        }
        if self.rx.enabled {
            v |= cr::RXE;
        }
        v
    }

    fn register_read<P: BusPort + ?Sized>(&mut self, tag: u64, addr: u64, len: u64, ctx: &mut P) {
        self.stats.register_reads += 1;
        let off = addr.saturating_sub(self.regs_base);
        let n = len.clamp(1, regs::WINDOW_BYTES.saturating_sub(off).max(1));
        let cr_value = self.cr_read();
        let mut data = Vec::with_capacity(usize::try_from(n).unwrap_or(0));
        let mut dword = None;
        for a in off..off.saturating_add(n) {
            let base = a & !3;
            let v = match dword {
                Some((b, v)) if b == base => v,
                _ => {
                    let v = self.regs.read(base, cr_value);
                    dword = Some((base, v));
                    v
                }
            };
            data.push(v.to_le_bytes()[(a & 3) as usize]);
        }
        let delay = Cycles(self.params.register_read_latency.0.max(1));
        ctx.send_pci_after(self.bus, delay, PciMsg::TargetReadData { tag, data });
    }

    pub(super) fn register_write<P: BusPort + ?Sized>(
        &mut self,
        addr: u64,
        data: &[u8],
        ctx: &mut P,
    ) {
        let off = addr.saturating_sub(self.regs_base);
        let mut i = 0usize;
        while i < data.len() {
            let a = off + i as u64;
            let base = a & !3;
            // Merge the bytes of this dword over its current value (CR: no current value,
            // its bits are commands).
            let mut v = if base == regs::CR || base == regs::ISR {
                0
            } else {
                self.regs.read(base, 0)
            }
            .to_le_bytes();
            while i < data.len() && ((off + i as u64) & !3) == base {
                v[((off + i as u64) & 3) as usize] = data[i];
                i += 1;
            }
            self.apply(base, u32::from_le_bytes(v), ctx);
        }
    }

    fn apply<P: BusPort + ?Sized>(&mut self, offset: u64, v: u32, ctx: &mut P) {
        self.stats.register_writes += 1;
        match offset {
            regs::CR => {
                tracing::debug!(target: "mac::tx", cr = v, at = %ctx.now(), "CR write");
                if v & (cr::TXR | cr::RXR | cr::SWI | cr::RST | cr::TXD) != 0 {
                    self.stats.unsupported_writes += 1;
                    tracing::warn!(target: "mac::tx", cr = v, "CR reset/disable bits are not modelled");
                }
                if v & cr::RXD != 0 {
                    self.rx.enabled = false;
                }
                if v & cr::TXE != 0 {
                    self.tx_enable(ctx);
                }
                if v & cr::RXE != 0 {
                    self.rx_enable(ctx);
                }
            }
            regs::ISR => {
                self.stats.unsupported_writes += 1;
            }
            _ => {
                if !self.regs.store(offset, v) {
                    self.stats.unsupported_writes += 1;
                    tracing::debug!(target: "mac::tx", offset, v, "write to a register the model does not keep");
                }
                if offset == regs::TXCFG || offset == regs::RXCFG {
                    let (txcfg, rxcfg) = (self.regs.txcfg, self.regs.rxcfg);
                    ctx.send_mac(self.mac, MacMsg::MacConfig { txcfg, rxcfg });
                }
            }
        }
    }

    /// The decoded TXCFG.
    pub(super) fn txcfg(&self) -> TxCfg {
        TxCfg::decode(self.regs.txcfg)
    }

    /// The decoded RXCFG.
    pub(super) fn rxcfg(&self) -> RxCfg {
        RxCfg::decode(self.regs.rxcfg)
    }

    /// Queues a bus request: a read of `len` bytes (`data` empty) or a write of `data`.
    pub(super) fn issue<P: BusPort + ?Sized>(
        &mut self,
        req: Req,
        tag: u64,
        addr: u64,
        len: u64,
        data: Vec<u8>,
        ctx: &mut P,
    ) {
        let command = if data.is_empty() {
            read_command(addr, len, 4, self.params.cache_line_bytes)
        } else {
            write_command(
                addr,
                len,
                self.params.cache_line_bytes,
                self.params.write_invalidate,
            )
        };
        let tag = if ctx.tracing() {
            tag
        } else {
            self.untraced_tag += 1;
            self.untraced_tag
        };
        self.pending.push_back(Pending { tag, req });
        let r = BusRequest {
            master: self.master,
            tag,
            command,
            addr,
            len,
            data,
        };
        ctx.request(self.bus, r);
    }

    pub(super) fn completion<P: BusPort + ?Sized>(&mut self, done: TransactionDone, ctx: &mut P) {
        let Some(p) = self.pending.pop_front() else {
            self.stats.unexpected += 1;
            tracing::warn!(target: "mac::tx", tag = done.tag, "completion without a request dropped");
            return;
        };
        if p.tag != done.tag {
            self.stats.completions_out_of_order += 1;
            tracing::warn!(target: "mac::tx", want = p.tag, got = done.tag, "completion out of order");
        }
        if done.status != pci_model::TxnStatus::Ok {
            self.stats.bus_errors += 1;
            self.regs.isr |= if done.status == pci_model::TxnStatus::TargetAbort {
                isr::RTABT
            } else {
                isr::RMABT
            };
            tracing::warn!(target: "mac::tx", status = ?done.status, req = ?p.req, "bus request failed");
        }
        match p.req {
            Req::TxDesc => self.tx_desc_done(&done, ctx),
            Req::TxData { len } => self.tx_data_done(done, len, ctx),
            Req::TxWriteBack { desc } => self.tx_write_back_done(desc, ctx),
            Req::RxDesc => self.rx_desc_done(&done, ctx),
            Req::RxData { len } => self.rx_data_done(len, ctx),
            Req::RxWriteBack => self.rx_write_back_done(ctx),
        }
    }

    /// Records a span of this component if tracing.
    pub(super) fn span<P: BusPort + ?Sized>(
        ctx: &mut P,
        msg: sim_kernel::MsgId,
        stage: &'static str,
        start: Time,
        end: Time,
    ) {
        if end >= start {
            ctx.span(msg, stage, start, end);
        }
    }
}
