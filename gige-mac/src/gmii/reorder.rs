//! The transmitter's side of duplication and reordering ([`crate::fault::order`]): where
//! a frame lands on the far end's line, its copy, and the release of a frame held back.
//! Called only when the installed faults duplicate or reorder.

use super::{GmiiTx, OnWire};
use crate::fault::WireFaults;
use crate::frame::Frame;
use crate::link::Attachment;
use crate::msg::MacMsg;
use crate::rx::RxFrame;
use sim_kernel::{Ctx, Cycles, Duration, Priority, Time};

/// Places the frame on the wire `w` on the far line at the end of its preamble: it
/// waits while the line still carries a copy or a released frame (its arrival moves
/// later), and it (with its copy) occupies the line. A lost or held frame takes no room.
pub(super) fn place(w: &mut OnWire, f: &mut WireFaults, byte: Duration, ifg: Duration) {
    let (cut, duplicate) = match w.fate.as_ref() {
        Some(fate) if fate.lost || fate.hold => return,
        Some(fate) => (fate.cut.is_some(), fate.duplicate),
        None => (false, false),
    };
    let shift = f.place(w.rx_first, byte);
    w.rx_first += shift;
    w.rx_end += shift;
    w.cut_end += shift;
    let mut last = if cut { w.cut_end } else { w.rx_end };
    if duplicate {
        w.copy_first = WireFaults::copy_first(w.rx_end, byte, ifg);
        last = w.copy_first + byte * (w.total as u64).saturating_sub(1);
    }
    f.occupy(last, ifg);
}

/// Delivers a whole `frame` on the far end of `link`, its first byte complete at
/// `first`, one byte per `byte`; returns when its last byte is.
pub(super) fn deliver<M: From<MacMsg>>(
    link: Attachment,
    frame: Frame,
    first: Time,
    byte: Duration,
    ctx: &mut Ctx<'_, M>,
) -> Time {
    let last = first + byte * (frame.len() as u64).saturating_sub(1);
    let rx = RxFrame::new(frame, first, last, byte);
    let start = MacMsg::RxStart {
        port: link.peer_port,
        frame: rx.clone(),
    };
    ctx.send_at(link.peer, first, start.into());
    let end = MacMsg::RxEnd {
        port: link.peer_port,
        frame: rx,
    };
    ctx.send_at(link.peer, last, end.into());
    last
}

impl GmiiTx {
    /// At the end of the frame on the wire: holds it back if its fate says so, and asks
    /// for the wake-up that ends the hold (`reorder_hold` above zero).
    pub(super) fn hold_if_held<M: From<MacMsg>>(&mut self, ctx: &mut Ctx<'_, M>) {
        let (Some(w), Some(f)) = (self.on_wire.as_ref(), self.faults.as_mut()) else {
            return;
        };
        let Some(fate) = w.fate.as_ref().filter(|fate| fate.hold) else {
            return;
        };
        let hold = f.params().reorder_hold;
        let until = ctx.now() + hold;
        f.hold(fate.apply(&w.frame), fate.duplicate, until);
        if hold > Duration::ZERO {
            let period = ctx.my_domain().period().as_ps().max(1);
            let clocks = hold.as_ps().div_ceil(period);
            ctx.wake_after_with(
                Cycles(clocks),
                Priority::LATE,
                MacMsg::TxReorderRelease { port: self.port }.into(),
            );
        }
    }

    /// Handles this port's [`MacMsg::TxReorderRelease`]: the frame held back goes alone if
    /// its hold is over (a wake-up for a frame already overtaken, or for an earlier one,
    /// finds nothing due and does nothing).
    pub fn reorder_release<M: From<MacMsg>>(&mut self, ctx: &mut Ctx<'_, M>) {
        if self.faults.as_ref().is_some_and(|f| f.hold_over(ctx.now())) {
            self.release_held(false, ctx);
        }
    }

    /// Releases the frame held back, if any: the far end's element starts it as soon as
    /// its line is free (after the frame that `overtook` it, if one did), with its copy
    /// if it was duplicated too.
    pub(super) fn release_held<M: From<MacMsg>>(&mut self, overtaken: bool, ctx: &mut Ctx<'_, M>) {
        let Some(f) = self.faults.as_mut() else {
            return;
        };
        let Some(held) = f.release(overtaken) else {
            return;
        };
        let byte = ctx.my_domain().period();
        let ifg = byte * self.min_ifg;
        let link = self.link;
        let peer = ctx.domain_of(link.peer).clone();
        let first = peer.edge_at_or_after(f.first_from(ctx.now() + link.latency, byte));
        tracing::trace!(target: "mac::phy", id = held.frame.id.0, peer = %link.peer, first = %first, overtaken, "held frame released");
        let copy = held.duplicate.then(|| held.frame.clone());
        let mut last = deliver(link, held.frame, first, byte, ctx);
        if let Some(copy) = copy {
            last = deliver(
                link,
                copy,
                WireFaults::copy_first(last, byte, ifg),
                byte,
                ctx,
            );
        }
        f.occupy(last, ifg);
    }
}
