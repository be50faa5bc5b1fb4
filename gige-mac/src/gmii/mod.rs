//! The GMII transmit side of a port ([`GmiiTx`]): a queue of frames and the state machine
//! that puts them on the wire one byte per 125 MHz clock (IEEE 802.3 clause 35), with the
//! preamble, SFD and inter-frame gap of clause 4.2.3 / 4.4.2.
//!
//! ```text
//!  edge:   T0                T0+8           T0+8+L            T0+8+L+IFG
//!  TXD:    | 55 x7 | D5 (SFD) | DA .. FCS (L) |   idle (IFG >= 12) | next preamble
//!  state:  Preamble ---------> Data ---------> Ifg ----------------> Preamble or Idle
//!          (TX_EN on)                          (TX_EN off)
//!  units: one GMII clock (8 ns) per byte
//! ```
//!
//! Event-driven but exact: the machine runs only on the edges where per-byte stepping would
//! change its state. A frame costs three wake-ups ([`MacMsg::TxWake`]): end of preamble,
//! end of FCS, end of gap; starting a frame from `Idle` happens on the edge the frame is
//! queued. Wake-ups have [`Priority::LATE`], so frames queued on the very edge a gap ends
//! are seen by that edge's decision whatever their insertion order (per-byte hardware
//! samples its queue after the edge's inputs settle). A test (`tests/gmii_reference.rs`)
//! proves the transitions and delivery times equal those of a per-byte stepping model.
//!
//! At the end of the preamble (when the frame's bytes are committed to the wire) the
//! transmitter schedules, through the link's latency, the frame's arrival at the far end:
//! [`MacMsg::RxStart`] when its first byte is complete on the far RXD and
//! [`MacMsg::RxEnd`] when its last is. The link is a pure delay line, so both can be
//! scheduled at once; this also keeps a zero-latency link exact. (A future mid-frame
//! transmit abort, e.g. a DP83820 FIFO underrun, would have to cut the frame short here.)

use crate::frame::Frame;
use crate::link::Attachment;
use crate::msg::{MacMsg, PortIndex};
use crate::params::WireParams;
use crate::rx::RxFrame;
use sim_kernel::{Bytes, Ctx, Cycles, Fsm, Priority, StateName, Time};
use std::collections::VecDeque;
use via_abi::ethernet::{PREAMBLE_LEN, SFD_LEN};

/// Preamble plus SFD \[bytes = GMII clocks\] (IEEE 802.3 clause 4.2.5: 7 + 1).
pub const PREAMBLE_SFD_BYTES: u64 = (PREAMBLE_LEN + SFD_LEN) as u64;

/// What the transmitter is putting on TXD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GmiiState {
    /// Nothing to send; TX_EN off.
    Idle,
    /// Preamble and SFD (8 clocks); TX_EN on.
    Preamble,
    /// Destination address through FCS; TX_EN on.
    Data,
    /// Inter-frame gap after the FCS; TX_EN off, no frame may start.
    Ifg,
}

impl StateName for GmiiState {
    fn name(self) -> &'static str {
        match self {
            GmiiState::Idle => "idle",
            GmiiState::Preamble => "preamble",
            GmiiState::Data => "data",
            GmiiState::Ifg => "ifg",
        }
    }
}

/// What a transmitter counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxStats {
    /// Frames sent completely (through the last FCS byte).
    pub frames: u64,
    /// Bytes of those frames after the SFD, FCS included.
    pub bytes: Bytes,
    /// Clocks with TX_EN on: preamble, SFD and frame bytes \[GMII cycles\].
    pub busy: Cycles,
    /// Clocks spent in the inter-frame gap \[GMII cycles\].
    pub ifg: Cycles,
    /// Frames refused because the queue was full.
    pub queue_drops: u64,
    /// Frames refused because they had no bytes.
    pub rejected: u64,
    /// Most frames ever waiting in the queue at once.
    pub max_queued: usize,
}

/// Why [`GmiiTx::enqueue`] refused a frame (the frame is handed back; it is also counted).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TxRefused {
    /// The queue already holds its capacity.
    #[error("transmit queue full; frame {} dropped", .0.id.0)]
    QueueFull(Frame),
    /// A frame without bytes cannot be sent.
    #[error("frame {} has no bytes", .0.id.0)]
    Empty(Frame),
}

