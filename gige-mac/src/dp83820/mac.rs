//! [`Dp83820Mac`]: the DP83820's MAC side, a component in the 125 MHz `gmii` domain: the
//! wire ends of the TX and RX FIFOs, its [`GmiiTx`] and [`GmiiRx`].
//!
//! Transmit: chunks from the bus side ([`MacMsg::MacTxData`]) fill the frame at the head
//! of the TX FIFO; a frame starts once TXCFG DRTH bytes of it, or all of it, are in (and
//! every earlier frame has started), padded to 60 bytes when TXCFG ATP is set, with the
//! FCS appended ([`crate::frame::finish`]); later bytes are streamed. When the GMII
//! transmitter reports the frame sent, [`MacMsg::MacTxStatus`] frees its FIFO bytes.
//!
//! Receive: `RxStart`/`RxData` are forwarded to the bus side as [`MacMsg::MacRxFrame`];
//! at `RxEnd` the frame is judged (FCS, length) and, if good, admitted to the 32 KB FIFO
//! if it fits; the verdict goes to the bus side as [`MacMsg::MacRxEnd`]. Bytes leave the
//! FIFO's count when the bus side reports them drained.
//!
//! Flow control (IEEE 802.3x PAUSE: sent at the RX FIFO's high-water mark, obeyed when
//! received; MAC Control frames never reach the bus side) is in [`super::flow`].
//!
//! Ports: `bus_side`, `link` (the [`Attachment`] of its transmitter). Statistics:
//! [`MacSideStats`], the transmitter's and receiver's own.

use super::flow::FlowState;
use super::params::FlowControl;
use super::regs::{RxCfg, TxCfg};
use super::{RxEndStatus, TxChunk};
use crate::frame::{fcs, FcsError, Frame, FrameId, FrameLimits};
use crate::gmii::stream::Extended;
use crate::gmii::GmiiTx;
use crate::link::Attachment;
use crate::msg::{MacMsg, PortIndex};
use crate::params::WireParams;
use crate::pause::is_mac_control;
use crate::rx::{GmiiRx, RxError};
use crate::spare::SpareBuffers;
use sim_kernel::{ComponentId, Ctx, MsgId, Time};
use std::collections::VecDeque;
use via_abi::ethernet::{MacAddr, FCS_LEN, MIN_FRAME_LEN_NO_FCS};

/// What the MAC side counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MacSideStats {
    /// Frames sent (status reported).
    pub tx_frames: u64,
    /// Of those, sent corrupted after a FIFO underrun.
    pub tx_underruns: u64,
    /// Frames the GMII transmitter refused.
    pub tx_refused: u64,
    /// Good frames admitted to the RX FIFO.
    pub rx_good: u64,
    /// Bad frames dropped (runt, too long, FCS, framing).
    pub rx_bad: u64,
    /// Of those, frames whose FCS did not match their bytes (CRC errors: bits changed
    /// on the wire, a transmit underrun): the receiver does not accept errored frames,
    /// so each is dropped before its cmdsts is written back (a receive DMA already
    /// begun leaves its descriptor to the next frame).
    pub rx_crc_errors: u64,
    /// Good frames dropped because the RX FIFO had no room.
    pub rx_overflows: u64,
    /// Most bytes ever held in the RX FIFO.
    pub rx_fifo_peak: u64,
    /// Messages it had no use for.
    pub unexpected: u64,
    /// PAUSE frames sent with a non-zero `pause_time` (high-water mark and re-sends).
    pub pause_sent: u64,
    /// Of those, re-sent because the FIFO was still above the low-water mark.
    pub pause_refreshes: u64,
    /// PAUSE frames sent with `pause_time` 0 (resume at the low-water mark).
    pub resume_sent: u64,
    /// Valid PAUSE frames received and obeyed.
    pub pause_received: u64,
    /// Other MAC Control frames received (or PAUSE with flow control off): consumed.
    pub control_ignored: u64,
    /// GMII clocks a ready frame was held back by a received PAUSE \[8 ns cycles\].
    pub paused_cycles: u64,
    /// Messages of a kind this component does not take (a wiring bug): counted and
    /// traced as errors; any of them fails a system run.
    pub wrong_inputs: u64,
    /// Frames aborted by a failed data read (sent corrupted if already started, else
    /// not at all).
    pub tx_aborted: u64,
}

