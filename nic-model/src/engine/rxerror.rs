//! The receiver's errors: a message that fails (sequence or fragment error, refused RDMA
//! write, missing or bad receive descriptor, a flush) writes no more bytes; its receive
//! descriptor, if it has one, completes with the local VIA status bit; on a reliable VI
//! the sender gets a Nak with the error bits (`REMOTE_DESCRIPTOR_ERROR` for a missing or
//! bad receive descriptor, `RDMA_PROTECTION_ERROR` for a refused RDMA write,
//! `TRANSPORT_ERROR` for sequence and fragment errors) and the VI enters `error`.
//! Acks and Naks are control frames (`frame`): `seq` names the fragment, `immediate`
//! carries the error bits (0 for an Ack). A go-back Nak (op 8, reliable VIs with
//! `retransmit`) names the next frame expected and is not an error.

use super::frame::control;
use super::ids::RxId;
use super::io::Io;
use super::unit::completion::{JobKind, StatusJob};
use super::unit::send::STATUS_OFFSET;
use super::unit::vi::ViState;
use super::Engine;
use gige_mac::BufferRam;
use sim_kernel::MsgId;
use via_abi::wire_header::WireOp;
use via_abi::{CompletedOp, Status};

impl Engine {
    /// Message `id` of the frame in the front end failed with `nak` (the error bits the
    /// sender gets on a reliable VI) and `local` (written into its receive descriptor).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn rx_error(
        &mut self,
        n: u16,
        seq: u32,
        nak: Status,
        local: Option<Status>,
        last: bool,
        io: &mut Io,
        ram: &mut BufferRam,
    ) {
        // May miss: the VI was destroyed while the frame travelled.
        let Some(vi) = self.vis.get_mut(n) else {
            return;
        };
        vi.counters.last_rx_error = nak | local.unwrap_or(Status::empty());
        let (reliable, cur) = (vi.reliable(), vi.rx_cur);
        let msg = cur
            .and_then(|id| self.recv.msgs.get(&id))
            .map_or(MsgId(0), |m| m.msg);
        if let Some(id) = cur {
            if last {
                if let Some(v) = self.vis.get_mut(n) {
                    v.rx_cur = None;
                }
            }
            self.fail_message(id, local.unwrap_or(nak), io);
        }
        if reliable {
            self.send_ack(n, seq, nak, msg, io);
            self.set_vi_state(n, ViState::Error, io, ram);
        }
    }

    /// Message `id` failed: its receive descriptor (if fetched) completes with `local`.
    pub(crate) fn fail_message(&mut self, id: RxId, local: Status, io: &mut Io) {
        // May miss: the message was already completed and removed.
        let Some(m) = self.recv.msgs.get_mut(&id) else {
            return;
        };
        if m.fail() {
            return;
        }
        let n = m.vi;
        let op = if m.op == WireOp::RdmaWrite {
            CompletedOp::RemoteRdmaWrite
        } else {
            CompletedOp::Receive
        };
        let job = m.desc.as_ref().filter(|d| !d.pieces.is_empty()).map(|d| {
            let status = (Status::DONE | local.errors()).with_completed_op(op);
            let mut bytes = m.len.to_le_bytes().to_vec();
            bytes.extend_from_slice(&status.bits().to_le_bytes());
            (
                StatusJob {
                    msg: m.msg,
                    vi: n,
                    kind: JobKind::Flush,
                    mark: io.now(),
                    va: d.va.wrapping_add(STATUS_OFFSET - 4),
                    handle: d.handle,
                    bytes,
                },
                d.pieces.clone(),
            )
        });
        if let Some((job, pieces)) = job {
            m.status_issued();
            self.write_status(job, &pieces, STATUS_OFFSET - 4, io);
        }
        self.rx_check_complete(id, io);
    }

    /// Abandons the message VI `n` is receiving (a new message started, or the VI left
    /// `connected`).
    pub(crate) fn abandon_rx(&mut self, n: u16, status: Status, io: &mut Io) {
        // Not a miss: the VI receives no message right now.
        let Some(id) = self.vis.get_mut(n).and_then(|v| v.rx_cur.take()) else {
            return;
        };
        self.fail_message(id, status, io);
    }

    /// Queues a go-back Nak to VI `n`'s peer: resend from frame `expected` (not an error).
    pub(crate) fn send_goback_nak(&mut self, n: u16, expected: u32, msg: MsgId, io: &mut Io) {
        // May miss: the VI was destroyed meanwhile; no Nak goes out.
        let Some(v) = self.vis.get_mut(n) else {
            return;
        };
        v.counters.goback_naks_sent += 1;
        let mut hdr = control(WireOp::Nak, v.peer_vi, n, 0);
        hdr.seq = expected;
        let dst = v.peer_mac;
        self.send
            .tx
            .queue_control(dst, hdr, Vec::new(), msg, io.now());
    }

    /// Queues an Ack (`status` empty) or Nak for fragment `seq` to VI `n`'s peer.
    pub(crate) fn send_ack(&mut self, n: u16, seq: u32, status: Status, msg: MsgId, io: &mut Io) {
        // May miss: the VI was destroyed meanwhile; no Ack goes out.
        let Some(v) = self.vis.get_mut(n) else {
            return;
        };
        if status.is_error() {
            v.counters.naks_sent += 1;
        } else {
            v.counters.acks_sent += 1;
            v.rxa.acked = seq;
        }
        let mut hdr = control(WireOp::Ack, v.peer_vi, n, 0);
        hdr.seq = seq;
        hdr.immediate = status.errors().bits();
        let dst = v.peer_mac;
        self.send
            .tx
            .queue_control(dst, hdr, Vec::new(), msg, io.now());
    }
}
