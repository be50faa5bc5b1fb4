//! Unit **retransmission** (reliable VIs with `EngineParams::retransmit`): per VI the
//! sender's go-back-N window ([`TxWindow`]) and the receiver's acknowledgement registers
//! ([`RxAck`]), and the engine's single retransmission timer ([`RetxTimer`]). Pure logic
//! on sequence numbers and instants; the steps that act on it (slots, frames, status)
//! are the engine's.
//!
//! Sequence numbers compare in serial-number order
//! ([`seq_before`](via_abi::wire_header::seq_before)), so every rule here survives the
//! wrap from `u32::MAX` to 0.
//!
//! * Sender: `una` is the oldest data frame not positively acknowledged (the window
//!   base), the VI's `tx_seq` the next new one. A new frame may go while
//!   `tx_seq - una < window`. A cumulative Ack(k) moves `una` to `k + 1`; a go-back Nak(e)
//!   or a timeout resends `[e, tx_seq)` (the go-back cursor `resend`). Only positive Acks
//!   move the window, so a lost final Ack is still recovered by the timer.
//! * Receiver: the cumulative value it acknowledges is `rx_seq - 1`, held below a message
//!   accepted but not yet placed; one go-back Nak per gap.
//! * Timer: one kernel wake for all VIs' deadlines. Arming schedules a wake only if none
//!   is pending or the pending one is later; a wake whose generation is not the pending
//!   one is stale and ignored.

use crate::engine::ids::RetxGen;
use sim_kernel::Time;
use std::collections::VecDeque;
use via_abi::wire_header::seq_before;

/// What a positive Ack did to the sender's window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AckVerdict {
    /// Older than the window base: a repeat, nothing to do.
    Stale,
    /// For a number never sent: the peer's input, dropped.
    Unmatched,
    /// The window base moved to `k + 1`.
    Advanced,
}

/// What a go-back Nak asks of the sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NakVerdict {
    /// Outside `[una, tx_seq]`: a late repeat, dropped.
    Stale,
    /// A go-back already under way resends the frame it names.
    Covered,
    /// Go back to the frame it names.
    GoBack,
}

/// What a retransmission timeout does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Timeout {
    /// Resend from the window base (the count of timeouts in a row is within the limit).
    GoBack { from: u32 },
    /// The retry limit is exceeded: the connection is broken.
    GiveUp,
}

/// The go-back cursor: frames `next..end` are resent, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Resend {
    /// The next frame to resend.
    pub next: u32,
    /// The first frame not to resend (the VI's `tx_seq` when the go-back began).
    pub end: u32,
}

/// A reliable VI's sender state (one register set per VI).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct TxWindow {
    /// Oldest data frame not positively acknowledged.
    pub una: u32,
    /// The frame after the last data frame the GEC reported transmitted.
    pub done: u32,
    /// Frames being resent, if a go-back is under way.
    pub resend: Option<Resend>,
    /// When the retransmission timer of this VI expires, if armed.
    pub deadline: Option<Time>,
    /// Timeouts in a row without an Ack that moved the window.
    pub retries: u8,
}

impl TxWindow {
    /// Whether a new data frame (number `tx_seq`) may be sent with a window of `window`
    /// frames.
    pub fn open(&self, tx_seq: u32, window: u32) -> bool {
        tx_seq.wrapping_sub(self.una) < window
    }

    /// Whether new data frame `seq` asks for an Ack (`ACK_REQ`): every `every`-th frame.
    pub fn asks_ack(seq: u32, every: u32) -> bool {
        seq.wrapping_add(1) % every.max(1) == 0
    }

    /// The GEC reported data frame `seq` transmitted. Returns whether the VI's timer is to
    /// be armed now (it is not, and frames are unacknowledged).
    pub fn transmitted(&mut self, seq: u32) -> bool {
        let after = seq.wrapping_add(1);
        if seq_before(self.done, after) {
            self.done = after;
        }
        self.deadline.is_none() && self.una != self.done
    }

    /// A positive cumulative Ack of every frame up to `k` arrived; `tx_seq` is the next new
    /// frame. On [`AckVerdict::Advanced`] the retry count restarts and a go-back skips the
    /// frames now acknowledged.
    pub fn ack(&mut self, k: u32, tx_seq: u32) -> AckVerdict {
        if seq_before(k, self.una) {
            return AckVerdict::Stale;
        }
        if !seq_before(k, tx_seq) {
            return AckVerdict::Unmatched;
        }
        self.una = k.wrapping_add(1);
        if seq_before(self.done, self.una) {
            // An Ack can pass a transmit completion (a frame's TxDone is still on its
            // way): what is acknowledged was transmitted.
            self.done = self.una;
        }
        self.retries = 0;
        if let Some(r) = self.resend.as_mut() {
            if seq_before(r.next, self.una) {
                r.next = self.una;
            }
            if !seq_before(r.next, r.end) {
                self.resend = None;
            }
        }
        AckVerdict::Advanced
    }