#[derive(Clone, Debug)]
struct Assembling {
    seq: u64,
    id: FrameId,
    msg: MsgId,
    len: usize,
    /// The frame's bytes as they came (`len` of them once whole); once whole, followed
    /// by its pad and FCS for the `auto_pad` in `finished`.
    data: Vec<u8>,
    /// The `auto_pad` setting the pad and FCS after the data were made for, if made.
    finished: Option<bool>,
    since: Time,
    started: bool,
    /// Bytes handed to the transmitter.
    given: usize,
    ready_at: Time,
    /// Bytes the bus side's bursts for it asked for so far (whether they arrived).
    asked: usize,
    /// A data read of it failed: no more of its bytes are taken.
    aborted: bool,
}

/// The DP83820's MAC side (see the module doc).
#[derive(Clone, Debug)]
pub struct Dp83820Mac {
    bus_side: ComponentId,
    pub(super) id_base: u64,
    rx_fifo_bytes: u64,
    pub(super) tx: GmiiTx,
    pub(super) rx: GmiiRx,
    txcfg: TxCfg,
    rxcfg: RxCfg,
    frames: VecDeque<Assembling>,
    /// Byte buffers of frames sent, kept for the next frames (no allocation per frame).
    spare: SpareBuffers,
    rx_seq: u64,
    rx_whole: bool,
    pub(super) rx_fifo_used: u64,
    /// The RX FIFO fill last recorded in the trace (a level, for waveforms).
    rx_fifo_traced: u64,
    pub(super) stats: MacSideStats,
    pub(super) flow: FlowControl,
    pub(super) fc: FlowState,
}

impl Dp83820Mac {
    /// The MAC side paired with `bus_side`, sending into `link`; its frames get ids from
    /// `id_base` on (give each card its own range).
    #[must_use]
    pub fn new(
        params: &super::Dp83820Params,
        wire: &WireParams,
        bus_side: ComponentId,
        link: Attachment,
        id_base: u64,
    ) -> Self {
        Self {
            bus_side,
            id_base,
            rx_fifo_bytes: params.rx_fifo_bytes,
            tx: GmiiTx::new("dp83820.gmii", PortIndex(0), link, wire, 1024),
            rx: GmiiRx::new(FrameLimits::from_wire(wire)),
            txcfg: TxCfg::decode(0),
            rxcfg: RxCfg::decode(0),
            frames: VecDeque::new(),
            spare: SpareBuffers::default(),
            rx_seq: 0,
            rx_whole: true,
            rx_fifo_used: 0,
            rx_fifo_traced: 0,
            stats: MacSideStats::default(),
            flow: params.flow,
            fc: FlowState::default(),
        }
    }

    /// What it counted.
    #[must_use]
    pub fn stats(&self) -> &MacSideStats {
        &self.stats
    }

    /// Lets its transmitter end a gap with nothing queued behind it without a wake-up
    /// ([`GmiiTx::set_lazy_gap`]; untraced fast stepping).
    pub fn set_lazy_gap(&mut self, on: bool) {
        self.tx.set_lazy_gap(on);
    }

    /// Test hook: see [`GmiiTx::set_lazy_gap_skew_clocks`].
    pub fn set_lazy_gap_skew_clocks(&mut self, clocks: u64) {
        self.tx.set_lazy_gap_skew_clocks(clocks);
    }

    /// Where a run ends with every event at or before `until` delivered
    /// ([`GmiiTx::settle`]).
    pub fn settle(&mut self, until: Time) {
        self.tx.settle(until);
    }

    /// Its GMII transmitter (state, statistics, capture).
    #[must_use]
    pub fn tx(&self) -> &GmiiTx {
        &self.tx
    }

