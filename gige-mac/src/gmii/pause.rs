//! The PAUSE gate of a [`GmiiTx`] (IEEE 802.3 Annex 31B.3.7) and MAC Control frames
//! ahead of data frames.
//!
//! ```text
//!  pause(q) at edge R:  data frames may not start before R + q x 64 clocks (q x 512 ns)
//!     frame in progress (preamble, data, IFG): completes, the gate is checked after its gap
//!     next data frame:  starts at max(end of gap, R + q x 64 clocks)
//!     pause(0):         gate open at once (resume)
//!     a later pause(q'): replaces the timer: R' + q' x 64 clocks, longer or shorter
//!  Idle --data frame queued, gate closed--> Paused --TxPauseEnd at the gate's edge--> Preamble
//!  enqueue_control(f):  queued behind earlier control frames, ahead of all data frames,
//!                       starts at the next frame boundary even while paused
//! ```
//!
//! Event-driven and exact to the clock: the gate is one edge (`paused_until`); a waiting
//! data frame costs one wake-up, [`MacMsg::TxPauseEnd`] at that edge with
//! [`Priority::LATE`] (like every wake-up of the transmitter, so frames queued on that edge
//! are seen). A pause that is cut short or extended leaves its earlier wake-up stale: a
//! `TxPauseEnd` is acted on only in `Paused` at or after the gate's edge. A PAUSE that
//! lands on the very edge a gap ends closes the gate before that edge's decision (its
//! `RxEnd` has normal priority, the gap's end `LATE`). Time spent in `Paused` is counted
//! in [`TxStats::paused`](super::TxStats::paused).

use super::{GmiiState, GmiiTx, TxRefused};
use crate::frame::Frame;
use crate::msg::MacMsg;
use crate::pause::QUANTUM_BYTES;
use sim_kernel::{Ctx, Cycles, Priority, Time};

impl GmiiTx {
    /// A valid PAUSE with `pause_time` `quanta` was received on this edge: no data frame
    /// may start for `quanta` x 512 bit times (64 clocks each) from now; 0 lifts a pause.
    /// The frame in progress is not affected.
    pub fn pause<M: From<MacMsg>>(&mut self, quanta: u16, ctx: &mut Ctx<'_, M>) {
        let now = ctx.now();
        let byte = ctx.my_domain().period();
        self.paused_until = now + byte * (u64::from(quanta) * QUANTUM_BYTES);
        tracing::debug!(target: "mac::gmii", port = self.port.0, quanta, until = %self.paused_until, "pause received");
        if self.fsm.state() == GmiiState::Paused {
            // Re-decide now: resume at once, or wait for the new edge.
            self.start_next(ctx);
        }
    }

    /// Handles this port's [`MacMsg::TxPauseEnd`]: starts the waiting frame if the pause
    /// is over (stale wake-ups are ignored).
    pub fn pause_end<M: From<MacMsg>>(&mut self, ctx: &mut Ctx<'_, M>) {
        let now = ctx.now();
        if self.pause_wake == Some(now) {
            self.pause_wake = None;
        }
        if self.fsm.state() == GmiiState::Paused && now >= self.paused_until {
            self.start_next(ctx);
        }
    }

    /// Queues a MAC Control frame (a PAUSE) ahead of every waiting data frame: it starts
    /// at the next frame boundary, or on this edge if the line is idle or paused.
    ///
    /// # Errors
    /// As [`GmiiTx::enqueue`].
    pub fn enqueue_control<M: From<MacMsg>>(
        &mut self,
        frame: Frame,
        ctx: &mut Ctx<'_, M>,
    ) -> Result<(), TxRefused> {
        let total = frame.len();
        self.push(frame, total, true, ctx)
    }

    /// The edge before which no data frame may start (in the past when not paused).
    #[must_use]
    pub fn paused_until(&self) -> Time {
        self.paused_until
    }

    /// A data frame waits behind the closed gate: `Paused`, woken at the gate's edge.
    pub(super) fn hold<M: From<MacMsg>>(&mut self, ctx: &mut Ctx<'_, M>) {
        let now = ctx.now();
        if self.fsm.state() != GmiiState::Paused {
            self.paused_since = Some(now);
            self.fsm.set(GmiiState::Paused, ctx);
        }
        let until = self.paused_until;
        if self.pause_wake == Some(until) {
            return;
        }
        let period = ctx.my_domain().period().as_ps().max(1);
        let clocks = until.saturating_since(now).as_ps().div_ceil(period);
        self.pause_wake = Some(until);
        ctx.wake_after_with(
            Cycles(clocks),
            Priority::LATE,
            MacMsg::TxPauseEnd { port: self.port }.into(),
        );
    }

    /// Counts the `Paused` stretch that ends on this edge, if one does.
    pub(super) fn leave_pause<M: From<MacMsg>>(&mut self, ctx: &mut Ctx<'_, M>) {
        if let Some(since) = self.paused_since.take() {
            let period = ctx.my_domain().period().as_ps().max(1);
            self.stats.paused += Cycles(ctx.now().saturating_since(since).as_ps() / period);
        }
    }
}
