//! [`Switch`]: an N-port Ethernet switch in the `gmii` domain, so that more than two
//! nodes can be wired: store-and-forward or cut-through, a packet buffer per output port,
//! IEEE 802.3x PAUSE on every port. A commodity unmanaged gigabit switch of about 2004
//! ([`SwitchParams`] gives the sources).
//!
//! ```text
//!  port i RX (GmiiRx) --RxEnd: whole frame, FCS ok?--+-- bad: dropped, counted
//!                       MAC Control (0x8808)?  -----+-- consumed; a PAUSE gates TX i
//!                       learn src -> i              v
//!                       wait forwarding_latency (SwitchForward)
//!                       look up dst: known port p != i -> queue p
//!                                    known port == i   -> filtered, counted
//!                                    unknown/group     -> flood to every port but i
//!  port p output: frame fits in p's buffer (bytes) and queue (frames)? else dropped, counted
//!                 -> GmiiTx p ==link==> node           (charged to input i until sent)
//!  cut-through: RxStart --DA in + forwarding_latency (SwitchCutThrough)--> known unicast
//!               port p != i, p idle, fits -> p starts now, bytes follow (RxData, RxEnd)
//!               else: stored and forwarded as above
//! ```
//!
//! **Store and forward** ([`ForwardingMode::StoreAndForward`], the default): nothing is
//! forwarded before the frame's last byte has arrived and its FCS checked (IEEE 802.1D:
//! frames with FCS errors are discarded).
//!
//! **Cut-through** ([`ForwardingMode::CutThrough`], [`cut`]): the forwarding decision is
//! taken `forwarding_latency` after the destination address's last byte is in; if the
//! destination is a known unicast port other than the input, that port's transmitter is
//! idle (nothing queued, not paused) and the frame fits its buffer, the frame starts
//! there at once and its bytes follow as they arrive; otherwise it is stored and
//! forwarded. A frame whose FCS turns out bad at its end has already gone out: the far
//! end receives it with the bad FCS (and drops it); it is counted (`cut_through_bad`).
//!
//! **Buffers.** Each output port holds at most `buffer_bytes` of frames (the one on the
//! wire included) and `queue_frames` waiting frames; a frame that does not fit is
//! dropped and counted (`buffer_drops`, `queue_drops`).
//!
//! **Flow control** ([`flow`]): MAC Control frames (Length/Type 0x8808) end at the
//! receiving port's MAC (IEEE 802.3 clause 31) and are never forwarded; with flow control
//! on, a PAUSE gates that port's transmitter, and the switch sends PAUSE to a node whose
//! frames fill the output buffers (per-input accounting, high/low-water marks).
//!
//! Each output port has its own GMII transmitter ([`GmiiTx`]), so ports send in parallel
//! and a port receiving traffic from several inputs queues it. The learning table is a
//! `BTreeMap` ([`LearningTable`]) and flooding goes in port order: the switch is
//! deterministic.
//!
//! Ports: one [`Attachment`] per port, to the node's MAC port. Parameters:
//! [`SwitchParams`], [`WireParams`]. Statistics: [`SwitchPortStats`] per port, the
//! table's [`TableStats`](crate::fdb::TableStats), each port's transmitter and receiver.

use crate::fdb::LearningTable;
use crate::frame::{FcsError, Frame, FrameId, FrameLimits};
use crate::gmii::{GmiiTx, TxRefused};
use crate::link::Attachment;
use crate::msg::{MacMsg, PortIndex};
use crate::params::{ForwardingMode, SwitchFlowControl, SwitchParams, WireParams};
use crate::pause::is_mac_control;
use crate::rx::{GmiiRx, RxError, RxFrame};
use sim_kernel::{Ctx, Duration, Time};
use std::collections::VecDeque;

pub mod cut;
pub mod flow;
mod names;

use names::MACHINE_NAMES;
pub use names::MAX_PORTS;

/// Why a switch could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SwitchError {
    /// A switch needs 2 to 64 ports.
    #[error("a switch needs between 2 and {MAX_PORTS} ports, got {0}")]
    PortCount(usize),
}

