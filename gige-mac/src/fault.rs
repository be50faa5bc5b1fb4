//! Faults on the wire, one direction of a link at a time: frames lost, bits flipped, the
//! link down for a window of time. A [`GmiiTx`](crate::GmiiTx) with [`WireFaults`]
//! installed ([`GmiiTx::set_faults`](crate::GmiiTx::set_faults)) decides each frame's
//! [`FrameFate`] when its bytes are committed to the wire (end of preamble and SFD) and
//! tells the far end only what arrives; the transmitter itself (its timing, statistics,
//! `TxDone`, pcap capture) never knows.
//!
//! | fault | what arrives at the far end | counted in [`WireFaultStats`] |
//! |---|---|---|
//! | link down (window on this transmitter's TXD timeline) | nothing if the window begins before the frame's first byte after the SFD is out; else the bytes complete before it, then the frame ends (a runt or a bad FCS: the receiver drops it) | `link_down_lost`, `link_down_truncated` |
//! | frame loss, probability `frame_loss` per frame | nothing (no `RxStart`, no `RxEnd`) | `frames_lost` |
//! | bit errors, probability `bit_error_rate` per bit | the frame with those bits inverted: its FCS no longer matches | `frames_corrupted`, `bits_flipped` |
//! | duplication, probability `duplicate` per frame | the frame, then a copy of it after an inter-frame gap and a preamble ([`order`]) | `frames_duplicated` |
//! | reordering, probability `reorder` per frame | the frame held back and delivered after the next frame of this direction if it starts within `reorder_hold`, else alone when the hold ends ([`order`]) | `frames_held`, `frames_reordered` |
//! | (either) | later frames wait while the far line carries a copy or a released frame | `frames_delayed` |
//!
//! The checks run in that order on each frame: a frame the link-down window already took
//! takes no random draw, a lost frame no bit errors; only a frame that arrives whole (bit
//! errors or not) is duplicated or held, and no frame is held while another is. Bit errors fall on the bytes that
//! arrive, from the first destination address byte through the FCS; errors in the
//! preamble and SFD are not modelled (a receiver that misses the SFD loses the frame,
//! which `frame_loss` stands for). The bit stream of one direction is continuous across
//! frames: the gaps between flipped bits are drawn from the geometric distribution
//! (`floor(ln(1-u) / ln(1-p))` good bits, `u` uniform in \[0, 1)), one draw per flipped
//! bit, and the gap left at the end of a frame carries into the next; this is exactly
//! one Bernoulli trial per bit without a draw per bit. Bit `k` of the frame is bit
//! `k % 8` (least significant first, the order IEEE 802.3 clause 3.3 sends it) of byte
//! `k / 8`.
//!
//! A link that goes down is lost in both directions (1000BASE-T PHYs keep the link up
//! together), so the window is given to both transmitters of a link; the transmitters
//! keep sending into it (full duplex: no carrier sense), as a MAC does until software
//! notices the link status. The window includes any retraining after the link is back.
//!
//! Randomness: one [`SplitMix64`] per direction, seeded by the caller (the system derives
//! it from `sim.seed` and the direction), so the same seed gives the same faults bit for
//! bit; with a probability of zero no draw is taken. A transmitter without faults
//! installed does no fault work at all.

use crate::frame::Frame;
use sim_kernel::{Duration, SplitMix64, Time};

pub mod order;

pub use order::FarLine;

/// Largest accepted bit error rate (per bit): a maximum frame (12 144 bits) would then
/// have about 12 errors; above it nearly every frame is lost and a ping-pong cannot run.
pub const MAX_BIT_ERROR_RATE: f64 = 1e-3;

/// Byte times from the start of a frame's preamble on a line to the end of its first
/// byte after the SFD: 7 preamble bytes, the SFD, the byte itself.
pub(crate) const PREAMBLE_BYTES_TO_FIRST: u64 = crate::gmii::PREAMBLE_SFD_BYTES + 1;

/// A window in which the link is down (on the transmitter's TXD timeline).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkDown {
    /// When the link goes down.
    pub at: Time,
    /// How long it stays down \[ps\] (longer than zero).
    pub duration: Duration,
}

impl LinkDown {
    /// When the link is back up.
    #[must_use]
    pub fn until(&self) -> Time {
        self.at + self.duration
    }
}

