//! IEEE 802.3x flow control of the DP83820's MAC side ([`super::Dp83820Mac`]):
//! sending PAUSE when its RX FIFO fills, consuming and obeying PAUSE frames it receives.
//! Parameters: [`FlowControl`] (sources there).
//!
//! ```text
//!  RX FIFO occupancy (bytes of admitted frames, FCS included)
//!   32 KB ---------------------------------------------- full: frames dropped (RXORN)
//!   high_water  -- good frame admitted, occupancy above --> PAUSE(pause_quanta)   [xoff]
//!                  still xoff half its pause_time after it left, bytes drained since
//!                                                       --> PAUSE(pause_quanta) again
//!   low_water   -- bytes drained, occupancy below, xoff --> PAUSE(0) (resume)     [xon]
//!   0
//! ```
//!
//! **Sending.** A PAUSE is a MAC Control frame built by [`crate::pause::build_pause`]
//! (source address: [`super::Dp83820Mac::set_station_address`], else learned from the
//! first unicast source address it transmits or destination address it receives: the
//! station address of its perfect-match filter, which the model does not hold, is the
//! address the FPGA puts in its frames and the peer sends to). It is handed to the GMII
//! transmitter ahead
//! of every queued data frame ([`crate::GmiiTx::enqueue_control`]), so it goes out at the
//! transmitter's next frame boundary, also while the transmitter is itself paused. The
//! high-water mark is checked when a good frame is admitted (the model counts a frame in
//! the FIFO at its end: one frame later than hardware counting bytes, covered by the
//! mark's margin), the low-water mark when the bus side reports bytes drained.
//! Choice (brief): resume explicitly at the low-water mark *and* re-send while above it,
//! so the peer resumes as soon as there is room and does not resume early. The re-send is
//! due half a `pause_time` after the last PAUSE left; it goes out then if the bus side
//! has drained bytes since that PAUSE, else at the next drain (or the next admission
//! above the high-water mark). A receiver that has stopped altogether (the host never
//! gives buffers back) thus stops the re-sends: the peer resumes when the last pause
//! expires and overflows are counted as without flow control, and the simulation can
//! go idle instead of exchanging PAUSE frames for ever.
//!
//! **Receiving.** A frame whose Length/Type is 0x8808 is a MAC Control frame: it is
//! recognised from its header as it starts (the receive filter decides on the first 14
//! bytes; the bus side, whose DMA starts at RXCFG DRTH >= 8 bytes, never sees it in the
//! model) and consumed: never put in the RX FIFO nor handed to the bus side. At its end,
//! if its FCS is good and it is a PAUSE to 01-80-C2-00-00-01 and flow control is on,
//! the transmitter's gate is set ([`crate::GmiiTx::pause`]) from that edge: IEEE 802.3
//! Annex 31B.3.7, the frame in progress completes, no new data frame starts for
//! `pause_time` x 512 bit times. Other MAC Control frames are counted and dropped.
//! PAUSE frames carry no message id and leave no trace spans.

use super::mac::Dp83820Mac;
use super::params::FlowControl;
use crate::frame::{Frame, FrameId};
use crate::gmii::TxDone;
use crate::msg::MacMsg;
use crate::pause::{build_pause, is_mac_control, parse, MacControl, QUANTUM_BYTES};
use crate::rx::RxFrame;
use sim_kernel::{Ctx, MsgId, Time};
use std::collections::VecDeque;
use via_abi::ethernet::MacAddr;

/// The message id PAUSE frames carry: none (they belong to no message).
pub const CONTROL_MSG: MsgId = MsgId(u64::MAX);

/// Offset of MAC Control frame ids above the card's data frame ids.
const CONTROL_ID_OFFSET: u64 = 1 << 31;

/// Flow-control state of one MAC side.
#[derive(Clone, Debug, Default)]
pub(super) struct FlowState {
    /// A PAUSE asked the peer to stop and no resume has been sent since.
    xoff: bool,
    /// When the PAUSE is due to be re-sent (its wake-up is pending).
    refresh_at: Option<Time>,
    /// The re-send is due but waits for the receiver to make progress.
    refresh_due: bool,
    /// Bytes left the FIFO since the last PAUSE went out.
    drained: bool,
    /// PAUSE frames handed to the transmitter and not sent yet: id, `pause_time`.
    in_flight: VecDeque<(FrameId, u16)>,
    /// PAUSE frames built so far (frame ids).
    built: u64,
    /// Source address of the PAUSE frames.
    station: Option<MacAddr>,
    /// The frame arriving is a MAC Control frame.
    pub(super) rx_control: bool,
}

impl Dp83820Mac {
    /// Sets the station address its PAUSE frames carry as source (otherwise learned from
    /// the frames it sends and receives: see the module doc).
    pub fn set_station_address(&mut self, addr: MacAddr) {
        self.fc.station = Some(addr);
    }

    /// Whether it has asked its peer to pause and not yet to resume.
    #[must_use]
    pub fn pausing_peer(&self) -> bool {
        self.fc.xoff
    }

    /// Its flow-control parameters.
    #[must_use]
    pub fn flow_control(&self) -> &FlowControl {
        &self.flow
    }

    /// Takes `addr` as its station address if it has none yet and `addr` is unicast.
    pub(super) fn learn_station(&mut self, addr: Option<MacAddr>) {
        if self.fc.station.is_none() {
            self.fc.station = addr.filter(|a| !a.is_multicast());
        }
    }