    /// Its GMII transmitter, to turn capture on or take captured frames.
    pub fn tx_mut(&mut self) -> &mut GmiiTx {
        &mut self.tx
    }

    /// Its GMII receiver (statistics).
    #[must_use]
    pub fn rx(&self) -> &GmiiRx {
        &self.rx
    }

    /// Bytes of good frames held in the RX FIFO.
    #[must_use]
    pub fn rx_fifo_used(&self) -> u64 {
        self.rx_fifo_used
    }

    /// The receive configuration it last got.
    #[must_use]
    pub fn rxcfg(&self) -> RxCfg {
        self.rxcfg
    }

    /// Handles one message.
    pub fn handle<M: From<MacMsg>>(&mut self, msg: MacMsg, ctx: &mut Ctx<'_, M>) {
        self.dispatch(msg, ctx);
        self.stats.paused_cycles = self.tx.stats().paused.0;
        if self.rx_fifo_used != self.rx_fifo_traced && ctx.tracing() {
            self.rx_fifo_traced = self.rx_fifo_used;
            ctx.record_level("rx_fifo", "bytes", self.rx_fifo_used);
        }
    }

    fn dispatch<M: From<MacMsg>>(&mut self, msg: MacMsg, ctx: &mut Ctx<'_, M>) {
        match msg {
            MacMsg::MacConfig { txcfg, rxcfg } => {
                self.txcfg = TxCfg::decode(txcfg);
                self.rxcfg = RxCfg::decode(rxcfg);
            }
            MacMsg::MacTxData(chunk) => self.tx_data(chunk, ctx),
            MacMsg::TxWake { .. } => self.tx_wake(ctx),
            MacMsg::TxPauseEnd { .. } => self.tx.pause_end(ctx),
            MacMsg::TxReorderRelease { .. } => self.tx.reorder_release(ctx),
            MacMsg::MacPauseRefresh => self.pause_refresh(ctx),
            // MAC Control frames (PAUSE) stay on the MAC side (see `flow`).
            MacMsg::RxStart { frame, .. } if self.control_start(&frame) => {}
            MacMsg::RxData { .. } if self.fc.rx_control => {}
            MacMsg::RxEnd { frame, .. } if self.fc.rx_control => self.control_end(frame, ctx),
            MacMsg::RxStart { frame, .. } => {
                self.rx.start(&frame);
                self.rx_seq += 1;
                self.rx_forward(frame, ctx);
            }
            MacMsg::RxData { frame, .. } => self.rx_forward(frame, ctx),
            MacMsg::RxEnd { frame, .. } => self.rx_end(frame, ctx),
            MacMsg::MacRxDrained { bytes } => {
                self.rx_fifo_used = self.rx_fifo_used.saturating_sub(u64::from(bytes));
                self.flow_after_drain(ctx);
            }
            other => {
                self.stats.wrong_inputs += 1;
                tracing::error!(target: "mac::rx", msg = other.name(), "DP83820 MAC side: message dropped");
            }
        }
    }

    /// Passes what is known of the frame being received to the bus side.
    fn rx_forward<M: From<MacMsg>>(&mut self, frame: crate::rx::RxFrame, ctx: &mut Ctx<'_, M>) {
        self.rx_whole = frame.is_whole();
        ctx.send(
            self.bus_side,
            MacMsg::MacRxFrame {
                frame: self.rx_seq,
                rx: frame,
            }
            .into(),
        );
    }