/// The faults of one direction of a link. `Default` is no fault at all.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WireFaultParams {
    /// Probability that a frame is lost on the wire, in \[0, 1\].
    pub frame_loss: f64,
    /// Probability that a bit of a frame is inverted, in \[0, [`MAX_BIT_ERROR_RATE`]\].
    pub bit_error_rate: f64,
    /// When the link is down, if ever.
    pub link_down: Option<LinkDown>,
    /// Probability that a frame arriving whole is delivered twice, in \[0, 1\].
    pub duplicate: f64,
    /// Probability that a frame arriving whole is held back and delivered after the
    /// next one, in \[0, 1\].
    pub reorder: f64,
    /// The longest a held frame waits for the next one \[ps\]; then it goes alone.
    /// Zero: it goes as soon as the transmitter's line is idle after it.
    pub reorder_hold: Duration,
}

/// Why [`WireFaultParams`] were refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FaultParamError {
    /// `frame_loss` is not a probability.
    #[error("frame loss {0} is not a probability in [0, 1]")]
    FrameLoss(f64),
    /// `bit_error_rate` is outside \[0, [`MAX_BIT_ERROR_RATE`]\].
    #[error("bit error rate {0} is outside [0, {MAX_BIT_ERROR_RATE}]")]
    BitErrorRate(f64),
    /// A link-down window of no length.
    #[error("a link-down window needs a length")]
    EmptyWindow,
    /// `duplicate` is not a probability.
    #[error("duplication {0} is not a probability in [0, 1]")]
    Duplicate(f64),
    /// `reorder` is not a probability.
    #[error("reordering {0} is not a probability in [0, 1]")]
    Reorder(f64),
}

impl WireFaultParams {
    /// Whether no fault can happen.
    #[must_use]
    pub fn is_off(&self) -> bool {
        self.frame_loss == 0.0
            && self.bit_error_rate == 0.0
            && self.link_down.is_none()
            && !self.reorders()
    }

    /// Whether frames can be duplicated or held back: the far line must then be tracked
    /// ([`FarLine`]).
    #[must_use]
    pub fn reorders(&self) -> bool {
        self.duplicate > 0.0 || self.reorder > 0.0
    }

    /// Checks the ranges.
    ///
    /// # Errors
    /// The first value out of range.
    pub fn check(&self) -> Result<(), FaultParamError> {
        if !(0.0..=1.0).contains(&self.frame_loss) {
            return Err(FaultParamError::FrameLoss(self.frame_loss));
        }
        if !(0.0..=MAX_BIT_ERROR_RATE).contains(&self.bit_error_rate) {
            return Err(FaultParamError::BitErrorRate(self.bit_error_rate));
        }
        if self.link_down.is_some_and(|d| d.duration == Duration::ZERO) {
            return Err(FaultParamError::EmptyWindow);
        }
        if !(0.0..=1.0).contains(&self.duplicate) {
            return Err(FaultParamError::Duplicate(self.duplicate));
        }
        if !(0.0..=1.0).contains(&self.reorder) {
            return Err(FaultParamError::Reorder(self.reorder));
        }
        Ok(())
    }
}

/// What the faults of one direction did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WireFaultStats {
    /// Frames put on the link (past their SFD) while the faults were installed.
    pub frames: u64,
    /// Frames lost at random (`frame_loss`).
    pub frames_lost: u64,
    /// Frames that arrived with at least one bit inverted.
    pub frames_corrupted: u64,
    /// Bits inverted in all of them.
    pub bits_flipped: u64,
    /// Frames whose transmission overlapped the link-down window (none arrived good).
    pub link_down_lost: u64,
    /// Of those, frames whose first bytes arrived before the link went down: the far
    /// end saw a truncated frame (a runt or an FCS error).
    pub link_down_truncated: u64,
    /// Frames delivered twice (`duplicate`): the far end received a copy as well.
    pub frames_duplicated: u64,
    /// Frames held back (`reorder`), each delivered later.
    pub frames_held: u64,
    /// Of those, frames delivered after the next frame of this direction (overtaken);
    /// the others were delivered when the line went idle, late but in order.
    pub frames_reordered: u64,
    /// Frames that reached the far end later than sent because the far line was still
    /// carrying a copy or a released frame.
    pub frames_delayed: u64,
}

impl WireFaultStats {
    /// Frames that cannot have arrived good: lost, truncated by the link going down or
    /// corrupted.
    #[must_use]
    pub fn spoiled(&self) -> u64 {
        self.frames_lost + self.link_down_lost + self.frames_corrupted
    }
}