    /// Whether nothing sent is unacknowledged (the timer can be disarmed).
    pub fn all_acked(&self, tx_seq: u32) -> bool {
        self.una == tx_seq
    }

    /// A go-back Nak asking for frame `e` arrived; `tx_seq` is the next new frame.
    pub fn nak(&self, e: u32, tx_seq: u32) -> NakVerdict {
        if seq_before(e, self.una) || seq_before(tx_seq, e) {
            return NakVerdict::Stale;
        }
        match self.resend {
            Some(r) if !seq_before(e, r.next) => NakVerdict::Covered,
            _ => NakVerdict::GoBack,
        }
    }

    /// Resends every frame from `from` up to (not including) `tx_seq`. Nothing to resend
    /// (`from == tx_seq`) leaves no cursor.
    pub fn go_back(&mut self, from: u32, tx_seq: u32) {
        self.resend = seq_before(from, tx_seq).then_some(Resend {
            next: from,
            end: tx_seq,
        });
    }

    /// The next frame to resend, if a go-back is under way.
    pub fn next_resend(&self) -> Option<u32> {
        self.resend.map(|r| r.next)
    }

    /// The next frame to resend was given a slot: the cursor moves on (and ends after the
    /// last one).
    pub fn resent(&mut self) {
        if let Some(r) = self.resend.as_mut() {
            r.next = r.next.wrapping_add(1);
            if !seq_before(r.next, r.end) {
                self.resend = None;
            }
        }
    }

    /// The VI's deadline passed: counts the timeout in a row and disarms; with more than
    /// `limit` in a row the connection is given up, else the sender goes back to `una`.
    pub fn timed_out(&mut self, limit: u8) -> Timeout {
        self.deadline = None;
        self.retries = self.retries.saturating_add(1);
        if self.retries > limit {
            Timeout::GiveUp
        } else {
            Timeout::GoBack { from: self.una }
        }
    }
}

/// How a received data frame's sequence number relates to the next one expected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arrival {
    /// The next one expected.
    InOrder,
    /// Already received (a resend of a frame that arrived, or a repeat).
    Duplicate,
    /// Later than expected: frames before it were lost.
    Gap,
}

/// Where data frame `seq` stands when `expected` is the next one in order.
pub(crate) fn arrival(seq: u32, expected: u32) -> Arrival {
    if seq == expected {
        Arrival::InOrder
    } else if seq_before(seq, expected) {
        Arrival::Duplicate
    } else {
        Arrival::Gap
    }
}

/// A reliable VI's receiver acknowledgement registers (one set per VI).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RxAck {
    /// The expected number a go-back Nak was sent for (one Nak per gap).
    pub nak_for: Option<u32>,
    /// The last frames of the messages accepted but not yet placed, oldest first: Acks
    /// stay below the oldest (a send completes only once its message is placed).
    pub unplaced: VecDeque<u32>,
    /// The last cumulative value acknowledged.
    pub acked: u32,
}

impl Default for RxAck {
    /// Nothing received: the value "before frame 0" counts as acknowledged.
    fn default() -> Self {
        Self {
            nak_for: None,
            unplaced: VecDeque::new(),
            acked: u32::MAX,
        }
    }
}

impl RxAck {
    /// The cumulative value to acknowledge when `rx_seq` is the next frame expected:
    /// `rx_seq - 1`, kept below the oldest message not placed yet.
    pub fn cumulative(&self, rx_seq: u32) -> u32 {
        let cum = rx_seq.wrapping_sub(1);
        match self.unplaced.front() {
            Some(&h) if !seq_before(cum, h) => h.wrapping_sub(1),
            _ => cum,
        }
    }

    /// The message whose last frame is `last` was placed (or failed): Acks may cover it.
    pub fn placed(&mut self, last: u32) {
        self.unplaced.retain(|&s| s != last);
    }

    /// The Ack to send for cumulative value `cum`, if any: none when it acknowledges
    /// nothing new, unless `force` (it answers a duplicate, whose sender lost an Ack).
    pub fn ack_due(&mut self, cum: u32, force: bool) -> Option<u32> {
        if cum == self.acked && !force {
            return None;
        }
        self.acked = cum;
        Some(cum)
    }

    /// A gap was seen while `rx_seq` is expected: whether to send a go-back Nak for it
    /// (only the first time for the same expected number).
    pub fn gap(&mut self, rx_seq: u32) -> bool {
        if self.nak_for == Some(rx_seq) {
            return false;
        }
        self.nak_for = Some(rx_seq);
        true
    }

