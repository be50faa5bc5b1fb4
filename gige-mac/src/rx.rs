//! The GMII receive side of a port: [`RxFrame`], a frame arriving byte by byte, and
//! [`GmiiRx`], which pairs each frame's start with its end and judges it (length, FCS).
//!
//! Timing a receiver sees (all times are edges of the receiver's `gmii` domain):
//!
//! ```text
//!  RXD:   | DA0 | DA1 | ... | FCS3 |
//!               ^                  ^
//!               first_byte_at      last_byte_at    (each byte complete at the end of its clock)
//!  byte k of the frame is available at first_byte_at + k x 8 ns
//! ```
//!
//! Design choice: a frame arrives as two messages, [`MacMsg::RxStart`](crate::MacMsg) at the
//! first byte and [`MacMsg::RxEnd`](crate::MacMsg) at the last, both carrying the same
//! [`RxFrame`]. A receiver that fills a FIFO as bytes arrive (the DP83820, which may start
//! receive DMA before the end of a frame) asks [`RxFrame::arrived`] for the bytes that are
//! there at its current time; it cannot see bytes that have not arrived yet. This costs two
//! events per frame instead of one per byte and is exact at every byte boundary.
//!
//! A transmitter that starts a frame before all its bytes are in its FIFO (the DP83820
//! with a transmit drain threshold below the frame length: cut-through) does not know the
//! whole frame when it sends `RxStart`: it sends a *partial* [`RxFrame`] (the bytes known so
//! far, and the frame's total length) and then [`MacMsg::RxData`](crate::MacMsg) updates,
//! each landing before any of its new bytes is due at the receiver, and `RxEnd` with the
//! whole frame. [`RxFrame::arrived`] never returns more than the known bytes.

use crate::frame::{check_frame_with, FcsError, Frame, FrameId, FrameLimits};
use sim_kernel::{Bytes, Duration, MsgId, Time};

/// A frame arriving at a port's GMII receive side.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RxFrame {
    frame: Frame,
    total_len: usize,
    first_byte_at: Time,
    last_byte_at: Time,
    byte_time: Duration,
}

impl RxFrame {
    /// A frame whose first byte is complete at `first_byte_at` and whose later bytes follow
    /// one per `byte_time`, the last one complete at `last_byte_at`.
    #[must_use]
    pub fn new(frame: Frame, first_byte_at: Time, last_byte_at: Time, byte_time: Duration) -> Self {
        let total_len = frame.len();
        Self {
            frame,
            total_len,
            first_byte_at,
            last_byte_at: last_byte_at.max(first_byte_at),
            byte_time,
        }
    }

    /// A frame of `total_len` bytes of which only the first `known.len()` are known yet
    /// (cut-through transmission); later updates carry more. `total_len` below the known
    /// bytes counts as the known length.
    #[must_use]
    pub fn partial(
        known: Frame,
        total_len: usize,
        first_byte_at: Time,
        last_byte_at: Time,
        byte_time: Duration,
    ) -> Self {
        let total_len = total_len.max(known.len());
        Self {
            frame: known,
            total_len,
            first_byte_at,
            last_byte_at: last_byte_at.max(first_byte_at),
            byte_time,
        }
    }

    /// Bytes known so far (all of them unless the frame is partial) \[bytes\].
    #[must_use]
    pub fn known_len(&self) -> usize {
        self.frame.len()
    }

    /// The bytes known so far, whether they have arrived or not. Only for a MAC's
    /// receive filter, which decides on the header (destination address, type) before
    /// anything behind it can act on the frame; a model must otherwise use
    /// [`RxFrame::arrived`].
    #[must_use]
    pub(crate) fn known(&self) -> &[u8] {
        self.frame.bytes()
    }

    /// Whether every byte of the frame is known (not a partial frame).
    #[must_use]
    pub fn is_whole(&self) -> bool {
        self.frame.len() >= self.total_len
    }

    /// The frame's id.
    #[must_use]
    pub fn id(&self) -> FrameId {
        self.frame.id
    }

    /// The message the frame belongs to (for trace spans).
    #[must_use]
    pub fn msg(&self) -> MsgId {
        self.frame.msg
    }

    /// Length of the whole frame after the SFD, FCS included \[bytes\]. The model knows
    /// it from the start; hardware learns it only at the end of the frame, so a receiver
    /// model must not act on it before [`RxFrame::last_byte_at`].
    #[must_use]
    pub fn len(&self) -> usize {
        self.total_len
    }

