//! Cut-through forwarding ([`ForwardingMode::CutThrough`](crate::ForwardingMode)): a frame
//! starts on its output port before its end has arrived.
//!
//! ```text
//!  RxStart(i, f)           -> Pending: decision due at (DA's last byte in) + forwarding_latency
//!  SwitchCutThrough(i, f)  -> DA known unicast port p != i, p idle (Idle, empty queue, not
//!                             paused), f fits p's buffer: p.enqueue_partial(bytes, len)
//!                             -> Forwarding(p)
//!                             else: nothing now; f is stored and forwarded at its end
//!  RxData(i, f)            -> Forwarding: the new bytes extend the frame on p
//!  RxEnd(i, f)             -> Forwarding: last bytes to p; FCS checked: good -> learned;
//!                             bad -> counted (cut_through_bad): it has gone out bad
//!                             Pending (a frame shorter than DA + latency): checked, and
//!                             forwarded at the decision's time
//! ```
//!
//! The decision needs the destination address only (6 bytes, the "fast forward" variant
//! of cut-through; FORE's ES-2810 reads 14 bytes, DA, SA and type), so the saving over
//! store and forward is the frame's time on the wire after its DA: (length - 6) x 8 ns
//! at 1000 Mb/s. Source addresses are learned at the frame's end, after its FCS check, in
//! both modes. Unknown and group destinations (flooding) and MAC Control frames are
//! stored and forwarded (or consumed) as in store-and-forward mode.
//!
//! **Bytes in time.** The output sends byte k no sooner than `forwarding_latency` + 8
//! preamble clocks after the input received it (both run at one byte per 8 ns), so every
//! byte is in the switch before it is due on the output's TXD. The model hands the output
//! transmitter the bytes the input's transmitter has made known (the whole frame when
//! the node's MAC knew it whole when it started; more with each `RxData` when it streams
//! it): their timing on the output wire is exact either way. A node's own transmit
//! underrun arrives as zeros with an inverted FCS, is passed on as it came, and fails the
//! FCS check at the far end.

use super::{ForwardingMode, Switch};
use crate::frame::{Frame, FrameId};
use crate::gmii::GmiiState;
use crate::msg::{MacMsg, PortIndex};
use crate::rx::RxFrame;
use sim_kernel::{Ctx, Time};
use via_abi::ethernet::MacAddr;

/// Bytes of the destination address, all a cut-through decision needs.
pub const DECISION_BYTES: usize = 6;

/// What a cut-through switch does with the frame arriving on an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cut {
    /// The decision is due at `at`.
    Pending {
        /// The arriving frame.
        id: FrameId,
        /// When the decision is due.
        at: Time,
    },
    /// Going out on `out`; its first `given` bytes are with that port's transmitter.
    Forwarding {
        /// The arriving frame.
        id: FrameId,
        /// Its output port.
        out: PortIndex,
        /// Bytes handed to the output's transmitter.
        given: usize,
    },
}

impl Switch {
    /// A frame starts arriving on `port`: plan the cut-through decision.
    pub(super) fn cut_start<M: From<MacMsg>>(
        &mut self,
        port: PortIndex,
        frame: RxFrame,
        ctx: &mut Ctx<'_, M>,
    ) {
        let latency = self.forwarding_latency;
        let Some(p) = self.ports.get_mut(port.index()) else {
            return;
        };
        let id = frame.id();
        let at = frame.byte_at(DECISION_BYTES - 1).max(ctx.now()) + latency;
        p.cut = Some(Cut::Pending { id, at });
        p.arriving = Some(frame);
        ctx.wake_at(at, MacMsg::SwitchCutThrough { in_port: port, id }.into());
    }

    /// More bytes of the frame arriving on `port` are known: pass them on if it is going
    /// out already.
    pub(super) fn receive_data<M: From<MacMsg>>(
        &mut self,
        port: PortIndex,
        frame: RxFrame,
        ctx: &mut Ctx<'_, M>,
    ) {
        if self.mode != ForwardingMode::CutThrough {
            return;
        }
        let Some(p) = self.ports.get_mut(port.index()) else {
            self.bad_port(port, "rx-data");
            return;
        };
        if p.arriving.as_ref().map(RxFrame::id) != Some(frame.id()) {
            return;
        }
        let going = match p.cut {
            Some(Cut::Forwarding { id, out, given }) if id == frame.id() => Some((out, given)),
            _ => None,
        };
        if let Some((out, given)) = going {
            let given = self.pass_on(out, given, &frame, ctx);
            if let Some(p) = self.ports.get_mut(port.index()) {
                p.cut = Some(Cut::Forwarding {
                    id: frame.id(),
                    out,
                    given,
                });
            }
        }
        if let Some(p) = self.ports.get_mut(port.index()) {
            p.arriving = Some(frame);
        }
    }

