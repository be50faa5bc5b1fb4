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
//! queued. With the lazy gap ([`GmiiTx::set_lazy_gap`]), a gap with nothing queued
//! behind it costs no wake-up: its place is reserved and used only if a frame comes
//! before it. Wake-ups have [`Priority::LATE`], so frames queued on the very edge a gap ends
//! are seen by that edge's decision whatever their insertion order (per-byte hardware
//! samples its queue after the edge's inputs settle). A test (`tests/gmii_reference.rs`)
//! proves the transitions and delivery times equal those of a per-byte stepping model.
//!
//! At the end of the preamble (when the frame's bytes are committed to the wire) the
//! transmitter schedules, through the link's latency, the frame's arrival at the far end:
//! [`MacMsg::RxStart`] when its first byte is complete on the far RXD and
//! [`MacMsg::RxEnd`] when its last is. The link is a pure delay line, so both can be
//! scheduled at once; this also keeps a zero-latency link exact.
//!
//! **Faults on the wire** ([`crate::fault`], [`GmiiTx::set_faults`]): at the end of the
//! preamble the frame's fate is decided; the far end is told only what arrives (nothing
//! of a lost frame; a truncated frame's first bytes, ending at the cut; inverted bits).
//! Frames duplicated or held back for reordering go through the far end's line
//! ([`crate::fault::order`], `reorder`). Without faults installed nothing of this runs.
//!
//! **Flow control** ([`pause`]): a received PAUSE closes a gate on *starting* data frames
//! until a given edge (state `Paused` while a frame waits); MAC Control frames queued with
//! [`GmiiTx::enqueue_control`] go ahead of data frames and pass the gate.
//!
//! **Streamed frames** ([`stream`]): a MAC that starts a frame before all its bytes are in
//! its FIFO (cut-through: the DP83820 below its drain threshold) queues a prefix with
//! [`GmiiTx::enqueue_partial`] and appends with [`GmiiTx::extend`]. `RxStart` then carries
//! a partial [`RxFrame`]; each extension while the frame is on the wire sends
//! [`MacMsg::RxData`] (landing no sooner than the first byte, so after `RxStart`), and
//! `RxEnd` is sent when the last byte is known. A byte not known by the edge it is due
//! on TXD is a FIFO **underrun**: the rest of the frame goes out as zeros with an
//! inverted FCS (the timing does not change; the receiver sees an FCS error) and
//! [`TxDone::underrun`] says so.

use crate::fault::{FrameFate, WireFaults};
use crate::frame::Frame;
use crate::link::Attachment;
use crate::msg::{MacMsg, PortIndex};
use crate::params::WireParams;
use crate::rx::RxFrame;
use sim_kernel::{Ctx, Cycles, Duration, EventKey, Fsm, Priority, StateName, Time};
use std::collections::VecDeque;
use via_abi::ethernet::{PREAMBLE_LEN, SFD_LEN};

pub mod pause;
mod reorder;
pub mod stream;
pub mod types;

pub use types::{Captured, TxDone, TxRefused, TxStats};

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
    /// A data frame waits but a received PAUSE forbids starting it (IEEE 802.3 Annex
    /// 31B.3.7); TX_EN off. MAC Control frames may still start.
    Paused,
}

impl StateName for GmiiState {
    fn name(self) -> &'static str {
        match self {
            GmiiState::Idle => "idle",
            GmiiState::Preamble => "preamble",
            GmiiState::Data => "data",
            GmiiState::Ifg => "ifg",
            GmiiState::Paused => "paused",
        }
    }
}

/// A frame waiting in the queue: the bytes known so far and its length on the wire.
#[derive(Clone, Debug)]
struct Queued {
    frame: Frame,
    total: usize,
    /// A MAC Control frame: ahead of data frames, not held by a pause, no trace spans.
    control: bool,
}

