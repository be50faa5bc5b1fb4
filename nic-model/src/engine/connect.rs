//! The VI protocol manager's commands (`VI_CMD`, see [`via_abi::bar::ViCmd`]) and the
//! connection set-up and teardown frames (`ConnectRequest`, `ConnectAccept`,
//! `ConnectReject`, `Disconnect`), sent through the same TX slots as data.
//!
//! | command on `VI_SEL` | needs | does | `VI_RESULT` |
//! |---|---|---|---|
//! | Create | no VI, tag != 0, reliability 0..=2 | VI in `idle` with `VI_PTAG`, `VI_ATTR` | Ok / InvalidState / InvalidPtag / InvalidParameter |
//! | Destroy | `idle` or `error`, no send in flight | VI gone (posted receives flushed) | Ok / InvalidState |
//! | ConnectRequest | `idle` | request frame to `VI_PEER_MAC_*` with `VI_DISCRIMINATOR` -> `requesting` | Busy, then Ok (accepted, `connected`) / Rejected (`idle`) |
//! | ConnectWait | `idle` | `listening` on `VI_DISCRIMINATOR`; the first matching request (also one that arrived earlier and was kept) is accepted onto this VI | Busy, then Ok (`connected`) |
//! | ConnectReject | `listening` | stops listening -> `idle` | Ok / InvalidState |
//! | Disconnect | any state | disconnect frame to the peer if connected -> `idle` (flush) | Ok |
//!
//! A request arriving while no VI listens on its discriminator is kept (at most
//! `max_pending_connects`, else rejected) until a ConnectWait matches it. A listener
//! whose reliability level differs rejects the request and keeps listening. The peer of
//! a Disconnect goes to `error` (its connection is broken). `VI_RESULT` of an
//! asynchronous command changes only while it is still the last command written.

use super::frame::{connect_payload, control, parse_connect, reject};
use super::io::Io;
use super::unit::vi::{PendingConnect, Vi, ViState};
use super::Engine;
use gige_mac::BufferRam;
use sim_kernel::StateName;
use via_abi::bar::{CmdResult, Reliability, ViCmd, VI_ATTR_RDMA_READ, VI_ATTR_RDMA_WRITE};
use via_abi::wire_header::{WireHeaderRepr, WireOp};
use via_abi::{MacAddr, ProtectionTag};

impl Engine {
    fn queue_control(&mut self, dst: MacAddr, hdr: WireHeaderRepr, payload: Vec<u8>, io: &mut Io) {
        let msg = self.new_msg();
        self.send.tx.queue_control(dst, hdr, payload, msg, io.now());
    }

    pub(crate) fn connect_frame(
        &mut self,
        op: WireOp,
        dst: MacAddr,
        dst_vi: u16,
        src_vi: u16,
        (disc, byte): (u32, u8),
        io: &mut Io,
    ) {
        let payload = connect_payload(disc, byte);
        let hdr = control(op, dst_vi, src_vi, payload.len() as u16);
        self.queue_control(dst, hdr, payload, io);
    }