/// A frame whose last FCS byte has left the transmitter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxDone {
    /// The frame.
    pub frame: Frame,
    /// Edge its first preamble byte went out on.
    pub start: Time,
    /// Edge after its last FCS byte (TX_EN off).
    pub end: Time,
}

/// A frame recorded by the transmitter's tap, for pcap files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Captured {
    /// Edge its first preamble byte went out on at this transmitter.
    pub at: Time,
    /// The frame (FCS included).
    pub frame: Frame,
}

#[derive(Clone, Debug)]
struct OnWire {
    frame: Frame,
    start: Time,
    rx_end: Time,
}

/// The GMII transmitter of one port, embedded in the component that owns the port (a MAC
/// port, each port of a switch). The owner routes [`MacMsg::TxWake`] for this port to
/// [`GmiiTx::wake`].
#[derive(Clone, Debug)]
pub struct GmiiTx {
    port: PortIndex,
    fsm: Fsm<GmiiState>,
    link: Attachment,
    min_ifg: u64,
    capacity: usize,
    queue: VecDeque<Frame>,
    on_wire: Option<OnWire>,
    stats: TxStats,
    capture: Option<Vec<Captured>>,
}

impl GmiiTx {
    /// A transmitter for port `port` of its owner, state machine named `machine` in traces,
    /// sending into `link`, holding at most `capacity` waiting frames.
    #[must_use]
    pub fn new(
        machine: &'static str,
        port: PortIndex,
        link: Attachment,
        wire: &WireParams,
        capacity: usize,
    ) -> Self {
        Self {
            port,
            fsm: Fsm::new(machine, GmiiState::Idle),
            link,
            min_ifg: u64::from(wire.min_ifg_bytes),
            capacity,
            queue: VecDeque::new(),
            on_wire: None,
            stats: TxStats::default(),
            capture: None,
        }
    }

    /// The current state.
    #[must_use]
    pub fn state(&self) -> GmiiState {
        self.fsm.state()
    }

    /// What it counted so far.
    #[must_use]
    pub fn stats(&self) -> &TxStats {
        &self.stats
    }

    /// Frames waiting (not counting the one on the wire).
    #[must_use]
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// The far end it sends to.
    #[must_use]
    pub fn link(&self) -> &Attachment {
        &self.link
    }

    /// Starts recording every frame it sends (for pcap).
    pub fn enable_capture(&mut self) {
        self.capture.get_or_insert_with(Vec::new);
    }