    fn rx_end<M: From<MacMsg>>(&mut self, frame: crate::rx::RxFrame, ctx: &mut Ctx<'_, M>) {
        let seq = self.rx_seq;
        let len = frame.len() as u64;
        if !self.rx_whole {
            ctx.send(
                self.bus_side,
                MacMsg::MacRxFrame {
                    frame: seq,
                    rx: frame.clone(),
                }
                .into(),
            );
            self.rx_whole = true;
        }
        let status = match self.rx.end(frame, ctx.now()) {
            Ok(r) if is_mac_control(r.frame.bytes()) => {
                // Streamed with a header not known at its start: still never the host's.
                self.stats.control_ignored += 1;
                RxEndStatus::Bad
            }
            Ok(r) if self.rx_fifo_used + len > self.rx_fifo_bytes => {
                self.learn_station(r.frame.dst());
                self.stats.rx_overflows += 1;
                tracing::debug!(target: "mac::rx", seq, used = self.rx_fifo_used, "RX FIFO full: frame dropped");
                RxEndStatus::Overflow
            }
            Ok(r) => {
                self.learn_station(r.frame.dst());
                self.stats.rx_good += 1;
                self.rx_fifo_used += len;
                self.stats.rx_fifo_peak = self.stats.rx_fifo_peak.max(self.rx_fifo_used);
                self.flow_after_admit(ctx);
                RxEndStatus::Good {
                    len: u32::try_from(len).unwrap_or(u32::MAX),
                }
            }
            Err(e) => {
                self.count_bad(&e);
                tracing::debug!(target: "mac::rx", seq, error = %e, "bad frame dropped");
                RxEndStatus::Bad
            }
        };
        ctx.send(
            self.bus_side,
            MacMsg::MacRxEnd { frame: seq, status }.into(),
        );
    }

    /// Counts a frame the receiver refused.
    pub(super) fn count_bad(&mut self, e: &RxError) {
        self.stats.rx_bad += 1;
        if matches!(e, RxError::Fcs(FcsError::Mismatch { .. })) {
            self.stats.rx_crc_errors += 1;
        }
    }

    fn tx_data<M: From<MacMsg>>(&mut self, c: TxChunk, ctx: &mut Ctx<'_, M>) {
        let pos = match self.frames.iter().position(|f| f.seq == c.frame) {
            Some(p) => p,
            None if c.offset == 0 => {
                // Room for the pad and FCS appended once the frame is whole.
                let mut data = self.spare.take();
                data.reserve(wire_total(true, c.len as usize));
                self.frames.push_back(Assembling {
                    seq: c.frame,
                    id: FrameId(self.id_base + c.frame),
                    msg: c.msg,
                    len: c.len as usize,
                    data,
                    finished: None,
                    since: c.since,
                    started: false,
                    given: 0,
                    ready_at: ctx.now(),
                    asked: 0,
                    aborted: false,
                });
                self.frames.len() - 1
            }
            None => {
                // The rest of a frame that already went out (after an underrun).
                self.stats.unexpected += 1;
                return;
            }
        };
        if c.offset == 0 {
            let src = c.data.get(6..12).and_then(|b| <[u8; 6]>::try_from(b).ok());
            self.learn_station(src.map(MacAddr));
        }
        if let Some(f) = self.frames.get_mut(pos) {
            f.asked += c.burst as usize;
            if !f.aborted {
                let room = f.len.saturating_sub(f.data.len());
                f.data.extend_from_slice(&c.data[..room.min(c.data.len())]);
                if c.failed {
                    f.aborted = true;
                    self.stats.tx_aborted += 1;
                }
            }
        }
        sim_kernel::spare::give_bytes(c.data); // a folded read's sample: back to circulate
        self.tx_abort_unstarted(ctx);
        self.tx_advance(ctx);
    }

    /// Drops aborted frames that have not started once every burst of theirs has come
    /// back, and reports them (`TxOutcome::Aborted`): nothing of them is sent. One
    /// already started runs dry on the wire instead (an underrun).
    fn tx_abort_unstarted<M: From<MacMsg>>(&mut self, ctx: &mut Ctx<'_, M>) {
        while let Some(pos) = self
            .frames
            .iter()
            .position(|f| f.aborted && !f.started && f.asked >= f.len)
        {
            let Some(f) = self.frames.remove(pos) else {
                break;
            };
            self.spare.keep(f.data);
            tracing::error!(target: "mac::tx", id = f.id.0, "frame aborted before it started: not sent");
            ctx.send(
                self.bus_side,
                MacMsg::MacTxStatus {
                    frame: f.seq,
                    outcome: super::TxOutcome::Aborted,
                    fifo_bytes: u32::try_from(f.len).unwrap_or(u32::MAX),
                }
                .into(),
            );
        }
    }

