//! The switch's buffer accounting and IEEE 802.3x flow control (IEEE 802.3 clause 31,
//! Annex 31B) on its ports. Parameters: [`SwitchFlowControl`](crate::SwitchFlowControl).
//!
//! ```text
//!  frame from input i admitted to output p's buffer:  p.buffered += len, i.charged += len
//!      i.charged > high_water or p.buffered > high_water, no PAUSE out:
//!                                             PAUSE(pause_quanta) out of port i   [xoff]
//!  half its pause_time after a PAUSE, still xoff (SwitchPauseRefresh):
//!      i's frames left the buffers since  -> PAUSE(pause_quanta) again
//!      none did                           -> again at the next release or admission
//!  frame sent by output p (its last FCS byte out): p.buffered -= len, i.charged -= len
//!      every paused input j with j.charged < low_water and none of its frames in an
//!      output buffer at or above low_water:  PAUSE(0) out of port j               [xon]
//!  PAUSE received on port i (flow control on): TX i gated for pause_time x 512 bit times
//! ```
//!
//! **Policy (per-input accounting on shared output queues).** Every frame in an output
//! buffer is charged to the input port it came from (each flooded copy too), from the
//! moment it is admitted until its last byte has left. When a frame is admitted and
//! either its input's charged bytes or the output buffer it joins are above the
//! high-water mark, its input is asked to stop: the switch queues a PAUSE ahead of the
//! data frames of that port's transmitter (it passes that port's own PAUSE gate, Annex
//! 31B.3.7). That is how the switches of the time did it: "the packet which causes the
//! [transmit queue] threshold to be exceeded triggers the flow control function on the
//! port from which the packet entered the switch" (Cabletron ELS100-24TXG manual,
//! appendix C); the Micrel KSZ8895 "flow controls a port that has just received a packet
//! if the destination port resource is busy", with the maximum pause time, and lets it go
//! with a zero pause time "once the resource is freed up", with hysteresis. So the PAUSE
//! goes to the nodes that fill a buffer (under incast, every sender into the congested
//! port), not to every node. A paused input is let go with a PAUSE of 0 quanta once its
//! own bytes are below the low-water mark and none of its frames waits in an output
//! buffer at or above it (Broadcom BCM5722 programmer's guide, "Switch flow control");
//! until then the PAUSE is re-sent every half `pause_time`, so an obeying node never
//! resumes on its own while its frames still fill the buffers. As for the DP83820's own
//! PAUSE ([`crate::dp83820::flow`]), a re-send waits for progress: if none of the input's
//! frames left the buffers since the last PAUSE (the output is stuck), it goes at the
//! next release or admission instead, so a switch whose output never drains stops
//! re-sending and the simulation can go idle. What still arrives after the PAUSE
//! decisions (each sender's frame in flight) can overflow a port buffer under incast:
//! those frames are dropped and counted.
//!
//! **Receiving.** A MAC Control frame (Length/Type 0x8808) ends at the port's MAC: never
//! forwarded, never learned from, counted. With flow control on, a good PAUSE to
//! 01-80-C2-00-00-01 closes that port's transmitter's gate ([`GmiiTx::pause`](crate::GmiiTx::pause)): the frame in
//! progress completes, no data frame starts for `pause_time` x 512 bit times (0: at
//! once), and frames for that node wait in its buffer (and are charged to their inputs,
//! which may be paused in turn).
//!
//! PAUSE frames carry the port's own address as source (02-53-57-00-pp-pp, assumption: a
//! locally administered address per port; unmanaged switches use one burnt-in base
//! address), no message id, and leave no trace spans.

use super::{Held, Switch};
use crate::dp83820::flow::CONTROL_MSG;
use crate::frame::{Frame, FrameId};
use crate::msg::{MacMsg, PortIndex};
use crate::pause::{build_pause, parse, MacControl, QUANTUM_BYTES};
use sim_kernel::Ctx;
use via_abi::ethernet::MacAddr;

/// Ids of the PAUSE frames switches build, above every node's frame ids.
const PAUSE_ID_BASE: u64 = 0xFFFF_0000_0000_0000;

/// The source address of the PAUSE frames port `port` sends.
#[must_use]
pub fn port_address(port: PortIndex) -> MacAddr {
    let [hi, lo] = port.0.to_be_bytes();
    MacAddr([0x02, 0x53, 0x57, 0x00, hi, lo])
}

impl Switch {
    /// Frame `id` of `bytes` from input `from` was queued on output `out`: account for it,
    /// and ask `from` to pause if its frames now hold too much.
    pub(super) fn admit<M: From<MacMsg>>(
        &mut self,
        out: PortIndex,
        from: PortIndex,
        id: FrameId,
        bytes: u64,
        ctx: &mut Ctx<'_, M>,
    ) {
        let Some(o) = self.ports.get_mut(out.index()) else {
            return;
        };
        o.held.push_back(Held { id, from, bytes });
        o.buffered += bytes;
        o.stats.max_buffered_bytes = o.stats.max_buffered_bytes.max(o.buffered);
        let level = o.buffered;
        let flow = self.flow;
        let Some(i) = self.ports.get_mut(from.index()) else {
            return;
        };
        i.charged += bytes;
        if !flow.enabled || (i.charged <= flow.high_water && level <= flow.high_water) {
            return;
        }
        if !i.xoff {
            i.xoff = true;
            tracing::debug!(target: "mac::switch", port = from.0, charged = i.charged, out = out.0, level, "above high water: PAUSE");
            self.send_pause(from, flow.pause_quanta, ctx);
        } else if i.refresh_due {
            self.send_pause(from, flow.pause_quanta, ctx);
        }
    }