    /// Whether the frame has no bytes (never true for frames a GMII transmitter sent).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.total_len == 0
    }

    /// When the first byte (first destination address byte) is complete on RXD.
    #[must_use]
    pub fn first_byte_at(&self) -> Time {
        self.first_byte_at
    }

    /// When the last byte (last FCS byte) is complete on RXD: the receiver's end of frame.
    #[must_use]
    pub fn last_byte_at(&self) -> Time {
        self.last_byte_at
    }

    /// Time between two bytes \[ps\] (8 ns on gigabit Ethernet).
    #[must_use]
    pub fn byte_time(&self) -> Duration {
        self.byte_time
    }

    /// How many bytes have arrived by `now`.
    #[must_use]
    pub fn arrived_count(&self, now: Time) -> usize {
        let len = self.total_len;
        if now < self.first_byte_at {
            return 0;
        }
        if now >= self.last_byte_at || self.byte_time == Duration::ZERO {
            return len;
        }
        let after_first = (now - self.first_byte_at).as_ps() / self.byte_time.as_ps();
        usize::try_from(after_first)
            .unwrap_or(usize::MAX)
            .saturating_add(1)
            .min(len)
    }

    /// The bytes that have arrived by `now`, from the first destination address byte on
    /// (never more than the bytes known: see the module doc on partial frames).
    #[must_use]
    pub fn arrived(&self, now: Time) -> &[u8] {
        let n = self.arrived_count(now).min(self.frame.len());
        self.frame.bytes().get(..n).unwrap_or_default()
    }

    /// When byte `k` (0-based) is complete on RXD (`k` past the end: the last byte's time).
    #[must_use]
    pub fn byte_at(&self, k: usize) -> Time {
        if k + 1 >= self.total_len {
            return self.last_byte_at;
        }
        (self.first_byte_at + self.byte_time * k as u64).min(self.last_byte_at)
    }

    /// The whole frame, once its last byte has arrived (and every byte is known).
    #[must_use]
    pub fn complete(&self, now: Time) -> Option<&Frame> {
        (now >= self.last_byte_at && self.is_whole()).then_some(&self.frame)
    }
}

/// A frame received whole and good.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Received {
    /// The frame, FCS included.
    pub frame: Frame,
    /// When its first byte was complete on RXD.
    pub first_byte_at: Time,
    /// When its last byte was complete on RXD (end of frame).
    pub last_byte_at: Time,
}

/// Why a received frame was not accepted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RxError {
    /// The frame's length or FCS is wrong.
    #[error(transparent)]
    Fcs(#[from] FcsError),
    /// A frame ended that had not started (or another started first), or ended before its
    /// last byte: a wiring or model bug, reported rather than trusted.
    #[error("framing: {0}")]
    Framing(&'static str),
}

/// What a receive side counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxStats {
    /// Good frames.
    pub frames_ok: u64,
    /// Bytes of good frames, FCS included.
    pub bytes_ok: Bytes,
    /// Frames shorter than the minimum.
    pub runts: u64,
    /// Frames longer than the maximum.
    pub too_long: u64,
    /// Frames with a wrong FCS.
    pub fcs_errors: u64,
    /// Start/end messages that did not pair up.
    pub framing_errors: u64,
}

/// The receive side of one port: pairs starts with ends, checks length and FCS, counts.
#[derive(Clone, Debug)]
pub struct GmiiRx {
    limits: FrameLimits,
    in_progress: Option<FrameId>,
    stats: RxStats,
}

impl GmiiRx {
    /// A receive side that accepts frames within `limits`.
    #[must_use]
    pub fn new(limits: FrameLimits) -> Self {
        Self {
            limits,
            in_progress: None,
            stats: RxStats::default(),
        }
    }

    /// What it counted so far.
    #[must_use]
    pub fn stats(&self) -> &RxStats {
        &self.stats
    }

    /// Whether a frame has started and not yet ended.
    #[must_use]
    pub fn busy(&self) -> bool {
        self.in_progress.is_some()
    }

    /// A frame's first byte arrived.
    pub fn start(&mut self, frame: &RxFrame) {
        if let Some(prev) = self.in_progress.replace(frame.id()) {
            self.stats.framing_errors += 1;
            tracing::warn!(target: "mac::gmii", prev = prev.0, next = frame.id().0, "frame started before the previous one ended");
        }
    }