    /// Starts frames whose drain threshold is met, streams bytes of started ones.
    fn tx_advance<M: From<MacMsg>>(&mut self, ctx: &mut Ctx<'_, M>) {
        let drain = usize::try_from(self.txcfg.drain.max(1)).unwrap_or(usize::MAX);
        let auto_pad = self.txcfg.auto_pad;
        let now = ctx.now();
        for f in &mut self.frames {
            let total = wire_total(auto_pad, f.len);
            if f.started && f.given >= total {
                continue; // every byte is with the transmitter
            }
            let whole = f.data.len() >= f.len;
            let ready = whole || f.data.len() >= drain;
            if !f.started && (!ready || f.aborted) {
                break; // later frames wait for this one
            }
            if whole && f.finished != Some(auto_pad) {
                f.data.truncate(f.len);
                finish_wire_bytes(auto_pad, &mut f.data);
                f.finished = Some(auto_pad);
            }
            let bytes: &[u8] = &f.data;
            if !f.started {
                // A whole frame's bytes end with the FCS just computed: the receiver
                // need not compute it again.
                let prefix = if whole {
                    Frame::with_fcs(f.id, f.msg, bytes)
                } else {
                    Frame::new(f.id, f.msg, bytes)
                };
                if self.tx.enqueue_partial(prefix, total, ctx).is_err() {
                    self.stats.tx_refused += 1;
                }
                ctx.span(f.msg, "mac data fetch", f.since, now);
                tracing::debug!(target: "mac::tx", id = f.id.0, have = bytes.len(), total, at = %now, "frame starts");
                f.ready_at = now;
                f.started = true;
            } else if f.given < bytes.len()
                && self.tx.extend(f.id, &bytes[f.given..], ctx) == Extended::Underrun
            {
                tracing::debug!(target: "mac::tx", id = f.id.0, "bytes came too late");
            }
            f.given = bytes.len();
        }
    }

    fn tx_wake<M: From<MacMsg>>(&mut self, ctx: &mut Ctx<'_, M>) {
        let Some(done) = self.tx.wake(ctx) else {
            return;
        };
        if self.control_sent(&done, ctx) {
            return;
        }
        let Some(pos) = self.frames.iter().position(|f| f.id == done.frame.id) else {
            self.stats.unexpected += 1;
            return;
        };
        let Some(mut f) = self.frames.remove(pos) else {
            return;
        };
        self.spare.keep(std::mem::take(&mut f.data));
        ctx.span(f.msg, "tx fifo wait", f.ready_at, done.start);
        self.stats.tx_frames += 1;
        if done.underrun {
            self.stats.tx_underruns += 1;
        }
        tracing::debug!(target: "mac::tx", id = f.id.0, underrun = done.underrun, "frame sent");
        ctx.send(
            self.bus_side,
            MacMsg::MacTxStatus {
                frame: f.seq,
                outcome: if done.underrun {
                    super::TxOutcome::Underrun
                } else {
                    super::TxOutcome::Sent
                },
                fifo_bytes: u32::try_from(f.len).unwrap_or(u32::MAX),
            }
            .into(),
        );
    }
}

/// Makes a frame's `data` (all of it in) its bytes on the wire, in place: zero pad to
/// 60 bytes when `auto_pad`, then the FCS.
fn finish_wire_bytes(auto_pad: bool, b: &mut Vec<u8>) {
    if auto_pad && b.len() < MIN_FRAME_LEN_NO_FCS {
        b.resize(MIN_FRAME_LEN_NO_FCS, 0);
    }
    let crc = fcs(b);
    b.extend_from_slice(&crc.to_le_bytes());
}

/// Length on the wire of a frame of `len` data bytes \[bytes\]: pad (when `auto_pad`), FCS.
fn wire_total(auto_pad: bool, len: usize) -> usize {
    let padded = if auto_pad {
        len.max(MIN_FRAME_LEN_NO_FCS)
    } else {
        len
    };
    padded + FCS_LEN
}
