//! The DP83820's receive DMA engine (bus side): descriptor fetch, moving the head frame
//! of the RX FIFO into the descriptor's buffer (possibly before its end), status
//! write-back. See the parent module doc for the behaviour.
//!
//! ```text
//!  Idle --RXE--> DescFetch --not OWN--> Ready --DRTH bytes or end--> Dma --all data--> WriteBack
//!   ^               | OWN (host's)        ^          | bad frame: rewind       |
//!   +---------------+ (RXE latched:       +----------+                          v
//!                     fetch again)                         DescFetch (link) <---+
//! ```
//!
//! A byte is visible to the bus side one local-bus clock after it is complete on RXD
//! ([`crate::RxFrame::arrived_count`] at `now - period`). When nothing can be moved yet
//! the engine wakes itself at the edge the next DRTH bytes become visible.

use super::bus::{Dp83820Bus, Req};
use super::port::BusPort;
use super::regs::isr;
use super::RxEndStatus;
use crate::msg::MacMsg;
use crate::rx::RxFrame;
use pci_model::TransactionDone;
use sim_kernel::{Fsm, MsgId, StateName, Time};
use std::collections::VecDeque;
use via_abi::dp83820::{CmdSts, Descriptor, DescriptorRepr};
use via_abi::ethernet::FCS_LEN;

mod burst;

/// The receive engine's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RxState {
    /// Stopped at RXDP (descriptor not available); RXE restarts it.
    Idle,
    /// Reading the descriptor at RXDP.
    DescFetch,
    /// Owns a descriptor, waiting for frame bytes.
    Ready,
    /// Moving the head frame into the buffer.
    Dma,
    /// Writing cmdsts back.
    WriteBack,
}

