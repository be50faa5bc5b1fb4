//! Retransmission on reliable VIs (`EngineParams::retransmit`): what the sender does with
//! the frames the GEC reports transmitted, with go-back Naks and with its timer.
//!
//! * A data frame reported transmitted arms its VI's deadline (`retx_timeout_cycles`
//!   after now) if none is armed and frames are unacknowledged; an Ack that moves the
//!   window restarts it (or disarms it when everything is acknowledged).
//! * A go-back Nak naming frame `e` (the receiver saw a gap) sends `e ..` again: the
//!   VI's go-back cursor, which the send data path serves before any new fragment,
//!   fetching each resent fragment from host memory again (the card keeps no copy; the
//!   send's buffers stay the host's until the descriptor completes).
//! * A deadline that passes sends again from the window base, and the next deadline is
//!   twice as far (back-off: a window held up behind a congested switch port's PAUSE is
//!   not resent again and again); more than `retx_limit`
//!   timeouts in a row without an Ack that moves the window give the connection up: the
//!   oldest unfinished send completes with `TRANSPORT_ERROR`, the VI goes to `error`, and
//!   the rest are flushed.
//!
//! * Connection set-up (every VI, whatever its level): a connect request not answered
//!   within `retx_timeout_cycles` is sent again, up to `retx_limit` times, then the
//!   request is given up (`idle`, `VI_RESULT` TimedOut); a repeated request from the peer
//!   a VI is already connected to (its accept was lost) is accepted again. The deadline
//!   is compared when the host reads a register (it polls `VI_RESULT` while it waits),
//!   so no timer event is pending in a run whose request is answered.
//!
//! One kernel wake serves every VI's deadline ([`RetxTimer`](super::unit::retx::RetxTimer)).

use super::ids::RetxGen;
use super::io::Io;
use super::unit::retx::{NakVerdict, Timeout};
use super::unit::vi::ViState;
use super::{Engine, EngineWake};
use gige_mac::BufferRam;
use sim_kernel::{Cycles, MsgId, Time};
use via_abi::bar::CmdResult;
use via_abi::wire_header::{WireFlags, WireOp};
use via_abi::Status;

impl Engine {
    /// The GEC reported data frame `seq` of VI `vi` transmitted.
    pub(crate) fn frame_transmitted(&mut self, vi: u16, seq: u32, io: &mut Io) {
        if !self.params.retransmit {
            return;
        }
        // May miss: the VI was destroyed meanwhile.
        let Some(v) = self.vis.get_mut(vi) else {
            return;
        };
        if v.reliable() && v.state() == ViState::Connected && v.tx.transmitted(seq) {
            self.arm_deadline(vi, io);
        }
    }

    /// An Ack moved VI `vi`'s window: its deadline restarts, or is disarmed when every
    /// frame sent is acknowledged.
    pub(crate) fn window_moved(&mut self, vi: u16, io: &mut Io) {
        if !self.params.retransmit {
            return;
        }
        // May miss: the VI was destroyed meanwhile.
        let Some(v) = self.vis.get_mut(vi) else {
            return;
        };
        if v.tx.all_acked(v.tx_seq) || v.tx.una == v.tx.done {
            v.tx.deadline = None;
        } else {
            self.arm_deadline(vi, io);
        }
    }

    /// Sets VI `vi`'s deadline `retx_timeout_cycles` from now, doubled for each timeout
    /// in a row (binary exponential back-off, as TCP's retransmission timer, RFC 6298
    /// section 5.5), and makes sure the timer wakes by then.
    fn arm_deadline(&mut self, vi: u16, io: &mut Io) {
        let Some(v) = self.vis.get_mut(vi) else {
            return;
        };
        let shift = u32::from(v.tx.retries.min(16));
        let after = Cycles(self.params.retx_timeout_cycles.0.saturating_mul(1 << shift));
        let at = io.my_domain().edge_after(io.now(), after);
        v.tx.deadline = Some(at);
        self.schedule_timer(at, io);
    }