    /// Output `out` finished sending frame `id`: it leaves the buffer; its input may resume.
    pub(super) fn release<M: From<MacMsg>>(
        &mut self,
        out: PortIndex,
        id: FrameId,
        ctx: &mut Ctx<'_, M>,
    ) {
        let Some(o) = self.ports.get_mut(out.index()) else {
            return;
        };
        // PAUSE frames are not in the buffer.
        let Some(pos) = o.held.iter().position(|h| h.id == id) else {
            return;
        };
        let Some(h) = o.held.remove(pos) else {
            return;
        };
        o.buffered -= h.bytes;
        let (low, quanta) = (self.flow.low_water, self.flow.pause_quanta);
        let Some(i) = self.ports.get_mut(h.from.index()) else {
            return;
        };
        i.charged -= h.bytes;
        i.drained = true;
        let refresh = i.xoff && i.refresh_due;
        // Every paused input that may go now goes, in port order.
        let resumed: Vec<PortIndex> = (0..self.ports.len())
            .filter_map(|j| u16::try_from(j).ok().map(PortIndex))
            .filter(|&j| self.may_resume(j, low))
            .collect();
        for j in resumed {
            if let Some(p) = self.ports.get_mut(j.index()) {
                p.xoff = false;
                p.refresh_at = None;
                p.refresh_due = false;
                tracing::debug!(target: "mac::switch", port = j.0, charged = p.charged, "below low water: resume");
            }
            self.send_pause(j, 0, ctx);
        }
        if refresh && self.ports.get(h.from.index()).is_some_and(|p| p.xoff) {
            self.send_pause(h.from, quanta, ctx);
        }
    }

    /// Whether paused input `j` may resume: its own bytes below `low` and none of its
    /// frames in an output buffer at or above `low`.
    fn may_resume(&self, j: PortIndex, low: u64) -> bool {
        let Some(p) = self.ports.get(j.index()) else {
            return false;
        };
        p.xoff
            && p.charged < low
            && !self
                .ports
                .iter()
                .any(|o| o.buffered >= low && o.held.iter().any(|h| h.from == j))
    }

    /// [`MacMsg::SwitchPauseRefresh`]: half the pause sent out of `port` has passed.
    pub(super) fn pause_refresh<M: From<MacMsg>>(&mut self, port: PortIndex, ctx: &mut Ctx<'_, M>) {
        let quanta = self.flow.pause_quanta;
        let Some(i) = self.ports.get_mut(port.index()) else {
            self.bad_port(port, "pause-refresh");
            return;
        };
        if i.refresh_at != Some(ctx.now()) {
            return; // stale: resumed or re-sent since
        }
        i.refresh_at = None;
        if !i.xoff {
            return;
        }
        if i.drained {
            self.send_pause(port, quanta, ctx);
        } else {
            i.refresh_due = true;
        }
    }

    /// Queues a PAUSE of `quanta` out of `port`; a non-zero one plans its re-send.
    fn send_pause<M: From<MacMsg>>(&mut self, port: PortIndex, quanta: u16, ctx: &mut Ctx<'_, M>) {
        let Ok(bytes) = build_pause(port_address(port), quanta) else {
            return;
        };
        let id = FrameId(PAUSE_ID_BASE.wrapping_add(self.pauses_built));
        self.pauses_built += 1;
        let Some(p) = self.ports.get_mut(port.index()) else {
            return;
        };
        // A refusal (the port's queue is full of frames) is counted by the transmitter.
        if p.tx
            .enqueue_control(Frame::new(id, CONTROL_MSG, bytes), ctx)
            .is_err()
        {
            return;
        }
        if quanta == 0 {
            p.stats.resume_sent += 1;
            return;
        }
        p.stats.pause_sent += 1;
        p.drained = false;
        p.refresh_due = false;
        let half = ctx.my_domain().period() * (u64::from(quanta) * QUANTUM_BYTES / 2);
        let at = ctx.my_domain().edge_at_or_after(ctx.now() + half);
        p.refresh_at = Some(at);
        ctx.wake_at(at, MacMsg::SwitchPauseRefresh { port }.into());
    }

    /// A good MAC Control frame ended on `port`: consumed; a PAUSE is obeyed when flow
    /// control is on.
    pub(super) fn control_received<M: From<MacMsg>>(
        &mut self,
        port: PortIndex,
        frame: &Frame,
        ctx: &mut Ctx<'_, M>,
    ) {
        let enabled = self.flow.enabled;
        let Some(p) = self.ports.get_mut(port.index()) else {
            return;
        };
        p.stats.control_consumed += 1;
        match parse(frame.bytes()) {
            Some(MacControl::Pause { quanta }) if enabled => {
                p.stats.pause_received += 1;
                tracing::debug!(target: "mac::switch", port = port.0, quanta, "PAUSE received: output gated");
                p.tx.pause(quanta, ctx);
            }
            other => {
                tracing::debug!(target: "mac::switch", port = port.0, ?other, "MAC Control frame consumed");
            }
        }
    }
}