    /// The expected frame arrived: a later gap deserves a new Nak.
    pub fn in_order(&mut self) {
        self.nak_for = None;
    }
}

/// The engine's retransmission timer: at most one kernel wake pending, for the earliest
/// deadline it was armed with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RetxTimer {
    /// The wake scheduled, if any: when, and its generation.
    pub pending: Option<(Time, RetxGen)>,
    /// The last generation handed out.
    gen: RetxGen,
}

impl RetxTimer {
    /// A deadline at `at` was set: returns the generation of a wake to schedule for it,
    /// unless a wake at or before `at` is already pending.
    pub fn arm(&mut self, at: Time) -> Option<RetxGen> {
        if self.pending.is_some_and(|(t, _)| t <= at) {
            return None;
        }
        self.gen = self.gen.next();
        self.pending = Some((at, self.gen));
        Some(self.gen)
    }

    /// A wake of generation `gen` arrived: whether it is the pending one (then nothing is
    /// pending any more); a stale one changes nothing.
    pub fn fired(&mut self, gen: RetxGen) -> bool {
        if self.pending.is_some_and(|(_, g)| g == gen) {
            self.pending = None;
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_opens_until_full_and_acks_move_it() {
        let mut w = TxWindow::default();
        assert!(w.open(0, 4) && w.open(3, 4));
        assert!(
            !w.open(4, 4),
            "four frames unacknowledged fill a window of 4"
        );
        assert_eq!(w.ack(1, 4), AckVerdict::Advanced);
        assert_eq!(w.una, 2);
        assert!(w.open(5, 4) && !w.open(6, 4));
        assert_eq!(w.ack(0, 4), AckVerdict::Stale, "older than the base");
        assert_eq!(w.ack(4, 4), AckVerdict::Unmatched, "never sent");
        assert_eq!(w.ack(1, 4), AckVerdict::Stale, "a repeat of the last Ack");
        assert!(!w.all_acked(4));
        assert_eq!(w.ack(3, 4), AckVerdict::Advanced);
        assert!(w.all_acked(4));
    }

    #[test]
    fn ack_requests_every_quarter_window() {
        let asks: Vec<u32> = (0..40).filter(|&s| TxWindow::asks_ack(s, 16)).collect();
        assert_eq!(asks, vec![15, 31]);
        assert!((0..5).all(|s| TxWindow::asks_ack(s, 1)));
        assert!(TxWindow::asks_ack(0, 0), "0 is read as every frame");
    }

    #[test]
    fn transmit_completions_arm_the_timer_once() {
        let mut w = TxWindow::default();
        assert!(w.transmitted(0), "first unacknowledged frame: arm");
        w.deadline = Some(Time(100));
        assert!(!w.transmitted(1), "already armed");
        assert_eq!(w.done, 2);
        assert!(!w.transmitted(0), "a resend does not move done back");
        assert_eq!(w.done, 2);
        w.deadline = None;
        assert_eq!(w.ack(1, 2), AckVerdict::Advanced);
        assert!(!w.transmitted(1), "everything transmitted is acknowledged");
    }

    #[test]
    fn go_back_cursor_runs_and_acks_skip_it() {
        let mut w = TxWindow::default();
        w.go_back(3, 10);
        let mut sent = Vec::new();
        while let Some(s) = w.next_resend() {
            sent.push(s);
            w.resent();
            if s == 5 {
                // An Ack of 0..=7 arrives while 6 is next: 6 and 7 need no resend.
                assert_eq!(w.ack(7, 10), AckVerdict::Advanced);
            }
        }
        assert_eq!(sent, vec![3, 4, 5, 8, 9]);
        assert_eq!(w.resend, None);
        w.go_back(10, 10);
        assert_eq!(w.resend, None, "nothing sent after 10: nothing to resend");
        w.go_back(10, 12);
        assert_eq!(w.ack(11, 12), AckVerdict::Advanced);
        assert_eq!(w.resend, None, "an Ack of everything ends the go-back");
    }

    #[test]
    fn naks_go_back_once() {
        let mut w = TxWindow {
            una: 4,
            ..TxWindow::default()
        };
        assert_eq!(w.nak(3, 10), NakVerdict::Stale, "before the window");
        assert_eq!(w.nak(11, 10), NakVerdict::Stale, "after the last sent");
        assert_eq!(w.nak(10, 10), NakVerdict::GoBack, "the next new frame");
        assert_eq!(w.nak(6, 10), NakVerdict::GoBack);
        w.go_back(6, 10);
        assert_eq!(w.nak(6, 10), NakVerdict::Covered, "the same gap again");
        assert_eq!(
            w.nak(9, 10),
            NakVerdict::Covered,
            "a later gap of the resend"
        );
        assert_eq!(w.nak(5, 10), NakVerdict::GoBack, "an earlier frame lost");
        w.resent();
        w.resent();
        assert_eq!(
            w.nak(7, 10),
            NakVerdict::GoBack,
            "7 went again and was lost"
        );
    }

    #[test]
    fn serial_numbers_wrap() {
        let base = u32::MAX - 1;
        let mut w = TxWindow {
            una: base,
            done: base,
            ..TxWindow::default()
        };
        let tx_seq = 3; // MAX-1, MAX, 0, 1, 2 sent
        assert!(w.open(tx_seq, 6) && !w.open(tx_seq, 5));
        assert_eq!(w.nak(u32::MAX, tx_seq), NakVerdict::GoBack);
        w.go_back(u32::MAX, tx_seq);
        let mut sent = Vec::new();
        while let Some(s) = w.next_resend() {
            sent.push(s);
            w.resent();
        }
        assert_eq!(sent, vec![u32::MAX, 0, 1, 2]);
        assert_eq!(w.ack(base - 1, tx_seq), AckVerdict::Stale);
        assert_eq!(w.ack(0, tx_seq), AckVerdict::Advanced);
        assert_eq!((w.una, w.done), (1, 1));
        assert!(w.transmitted(1));
        assert_eq!(w.done, 2);
        assert_eq!(arrival(0, u32::MAX), Arrival::Gap);
        assert_eq!(arrival(u32::MAX, 0), Arrival::Duplicate);
    }

    #[test]
    fn timeouts_count_in_a_row_until_the_limit() {
        let mut w = TxWindow {
            una: 5,
            deadline: Some(Time(7)),
            ..TxWindow::default()
        };
        assert_eq!(w.timed_out(2), Timeout::GoBack { from: 5 });
        assert_eq!(w.deadline, None);
        assert_eq!(w.timed_out(2), Timeout::GoBack { from: 5 });
        assert_eq!(
            w.timed_out(2),
            Timeout::GiveUp,
            "the third in a row, limit 2"
        );
        let mut w = TxWindow {
            una: 5,
            ..TxWindow::default()
        };
        w.timed_out(1);
        assert_eq!(w.ack(5, 8), AckVerdict::Advanced);
        assert_eq!(
            w.timed_out(1),
            Timeout::GoBack { from: 6 },
            "progress restarts"
        );
        assert_eq!(w.timed_out(0), Timeout::GiveUp, "past a limit of 0");
    }

    #[test]
    fn receiver_classifies_and_naks_each_gap_once() {
        assert_eq!(arrival(5, 5), Arrival::InOrder);
        assert_eq!(arrival(4, 5), Arrival::Duplicate);
        assert_eq!(arrival(9, 5), Arrival::Gap);
        let mut r = RxAck::default();
        assert!(r.gap(5));
        assert!(!r.gap(5), "the same gap: one Nak");
        r.in_order();
        assert!(r.gap(5), "after an in-order frame a new gap gets a Nak");
        assert!(r.gap(6));
    }

    #[test]
    fn cumulative_value_is_held_below_an_unplaced_message() {
        let mut r = RxAck::default();
        assert_eq!(r.cumulative(0), u32::MAX, "nothing received");
        assert_eq!(r.ack_due(r.cumulative(0), false), None, "nothing new");
        assert_eq!(r.cumulative(8), 7);
        r.unplaced.extend([5, 6]);
        assert_eq!(r.cumulative(8), 4, "frames 5.. wait for placement");
        assert_eq!(r.cumulative(3), 2, "the hold is ahead: no clamp");
        r.placed(5);
        assert_eq!(r.cumulative(8), 5, "the next message still waits");
        assert_eq!(r.ack_due(4, false), Some(4));
        assert_eq!(r.ack_due(4, false), None, "already acknowledged");
        assert_eq!(r.ack_due(4, true), Some(4), "answers a duplicate");
        r.placed(6);
        assert_eq!(r.ack_due(r.cumulative(8), false), Some(7));
    }

    #[test]
    fn one_wake_for_many_deadlines_and_stale_generations() {
        let mut t = RetxTimer::default();
        let g1 = t.arm(Time(1_000)).expect("nothing pending: schedule");
        assert_eq!(t.arm(Time(1_000)), None, "same deadline");
        assert_eq!(
            t.arm(Time(5_000)),
            None,
            "a later deadline waits for the wake"
        );
        let g2 = t.arm(Time(500)).expect("earlier: a fresh wake");
        assert_ne!(g1, g2);
        assert!(!t.fired(g1), "the replaced wake is stale");
        assert_eq!(t.pending, Some((Time(500), g2)));
        assert!(t.fired(g2));
        assert_eq!(t.pending, None);
        assert!(!t.fired(g2), "fired once");
        let g3 = t.arm(Time(5_000)).expect("nothing pending after firing");
        assert!(g3 > g2, "generations count up");
    }
}
