//! [`Switch`]: an N-port store-and-forward Ethernet switch in the `gmii` domain, so that
//! more than two nodes can be wired.
//!
//! ```text
//!  port i RX (GmiiRx) --RxEnd: whole frame, FCS ok?--+-- bad: dropped, counted
//!                                                   |
//!                       learn src -> i              v
//!                       wait forwarding_latency (SwitchForward)
//!                       look up dst: known port p != i -> queue p
//!                                    known port == i   -> filtered, counted
//!                                    unknown/group     -> flood to every port but i
//!  port p TX queue (bounded, overflow dropped and counted) -> GmiiTx p ==link==> node
//! ```
//!
//! Store and forward: nothing is forwarded before the frame's last byte has arrived and its
//! FCS checked (IEEE 802.1D: frames with FCS errors are discarded). MAC Control frames
//! (Length/Type 0x8808, e.g. a node's PAUSE) end at the receiving port's MAC (IEEE 802.3
//! clause 31) and are never forwarded; the switch's ports do not model flow control, so
//! they are counted and dropped. Each output port has
//! its own GMII transmitter ([`GmiiTx`]) and queue, so ports send in parallel and a port
//! receiving traffic from several inputs queues it. The learning table is a `BTreeMap`
//! ([`LearningTable`]) and flooding goes in port order: the switch is deterministic.
//!
//! Ports: one [`Attachment`] per port, to the node's MAC port. Parameters:
//! [`SwitchParams`], [`WireParams`]. Statistics: [`SwitchPortStats`] per port, the
//! table's [`TableStats`](crate::fdb::TableStats), each port's transmitter and receiver.

use crate::fdb::LearningTable;
use crate::frame::{FcsError, Frame, FrameLimits};
use crate::gmii::{GmiiTx, TxRefused};
use crate::link::Attachment;
use crate::msg::{MacMsg, PortIndex};
use crate::params::{SwitchParams, WireParams};
use crate::pause::is_mac_control;
use crate::rx::{GmiiRx, RxError};
use sim_kernel::{Ctx, Duration};

/// Most ports a switch may have.
pub const MAX_PORTS: usize = 64;

/// State-machine names of the output ports' transmitters, for traces and waveforms.
const MACHINE_NAMES: [&str; MAX_PORTS] = [
    "switch.tx0",
    "switch.tx1",
    "switch.tx2",
    "switch.tx3",
    "switch.tx4",
    "switch.tx5",
    "switch.tx6",
    "switch.tx7",
    "switch.tx8",
    "switch.tx9",
    "switch.tx10",
    "switch.tx11",
    "switch.tx12",
    "switch.tx13",
    "switch.tx14",
    "switch.tx15",
    "switch.tx16",
    "switch.tx17",
    "switch.tx18",
    "switch.tx19",
    "switch.tx20",
    "switch.tx21",
    "switch.tx22",
    "switch.tx23",
    "switch.tx24",
    "switch.tx25",
    "switch.tx26",
    "switch.tx27",
    "switch.tx28",
    "switch.tx29",
    "switch.tx30",
    "switch.tx31",
    "switch.tx32",
    "switch.tx33",
    "switch.tx34",
    "switch.tx35",
    "switch.tx36",
    "switch.tx37",
    "switch.tx38",
    "switch.tx39",
    "switch.tx40",
    "switch.tx41",
    "switch.tx42",
    "switch.tx43",
    "switch.tx44",
    "switch.tx45",
    "switch.tx46",
    "switch.tx47",
    "switch.tx48",
    "switch.tx49",
    "switch.tx50",
    "switch.tx51",
    "switch.tx52",
    "switch.tx53",
    "switch.tx54",
    "switch.tx55",
    "switch.tx56",
    "switch.tx57",
    "switch.tx58",
    "switch.tx59",
    "switch.tx60",
    "switch.tx61",
    "switch.tx62",
    "switch.tx63",
];

/// Why a switch could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SwitchError {
    /// A switch needs 2 to 64 ports.
    #[error("a switch needs between 2 and {MAX_PORTS} ports, got {0}")]
    PortCount(usize),
}

/// What one switch port counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SwitchPortStats {
    /// Good frames received on this port.
    pub received: u64,
    /// Frames received with a bad FCS, dropped.
    pub fcs_drops: u64,
    /// Frames received too short, too long or broken, dropped.
    pub malformed_drops: u64,
    /// Good frames received whose destination was learned on this same port, dropped.
    pub filtered: u64,
    /// Frames that found no room in this port's full output queue, dropped.
    pub queue_drops: u64,
    /// Frames queued for output on this port.
    pub queued_out: u64,
    /// Of those, copies made by flooding.
    pub flooded_out: u64,
    /// MAC Control frames (PAUSE) received: consumed, never forwarded.
    pub control_consumed: u64,
}

