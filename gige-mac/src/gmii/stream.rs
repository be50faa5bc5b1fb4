//! Streamed (cut-through) frames on a [`GmiiTx`]: a frame queued before all its bytes are
//! known, extended as they arrive, with FIFO underrun detection.
//!
//! ```text
//!  enqueue_partial(prefix, total) --> queue --> preamble --> data: RxStart(partial RxFrame)
//!  extend(id, bytes)  before data: bytes appended silently
//!                     during data: appended + RxData (+ RxEnd once whole) to the far end,
//!                                  or underrun if byte `known` was due on TXD before now
//! ```
//!
//! Byte `k` of the frame goes out on TXD in the clock that starts at `data_at + k x 8 ns`
//! (`data_at`: the edge after the SFD). It must be known by that edge; a byte that is not
//! is an underrun: every byte from there on goes out as zero and the FCS as the inverse of
//! the right one, so the receiver's FCS check fails. The frame keeps its length and
//! timing (a DP83820 would abort it sooner; documented simplification). `RxData` updates
//! land on the far end no sooner than the frame's first byte, so always after `RxStart`;
//! since an update is sent no later than its first new byte leaves TXD, it also lands
//! before that byte is complete at the far end.

use super::{tell_far_end, GmiiState, GmiiTx, OnWire, TxRefused};
use crate::frame::{fcs, Frame, FrameId};
use crate::msg::{MacMsg, PortIndex};
use sim_kernel::Ctx;
use via_abi::ethernet::FCS_LEN;

/// What [`GmiiTx::extend`] did with the bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extended {
    /// Appended to the frame (queued, in its preamble, or on the wire in time).
    Accepted,
    /// Too late: the frame had an underrun (now or earlier) and goes out corrupted.
    Underrun,
    /// No frame with this id is queued or on the wire (or it was already whole).
    Unknown,
}

impl GmiiTx {
    /// Queues a frame of `total` bytes on the wire (FCS included) of which `prefix` holds
    /// the first ones; the rest follow with [`GmiiTx::extend`]. Starts on this edge if the
    /// line is idle.
    ///
    /// # Errors
    /// As [`GmiiTx::enqueue`] (a `total` of 0 is an empty frame).
    pub fn enqueue_partial<M: From<MacMsg>>(
        &mut self,
        prefix: Frame,
        total: usize,
        ctx: &mut Ctx<'_, M>,
    ) -> Result<(), TxRefused> {
        let total = total.max(prefix.len());
        self.push(prefix, total, false, ctx)
    }

    /// Appends `more` to the streamed frame `id` (bytes past its total are ignored).
    pub fn extend<M: From<MacMsg>>(
        &mut self,
        id: FrameId,
        more: &[u8],
        ctx: &mut Ctx<'_, M>,
    ) -> Extended {
        if let Some(q) = self.queue.iter_mut().find(|q| q.frame.id == id) {
            q.frame = appended(&q.frame, more, q.total);
            return Extended::Accepted;
        }
        let now = ctx.now();
        let byte = ctx.my_domain().period();
        let Some(w) = self.on_wire.as_mut().filter(|w| w.frame.id == id) else {
            return Extended::Unknown;
        };
        if w.underrun {
            return Extended::Underrun;
        }
        if w.frame.len() >= w.total {
            return Extended::Unknown;
        }
        if !w.announced {
            // Still in the preamble: nothing has gone out yet.
            w.frame = appended(&w.frame, more, w.total);
            return Extended::Accepted;
        }
        let due = w.data_at + byte * w.frame.len() as u64;
        if now > due {
            self.complete_underrun(ctx);
            return Extended::Underrun;
        }
        w.frame = appended(&w.frame, more, w.total);
        self.announce(ctx);
        Extended::Accepted
    }

    /// Sends the far end what is now known of the frame on the wire: `RxData`, and
    /// `RxEnd` once it is whole.
    fn announce<M: From<MacMsg>>(&mut self, ctx: &mut Ctx<'_, M>) {
        let byte = ctx.my_domain().period();
        if let Some(w) = self.on_wire.as_mut() {
            tell_far_end(
                w,
                self.link,
                byte,
                |port, frame| MacMsg::RxData { port, frame },
                ctx,
            );
        }
    }

    /// The frame on the wire ran dry: fills and corrupts the rest, tells the far end.
    pub(super) fn complete_underrun<M: From<MacMsg>>(&mut self, ctx: &mut Ctx<'_, M>) {
        let port = self.port;
        let announced = match self.on_wire.as_mut() {
            Some(w) => {
                corrupt_rest(w, port);
                w.announced
            }
            None => return,
        };
        if announced && self.fsm.state() == GmiiState::Data {
            self.announce(ctx);
        }
    }
}

/// `frame` with `more` appended, at most `total` bytes.
fn appended(frame: &Frame, more: &[u8], total: usize) -> Frame {
    let room = total.saturating_sub(frame.len());
    let mut bytes = Vec::with_capacity(frame.len() + room.min(more.len()));
    bytes.extend_from_slice(frame.bytes());
    bytes.extend_from_slice(&more[..room.min(more.len())]);
    Frame::new(frame.id, frame.msg, bytes)
}

/// Underrun: the bytes not known yet go out as zeros and the FCS inverted.
pub(super) fn corrupt_rest(w: &mut OnWire, port: PortIndex) {
    let known = w.frame.len();
    tracing::warn!(target: "mac::gmii", port = port.0, id = w.frame.id.0, known, total = w.total, "transmit underrun: frame goes out corrupted");
    let mut bytes = w.frame.bytes().to_vec();
    bytes.resize(w.total, 0);
    if w.total >= FCS_LEN {
        let body = w.total - FCS_LEN;
        let bad = !fcs(&bytes[..body]);
        bytes[body..].copy_from_slice(&bad.to_le_bytes());
    }
    w.frame = Frame::new(w.frame.id, w.frame.msg, bytes);
    w.underrun = true;
}