    /// `VI_CMD` was written.
    pub(crate) fn vi_command(&mut self, cmd: ViCmd, io: &mut Io, ram: &mut BufferRam) {
        self.regs.vi_cmd_seq = self.regs.vi_cmd_seq.next();
        let seq = self.regs.vi_cmd_seq;
        let sel = u16::try_from(self.regs.vi_sel)
            .ok()
            .filter(|&n| n < self.params.max_vis);
        // Not a lookup: `VI_SEL` is the host's input; out of range is answered in `VI_RESULT`.
        let Some(n) = sel else {
            self.regs.vi_result = match cmd {
                ViCmd::Unknown(_) => CmdResult::BadCommand,
                _ => CmdResult::InvalidParameter,
            };
            return;
        };
        let state = self.vis.get(n).map(Vi::state);
        tracing::debug!(target: "nic::vi", vi = n, ?cmd, ?state, "VI command");
        let result = match (cmd, state) {
            (ViCmd::Create, Some(_)) => CmdResult::InvalidState,
            (ViCmd::Create, None) => {
                let ptag = ProtectionTag(self.regs.vi_ptag as u16);
                let rel = Reliability::from_raw(self.regs.vi_attr as u8);
                if ptag == ProtectionTag::NONE || self.regs.vi_ptag > 0xFFFF {
                    CmdResult::InvalidPtag
                } else if matches!(rel, Reliability::Unknown(_)) {
                    CmdResult::InvalidParameter
                } else {
                    let rdma = self.regs.vi_attr & VI_ATTR_RDMA_WRITE != 0;
                    let mut vi = Vi::new(n, ptag, rel, rdma);
                    vi.rdma_read = self.regs.vi_attr & VI_ATTR_RDMA_READ != 0;
                    self.vis.put(n, Some(vi));
                    CmdResult::Ok
                }
            }
            (ViCmd::Destroy, Some(ViState::Idle | ViState::Error)) => {
                let busy = self
                    .vis
                    .get(n)
                    .is_some_and(|v| !v.send_order.is_empty() || v.rx_cur.is_some());
                if busy {
                    CmdResult::InvalidState
                } else {
                    self.flush_recvs(n, io);
                    self.vis.put(n, None);
                    CmdResult::Ok
                }
            }
            (
                ViCmd::Destroy
                | ViCmd::ConnectRequest
                | ViCmd::ConnectWait
                | ViCmd::ConnectReject
                | ViCmd::Disconnect,
                None,
            ) => CmdResult::InvalidState,
            (ViCmd::Destroy, Some(_)) => CmdResult::InvalidState,
            (ViCmd::ConnectRequest, Some(ViState::Idle)) => {
                let lo = self.regs.vi_peer_mac_lo.to_le_bytes();
                let hi = self.regs.vi_peer_mac_hi.to_le_bytes();
                let mac = MacAddr([lo[0], lo[1], lo[2], lo[3], hi[0], hi[1]]);
                let disc = self.regs.vi_disc;
                let rel = match self.vis.get_mut(n) {
                    Some(v) => {
                        v.peer_mac = mac;
                        v.discriminator = disc;
                        v.connect_tries = 0;
                        v.connect_cmd = Some(seq);
                        v.reliability.raw()
                    }
                    None => 0,
                };
                self.set_vi_state(n, ViState::Requesting, io, ram);
                self.connect_frame(WireOp::ConnectRequest, mac, 0, n, (disc, rel), io);
                self.arm_connect(n, io);
                CmdResult::Busy
            }
            (ViCmd::ConnectWait, Some(ViState::Idle)) => {
                let disc = self.regs.vi_disc;
                if let Some(v) = self.vis.get_mut(n) {
                    v.discriminator = disc;
                    v.connect_cmd = Some(seq);
                }
                self.set_vi_state(n, ViState::Listening, io, ram);
                self.regs.vi_result = CmdResult::Busy;
                let kept = self
                    .vis
                    .pending
                    .iter()
                    .position(|p| p.discriminator == disc);
                if let Some(p) = kept.and_then(|i| self.vis.pending.remove(i)) {
                    self.offer(n, p, io, ram);
                }
                return;
            }
            (ViCmd::ConnectRequest | ViCmd::ConnectWait, Some(_)) => CmdResult::InvalidState,
            (ViCmd::ConnectReject, Some(ViState::Listening)) => {
                self.set_vi_state(n, ViState::Idle, io, ram);
                CmdResult::Ok
            }
            (ViCmd::ConnectReject, Some(_)) => CmdResult::InvalidState,
            (ViCmd::Disconnect, Some(st)) => {
                if st == ViState::Connected {
                    if let Some((mac, peer)) = self.vis.get(n).map(|v| (v.peer_mac, v.peer_vi)) {
                        let hdr = control(WireOp::Disconnect, peer, n, 0);
                        self.queue_control(mac, hdr, Vec::new(), io);
                    }
                }
                self.set_vi_state(n, ViState::Idle, io, ram);
                CmdResult::Ok
            }
            (ViCmd::Unknown(_), _) => CmdResult::BadCommand,
        };
        self.regs.vi_result = result;
    }

    /// Sets `VI_RESULT` for an asynchronous command of VI `n` that has ended.
    pub(crate) fn connect_result(&mut self, n: u16, result: CmdResult) {
        let cmd = self.vis.get_mut(n).and_then(|v| v.connect_cmd.take());
        if cmd == Some(self.regs.vi_cmd_seq) {
            self.regs.vi_result = result;
        }
    }

    /// Offers request `p` to listening VI `n`: accept, or reject on a reliability
    /// mismatch (the VI keeps listening).
    fn offer(&mut self, n: u16, p: PendingConnect, io: &mut Io, ram: &mut BufferRam) {
        // May miss: the VI was destroyed while the request waited.
        let Some(v) = self.vis.get_mut(n) else {
            return;
        };
        let rel = v.reliability.raw();
        let disc = v.discriminator;
        if rel != p.reliability {
            self.connect_frame(
                WireOp::ConnectReject,
                p.mac,
                p.vi,
                n,
                (disc, reject::RELIABILITY),
                io,
            );
            return;
        }
        v.peer_mac = p.mac;
        v.peer_vi = p.vi;
        self.set_vi_state(n, ViState::Connected, io, ram);
        self.connect_result(n, CmdResult::Ok);
        self.connect_frame(WireOp::ConnectAccept, p.mac, p.vi, n, (disc, rel), io);
    }