#[derive(Clone, Debug)]
struct SwitchPort {
    tx: GmiiTx,
    rx: GmiiRx,
    stats: SwitchPortStats,
}

/// An N-port store-and-forward switch.
#[derive(Clone, Debug)]
pub struct Switch {
    ports: Vec<SwitchPort>,
    table: LearningTable,
    forwarding_latency: Duration,
    unexpected: u64,
}

impl Switch {
    /// A switch with one port per attachment (port `i` sends into `links[i]`).
    ///
    /// # Errors
    /// [`SwitchError::PortCount`] unless 2 to 64 links are given.
    pub fn new(
        links: &[Attachment],
        wire: &WireParams,
        params: &SwitchParams,
    ) -> Result<Self, SwitchError> {
        if !(2..=MAX_PORTS).contains(&links.len()) {
            return Err(SwitchError::PortCount(links.len()));
        }
        let ports = links
            .iter()
            .zip(MACHINE_NAMES)
            .zip(0u16..)
            .map(|((link, name), i)| SwitchPort {
                tx: GmiiTx::new(name, PortIndex(i), *link, wire, params.queue_frames),
                rx: GmiiRx::new(FrameLimits::from_wire(wire)),
                stats: SwitchPortStats::default(),
            })
            .collect();
        Ok(Self {
            ports,
            table: LearningTable::new(params.table_capacity),
            forwarding_latency: params.forwarding_latency,
            unexpected: 0,
        })
    }

    /// Handles one message at `ctx.now()`.
    pub fn handle<M: From<MacMsg>>(&mut self, msg: MacMsg, ctx: &mut Ctx<'_, M>) {
        match msg {
            MacMsg::RxStart { port, frame } => match self.ports.get_mut(port.index()) {
                Some(p) => p.rx.start(&frame),
                None => self.bad_port(port, "rx-start"),
            },
            MacMsg::RxEnd { port, frame } => self.receive_end(port, frame, ctx),
            // Store and forward: a streamed frame's early bytes do not matter.
            MacMsg::RxData { .. } => {}
            MacMsg::SwitchForward { in_port, frame } => self.forward(in_port, frame, ctx),
            MacMsg::TxWake { port } => match self.ports.get_mut(port.index()) {
                Some(p) => {
                    // Completion is counted by the transmitter; nobody waits for it.
                    let _ = p.tx.wake(ctx);
                }
                None => self.bad_port(port, "tx-wake"),
            },
            MacMsg::TxReorderRelease { port } => match self.ports.get_mut(port.index()) {
                Some(p) => p.tx.reorder_release(ctx),
                None => self.bad_port(port, "tx-reorder-release"),
            },
            other => {
                self.unexpected += 1;
                tracing::warn!(target: "mac::switch", msg = other.name(), "message a switch does not handle");
            }
        }
    }

    fn bad_port(&mut self, port: PortIndex, what: &'static str) {
        self.unexpected += 1;
        tracing::warn!(target: "mac::switch", port = port.0, what, "message for a port the switch does not have");
    }

    fn receive_end<M: From<MacMsg>>(
        &mut self,
        port: PortIndex,
        frame: crate::rx::RxFrame,
        ctx: &mut Ctx<'_, M>,
    ) {
        let Some(p) = self.ports.get_mut(port.index()) else {
            self.bad_port(port, "rx-end");
            return;
        };
        let id = frame.id();
        match p.rx.end(frame, ctx.now()) {
            Ok(r) if is_mac_control(r.frame.bytes()) => {
                p.stats.control_consumed += 1;
                tracing::debug!(target: "mac::switch", port = port.0, id = id.0, "MAC Control frame consumed");
            }
            Ok(r) => {
                p.stats.received += 1;
                if let Some(src) = r.frame.src() {
                    self.table.learn(src, port);
                }
                tracing::debug!(target: "mac::switch", port = port.0, id = id.0, "frame received, forwarding");
                let at = ctx.now() + self.forwarding_latency;
                ctx.wake_at(
                    at,
                    MacMsg::SwitchForward {
                        in_port: port,
                        frame: r.frame,
                    }
                    .into(),
                );
            }
            Err(RxError::Fcs(FcsError::Mismatch { .. })) => {
                p.stats.fcs_drops += 1;
                tracing::debug!(target: "mac::switch", port = port.0, id = id.0, "bad FCS, dropped");
            }
            Err(e) => {
                p.stats.malformed_drops += 1;
                tracing::debug!(target: "mac::switch", port = port.0, id = id.0, error = %e, "malformed frame, dropped");
            }
        }
    }