    /// Hands the bytes of `frame` past the first `given` to output `out`'s transmitter;
    /// returns how many it has now.
    fn pass_on<M: From<MacMsg>>(
        &mut self,
        out: PortIndex,
        given: usize,
        frame: &RxFrame,
        ctx: &mut Ctx<'_, M>,
    ) -> usize {
        let known = frame.known();
        if known.len() <= given {
            return given;
        }
        if let Some(o) = self.ports.get_mut(out.index()) {
            // Never late (see the module doc); an underrun would be counted by the
            // transmitter and show as a bad FCS at the far end.
            let _ = o.tx.extend(frame.id(), &known[given..], ctx);
        }
        known.len()
    }

    /// [`MacMsg::SwitchCutThrough`]: the destination address of frame `id` on `in_port`
    /// is in and the forwarding latency has passed.
    pub(super) fn cut_through<M: From<MacMsg>>(
        &mut self,
        in_port: PortIndex,
        id: FrameId,
        ctx: &mut Ctx<'_, M>,
    ) {
        let now = ctx.now();
        let Some(p) = self.ports.get_mut(in_port.index()) else {
            self.bad_port(in_port, "cut-through");
            return;
        };
        if !matches!(p.cut, Some(Cut::Pending { id: c, .. }) if c == id) {
            return; // stale: the frame has ended and was handled at its end
        }
        // From here on, unless it starts now, the frame is stored and forwarded.
        p.cut = None;
        let Some(frame) = p.arriving.clone() else {
            return;
        };
        let Some(dst) = frame
            .arrived(now)
            .get(..DECISION_BYTES)
            .and_then(|b| <[u8; 6]>::try_from(b).ok())
            .map(MacAddr)
        else {
            return;
        };
        let Some(out) = self.table.lookup(dst).filter(|&o| o != in_port) else {
            return; // flooded or filtered at its end
        };
        let total = frame.len() as u64;
        let room = self.buffer_bytes;
        let Some(o) = self.ports.get_mut(out.index()) else {
            return;
        };
        let idle =
            o.tx.state() == GmiiState::Idle && o.tx.queued() == 0 && o.tx.paused_until() <= now;
        if !idle || o.buffered + total > room {
            tracing::debug!(target: "mac::switch", port = in_port.0, out = out.0, id = id.0, "output busy: store and forward");
            return;
        }
        let known = Frame::new(id, frame.msg(), frame.known().to_vec());
        let given = known.len();
        if o.tx.enqueue_partial(known, frame.len(), ctx).is_err() {
            return;
        }
        o.stats.queued_out += 1;
        o.stats.cut_through += 1;
        tracing::debug!(target: "mac::switch", port = in_port.0, out = out.0, id = id.0, "cut-through");
        self.admit(out, in_port, id, total, ctx);
        if let Some(p) = self.ports.get_mut(in_port.index()) {
            p.cut = Some(Cut::Forwarding { id, out, given });
        }
    }

    /// The frame going out cut-through on `out` has ended on `in_port`: its last bytes
    /// follow; its FCS is checked now that it has (partly) gone.
    pub(super) fn cut_end<M: From<MacMsg>>(
        &mut self,
        in_port: PortIndex,
        out: PortIndex,
        given: usize,
        frame: RxFrame,
        ctx: &mut Ctx<'_, M>,
    ) {
        self.pass_on(out, given, &frame, ctx);
        let id = frame.id();
        let Some(p) = self.ports.get_mut(in_port.index()) else {
            return;
        };
        match p.rx.end(frame, ctx.now()) {
            Ok(r) => {
                p.stats.received += 1;
                if let Some(src) = r.frame.src() {
                    self.table.learn(src, in_port);
                }
            }
            Err(e) => {
                p.stats.cut_through_bad += 1;
                tracing::debug!(target: "mac::switch", port = in_port.0, out = out.0, id = id.0, error = %e, "bad frame already forwarded cut-through");
            }
        }
    }
}