/// The frame being sent.
#[derive(Clone, Debug)]
struct OnWire {
    frame: Frame,
    total: usize,
    start: Time,
    /// Edge its first byte after the SFD goes out (end of preamble).
    data_at: Time,
    /// When its first byte is complete at the far end (`RxStart`).
    rx_first: Time,
    rx_end: Time,
    /// `RxStart` has been sent (the frame is past its preamble).
    announced: bool,
    underrun: bool,
    control: bool,
    /// What the wire does to it (`None`: it arrives intact; always `None` without
    /// faults installed).
    fate: Option<FrameFate>,
    /// The far end has been told the end of what arrives of it (a truncated frame
    /// ends before the transmitter's last byte).
    told_end: bool,
    /// When the last byte that arrives of a truncated frame is complete at the far end.
    cut_end: Time,
    /// When the first byte of its copy is complete at the far end (a duplicated frame).
    copy_first: Time,
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
    queue: VecDeque<Queued>,
    on_wire: Option<OnWire>,
    stats: TxStats,
    capture: Option<Vec<Captured>>,
    /// Data frames may not start before this edge (a received PAUSE).
    paused_until: Time,
    /// When the current `Paused` stretch began.
    paused_since: Option<Time>,
    /// The edge of the latest `TxPauseEnd` wake-up asked for.
    pause_wake: Option<Time>,
    /// Faults on the wire in this direction ([`crate::fault`]); `None`: a perfect link.
    faults: Option<Box<WireFaults>>,
    /// Whether a gap with nothing queued after it ends without a wake-up
    /// ([`GmiiTx::set_lazy_gap`]).
    lazy_gap: bool,
    /// The place of the end-of-gap wake-up not queued (its sequence number reserved).
    gap: Option<EventKey>,
    /// Test hook: a reserved end-of-gap wake-up queued this many clocks late.
    gap_skew: u64,
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
            paused_until: Time::ZERO,
            paused_since: None,
            pause_wake: None,
            faults: None,
            lazy_gap: false,
            gap: None,
            gap_skew: 0,
        }
    }

    /// With `on`, a gap after a frame with no frame queued behind it ends without a
    /// wake-up (untraced, no reordering or duplicating faults on the wire, which may hold
    /// a frame back for the gap's end to release): the transmitter reserves the place the
    /// wake-up would have had ([`Ctx::reserve_sequence`]) and queues it there only if a
    /// frame is queued before that place ([`Ctx::wake_at_place`]); a frame queued after
    /// it finds the line idle, as the wake-up would have left it (`after_gap` with an
    /// empty queue), and the gap is counted then. Every event keeps its place in the
    /// run's order. The owner calls [`GmiiTx::settle`] where a run ends.
    pub fn set_lazy_gap(&mut self, on: bool) {
        self.lazy_gap = on;
    }

    /// Test hook: a reserved end-of-gap wake-up is queued `clocks` late (a model error
    /// the lockstep harness must catch).
    pub fn set_lazy_gap_skew_clocks(&mut self, clocks: u64) {
        self.gap_skew = clocks;
    }

    /// Where a run ends, every event at or before `until` delivered: a gap whose
    /// wake-up was not queued and whose end lies within the run is over, as the
    /// wake-up would have made it.
    pub fn settle(&mut self, until: Time) {
        if self.gap.is_some_and(|g| g.time <= until) {
            self.gap = None;
            self.gap_over();
        }
    }

    /// A gap whose wake-up was not queued, with nothing queued since, is over: what
    /// `after_gap` does with an empty queue (no frame held back: no reordering faults),
    /// untraced.
    fn gap_over(&mut self) {
        self.stats.ifg += Cycles(self.min_ifg);
        self.fsm.set(GmiiState::Idle, &mut Untraced);
    }

    /// Before a frame is queued: the gap whose wake-up was not queued is either over
    /// (its place has passed: the line is idle) or still running (its wake-up is queued
    /// now, at its place).
    fn settle_gap<M: From<MacMsg>>(&mut self, ctx: &mut Ctx<'_, M>) {
        let Some(g) = self.gap.take() else {
            return;
        };
        if ctx.event_key() > g {
            self.gap_over();
        } else {
            let place = EventKey {
                time: g.time + ctx.my_domain().period() * self.gap_skew,
                ..g
            };
            ctx.wake_at_place(place, MacMsg::TxWake { port: self.port }.into());
        }
    }

    /// Installs faults on the wire this transmitter sends into (see [`crate::fault`]).
    /// Faults whose parameters are all off are not installed: a perfect link costs
    /// nothing.
    pub fn set_faults(&mut self, faults: WireFaults) {
        self.faults = (!faults.params().is_off()).then(|| Box::new(faults));
    }

    /// The faults on its wire, if any are installed (parameters and counters).
    #[must_use]
    pub fn faults(&self) -> Option<&WireFaults> {
        self.faults.as_deref()
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
        let total = frame.len();
        self.push(frame, total, false, ctx)
    }

    fn push<M: From<MacMsg>>(
        &mut self,
        frame: Frame,
        total: usize,
        control: bool,
        ctx: &mut Ctx<'_, M>,
    ) -> Result<(), TxRefused> {
        if total == 0 {
            self.stats.rejected += 1;
            tracing::warn!(target: "mac::gmii", port = self.port.0, id = frame.id.0, "empty frame refused");
            return Err(TxRefused::Empty(frame));
        }
        if self.queue.len() >= self.capacity {
            self.stats.queue_drops += 1;
            tracing::debug!(target: "mac::gmii", port = self.port.0, id = frame.id.0, queued = self.queue.len(), "queue full, frame dropped");
            return Err(TxRefused::QueueFull(frame));
        }
        self.settle_gap(ctx);
        let item = Queued {
            frame,
            total,
            control,
        };
        if control {
            // Behind earlier MAC Control frames, ahead of every data frame.
            let at = self.queue.iter().take_while(|q| q.control).count();
            self.queue.insert(at, item);
        } else {
            self.queue.push_back(item);
        }
        self.stats.max_queued = self.stats.max_queued.max(self.queue.len());
        let state = self.fsm.state();
        if state == GmiiState::Idle || (state == GmiiState::Paused && control) {
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
            // No wake-up is ever scheduled in Idle or Paused (the pause's end is
            // `TxPauseEnd`); one arriving is a wiring bug.
            GmiiState::Idle | GmiiState::Paused => {
                self.stats.unexpected_wakes += 1;
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
        let now = ctx.now();
        let Some(head) = self.queue.front() else {
            self.leave_pause(ctx);
            self.fsm.set(GmiiState::Idle, ctx);
            return;
        };
        if !head.control && now < self.paused_until {
            self.hold(ctx);
            return;
        }
        self.leave_pause(ctx);
        let Some(Queued {
            frame,
            total,
            control,
        }) = self.queue.pop_front()
        else {
            return;
        };
        let byte = ctx.my_domain().period();
        tracing::debug!(target: "mac::gmii", port = self.port.0, id = frame.id.0, len = total, at = %now, "preamble");
        self.on_wire = Some(OnWire {
            frame,
            total,
            start: now,
            data_at: now + byte * PREAMBLE_SFD_BYTES,
            rx_first: now,
            rx_end: now,
            announced: false,
            underrun: false,
            control,
            fate: None,
            told_end: false,
            cut_end: now,
            copy_first: now,
        });
        self.fsm.set(GmiiState::Preamble, ctx);
        self.wake_in(PREAMBLE_SFD_BYTES, ctx);
    }

    fn begin_data<M: From<MacMsg>>(&mut self, ctx: &mut Ctx<'_, M>) {
        let now = ctx.now();
        let byte = ctx.my_domain().period();
        let link = self.link;
        let peer = ctx.domain_of(link.peer);
        let Some(w) = self.on_wire.as_mut() else {
            self.stats.unexpected_wakes += 1;
            tracing::warn!(target: "mac::gmii", port = self.port.0, "data phase without a frame");
            self.fsm.set(GmiiState::Idle, ctx);
            return;
        };
        let len = w.total as u64;
        // Byte k goes out in [now + k*byte, now + (k+1)*byte) and is complete on the far
        // RXD `latency` after the end of its clock, on the receiver's next edge.
        w.data_at = now;
        w.rx_first = peer.edge_at_or_after(now + byte + link.latency);
        w.rx_end = peer.edge_at_or_after(now + byte * len + link.latency);
        w.announced = true;
        if let Some(f) = self.faults.as_mut() {
            w.fate = f.fate(w.start, now, byte, w.total);
            if let Some(cut) = w.fate.as_ref().and_then(|f| f.cut) {
                w.cut_end = peer.edge_at_or_after(now + byte * cut as u64 + link.latency);
            }
            if f.params().reorders() {
                reorder::place(w, f, byte, byte * self.min_ifg);
            }
        }
        if w.frame.is_empty() {
            // Not even the first byte is in: underrun on the first data clock.
            stream::corrupt_rest(w, self.port);
        }
        tracing::trace!(target: "mac::phy", id = w.frame.id.0, peer = %link.peer, first = %w.rx_first, last = %w.rx_end, fate = ?w.fate, "frame on the link");
        tell_far_end(
            w,
            link,
            byte,
            |port, frame| MacMsg::RxStart { port, frame },
            ctx,
        );
        // A frame held back before this one follows it (unless this one is held).
        let overtakes = w.fate.as_ref().map_or(Some(true), |f| {
            (!f.hold).then_some(!f.lost && f.cut.is_none())
        });
        if let Some(overtaken) = overtakes {
            self.release_held(overtaken, ctx);
        }
        self.fsm.set(GmiiState::Data, ctx);
        self.wake_in(len, ctx);
    }

    fn end_data<M: From<MacMsg>>(&mut self, ctx: &mut Ctx<'_, M>) -> Option<TxDone> {
        let now = ctx.now();
        if self
            .on_wire
            .as_ref()
            .is_some_and(|w| w.frame.len() < w.total)
        {
            // The last bytes never came: everything still missing was an underrun.
            self.complete_underrun(ctx);
        }
        self.hold_if_held(ctx);
        let done = self.on_wire.take().map(|w| {
            let len = w.frame.len() as u64;
            self.stats.frames += 1;
            self.stats.bytes.0 += len;
            self.stats.busy += Cycles(PREAMBLE_SFD_BYTES + len);
            if w.underrun {
                self.stats.underruns += 1;
            }
            if !w.control {
                ctx.span(w.frame.msg, "gmii tx", w.start, now);
                // A frame lost or cut short on the wire never completes at the far end.
                if w
                    .fate
                    .as_ref()
                    .is_none_or(|f| !f.lost && f.cut.is_none() && !f.hold)
                {
                    ctx.span(w.frame.msg, "phy+cable+phy", now, w.rx_end);
                }
            }
            tracing::debug!(target: "mac::gmii", port = self.port.0, id = w.frame.id.0, at = %now, "end of frame");
            if let Some(cap) = self.capture.as_mut() {
                cap.push(Captured {
                    at: w.start,
                    frame: w.frame.clone(),
                });
            }
            TxDone {
                frame: w.frame,
                start: w.start,
                end: now,
                underrun: w.underrun,
            }
        });
        self.fsm.set(GmiiState::Ifg, ctx);
        if self.min_ifg == 0 {
            self.after_gap(ctx);
        } else if self.lazy_gap
            && self.queue.is_empty()
            && self.faults.as_ref().is_none_or(|f| !f.params().reorders())
            && !ctx.tracing()
        {
            // Reserved where `wake_in` would push: the wake-up's own place.
            self.gap = Some(EventKey {
                time: now + ctx.my_domain().period() * self.min_ifg,
                priority: Priority::LATE,
                sequence: ctx.reserve_sequence(),
            });
        } else {
            self.wake_in(self.min_ifg, ctx);
        }
        done
    }

    fn after_gap<M: From<MacMsg>>(&mut self, ctx: &mut Ctx<'_, M>) {
        if self.queue.is_empty() {
            // Nothing follows a frame held back and it waits for no timer: it goes now.
            if self
                .faults
                .as_ref()
                .is_some_and(|f| f.params().reorder_hold == Duration::ZERO)
            {
                self.release_held(false, ctx);
            }
            self.fsm.set(GmiiState::Idle, ctx);
        } else {
            self.start_next(ctx);
        }
    }
}

/// Schedules at the far end of `link` what is known of the frame on the wire `w`: `first`
/// (`RxStart` or `RxData`) when its first byte is complete there, and `RxEnd` when its
/// last byte is, once the frame is whole. With a fate on the wire, only what arrives:
/// nothing of a lost frame, a truncated frame's first bytes (then its end, at the
/// cut), bits inverted.
fn tell_far_end<M: From<MacMsg>>(
    w: &mut OnWire,
    link: Attachment,
    byte: Duration,
    first: fn(PortIndex, RxFrame) -> MacMsg,
    ctx: &mut Ctx<'_, M>,
) {
    if w.told_end {
        return; // a truncated frame's end has been told; its later bytes never arrive
    }
    let rx = match &w.fate {
        None => RxFrame::partial(w.frame.clone(), w.total, w.rx_first, w.rx_end, byte),
        Some(f) if f.lost || f.hold => return,
        Some(f) => {
            let total = f.arriving(w.total);
            let end = if total < w.total { w.cut_end } else { w.rx_end };
            RxFrame::partial(f.apply(&w.frame), total, w.rx_first, end, byte)
        }
    };
    let whole = rx.is_whole();
    let end_at = rx.last_byte_at();
    ctx.send_at(
        link.peer,
        w.rx_first,
        first(link.peer_port, rx.clone()).into(),
    );
    if whole {
        w.told_end = true;
        let end = MacMsg::RxEnd {
            port: link.peer_port,
            frame: rx,
        };
        ctx.send_at(link.peer, end_at, end.into());
        if let Some(f) = w.fate.as_ref().filter(|f| f.duplicate) {
            reorder::deliver(link, f.apply(&w.frame), w.copy_first, byte, ctx);
        }
    }
}

/// A transition sink that records nothing (the lazy gap ends only in untraced runs,
/// outside any event).
struct Untraced;

impl sim_kernel::TransitionSink for Untraced {
    fn record_transition(&mut self, _: &'static str, _: &'static str, _: &'static str) {}

    fn records_transitions(&self) -> bool {
        false
    }
}