impl StateName for RxState {
    fn name(self) -> &'static str {
        match self {
            RxState::Idle => "idle",
            RxState::DescFetch => "desc-fetch",
            RxState::Ready => "ready",
            RxState::Dma => "dma",
            RxState::WriteBack => "write-back",
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct RxDesc {
    addr: u64,
    link: u32,
    bufptr: u32,
    size: u64,
}

#[derive(Clone, Debug)]
pub(super) struct InFifo {
    seq: u64,
    rx: RxFrame,
    end: Option<RxEndStatus>,
    issued: u64,
    done: u64,
    dma_start: Option<Time>,
    discard: bool,
}

#[derive(Clone, Copy, Debug)]
struct WriteBack {
    start: Time,
    msg: MsgId,
    fifo_len: u32,
}

/// State of the receive engine.
#[derive(Clone, Debug)]
pub(super) struct RxDma {
    pub(super) fsm: Fsm<RxState>,
    pub(super) enabled: bool,
    latched: bool,
    desc: Option<RxDesc>,
    fetch_addr: u64,
    pub(super) fifo: VecDeque<InFifo>,
    in_flight: usize,
    wake: Option<Time>,
    wb: Option<WriteBack>,
}

impl RxDma {
    pub(super) fn new() -> Self {
        Self {
            fsm: Fsm::new("dp83820.rx", RxState::Idle),
            enabled: false,
            latched: false,
            desc: None,
            fetch_addr: 0,
            fifo: VecDeque::new(),
            in_flight: 0,
            wake: None,
            wb: None,
        }
    }
}

impl Dp83820Bus {
    /// CR.RXE was written.
    pub(super) fn rx_enable<P: BusPort + ?Sized>(&mut self, ctx: &mut P) {
        self.rx.enabled = true;
        if self.rx.fsm.state() == RxState::Idle {
            let at = u64::from(self.regs.rxdp);
            self.rx_fetch(at, ctx);
        } else {
            self.rx.latched = true;
        }
    }

    fn rx_fetch<P: BusPort + ?Sized>(&mut self, addr: u64, ctx: &mut P) {
        self.regs.rxdp = u32::try_from(addr).unwrap_or(0);
        self.rx.desc = None;
        if addr == 0 {
            self.rx.fsm.set(RxState::Idle, ctx);
            return;
        }
        self.rx.fetch_addr = addr;
        self.rx.fsm.set(RxState::DescFetch, ctx);
        self.issue(Req::RxDesc, 0, addr, 16, Vec::new(), ctx);
    }

    pub(super) fn rx_desc_done<P: BusPort + ?Sized>(
        &mut self,
        done: &TransactionDone,
        ctx: &mut P,
    ) {
        let addr = self.rx.fetch_addr;
        let repr = Descriptor::new_checked(&done.data[..])
            .ok()
            .and_then(|d| DescriptorRepr::parse(&d).ok());
        let Some(d) = repr.filter(|_| done.status == pci_model::TxnStatus::Ok) else {
            self.rx.fsm.set(RxState::Idle, ctx);
            return;
        };
        if d.cmdsts.contains(CmdSts::OWN) {
            // Still filled, the host has not given it back.
            if std::mem::take(&mut self.rx.latched) {
                self.rx_fetch(addr, ctx);
            } else {
                self.regs.isr |= isr::RXIDLE;
                tracing::debug!(target: "mac::rx", addr, "no free descriptor: idle");
                self.rx.fsm.set(RxState::Idle, ctx);
            }
            return;
        }
        self.rx.desc = Some(RxDesc {
            addr,
            link: d.link,
            bufptr: d.bufptr,
            size: u64::from(d.cmdsts.size()),
        });
        self.rx.fsm.set(RxState::Ready, ctx);
        self.rx_pump(ctx);
    }

    /// A frame started arriving, or more of its bytes are known.
    pub(super) fn rx_frame<P: BusPort + ?Sized>(&mut self, seq: u64, rx: RxFrame, ctx: &mut P) {
        if let Some(e) = self.rx.fifo.iter_mut().find(|e| e.seq == seq) {
            e.rx = rx;
        } else {
            let discard = !self.rx.enabled;
            if discard {
                self.stats.rx_disabled_drops += 1;
            }
            self.rx.fifo.push_back(InFifo {
                seq,
                rx,
                end: None,
                issued: 0,
                done: 0,
                dma_start: None,
                discard,
            });
        }
        self.rx_pump(ctx);
    }

    /// A frame ended with `status`.
    pub(super) fn rx_end<P: BusPort + ?Sized>(
        &mut self,
        seq: u64,
        status: RxEndStatus,
        ctx: &mut P,
    ) {
        match self.rx.fifo.iter().position(|e| e.seq == seq) {
            // A frame that never made it into the FIFO (bad, no room) or that the
            // receiver does not take leaves at once unless its DMA has begun.
            Some(i)
                if self.rx.fifo[i].issued == 0
                    && (self.rx.fifo[i].discard || !matches!(status, RxEndStatus::Good { .. })) =>
            {
                self.rx.fifo.remove(i);
                if let RxEndStatus::Good { len } = status {
                    ctx.send_mac(self.mac, MacMsg::MacRxDrained { bytes: len });
                }
            }
            Some(i) => self.rx.fifo[i].end = Some(status),
            None => {
                self.stats.unexpected += 1;
                if let RxEndStatus::Good { len } = status {
                    ctx.send_mac(self.mac, MacMsg::MacRxDrained { bytes: len });
                }
            }
        }
        if matches!(status, RxEndStatus::Bad) {
            self.regs.isr |= isr::RXERR;
        }
        if matches!(status, RxEndStatus::Overflow) {
            self.regs.isr |= isr::RXORN;
        }
        self.rx_pump(ctx);
    }

    /// The wake-up for visible bytes.
    pub(super) fn rx_wake<P: BusPort + ?Sized>(&mut self, ctx: &mut P) {
        if self.rx.wake.is_some_and(|w| w <= ctx.now()) {
            self.rx.wake = None;
        }
        self.rx_pump(ctx);
    }

    /// Moves the head frame along: discards it, issues bursts, or writes it back.
    fn rx_pump<P: BusPort + ?Sized>(&mut self, ctx: &mut P) {
        loop {
            let state = self.rx.fsm.state();
            let Some(head) = self.rx.fifo.front() else {
                return;
            };
            let good_len = match head.end {
                Some(RxEndStatus::Good { len }) => Some(u64::from(len)),
                _ => None,
            };
            let bad = matches!(head.end, Some(RxEndStatus::Bad | RxEndStatus::Overflow));
            let too_big = match (good_len, self.rx.desc) {
                (Some(l), Some(d)) => self.data_len(l) > d.size,
                _ => false,
            };
            if head.discard && head.end.is_some() || bad || too_big {
                if self.rx.in_flight > 0 {
                    return; // let its bursts finish first
                }
                self.rx_discard(too_big, ctx);
                continue;
            }
            if !matches!(state, RxState::Ready | RxState::Dma) || head.discard {
                return;
            }
            self.rx_move(ctx);
            return;
        }
    }

    /// Bytes of a frame of `len` bytes (FCS included) that go to memory.
    fn data_len(&self, len: u64) -> u64 {
        if self.rxcfg().strip_crc {
            len.saturating_sub(FCS_LEN as u64)
        } else {
            len
        }
    }

    fn rx_discard<P: BusPort + ?Sized>(&mut self, too_big: bool, ctx: &mut P) {
        let Some(e) = self.rx.fifo.pop_front() else {
            return;
        };
        if e.issued > 0 {
            self.stats.rx_rewinds += 1;
            tracing::debug!(target: "mac::rx", seq = e.seq, "bad frame after DMA began: descriptor reused");
        }
        if too_big {
            self.stats.rx_too_big += 1;
            self.regs.isr |= isr::RXERR;
        }
        if let Some(RxEndStatus::Good { len }) = e.end {
            ctx.send_mac(self.mac, MacMsg::MacRxDrained { bytes: len });
        }
        if self.rx.fsm.state() == RxState::Dma {
            self.rx.fsm.set(RxState::Ready, ctx);
        }
    }
}