/// What one switch port counted (input side: received, drops at the input, PAUSE
/// received and sent; output side: queued, buffer and queue drops, cut-through starts).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SwitchPortStats {
    /// Good frames received on this port.
    pub received: u64,
    /// Frames received with a bad FCS, dropped.
    pub fcs_drops: u64,
    /// Frames received too short, too long or broken, dropped.
    pub malformed_drops: u64,
    /// Good frames received whose destination was learned on this same port, dropped.
    pub filtered: u64,
    /// Frames that found no room in this port's full output queue, dropped.
    pub queue_drops: u64,
    /// Frames queued for output on this port.
    pub queued_out: u64,
    /// Of those, copies made by flooding.
    pub flooded_out: u64,
    /// MAC Control frames (PAUSE) received: consumed, never forwarded.
    pub control_consumed: u64,
    /// Frames that did not fit in this port's output buffer (bytes), dropped.
    pub buffer_drops: u64,
    /// Most bytes ever held in this port's output buffer at once.
    pub max_buffered_bytes: u64,
    /// Of the MAC Control frames received, PAUSE frames obeyed (flow control on).
    pub pause_received: u64,
    /// PAUSE frames with a non-zero `pause_time` sent out of this port (its node's
    /// frames crossed the high-water mark), re-sends included.
    pub pause_sent: u64,
    /// PAUSE frames with `pause_time` 0 (resume) sent out of this port.
    pub resume_sent: u64,
    /// Frames started on this output port before their end had arrived (cut-through;
    /// also counted in `queued_out`).
    pub cut_through: u64,
    /// Frames received on this port and forwarded cut-through whose FCS or length turned
    /// out bad at their end: they went out bad and the far end drops them.
    pub cut_through_bad: u64,
}

/// A frame in an output port's buffer: which input it is charged to.
#[derive(Clone, Copy, Debug)]
struct Held {
    id: FrameId,
    from: PortIndex,
    bytes: u64,
}

#[derive(Clone, Debug)]
struct SwitchPort {
    tx: GmiiTx,
    rx: GmiiRx,
    stats: SwitchPortStats,
    /// Output side: frames in this port's buffer, in queueing order.
    held: VecDeque<Held>,
    /// Output side: their bytes.
    buffered: u64,
    /// Input side: bytes of this port's frames held in output buffers.
    charged: u64,
    /// Input side: a PAUSE asked the node to stop and no resume has been sent since.
    xoff: bool,
    /// Input side: when the PAUSE is due to be re-sent (its wake-up is pending).
    refresh_at: Option<Time>,
    /// Input side: the re-send is due but waits for the output buffers to make progress.
    refresh_due: bool,
    /// Input side: some of its frames left the buffers since the last PAUSE.
    drained: bool,
    /// Input side, cut-through: the frame arriving (latest `RxStart` / `RxData`).
    arriving: Option<RxFrame>,
    /// Input side, cut-through: what is being done with it.
    cut: Option<cut::Cut>,
}

/// An N-port switch.
#[derive(Clone, Debug)]
pub struct Switch {
    ports: Vec<SwitchPort>,
    table: LearningTable,
    forwarding_latency: Duration,
    buffer_bytes: u64,
    mode: ForwardingMode,
    flow: SwitchFlowControl,
    /// PAUSE frames built so far (their ids).
    pauses_built: u64,
    unexpected: u64,
}

impl Switch {
    /// A switch with one port per attachment (port `i` sends into `links[i]`).
    ///
    /// # Errors
    /// [`SwitchError::PortCount`] unless 2 to 64 links are given.
    pub fn new(
        links: &[Attachment],
        wire: &WireParams,
        params: &SwitchParams,
    ) -> Result<Self, SwitchError> {
        if !(2..=MAX_PORTS).contains(&links.len()) {
            return Err(SwitchError::PortCount(links.len()));
        }
        let ports = links
            .iter()
            .zip(MACHINE_NAMES)
            .zip(0u16..)
            .map(|((link, name), i)| SwitchPort {
                tx: GmiiTx::new(name, PortIndex(i), *link, wire, params.queue_frames),
                rx: GmiiRx::new(FrameLimits::from_wire(wire)),
                stats: SwitchPortStats::default(),
                held: VecDeque::new(),
                buffered: 0,
                charged: 0,
                xoff: false,
                refresh_at: None,
                refresh_due: false,
                drained: false,
                arriving: None,
                cut: None,
            })
            .collect();
        Ok(Self {
            ports,
            table: LearningTable::new(params.table_capacity),
            forwarding_latency: params.forwarding_latency,
            buffer_bytes: params.buffer_bytes,
            mode: params.mode,
            flow: params.flow,
            pauses_built: 0,
            unexpected: 0,
        })
    }