/// What happens to one frame on the wire (frames that arrive intact have none).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FrameFate {
    /// Nothing of the frame arrives.
    pub lost: bool,
    /// Only the first `cut` bytes arrive (the link went down during the frame).
    pub cut: Option<usize>,
    /// The bits inverted, in ascending order: bit `k` is bit `k % 8` of byte `k / 8`.
    pub flips: Vec<u64>,
    /// A copy of the frame follows it on the far line.
    pub duplicate: bool,
    /// The frame is held back (delivered after the next one, or when the line goes
    /// idle).
    pub hold: bool,
}

impl FrameFate {
    /// A frame that does not arrive at all.
    #[must_use]
    pub fn lost() -> Self {
        Self {
            lost: true,
            ..Self::default()
        }
    }

    /// How many of a frame's `total` bytes arrive.
    #[must_use]
    pub fn arriving(&self, total: usize) -> usize {
        if self.lost || self.hold {
            return 0;
        }
        self.cut.map_or(total, |c| c.min(total))
    }

    /// The bytes of `known` (a frame's first bytes, or all of them) as they arrive:
    /// truncated at the cut, bits inverted (a held frame: as it arrives when released).
    #[must_use]
    pub fn apply(&self, known: &Frame) -> Frame {
        let n = if self.lost {
            0
        } else {
            self.cut.map_or(known.len(), |c| c.min(known.len()))
        };
        let mut bytes = known.bytes()[..n].to_vec();
        for &k in &self.flips {
            let Some(b) = usize::try_from(k / 8).ok().and_then(|i| bytes.get_mut(i)) else {
                break; // ascending: the rest is not known yet
            };
            *b ^= 1 << (k % 8);
        }
        Frame::new(known.id, known.msg, bytes)
    }
}

/// The faults of one direction of a link: parameters, random stream, counters.
#[derive(Clone, Debug)]
pub struct WireFaults {
    params: WireFaultParams,
    rng: SplitMix64,
    /// Good bits still to pass before the next inverted one (drawn, not yet used up).
    gap: Option<u64>,
    stats: WireFaultStats,
    /// The far end's line and the frame held back (used when `reorders()`).
    line: FarLine,
}

impl WireFaults {
    /// Faults with `params`, drawing from a generator seeded with `seed`.
    #[must_use]
    pub fn new(params: WireFaultParams, seed: u64) -> Self {
        Self {
            params,
            rng: SplitMix64::new(seed),
            gap: None,
            stats: WireFaultStats::default(),
            line: FarLine::default(),
        }
    }

    /// The parameters.
    #[must_use]
    pub fn params(&self) -> &WireFaultParams {
        &self.params
    }

    /// What they did so far.
    #[must_use]
    pub fn stats(&self) -> &WireFaultStats {
        &self.stats
    }

    /// Decides the fate of a frame of `total` bytes (FCS included) whose preamble
    /// started on TXD at `start` and whose first byte after the SFD goes out at
    /// `data_at`, one byte per `byte`; `None` when it arrives intact.
    pub fn fate(
        &mut self,
        start: Time,
        data_at: Time,
        byte: Duration,
        total: usize,
    ) -> Option<FrameFate> {
        self.stats.frames += 1;
        let mut cut = None;
        if let Some(down) = self.params.link_down {
            let end = data_at + byte * total as u64;
            if start < down.until() && end > down.at {
                self.stats.link_down_lost += 1;
                // Bytes whose clock ended before the link went down arrived.
                let whole = down
                    .at
                    .checked_since(data_at)
                    .map_or(0, |d| d.as_ps() / byte.as_ps().max(1));
                let n = usize::try_from(whole).unwrap_or(usize::MAX).min(total);
                if n == 0 {
                    return Some(FrameFate::lost());
                }
                self.stats.link_down_truncated += 1;
                cut = Some(n);
            }
        }
        if cut.is_none() && self.params.frame_loss > 0.0 && self.uniform() < self.params.frame_loss
        {
            self.stats.frames_lost += 1;
            return Some(FrameFate::lost());
        }
        let bits = cut.unwrap_or(total) as u64 * 8;
        let flips = if self.params.bit_error_rate > 0.0 {
            self.flips(bits)
        } else {
            Vec::new()
        };
        if !flips.is_empty() {
            self.stats.frames_corrupted += 1;
            self.stats.bits_flipped += flips.len() as u64;
        }
        let (mut duplicate, mut hold) = (false, false);
        if cut.is_none() {
            if self.params.duplicate > 0.0 && self.uniform() < self.params.duplicate {
                self.stats.frames_duplicated += 1;
                duplicate = true;
            }
            if self.params.reorder > 0.0
                && !self.line.holding()
                && self.uniform() < self.params.reorder
            {
                self.stats.frames_held += 1;
                hold = true;
            }
        }
        if cut.is_none() && flips.is_empty() && !duplicate && !hold {
            return None;
        }
        Some(FrameFate {
            lost: false,
            cut,
            flips,
            duplicate,
            hold,
        })
    }