    /// The frames recorded since the last call (empty if capture is off).
    pub fn take_capture(&mut self) -> Vec<Captured> {
        self.capture
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Queues `frame`; starts sending it on this edge if the line is idle.
    ///
    /// # Errors
    /// [`TxRefused::Empty`] for a frame without bytes, [`TxRefused::QueueFull`] when
    /// `capacity` frames are already waiting. Both are counted.
    pub fn enqueue<M: From<MacMsg>>(
        &mut self,
        frame: Frame,
        ctx: &mut Ctx<'_, M>,
    ) -> Result<(), TxRefused> {
        if frame.is_empty() {
            self.stats.rejected += 1;
            tracing::warn!(target: "mac::gmii", port = self.port.0, id = frame.id.0, "empty frame refused");
            return Err(TxRefused::Empty(frame));
        }
        if self.queue.len() >= self.capacity {
            self.stats.queue_drops += 1;
            tracing::debug!(target: "mac::gmii", port = self.port.0, id = frame.id.0, queued = self.queue.len(), "queue full, frame dropped");
            return Err(TxRefused::QueueFull(frame));
        }
        self.queue.push_back(frame);
        self.stats.max_queued = self.stats.max_queued.max(self.queue.len());
        if self.fsm.state() == GmiiState::Idle {
            self.start_next(ctx);
        }
        Ok(())
    }

    /// Handles this port's [`MacMsg::TxWake`]: the state change due on this edge. Returns
    /// the frame that has just been sent completely, at the end of its FCS.
    pub fn wake<M: From<MacMsg>>(&mut self, ctx: &mut Ctx<'_, M>) -> Option<TxDone> {
        match self.fsm.state() {
            // Preamble and SFD are out: the frame's bytes start now.
            GmiiState::Preamble => {
                self.begin_data(ctx);
                None
            }
            // The last FCS byte is out: TX_EN off, the gap begins.
            GmiiState::Data => self.end_data(ctx),
            // The gap is over: next frame, or idle.
            GmiiState::Ifg => {
                self.stats.ifg += Cycles(self.min_ifg);
                self.after_gap(ctx);
                None
            }
            // No wake-up is ever scheduled in Idle; one arriving is a wiring bug.
            GmiiState::Idle => {
                tracing::warn!(target: "mac::gmii", port = self.port.0, "wake-up while idle ignored");
                None
            }
        }
    }

    fn wake_in<M: From<MacMsg>>(&self, n: u64, ctx: &mut Ctx<'_, M>) {
        ctx.wake_after_with(
            Cycles(n),
            Priority::LATE,
            MacMsg::TxWake { port: self.port }.into(),
        );
    }

    fn start_next<M: From<MacMsg>>(&mut self, ctx: &mut Ctx<'_, M>) {
        let Some(frame) = self.queue.pop_front() else {
            self.fsm.set(GmiiState::Idle, ctx);
            return;
        };
        let now = ctx.now();
        tracing::debug!(target: "mac::gmii", port = self.port.0, id = frame.id.0, len = frame.len(), at = %now, "preamble");
        if let Some(cap) = self.capture.as_mut() {
            cap.push(Captured {
                at: now,
                frame: frame.clone(),
            });
        }
        self.on_wire = Some(OnWire {
            frame,
            start: now,
            rx_end: now,
        });
        self.fsm.set(GmiiState::Preamble, ctx);
        self.wake_in(PREAMBLE_SFD_BYTES, ctx);
    }

    fn begin_data<M: From<MacMsg>>(&mut self, ctx: &mut Ctx<'_, M>) {
        let Some(w) = self.on_wire.as_mut() else {
            tracing::warn!(target: "mac::gmii", port = self.port.0, "data phase without a frame");
            self.fsm.set(GmiiState::Idle, ctx);
            return;
        };
        let now = ctx.now();
        let byte = ctx.my_domain().period();
        let len = w.frame.len() as u64;
        // Byte k goes out in [now + k*byte, now + (k+1)*byte) and is complete on the far
        // RXD `latency` after the end of its clock, on the receiver's next edge.
        let peer = ctx.domain_of(self.link.peer);
        let first = peer.edge_at_or_after(now + byte + self.link.latency);
        let last = peer.edge_at_or_after(now + byte * len + self.link.latency);
        w.rx_end = last;
        let rx = RxFrame::new(w.frame.clone(), first, last, byte);
        tracing::trace!(target: "mac::phy", id = w.frame.id.0, peer = %self.link.peer, first = %first, last = %last, "frame on the link");
        let (peer_id, port) = (self.link.peer, self.link.peer_port);
        ctx.send_at(
            peer_id,
            first,
            MacMsg::RxStart {
                port,
                frame: rx.clone(),
            }
            .into(),
        );
        ctx.send_at(peer_id, last, MacMsg::RxEnd { port, frame: rx }.into());
        self.fsm.set(GmiiState::Data, ctx);
        self.wake_in(len, ctx);
    }

    fn end_data<M: From<MacMsg>>(&mut self, ctx: &mut Ctx<'_, M>) -> Option<TxDone> {
        let now = ctx.now();
        let done = self.on_wire.take().map(|w| {
            let len = w.frame.len() as u64;
            self.stats.frames += 1;
            self.stats.bytes.0 += len;
            self.stats.busy += Cycles(PREAMBLE_SFD_BYTES + len);
            ctx.span(w.frame.msg, "gmii tx", w.start, now);
            ctx.span(w.frame.msg, "phy+cable+phy", now, w.rx_end);
            tracing::debug!(target: "mac::gmii", port = self.port.0, id = w.frame.id.0, at = %now, "end of frame");
            TxDone {
                frame: w.frame,
                start: w.start,
                end: now,
            }
        });
        self.fsm.set(GmiiState::Ifg, ctx);
        if self.min_ifg == 0 {
            self.after_gap(ctx);
        } else {
            self.wake_in(self.min_ifg, ctx);
        }
        done
    }

    fn after_gap<M: From<MacMsg>>(&mut self, ctx: &mut Ctx<'_, M>) {
        if self.queue.is_empty() {
            self.fsm.set(GmiiState::Idle, ctx);
        } else {
            self.start_next(ctx);
        }
    }
}