    /// Handles one message at `ctx.now()`.
    pub fn handle<M: From<MacMsg>>(&mut self, msg: MacMsg, ctx: &mut Ctx<'_, M>) {
        match msg {
            MacMsg::RxStart { port, frame } => self.receive_start(port, frame, ctx),
            MacMsg::RxEnd { port, frame } => self.receive_end(port, frame, ctx),
            // Store and forward: a streamed frame's early bytes do not matter;
            // cut-through: they follow the frame on its output port.
            MacMsg::RxData { port, frame } => self.receive_data(port, frame, ctx),
            MacMsg::SwitchForward { in_port, frame } => self.forward(in_port, frame, ctx),
            MacMsg::SwitchCutThrough { in_port, id } => self.cut_through(in_port, id, ctx),
            MacMsg::SwitchPauseRefresh { port } => self.pause_refresh(port, ctx),
            MacMsg::TxWake { port } => match self.ports.get_mut(port.index()) {
                Some(p) => {
                    if let Some(done) = p.tx.wake(ctx) {
                        self.release(port, done.frame.id, ctx);
                    }
                }
                None => self.bad_port(port, "tx-wake"),
            },
            MacMsg::TxPauseEnd { port } => match self.ports.get_mut(port.index()) {
                Some(p) => p.tx.pause_end(ctx),
                None => self.bad_port(port, "tx-pause-end"),
            },
            MacMsg::TxReorderRelease { port } => match self.ports.get_mut(port.index()) {
                Some(p) => p.tx.reorder_release(ctx),
                None => self.bad_port(port, "tx-reorder-release"),
            },
            other => {
                self.unexpected += 1;
                tracing::warn!(target: "mac::switch", msg = other.name(), "message a switch does not handle");
            }
        }
    }

    fn bad_port(&mut self, port: PortIndex, what: &'static str) {
        self.unexpected += 1;
        tracing::warn!(target: "mac::switch", port = port.0, what, "message for a port the switch does not have");
    }

    fn receive_start<M: From<MacMsg>>(
        &mut self,
        port: PortIndex,
        frame: RxFrame,
        ctx: &mut Ctx<'_, M>,
    ) {
        let Some(p) = self.ports.get_mut(port.index()) else {
            self.bad_port(port, "rx-start");
            return;
        };
        p.rx.start(&frame);
        if self.mode == ForwardingMode::CutThrough {
            self.cut_start(port, frame, ctx);
        }
    }

    fn receive_end<M: From<MacMsg>>(
        &mut self,
        port: PortIndex,
        frame: RxFrame,
        ctx: &mut Ctx<'_, M>,
    ) {
        let Some(p) = self.ports.get_mut(port.index()) else {
            self.bad_port(port, "rx-end");
            return;
        };
        let id = frame.id();
        p.arriving = None;
        // Cut-through: the frame already going out gets its last bytes; one whose decision
        // is still due goes out at the decision's time instead of a latency after its end.
        let early = match p.cut.take() {
            Some(cut::Cut::Forwarding { id: c, out, given }) if c == id => {
                self.cut_end(port, out, given, frame, ctx);
                return;
            }
            Some(cut::Cut::Pending { id: c, at }) if c == id => Some(at),
            _ => None,
        };
        let p = &mut self.ports[port.index()];
        match p.rx.end(frame, ctx.now()) {
            Ok(r) if is_mac_control(r.frame.bytes()) => self.control_received(port, &r.frame, ctx),
            Ok(r) => {
                p.stats.received += 1;
                if let Some(src) = r.frame.src() {
                    self.table.learn(src, port);
                }
                tracing::debug!(target: "mac::switch", port = port.0, id = id.0, "frame received, forwarding");
                let at = early.map_or(ctx.now() + self.forwarding_latency, |t| t.max(ctx.now()));
                ctx.wake_at(
                    at,
                    MacMsg::SwitchForward {
                        in_port: port,
                        frame: r.frame,
                    }
                    .into(),
                );
            }
            Err(RxError::Fcs(FcsError::Mismatch { .. })) => {
                p.stats.fcs_drops += 1;
                tracing::debug!(target: "mac::switch", port = port.0, id = id.0, "bad FCS, dropped");
            }
            Err(e) => {
                p.stats.malformed_drops += 1;
                tracing::debug!(target: "mac::switch", port = port.0, id = id.0, error = %e, "malformed frame, dropped");
            }
        }
    }