    fn forward<M: From<MacMsg>>(&mut self, in_port: PortIndex, frame: Frame, ctx: &mut Ctx<'_, M>) {
        let known = frame.dst().and_then(|d| self.table.lookup(d));
        match known {
            Some(out) if out == in_port => {
                if let Some(p) = self.ports.get_mut(in_port.index()) {
                    p.stats.filtered += 1;
                }
                tracing::debug!(target: "mac::switch", port = in_port.0, id = frame.id.0, "destination on the input port, filtered");
            }
            Some(out) => self.queue_out(out, frame, false, ctx),
            None => {
                tracing::debug!(target: "mac::switch", port = in_port.0, id = frame.id.0, "unknown or group destination, flooding");
                let outs = (0..self.ports.len())
                    .filter_map(|i| u16::try_from(i).ok().map(PortIndex))
                    .filter(|&p| p != in_port);
                for out in outs {
                    self.queue_out(out, frame.clone(), true, ctx);
                }
            }
        }
    }

    fn queue_out<M: From<MacMsg>>(
        &mut self,
        out: PortIndex,
        frame: Frame,
        flooded: bool,
        ctx: &mut Ctx<'_, M>,
    ) {
        let Some(p) = self.ports.get_mut(out.index()) else {
            self.bad_port(out, "forward");
            return;
        };
        match p.tx.enqueue(frame, ctx) {
            Ok(()) => {
                p.stats.queued_out += 1;
                if flooded {
                    p.stats.flooded_out += 1;
                }
            }
            Err(TxRefused::QueueFull(f)) => {
                p.stats.queue_drops += 1;
                tracing::debug!(target: "mac::switch", port = out.0, id = f.id.0, "output queue full, dropped");
            }
            Err(TxRefused::Empty(f)) => {
                p.stats.malformed_drops += 1;
                tracing::warn!(target: "mac::switch", port = out.0, id = f.id.0, "empty frame not forwarded");
            }
        }
    }

    /// Number of ports.
    #[must_use]
    pub fn port_count(&self) -> usize {
        self.ports.len()
    }

    /// What port `port` counted.
    #[must_use]
    pub fn port_stats(&self, port: PortIndex) -> Option<&SwitchPortStats> {
        self.ports.get(port.index()).map(|p| &p.stats)
    }

    /// The transmitter of port `port`.
    #[must_use]
    pub fn tx(&self, port: PortIndex) -> Option<&GmiiTx> {
        self.ports.get(port.index()).map(|p| &p.tx)
    }

    /// The transmitter of port `port`, to turn capture on or take captured frames.
    pub fn tx_mut(&mut self, port: PortIndex) -> Option<&mut GmiiTx> {
        self.ports.get_mut(port.index()).map(|p| &mut p.tx)
    }

    /// The receiver of port `port`.
    #[must_use]
    pub fn rx(&self, port: PortIndex) -> Option<&GmiiRx> {
        self.ports.get(port.index()).map(|p| &p.rx)
    }

    /// The learning table.
    #[must_use]
    pub fn table(&self) -> &LearningTable {
        &self.table
    }

    /// Messages it had no use for (wrong variant or port).
    #[must_use]
    pub fn unexpected(&self) -> u64 {
        self.unexpected
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::Link;
    use sim_kernel::ComponentId;

    #[test]
    fn port_count_is_checked() {
        let link = Link::default().attachment(ComponentId(0), PortIndex(0));
        let wire = WireParams::default();
        let params = SwitchParams::default();
        assert_eq!(
            Switch::new(&[link], &wire, &params).err(),
            Some(SwitchError::PortCount(1))
        );
        assert_eq!(
            Switch::new(&vec![link; 65], &wire, &params).err(),
            Some(SwitchError::PortCount(65))
        );
        let s = Switch::new(&vec![link; 64], &wire, &params).unwrap();
        assert_eq!(s.port_count(), 64);
        assert_eq!(s.tx(PortIndex(63)).map(GmiiTx::queued), Some(0));
        assert!(s.port_stats(PortIndex(64)).is_none());
    }

    #[test]
    fn machine_names_are_distinct() {
        let mut names = MACHINE_NAMES.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), MAX_PORTS);
        assert_eq!(MACHINE_NAMES[17], "switch.tx17");
    }
}