    /// A frame starts on RXD: whether it is a MAC Control frame, to be consumed here (then
    /// its start is given to the receiver and its `RxData`/`RxEnd` come to
    /// [`Self::control_end`]).
    pub(super) fn control_start(&mut self, frame: &RxFrame) -> bool {
        self.fc.rx_control = is_mac_control(frame.known());
        if self.fc.rx_control {
            self.rx.start(frame);
        }
        self.fc.rx_control
    }

    /// The MAC Control frame ended: check it, act on a PAUSE.
    pub(super) fn control_end<M: From<MacMsg>>(&mut self, frame: RxFrame, ctx: &mut Ctx<'_, M>) {
        self.fc.rx_control = false;
        let got = match self.rx.end(frame, ctx.now()) {
            Ok(r) => parse(r.frame.bytes()),
            Err(e) => {
                self.count_bad(&e);
                tracing::debug!(target: "mac::rx", error = %e, "bad MAC Control frame dropped");
                return;
            }
        };
        match got {
            Some(MacControl::Pause { quanta }) if self.flow.enabled => {
                self.stats.pause_received += 1;
                self.tx.pause(quanta, ctx);
            }
            other => {
                self.stats.control_ignored += 1;
                tracing::debug!(target: "mac::rx", ?other, "MAC Control frame consumed, not acted on");
            }
        }
    }

    /// A good frame was admitted to the RX FIFO: above the high-water mark, ask the peer
    /// to pause.
    pub(super) fn flow_after_admit<M: From<MacMsg>>(&mut self, ctx: &mut Ctx<'_, M>) {
        if !self.flow.enabled || self.rx_fifo_used <= self.flow.high_water {
            return;
        }
        if !self.fc.xoff {
            self.fc.xoff = true;
            tracing::debug!(target: "mac::rx", used = self.rx_fifo_used, "RX FIFO above high water: PAUSE");
            self.send_pause(self.flow.pause_quanta, ctx);
        } else if self.fc.refresh_due {
            self.resend(ctx);
        }
    }

    /// Bytes left the RX FIFO: below the low-water mark after a PAUSE, let the peer resume.
    pub(super) fn flow_after_drain<M: From<MacMsg>>(&mut self, ctx: &mut Ctx<'_, M>) {
        self.fc.drained = true;
        if !self.fc.xoff {
            return;
        }
        if self.rx_fifo_used < self.flow.low_water {
            self.fc.xoff = false;
            self.fc.refresh_at = None;
            self.fc.refresh_due = false;
            tracing::debug!(target: "mac::rx", used = self.rx_fifo_used, "RX FIFO below low water: resume");
            self.send_pause(0, ctx);
        } else if self.fc.refresh_due {
            self.resend(ctx);
        }
    }

    /// [`MacMsg::MacPauseRefresh`]: the re-send is due; it goes out if the receiver made
    /// progress since the last PAUSE, else at its next progress.
    pub(super) fn pause_refresh<M: From<MacMsg>>(&mut self, ctx: &mut Ctx<'_, M>) {
        if self.fc.refresh_at.is_none_or(|t| t > ctx.now()) {
            return; // stale
        }
        self.fc.refresh_at = None;
        if !self.fc.xoff {
            return;
        }
        if self.fc.drained {
            self.resend(ctx);
        } else {
            self.fc.refresh_due = true;
        }
    }

    fn resend<M: From<MacMsg>>(&mut self, ctx: &mut Ctx<'_, M>) {
        self.fc.refresh_due = false;
        self.stats.pause_refreshes += 1;
        self.send_pause(self.flow.pause_quanta, ctx);
    }

    fn send_pause<M: From<MacMsg>>(&mut self, quanta: u16, ctx: &mut Ctx<'_, M>) {
        let src = self.fc.station.unwrap_or(MacAddr([0; 6]));
        let Ok(bytes) = build_pause(src, quanta) else {
            return;
        };
        let id = FrameId(
            self.id_base
                .wrapping_add(CONTROL_ID_OFFSET)
                .wrapping_add(self.fc.built),
        );
        self.fc.built += 1;
        if self
            .tx
            .enqueue_control(Frame::new(id, CONTROL_MSG, bytes), ctx)
            .is_err()
        {
            self.stats.tx_refused += 1;
            return;
        }
        self.fc.in_flight.push_back((id, quanta));
        if quanta == 0 {
            self.stats.resume_sent += 1;
        } else {
            self.stats.pause_sent += 1;
        }
    }

    /// The transmitter finished `done`: if it was one of its PAUSE frames, plans the
    /// re-send and returns true.
    pub(super) fn control_sent<M: From<MacMsg>>(
        &mut self,
        done: &TxDone,
        ctx: &mut Ctx<'_, M>,
    ) -> bool {
        let Some(pos) = self
            .fc
            .in_flight
            .iter()
            .position(|(id, _)| *id == done.frame.id)
        else {
            return false;
        };
        let quanta = self.fc.in_flight.remove(pos).map_or(0, |(_, q)| q);
        if quanta > 0 && self.fc.xoff {
            self.fc.drained = false;
            self.fc.refresh_due = false;
            let byte = ctx.my_domain().period();
            let at = done.end + byte * (u64::from(quanta) * QUANTUM_BYTES / 2);
            self.fc.refresh_at = Some(at);
            ctx.wake_at(at, MacMsg::MacPauseRefresh.into());
        }
        true
    }
}