    /// The inverted bits among the next `bits` bits of the stream.
    fn flips(&mut self, bits: u64) -> Vec<u64> {
        let mut out = Vec::new();
        let mut pos = 0u64;
        loop {
            let gap = match self.gap.take() {
                Some(g) => g,
                None => self.draw_gap(),
            };
            let left = bits - pos;
            if gap >= left {
                self.gap = Some(gap - left);
                return out;
            }
            pos += gap;
            out.push(pos);
            pos += 1;
        }
    }

    /// Good bits before the next inverted one: geometric with the bit error rate.
    fn draw_gap(&mut self) -> u64 {
        let p = self.params.bit_error_rate;
        let u = self.uniform();
        let g = ((1.0 - u).ln() / (-p).ln_1p()).floor();
        // Never negative (both logarithms are at most 0); huge for tiny rates.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        if g.is_finite() && g < 9.0e18 {
            g as u64
        } else {
            u64::MAX
        }
    }

    /// A number uniformly in \[0, 1) (53 random bits).
    fn uniform(&mut self) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        let x = (self.rng.next_u64() >> 11) as f64;
        x * (1.0 / 9_007_199_254_740_992.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::check_fcs;
    use sim_kernel::MsgId;

    const BYTE: Duration = Duration(8_000);

    fn faults(p: WireFaultParams, seed: u64) -> WireFaults {
        p.check().unwrap();
        WireFaults::new(p, seed)
    }

    /// Fates of `n` 1518-byte frames sent back to back.
    fn fates(f: &mut WireFaults, n: usize) -> Vec<Option<FrameFate>> {
        (0..n as u64)
            .map(|i| {
                let start = Time(i * 1_600 * 8_000);
                f.fate(start, start + BYTE * 8, BYTE, 1518)
            })
            .collect()
    }

    #[test]
    fn no_fault_takes_no_draw_and_changes_nothing() {
        let mut f = faults(WireFaultParams::default(), 1);
        assert!(f.params().is_off());
        assert!(fates(&mut f, 100).iter().all(Option::is_none));
        assert_eq!(f.rng, SplitMix64::new(1), "no random draw");
        assert_eq!(f.stats().frames, 100);
        assert_eq!(f.stats().spoiled(), 0);
    }

    #[test]
    fn total_loss_loses_every_frame() {
        let p = WireFaultParams {
            frame_loss: 1.0,
            ..WireFaultParams::default()
        };
        let mut f = faults(p, 1);
        assert!(fates(&mut f, 50)
            .iter()
            .all(|x| x.as_ref().is_some_and(|x| x.lost)));
        assert_eq!(f.stats().frames_lost, 50);
    }

    #[test]
    fn loss_rate_and_bit_error_rate_come_out_right() {
        let p = WireFaultParams {
            frame_loss: 0.25,
            bit_error_rate: 1e-4,
            ..WireFaultParams::default()
        };
        let mut f = faults(p, 9);
        let n = 20_000;
        let got = fates(&mut f, n);
        let s = *f.stats();
        let lost = s.frames_lost as f64 / n as f64;
        assert!((0.24..0.26).contains(&lost), "loss {lost}");
        // Bits of the frames that arrived: 1518 x 8 each.
        let bits = (n as u64 - s.frames_lost) as f64 * 1518.0 * 8.0;
        let ber = s.bits_flipped as f64 / bits;
        assert!((0.95e-4..1.05e-4).contains(&ber), "ber {ber}");
        let flips: usize = got.iter().flatten().map(|x| x.flips.len()).sum();
        assert_eq!(flips as u64, s.bits_flipped);
        for x in got.iter().flatten() {
            assert!(
                x.flips.windows(2).all(|w| w[0] < w[1]),
                "ascending, distinct"
            );
            assert!(x.flips.iter().all(|&k| k < 1518 * 8));
        }
    }

    #[test]
    fn flipped_bits_are_exactly_those_of_the_fate_and_break_the_fcs() {
        let bytes = crate::frame::build(
            via_abi::MacAddr([2; 6]),
            via_abi::MacAddr([4; 6]),
            via_abi::EtherType::Via,
            &[0x5A; 200],
        )
        .unwrap();
        let sent = Frame::new(crate::FrameId(1), MsgId(1), bytes);
        let fate = FrameFate {
            lost: false,
            cut: None,
            flips: vec![0, 9, 8 * 100 + 7],
            ..FrameFate::default()
        };
        let got = fate.apply(&sent);
        let diff: Vec<(usize, u8)> = sent
            .bytes()
            .iter()
            .zip(got.bytes())
            .enumerate()
            .filter(|(_, (a, b))| a != b)
            .map(|(i, (a, b))| (i, a ^ b))
            .collect();
        assert_eq!(diff, vec![(0, 0x01), (1, 0x02), (100, 0x80)]);
        assert!(check_fcs(got.bytes()).is_err());
        assert!(check_fcs(sent.bytes()).is_ok());
        // Truncated: only the bytes before the cut, flips inside them.
        let cut = FrameFate {
            cut: Some(50),
            ..fate
        };
        let got = cut.apply(&sent);
        assert_eq!(got.len(), 50);
        assert_eq!(got.bytes()[1], sent.bytes()[1] ^ 2);
        assert_eq!(&got.bytes()[2..], &sent.bytes()[2..50]);
    }

    #[test]
    fn the_same_seed_gives_the_same_faults_and_another_seed_others() {
        let p = WireFaultParams {
            frame_loss: 0.1,
            bit_error_rate: 1e-4,
            ..WireFaultParams::default()
        };
        let a = fates(&mut faults(p, 7), 500);
        let b = fates(&mut faults(p, 7), 500);
        let c = fates(&mut faults(p, 8), 500);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.iter().flatten().count() > 100);
    }

    /// Frames on the TXD timeline: 1518 bytes + 8 preamble + 12 IFG = 1538 byte times.
    #[test]
    fn link_down_takes_the_frames_of_its_window_only() {
        // Frame i starts at i x 1538 x 8 ns; the window covers the data of frame 2
        // from byte 100 on, frames 3 and 4, and the preamble of frame 5.
        let period = 1_538u64;
        let start = |i: u64| Time(i * period * 8_000);
        let down_at = start(2) + BYTE * (8 + 100);
        let up_at = start(5) + BYTE * 3;
        let p = WireFaultParams {
            link_down: Some(LinkDown {
                at: down_at,
                duration: up_at - down_at,
            }),
            ..WireFaultParams::default()
        };
        let mut f = faults(p, 1);
        let got: Vec<Option<FrameFate>> = (0..7)
            .map(|i| f.fate(start(i), start(i) + BYTE * 8, BYTE, 1518))
            .collect();
        assert_eq!(got[0], None);
        assert_eq!(got[1], None);
        assert_eq!(got[2].as_ref().and_then(|x| x.cut), Some(100));
        assert!(got[3].as_ref().is_some_and(|x| x.lost));
        assert!(got[4].as_ref().is_some_and(|x| x.lost));
        assert!(
            got[5].as_ref().is_some_and(|x| x.lost),
            "preamble in the window"
        );
        assert_eq!(got[6], None);
        let s = f.stats();
        assert_eq!((s.link_down_lost, s.link_down_truncated), (4, 1));
        assert_eq!(f.rng, SplitMix64::new(1), "no random draw");
    }

    #[test]
    fn ranges_are_checked() {
        let bad = [
            (1.5, 0.0, FaultParamError::FrameLoss(1.5)),
            (-0.1, 0.0, FaultParamError::FrameLoss(-0.1)),
            (f64::NAN, 0.0, FaultParamError::FrameLoss(f64::NAN)),
            (0.0, 2e-3, FaultParamError::BitErrorRate(2e-3)),
        ];
        for (loss, ber, want) in bad {
            let p = WireFaultParams {
                frame_loss: loss,
                bit_error_rate: ber,
                ..WireFaultParams::default()
            };
            let err = p.check().unwrap_err();
            assert_eq!(err.to_string(), want.to_string());
        }
        let empty = WireFaultParams {
            link_down: Some(LinkDown {
                at: Time(1),
                duration: Duration::ZERO,
            }),
            ..WireFaultParams::default()
        };
        assert_eq!(empty.check(), Err(FaultParamError::EmptyWindow));
    }
}