    /// A connection-management frame arrived from `src`.
    pub(crate) fn control_received(
        &mut self,
        h: WireHeaderRepr,
        src: MacAddr,
        payload: &[u8],
        io: &mut Io,
        ram: &mut BufferRam,
    ) {
        let (disc, byte) = parse_connect(payload).unwrap_or((0, 0));
        match h.op {
            WireOp::ConnectRequest => {
                let p = PendingConnect {
                    mac: src,
                    vi: h.src_vi,
                    discriminator: disc,
                    reliability: byte,
                };
                let listener = self
                    .vis
                    .iter()
                    .find(|v| v.state() == ViState::Listening && v.discriminator == disc);
                // A request from the peer a VI is already connected to: its accept was
                // lost, so the requester asks again; accept again.
                let accepted = self
                    .vis
                    .iter()
                    .find(|v| {
                        v.state() == ViState::Connected
                            && v.peer_mac == src
                            && v.peer_vi == h.src_vi
                            && v.discriminator == disc
                    })
                    .map(|v| (v.num, v.reliability.raw()));
                if let Some((n, rel)) = accepted {
                    self.stats.connect_accepts_repeated += 1;
                    self.connect_frame(WireOp::ConnectAccept, src, h.src_vi, n, (disc, rel), io);
                } else if let Some(n) = listener.map(|v| v.num) {
                    self.offer(n, p, io, ram);
                } else if self.vis.pending.contains(&p) {
                    // A repeat of a request already kept.
                } else if self.vis.pending.len() < self.params.max_pending_connects {
                    self.vis.pending.push_back(p);
                } else {
                    self.connect_frame(
                        WireOp::ConnectReject,
                        src,
                        h.src_vi,
                        0,
                        (disc, reject::NO_ROOM),
                        io,
                    );
                }
            }
            WireOp::ConnectAccept | WireOp::ConnectReject => {
                let n = h.dst_vi;
                let ok = self
                    .vis
                    .get(n)
                    .is_some_and(|v| v.state() == ViState::Requesting && v.peer_mac == src);
                if !ok {
                    self.stats.rx_not_connected += 1;
                    return;
                }
                if let Some(v) = self.vis.get_mut(n) {
                    v.connect_deadline = None;
                }
                if h.op == WireOp::ConnectAccept {
                    if let Some(v) = self.vis.get_mut(n) {
                        v.peer_vi = h.src_vi;
                    }
                    self.set_vi_state(n, ViState::Connected, io, ram);
                    self.connect_result(n, CmdResult::Ok);
                } else {
                    self.set_vi_state(n, ViState::Idle, io, ram);
                    self.connect_result(n, CmdResult::Rejected);
                }
            }
            WireOp::Disconnect => {
                if self.vis.is_peer(h.dst_vi, src, h.src_vi) {
                    self.set_vi_state(h.dst_vi, ViState::Error, io, ram);
                } else {
                    self.stats.rx_not_connected += 1;
                }
            }
            WireOp::Send
            | WireOp::RdmaWrite
            | WireOp::Ack
            | WireOp::Nak
            | WireOp::RdmaReadRequest
            | WireOp::RdmaReadResponse
            | WireOp::Unknown(_) => {}
        }
    }

    /// Moves VI `n` to `to`; leaving `connected` (or entering `error`) flushes it.
    pub(crate) fn set_vi_state(
        &mut self,
        n: u16,
        to: ViState,
        io: &mut Io,
        ram: &mut gige_mac::BufferRam,
    ) {
        // May miss: the VI was destroyed meanwhile.
        let Some(vi) = self.vis.get_mut(n) else {
            return;
        };
        let from = vi.state();
        vi.fsm.set(to, io);
        tracing::debug!(target: "nic::vi", vi = n, from = from.name(), to = to.name(), "VI state");
        let broken = from == ViState::Connected && to != ViState::Connected;
        if broken {
            // Nothing more is resent on a broken connection.
            vi.tx.deadline = None;
            vi.tx.resend = None;
        }
        if broken || to == ViState::Error {
            self.flush_vi(n, io, ram);
        }
        if to == ViState::Connected {
            if let Some(vi) = self.vis.get_mut(n) {
                vi.reset_seq();
            }
        }
    }
}