    /// Makes sure the timer wakes at `at` or before.
    fn schedule_timer(&mut self, at: Time, io: &mut Io) {
        // Never in the past: a deadline that has passed is served at the next edge.
        let at = at.max(io.now());
        if let Some(gen) = self.retx.arm(at) {
            let period = io.my_domain().period();
            let n = super::fifo::cycles_until(io.now(), at, period);
            io.wake_after(n, EngineWake::Retx { gen });
        }
    }

    /// A go-back Nak asking for frame `e` arrived on VI `vi` (its peer saw a gap).
    pub(crate) fn goback_nak_received(
        &mut self,
        vi: u16,
        e: u32,
        io: &mut Io,
        ram: &mut BufferRam,
    ) {
        // The header check found the VI connected to the Nak's sender before calling this.
        let Some(v) = self.vis.get_mut(vi) else {
            return self.bookkeeping_miss("VI of a go-back Nak");
        };
        match v.tx.nak(e, v.tx_seq) {
            NakVerdict::GoBack => {
                v.tx.go_back(e, v.tx_seq);
                v.counters.goback_naks_received += 1;
                tracing::debug!(target: "nic::tx", vi, seq = e, "go back");
            }
            // The peer's input: a late repeat, or a gap the go-back under way covers.
            NakVerdict::Stale | NakVerdict::Covered => {
                self.stats.goback_naks_ignored += 1;
                return;
            }
        }
        self.tx_pump(io, ram);
    }

    /// The timer's wake: every VI whose deadline passed goes back to its window base, or
    /// gives its connection up.
    pub(crate) fn retx_woken(&mut self, gen: RetxGen, io: &mut Io, ram: &mut BufferRam) {
        if !self.retx.fired(gen) {
            return;
        }
        let now = io.now();
        let due: Vec<u16> = self
            .vis
            .iter()
            .filter(|v| v.state() == ViState::Connected && v.tx.deadline.is_some_and(|d| d <= now))
            .map(|v| v.num)
            .collect();
        let limit = self.params.retx_limit;
        for n in due {
            let Some(v) = self.vis.get_mut(n) else {
                continue;
            };
            match v.tx.timed_out(limit) {
                Timeout::GoBack { from } => {
                    v.tx.go_back(from, v.tx_seq);
                    v.counters.retx_timeouts += 1;
                    self.stats.retx_timeouts += 1;
                    tracing::debug!(target: "nic::tx", vi = n, seq = from, "retransmission timeout");
                }
                Timeout::GiveUp => self.give_up(n, io, ram),
            }
        }
        let next = self
            .vis
            .iter()
            .filter(|v| v.state() == ViState::Connected)
            .filter_map(|v| v.tx.deadline)
            .min();
        if let Some(at) = next {
            self.schedule_timer(at, io);
        }
        self.tx_pump(io, ram);
    }

    /// A connect request of VI `n` went out: it is sent again if no answer comes within
    /// `retx_timeout_cycles` (checked when the host reads a register, see
    /// [`Engine::connect_deadlines`]).
    pub(crate) fn arm_connect(&mut self, n: u16, io: &mut Io) {
        if !self.params.retransmit {
            return;
        }
        let at = io
            .my_domain()
            .edge_after(io.now(), self.params.retx_timeout_cycles);
        if let Some(v) = self.vis.get_mut(n) {
            v.connect_deadline = Some(at);
        }
    }

    /// The host reads a register: every connect request whose deadline has passed is
    /// sent again (or given up) first. A host waiting for its connection reads
    /// `VI_RESULT` / `VI_STATE` in a loop, so the check needs no timer of its own: the
    /// comparator looks at the card's cycle counter on each access, and a fault-free
    /// run carries no pending timer event.
    pub(crate) fn connect_deadlines(&mut self, io: &mut Io, ram: &mut BufferRam) {
        let now = io.now();
        let due: Vec<u16> = self
            .vis
            .iter()
            .filter(|v| v.connect_deadline.is_some_and(|d| d <= now))
            .map(|v| v.num)
            .collect();
        for n in due {
            self.connect_timed_out(n, io, ram);
        }
    }