    fn forward<M: From<MacMsg>>(&mut self, in_port: PortIndex, frame: Frame, ctx: &mut Ctx<'_, M>) {
        let known = frame.dst().and_then(|d| self.table.lookup(d));
        match known {
            Some(out) if out == in_port => {
                if let Some(p) = self.ports.get_mut(in_port.index()) {
                    p.stats.filtered += 1;
                }
                tracing::debug!(target: "mac::switch", port = in_port.0, id = frame.id.0, "destination on the input port, filtered");
            }
            Some(out) => self.queue_out(out, in_port, frame, false, ctx),
            None => {
                tracing::debug!(target: "mac::switch", port = in_port.0, id = frame.id.0, "unknown or group destination, flooding");
                let outs = (0..self.ports.len())
                    .filter_map(|i| u16::try_from(i).ok().map(PortIndex))
                    .filter(|&p| p != in_port);
                for out in outs {
                    self.queue_out(out, in_port, frame.clone(), true, ctx);
                }
            }
        }
    }

    fn queue_out<M: From<MacMsg>>(
        &mut self,
        out: PortIndex,
        from: PortIndex,
        frame: Frame,
        flooded: bool,
        ctx: &mut Ctx<'_, M>,
    ) {
        let Some(p) = self.ports.get_mut(out.index()) else {
            self.bad_port(out, "forward");
            return;
        };
        let (id, bytes) = (frame.id, frame.len() as u64);
        if p.buffered + bytes > self.buffer_bytes {
            p.stats.buffer_drops += 1;
            tracing::debug!(target: "mac::switch", port = out.0, id = id.0, buffered = p.buffered, "output buffer full, dropped");
            return;
        }
        match p.tx.enqueue(frame, ctx) {
            Ok(()) => {
                p.stats.queued_out += 1;
                if flooded {
                    p.stats.flooded_out += 1;
                }
                self.admit(out, from, id, bytes, ctx);
            }
            Err(TxRefused::QueueFull(f)) => {
                p.stats.queue_drops += 1;
                tracing::debug!(target: "mac::switch", port = out.0, id = f.id.0, "output queue full, dropped");
            }
            Err(TxRefused::Empty(f)) => {
                p.stats.malformed_drops += 1;
                tracing::warn!(target: "mac::switch", port = out.0, id = f.id.0, "empty frame not forwarded");
            }
        }
    }

    /// Number of ports.
    #[must_use]
    pub fn port_count(&self) -> usize {
        self.ports.len()
    }

    /// What port `port` counted.
    #[must_use]
    pub fn port_stats(&self, port: PortIndex) -> Option<&SwitchPortStats> {
        self.ports.get(port.index()).map(|p| &p.stats)
    }

    /// Bytes held in the output buffer of port `port` now.
    #[must_use]
    pub fn buffered(&self, port: PortIndex) -> Option<u64> {
        self.ports.get(port.index()).map(|p| p.buffered)
    }

    /// The transmitter of port `port`.
    #[must_use]
    pub fn tx(&self, port: PortIndex) -> Option<&GmiiTx> {
        self.ports.get(port.index()).map(|p| &p.tx)
    }

    /// The transmitter of port `port`, to turn capture on or take captured frames.
    pub fn tx_mut(&mut self, port: PortIndex) -> Option<&mut GmiiTx> {
        self.ports.get_mut(port.index()).map(|p| &mut p.tx)
    }

    /// The receiver of port `port`.
    #[must_use]
    pub fn rx(&self, port: PortIndex) -> Option<&GmiiRx> {
        self.ports.get(port.index()).map(|p| &p.rx)
    }

    /// The learning table.
    #[must_use]
    pub fn table(&self) -> &LearningTable {
        &self.table
    }

    /// When frames are forwarded.
    #[must_use]
    pub fn mode(&self) -> ForwardingMode {
        self.mode
    }

    /// Messages it had no use for (wrong variant or port).
    #[must_use]
    pub fn unexpected(&self) -> u64 {
        self.unexpected
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::Link;
    use sim_kernel::ComponentId;

    #[test]
    fn port_count_is_checked() {
        let link = Link::default().attachment(ComponentId(0), PortIndex(0));
        let wire = WireParams::default();
        let params = SwitchParams::default();
        assert_eq!(
            Switch::new(&[link], &wire, &params).err(),
            Some(SwitchError::PortCount(1))
        );
        assert_eq!(
            Switch::new(&vec![link; 65], &wire, &params).err(),
            Some(SwitchError::PortCount(65))
        );
        let s = Switch::new(&vec![link; 64], &wire, &params).unwrap();
        assert_eq!(s.port_count(), 64);
        assert_eq!(s.tx(PortIndex(63)).map(GmiiTx::queued), Some(0));
        assert!(s.port_stats(PortIndex(64)).is_none());
    }

    #[test]
    fn machine_names_are_distinct() {
        let mut names = MACHINE_NAMES.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), MAX_PORTS);
        assert_eq!(MACHINE_NAMES[17], "switch.tx17");
    }
}
