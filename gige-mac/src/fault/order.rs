//! Duplication and reordering on one direction of a link: the far end's receive line
//! ([`FarLine`]) as a misbehaving link or switch port drives it.
//!
//! The element sits at the far end of the cable and keeps the physical layer honest: its
//! line carries one frame at a time, each after a preamble and SFD (8 byte times) and
//! separated from the one before by the transmitter's inter-frame gap.
//!
//! - **Duplicate** (`WireFaultParams::duplicate`): the frame is delivered, then a copy of
//!   it (the same bytes, bit errors included) starts one inter-frame gap after the
//!   frame's last byte: its first byte is complete `(ifg + 8 + 1)` byte times after the
//!   original's last.
//! - **Reorder** (`WireFaultParams::reorder`): the frame is held back whole. It is
//!   released right after the next frame of this direction (which overtakes it: first
//!   the next frame, then, one gap later, the held one) if that frame starts within
//!   `reorder_hold` of the held frame's end; else when the hold ends (late but in
//!   order: [`MacMsg::TxReorderRelease`](crate::MacMsg::TxReorderRelease)), so a held
//!   frame never waits for traffic that may never come. With `reorder_hold` zero it goes
//!   when the transmitter's gap after it ends with nothing queued. One frame is held at
//!   a time.
//! - A frame that would start on the far line while it still carries a copy or a
//!   released frame waits (`frames_delayed`), as a switch's output queue makes it wait;
//!   its bytes arrive later by that much.
//!
//! ```text
//!  far RXD, duplicate:  | pre | frame k | ifg | pre | copy of k | ifg | pre | frame k+1 (delayed) |
//!  far RXD, reorder:    (k held)  | pre | frame k+1 | ifg | pre | frame k |
//! ```
//!
//! Nothing here runs unless `duplicate` or `reorder` is above zero.

use super::{WireFaults, PREAMBLE_BYTES_TO_FIRST};
use crate::frame::Frame;
use sim_kernel::{Duration, Time};

/// The far end's receive line of one direction, and the frame held back on it.
#[derive(Clone, Debug, Default)]
pub struct FarLine {
    /// The far line is free for a next preamble from this instant (the last byte of the
    /// latest frame delivered, plus the inter-frame gap).
    free: Time,
    /// The frame held back, as it arrives when released.
    held: Option<Held>,
}

/// A frame held back by the reordering element.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    /// Its bytes as they arrive (bit errors applied).
    pub frame: Frame,
    /// A copy follows it when it is released.
    pub duplicate: bool,
    /// When it goes alone if no frame has overtaken it.
    pub until: Time,
}

impl FarLine {
    /// Whether a frame is held back.
    #[must_use]
    pub fn holding(&self) -> bool {
        self.held.is_some()
    }
}

impl WireFaults {
    /// How much later than sent a frame whose first byte would be complete at the far end
    /// at `first` must arrive so that its preamble starts after the far line is free
    /// (zero when it is). Counts a delayed frame.
    pub fn place(&mut self, first: Time, byte: Duration) -> Duration {
        let earliest = self.line.free + byte * PREAMBLE_BYTES_TO_FIRST;
        let shift = earliest.saturating_since(first);
        if shift > Duration::ZERO {
            self.stats.frames_delayed += 1;
        }
        shift
    }

    /// The far line carries a frame whose last byte is complete at `last`: it is free
    /// again one gap `ifg` later.
    pub fn occupy(&mut self, last: Time, ifg: Duration) {
        self.line.free = self.line.free.max(last + ifg);
    }

    /// When the first byte of a copy of a frame whose last byte is complete at `last` is
    /// complete: one gap and a preamble later.
    #[must_use]
    pub fn copy_first(last: Time, byte: Duration, ifg: Duration) -> Time {
        last + ifg + byte * PREAMBLE_BYTES_TO_FIRST
    }

    /// When the first byte of a frame the element starts sending at `at` (or as soon
    /// after as its line is free) is complete at the far end.
    #[must_use]
    pub fn first_from(&self, at: Time, byte: Duration) -> Time {
        at.max(self.line.free) + byte * PREAMBLE_BYTES_TO_FIRST
    }

    /// Holds back `frame` (as it arrives), with its copy if it is duplicated too, until
    /// `until` at the latest.
    pub fn hold(&mut self, frame: Frame, duplicate: bool, until: Time) {
        self.line.held = Some(Held {
            frame,
            duplicate,
            until,
        });
    }

    /// Whether the frame held back (if any) is due to go alone at `now`.
    #[must_use]
    pub fn hold_over(&self, now: Time) -> bool {
        self.line.held.as_ref().is_some_and(|h| h.until <= now)
    }

    /// Takes the frame held back, if any; `overtaken` when a later frame went ahead of it
    /// (counted in `frames_reordered`).
    pub fn release(&mut self, overtaken: bool) -> Option<Held> {
        let held = self.line.held.take()?;
        if overtaken {
            self.stats.frames_reordered += 1;
        }
        Some(held)
    }

    /// Whether a frame is held back.
    #[must_use]
    pub fn holding(&self) -> bool {
        self.line.holding()
    }
}

#[cfg(test)]
mod tests {
    use super::super::WireFaultParams;
    use super::*;
    use crate::FrameId;
    use sim_kernel::MsgId;

    const BYTE: Duration = Duration(8_000);
    const IFG: Duration = Duration(12 * 8_000);

    #[test]
    fn a_free_line_delays_nothing_and_a_busy_one_delays_to_its_gap() {
        let mut f = WireFaults::new(WireFaultParams::default(), 1);
        assert_eq!(f.place(Time(1_000_000), BYTE), Duration::ZERO);
        // A 100-byte frame ends at 2 us; its copy starts one gap and a preamble later.
        let copy = WireFaults::copy_first(Time(2_000_000), BYTE, IFG);
        assert_eq!(copy, Time(2_000_000 + 21 * 8_000));
        f.occupy(copy + BYTE * 99, IFG);
        // A frame the transmitter sent right after the original must wait for the copy.
        let natural = Time(2_000_000 + 21 * 8_000);
        let shift = f.place(natural, BYTE);
        assert_eq!(shift, BYTE * 99 + IFG + BYTE * 9);
        assert_eq!(f.stats().frames_delayed, 1);
        assert_eq!(f.place(natural + shift, BYTE), Duration::ZERO);
    }

    #[test]
    fn a_held_frame_is_released_once_and_counted_if_overtaken() {
        let mut f = WireFaults::new(WireFaultParams::default(), 1);
        let frame = Frame::new(FrameId(3), MsgId(3), vec![1, 2, 3]);
        f.hold(frame.clone(), false, Time(500));
        assert!(f.holding());
        assert!(!f.hold_over(Time(499)) && f.hold_over(Time(500)));
        assert_eq!(
            f.release(true),
            Some(Held {
                frame,
                duplicate: false,
                until: Time(500)
            })
        );
        assert_eq!(f.release(true), None);
        assert_eq!(f.stats().frames_reordered, 1);
        assert_eq!(f.first_from(Time(80_000), BYTE), Time(80_000 + 9 * 8_000));
    }
}
