//! RDMA read, requester side: the response's frames (wire op 10, in the peer's sequence
//! on the VI) are placed like a send's, scattered over the data segments of the read
//! descriptor (translated with `LocalWrite` access when it was decoded, see `txcheck`),
//! through the receive path (RX slot -> Recv FIFO -> DMA write, `rxdrain`). The read
//! descriptor completes (status write) once its request is acknowledged and the last
//! byte of its response has landed (`read_landed`).
//!
//! The response's first fragment finds its read by the request's sequence number (its
//! `immediate` field) among the VI's reads waiting for data, with the same length; a
//! response that matches none is dropped and fails like a fragment error
//! (`read_responses_unmatched`, `TRANSPORT_ERROR` to the peer on a reliable VI). A
//! response that fails while being placed (a DMA write refused by the host bridge, its
//! VI broken) completes the read with its error bits.
//!
//! Spans (trace id of the response frames, the requester's descriptor's): the receive
//! path's `rx queue wait`, `header check`, `rx buffer drain`, `payload DMA write`, then
//! the read's `completion order wait` and `status write`.

use super::ids::SendId;
use super::io::Io;
use super::rxdata::scatter_plan;
use super::unit::send::SendStage;
use super::Engine;
use gige_mac::BufferRam;
use via_abi::wire_header::{WireFlags, WireHeaderRepr};
use via_abi::Status;

impl Engine {
    /// The read of VI `n` whose request was frame `request`, for `len` bytes, that waits
    /// for its data (none: the response matches no read).
    pub(crate) fn read_waiting(&self, n: u16, request: u32, len: u32) -> Option<SendId> {
        self.vis.get(n)?.send_order.iter().copied().find(|id| {
            self.send.ctxs.get(id).is_some_and(|s| {
                s.is_read_request()
                    && !s.read_landed
                    && s.assigned > 0
                    && s.first_seq == request
                    && s.len == u64::from(len)
                    && !s.is_ready()
            })
        })
    }

    /// Places response fragment `h` (the frame in the front end) into read `read`.
    pub(crate) fn read_response_frame(
        &mut self,
        read: Option<SendId>,
        h: WireHeaderRepr,
        io: &mut Io,
        ram: &mut BufferRam,
    ) {
        let chunk = self.params.rx_chunk();
        let plan = read.and_then(|id| self.send.ctxs.get(&id)).and_then(|s| {
            Some(scatter_plan(
                &s.desc.as_ref()?.data,
                &s.seg_pieces,
                &h,
                chunk,
            ))
        });
        let Some(plan) = plan else {
            // Not a lookup miss: the peer's response names no read waiting for data.
            self.stats.read_responses_unmatched += 1;
            if let Some(v) = self.vis.get_mut(h.dst_vi) {
                v.counters.rx_fragment_errors += 1;
            }
            tracing::warn!(target: "nic::rx", vi = h.dst_vi, request = h.immediate, "read response for no read");
            self.rx_error(
                h.dst_vi,
                h.seq,
                Status::TRANSPORT_ERROR,
                Some(Status::TRANSPORT_ERROR),
                h.flags.contains(WireFlags::LAST),
                io,
                ram,
            );
            self.rx_release(io);
            return;
        };
        self.rx_start_drain(plan, io, ram);
    }

    /// The response of read `id` has landed whole (`status` empty) or failed (its error
    /// bits): the read completes once its request is acknowledged too.
    pub(crate) fn read_landed(&mut self, id: SendId, status: Status, io: &mut Io) {
        // May miss: the read was flushed and completed while its response was placed.
        let Some(s) = self.send.ctxs.get_mut(&id) else {
            return;
        };
        if !s.is_read_request() || s.read_landed {
            return;
        }
        s.read_landed = true;
        if !s.status.is_error() {
            s.status |= status.errors();
        }
        s.mark = s.mark.max(io.now());
        let done = match s.stage() {
            SendStage::AwaitData => true,
            // A failed response ends the wait for the request's Ack as well.
            SendStage::AwaitAck | SendStage::Sending { .. } => s.status.is_error(),
            SendStage::Front { .. } | SendStage::AwaitTurn { .. } | SendStage::StatusWrite => false,
        };
        if done {
            s.cut();
            self.send_finished(id, true, io);
        }
    }
}