    /// A frame's last byte arrived at `now`: checks it and returns it if it is good.
    ///
    /// # Errors
    /// [`RxError::Framing`] if the end does not match the frame in progress or comes
    /// before the last byte; [`RxError::Fcs`] for a runt, a too-long frame or a bad FCS.
    pub fn end(&mut self, frame: RxFrame, now: Time) -> Result<Received, RxError> {
        if self.in_progress.take() != Some(frame.id()) {
            self.stats.framing_errors += 1;
            return Err(RxError::Framing("end of a frame that did not start"));
        }
        let Some(whole) = frame.complete(now) else {
            self.stats.framing_errors += 1;
            return Err(RxError::Framing("end before the last byte arrived"));
        };
        match check_frame_with(self.limits, whole) {
            Ok(_) => {
                self.stats.frames_ok += 1;
                self.stats.bytes_ok.0 += whole.len() as u64;
                Ok(Received {
                    frame: whole.clone(),
                    first_byte_at: frame.first_byte_at,
                    last_byte_at: frame.last_byte_at,
                })
            }
            Err(e) => {
                match e {
                    FcsError::Runt { .. } => self.stats.runts += 1,
                    FcsError::TooLong { .. } => self.stats.too_long += 1,
                    FcsError::Mismatch { .. } => self.stats.fcs_errors += 1,
                }
                tracing::debug!(target: "mac::gmii", id = frame.id().0, error = %e, "bad frame received");
                Err(RxError::Fcs(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::build;
    use via_abi::{EtherType, MacAddr};

    fn rx_frame(bytes: Vec<u8>) -> RxFrame {
        let n = bytes.len() as u64;
        let f = Frame::new(FrameId(9), MsgId(1), bytes);
        let first = Time(100_000);
        RxFrame::new(
            f,
            first,
            first + Duration::from_ns(8) * (n - 1),
            Duration::from_ns(8),
        )
    }

    #[test]
    fn bytes_arrive_one_per_clock() {
        let bytes = build(MacAddr([2; 6]), MacAddr([4; 6]), EtherType::Via, &[]).unwrap();
        let r = rx_frame(bytes.clone());
        assert_eq!(r.arrived_count(Time(99_999)), 0);
        assert_eq!(r.arrived(Time(100_000)), &bytes[..1]);
        assert_eq!(r.arrived_count(Time(107_999)), 1);
        assert_eq!(r.arrived_count(Time(108_000)), 2);
        assert_eq!(r.last_byte_at(), Time(100_000 + 63 * 8_000));
        assert_eq!(r.arrived(r.last_byte_at()), &bytes[..]);
        assert!(r.complete(Time(600_000)).is_none());
        assert!(r.complete(r.last_byte_at()).is_some());
    }

    #[test]
    fn a_partial_frame_shows_only_known_bytes() {
        let bytes = build(MacAddr([2; 6]), MacAddr([4; 6]), EtherType::Via, &[7; 100]).unwrap();
        let whole = rx_frame(bytes.clone());
        let known = Frame::new(FrameId(9), MsgId(1), bytes[..20].to_vec());
        let p = RxFrame::partial(
            known,
            bytes.len(),
            whole.first_byte_at(),
            whole.last_byte_at(),
            whole.byte_time(),
        );
        assert_eq!((p.len(), p.known_len(), p.is_whole()), (118, 20, false));
        let end = p.last_byte_at();
        assert_eq!(
            p.arrived_count(end),
            118,
            "the timeline is the whole frame's"
        );
        assert_eq!(
            p.arrived(end),
            &bytes[..20],
            "but only known bytes are shown"
        );
        assert!(p.complete(end).is_none());
        assert_eq!(p.byte_at(0), p.first_byte_at());
        assert_eq!(p.byte_at(10), Time(100_000 + 80_000));
        assert_eq!(p.byte_at(5_000), end);
        assert!(whole.is_whole());
        assert_eq!(whole.complete(end).map(Frame::len), Some(118));
    }

    #[test]
    fn good_and_bad_frames_are_counted() {
        let mut rx = GmiiRx::new(FrameLimits::IEEE);
        let good = rx_frame(build(MacAddr([2; 6]), MacAddr([4; 6]), EtherType::Via, &[1]).unwrap());
        rx.start(&good);
        assert!(rx.busy());
        let end = good.last_byte_at();
        assert!(matches!(
            rx.end(good.clone(), Time(end.as_ps() - 1)),
            Err(RxError::Framing(_))
        ));
        rx.start(&good);
        let got = rx.end(good.clone(), end).unwrap();
        assert_eq!(got.frame.len(), 64);
        let mut bad_bytes = good.arrived(end).to_vec();
        bad_bytes[20] ^= 4;
        let bad = rx_frame(bad_bytes);
        rx.start(&bad);
        assert!(matches!(
            rx.end(bad.clone(), end),
            Err(RxError::Fcs(FcsError::Mismatch { .. }))
        ));
        let runt = rx_frame(vec![0u8; 10]);
        rx.start(&runt);
        assert!(rx.end(runt.clone(), end).is_err());
        assert!(matches!(rx.end(runt, end), Err(RxError::Framing(_))));
        let s = rx.stats();
        assert_eq!(
            (
                s.frames_ok,
                s.bytes_ok,
                s.fcs_errors,
                s.runts,
                s.framing_errors
            ),
            (1, Bytes(64), 1, 1, 2)
        );
    }
}