    /// VI `n`'s connect request got no answer in time: send it again, or after
    /// `retx_limit` resends give up (`idle`, `VI_RESULT` TimedOut).
    fn connect_timed_out(&mut self, n: u16, io: &mut Io, ram: &mut BufferRam) {
        let limit = self.params.retx_limit;
        let Some(v) = self.vis.get_mut(n) else {
            return;
        };
        v.connect_deadline = None;
        if v.state() != ViState::Requesting {
            return;
        }
        if v.connect_tries >= limit {
            v.connect_tries = 0;
            self.stats.connect_timeouts += 1;
            tracing::warn!(target: "nic::vi", vi = n, "connect request unanswered: given up");
            self.set_vi_state(n, ViState::Idle, io, ram);
            self.connect_result(n, CmdResult::TimedOut);
            return;
        }
        v.connect_tries += 1;
        let (mac, disc, rel) = (v.peer_mac, v.discriminator, v.reliability.raw());
        self.stats.connect_requests_resent += 1;
        tracing::debug!(target: "nic::vi", vi = n, "connect request sent again");
        self.connect_frame(WireOp::ConnectRequest, mac, 0, n, (disc, rel), io);
        self.arm_connect(n, io);
    }

    /// VI `n` timed out more than `retx_limit` times in a row: its oldest unfinished send
    /// completes with `TRANSPORT_ERROR`, the VI goes to `error` (the rest are flushed).
    fn give_up(&mut self, n: u16, io: &mut Io, ram: &mut BufferRam) {
        self.stats.retx_give_ups += 1;
        tracing::warn!(target: "nic::tx", vi = n, "retry limit exceeded: connection broken");
        let oldest = self.vis.get(n).and_then(|v| {
            v.send_order
                .iter()
                .copied()
                .find(|id| self.send.ctxs.get(id).is_some_and(|s| !s.is_ready()))
        });
        if let Some(s) = oldest.and_then(|id| self.send.ctxs.get_mut(&id)) {
            s.status |= Status::TRANSPORT_ERROR;
            s.cut();
        }
        if let Some(v) = self.vis.get_mut(n) {
            v.tx.resend = None;
        }
        self.set_vi_state(n, ViState::Error, io, ram);
    }
}

impl Engine {
    /// Receiver: data frame `seq` (with `flags`) of VI `n` was accepted in order into its
    /// message. The last frame of a message holds the Acks below it until the message is
    /// placed; a frame that asks for an Ack (`ACK_REQ`) is acknowledged now, as far as
    /// no unplaced message holds the Ack back.
    pub(crate) fn frame_accepted(
        &mut self,
        n: u16,
        seq: u32,
        flags: WireFlags,
        msg: MsgId,
        io: &mut Io,
    ) {
        // The caller found the VI a moment ago.
        let Some(v) = self.vis.get_mut(n) else {
            return self.bookkeeping_miss("VI of an accepted frame");
        };
        if flags.contains(WireFlags::LAST) {
            v.rxa.unplaced.push_back(seq);
        } else if flags.contains(WireFlags::ACK_REQ) {
            let cum = v.rxa.cumulative(v.rx_seq);
            if let Some(k) = v.rxa.ack_due(cum, false) {
                self.send_ack(n, k, Status::empty(), msg, io);
            }
        }
    }

    /// Receiver: the message of VI `n` whose last frame is `last` was placed (or failed):
    /// the Ack of everything accepted up to the next unplaced message goes out (placed),
    /// or the hold is only lifted (failed: its error Nak went out already).
    pub(crate) fn message_settled(
        &mut self,
        n: u16,
        last: u32,
        placed: bool,
        msg: MsgId,
        io: &mut Io,
    ) {
        if !self.params.retransmit {
            if placed {
                self.send_ack(n, last, Status::empty(), msg, io);
            }
            return;
        }
        // May miss: the VI was destroyed meanwhile.
        let Some(v) = self.vis.get_mut(n) else {
            return;
        };
        v.rxa.placed(last);
        if !placed {
            return;
        }
        let cum = v.rxa.cumulative(v.rx_seq);
        if let Some(k) = v.rxa.ack_due(cum, false) {
            self.send_ack(n, k, Status::empty(), msg, io);
        }
    }
}
