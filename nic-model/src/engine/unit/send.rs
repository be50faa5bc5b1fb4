//! Unit **send path**: the send contexts (one [`SendCtx`] per send descriptor in flight,
//! keyed by [`SendId`]) and the send data path ([`TxPath`]: TX slots, the fragment being
//! fetched, the Send FIFO space, the TX word mover, control frames waiting for a slot).
//! The steps that move a send through its phases are the engine's `tx`, `txcheck`,
//! `txdata`, `txmove` and `complete` files.

use super::pieces::SegPieces;
use crate::att::Piece;
use crate::engine::fifo::{FifoSpace, Mover, MoverState};
use crate::engine::ids::SendId;
use gige_mac::SpareBuffers;
use sim_kernel::{Fsm, MsgId, StateName, Time, TransitionSink};
use std::collections::{BTreeMap, VecDeque};
use via_abi::descriptor::{control_segment, ControlSegment};
use via_abi::wire_header::{seq_before, WireHeaderRepr};
use via_abi::{DescriptorRepr, MacAddr, MemHandle, Op, Status};

/// Bytes of a descriptor read first.
pub(crate) const DESC_HEAD: u64 = 64;

/// Phases of a send context (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SendPhase {
    /// Translating the descriptor's address.
    DescTranslate,
    /// Reading the descriptor.
    DescRead,
    /// Decoding and checking it.
    Decode,
    /// Translating its data segments.
    BufTranslate,
    /// Fragments being fetched and sent.
    Data,
    /// Waiting for the last transmission or the acknowledgement.
    Completing,
    /// Writing the status.
    StatusWrite,
}

impl StateName for SendPhase {
    fn name(self) -> &'static str {
        match self {
            SendPhase::DescTranslate => "desc-translate",
            SendPhase::DescRead => "desc-read",
            SendPhase::Decode => "decode",
            SendPhase::BufTranslate => "buf-translate",
            SendPhase::Data => "data",
            SendPhase::Completing => "completing",
            SendPhase::StatusWrite => "status-write",
        }
    }
}

/// Steps of a send's front end (its descriptor and buffers), in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FrontStep {
    /// Translating the descriptor's address.
    DescTranslate,
    /// Reading the descriptor.
    DescRead,
    /// Decoding and checking it.
    Decode,
    /// Translating its data segments.
    BufTranslate,
}

/// Where a send context is in its life. Each variant carries what only it needs, so no
/// flag can contradict the stage (a send waiting for its turn cannot also be sending).
/// The traced phase ([`SendPhase`], machine `tx`) is derived from it: the two waits of
/// `completing` (the peer's Ack, the VI's completion order) are one traced phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SendStage {
    /// Descriptor and buffers. `flushed`: the VI is not (or no longer) `connected`; the
    /// decode adds `DESCRIPTOR_FLUSHED`, and once decoded the send is cut short.
    Front { step: FrontStep, flushed: bool },
    /// Fragments being fetched and sent. `cut`: no more fragments will be sent (an error,
    /// a Nak, a flush); `acked`: the peer acknowledged the last fragment (reliable).
    Sending { cut: bool, acked: bool },
    /// Every fragment out, waiting for the peer's Ack of the last one (reliable VI).
    AwaitAck,
    /// An RDMA read whose request is acknowledged, waiting for the last byte of its
    /// response to land in its buffers.
    AwaitData,
    /// Done, waiting for the earlier sends of its VI to complete (VIA 1.0 order).
    /// `reachable: false`: its own status cannot be written (its address failed).
    AwaitTurn { reachable: bool },
    /// Its status being written.
    StatusWrite,
}

impl SendStage {
    /// The traced phase of this stage.
    pub fn phase(self) -> SendPhase {
        match self {
            SendStage::Front { step, .. } => match step {
                FrontStep::DescTranslate => SendPhase::DescTranslate,
                FrontStep::DescRead => SendPhase::DescRead,
                FrontStep::Decode => SendPhase::Decode,
                FrontStep::BufTranslate => SendPhase::BufTranslate,
            },
            SendStage::Sending { .. } => SendPhase::Data,
            SendStage::AwaitAck | SendStage::AwaitData | SendStage::AwaitTurn { .. } => {
                SendPhase::Completing
            }
            SendStage::StatusWrite => SendPhase::StatusWrite,
        }
    }
}

/// One send descriptor in flight.
#[derive(Clone, Debug)]
pub(crate) struct SendCtx {
    pub id: SendId,
    pub msg: MsgId,
    pub vi: u16,
    pub desc_va: u64,
    pub desc_handle: MemHandle,
    /// Where the send is (change it with [`SendCtx::set_stage`]).
    stage: SendStage,
    /// The traced phase, following `stage`.
    phase: Fsm<SendPhase>,
    /// End of the last span of the descriptor's front end / completion.
    pub mark: Time,
    /// Translation of the descriptor's first 64 bytes.
    pub desc_pieces: Vec<Piece>,
    pub desc_bytes: Vec<u8>,
    pub desc: Option<DescriptorRepr>,
    /// Translation of each data segment (empty for an empty segment).
    pub seg_pieces: Vec<SegPieces>,
    pub translating: usize,
    /// Error bits so far (and `DESCRIPTOR_FLUSHED`).
    pub status: Status,
    pub op: Op,
    /// Message length \[bytes\].
    pub len: u64,
    pub frags: u32,
    /// Fragments given a TX slot / handed over and transmitted (first sendings only).
    pub assigned: u32,
    pub transmitted: u32,
    /// Resent fragments given a TX slot whose transmission is not reported yet (the send
    /// cannot complete while the engine still reads its buffers).
    pub resending: u32,
    pub first_seq: u32,
    pub last_seq: Option<u32>,
    /// The VI's reliability level asks for an Ack of the last fragment.
    pub reliable: bool,
    pub peer_mac: MacAddr,
    pub peer_vi: u16,
    /// Start of the next fragment's first span.
    pub frag_mark: Time,
    /// Responder side of an RDMA read: this context sends the response to the request
    /// with this sequence number (it has no host descriptor: no status write).
    pub response_to: Option<u32>,
    /// Requester side of an RDMA read: the last byte of the response has landed.
    pub read_landed: bool,
}

/// Who a send is for and how its descriptor was posted: the fields a new send context
/// starts from.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SendStart {
    pub id: SendId,
    pub msg: MsgId,
    pub vi: u16,
    pub desc_va: u64,
    pub desc_handle: MemHandle,
    pub mark: Time,
    /// Error bits found at the doorbell (a bad queue, a misaligned descriptor).
    pub status: Status,
    /// The VI was not `connected` when the doorbell was taken.
    pub flushed: bool,
    pub reliable: bool,
    pub peer_mac: MacAddr,
    pub peer_vi: u16,
}

impl SendCtx {
    /// A send context at the start of its front end (records the `tx` machine's first
    /// state).
    pub fn new<T: TransitionSink + ?Sized>(st: SendStart, sink: &mut T) -> Self {
        let mut phase = Fsm::new("tx", SendPhase::DescTranslate);
        phase.set(SendPhase::DescTranslate, sink);
        Self {
            id: st.id,
            msg: st.msg,
            vi: st.vi,
            desc_va: st.desc_va,
            desc_handle: st.desc_handle,
            stage: SendStage::Front {
                step: FrontStep::DescTranslate,
                flushed: st.flushed,
            },
            phase,
            mark: st.mark,
            desc_pieces: Vec::new(),
            desc_bytes: Vec::new(),
            desc: None,
            seg_pieces: Vec::new(),
            translating: 0,
            status: st.status,
            op: Op::SendRecv,
            len: 0,
            frags: 0,
            assigned: 0,
            transmitted: 0,
            resending: 0,
            first_seq: 0,
            last_seq: None,
            reliable: st.reliable,
            peer_mac: st.peer_mac,
            peer_vi: st.peer_vi,
            frag_mark: st.mark,
            response_to: None,
            read_landed: false,
        }
    }

    /// Whether this is the requester's RDMA read descriptor (not a response).
    pub fn is_read_request(&self) -> bool {
        self.op == Op::RdmaRead && self.response_to.is_none()
    }

    /// Whether, done with its request, it still waits for its response's data (an RDMA
    /// read whose data has not landed, with no error).
    pub fn awaits_read_data(&self) -> bool {
        self.is_read_request() && !self.read_landed && !self.status.is_error()
    }

    /// Where the send is.
    pub fn stage(&self) -> SendStage {
        self.stage
    }

    /// Moves the send to `stage`; the traced phase follows (a transition is recorded
    /// only when the phase changes).
    pub fn set_stage<T: TransitionSink + ?Sized>(&mut self, stage: SendStage, sink: &mut T) {
        self.stage = stage;
        self.phase.set(stage.phase(), sink);
    }

    /// Moves the front end to `step`, keeping whether it was flushed.
    pub fn set_front<T: TransitionSink + ?Sized>(&mut self, step: FrontStep, sink: &mut T) {
        let flushed = matches!(self.stage, SendStage::Front { flushed: true, .. });
        self.set_stage(SendStage::Front { step, flushed }, sink);
    }

    /// Whether the VI was flushed while the send was in its front end.
    pub fn flushed_in_front(&self) -> bool {
        matches!(self.stage, SendStage::Front { flushed: true, .. })
    }

    /// No more fragments of this send will be sent (a failed payload read or
    /// transmission, a Nak). Only a send that is sending has fragments to cut.
    pub fn cut(&mut self) {
        if let SendStage::Sending { cut, .. } = &mut self.stage {
            *cut = true;
        }
    }

    /// The peer acknowledged the last fragment: remembered while sending; returns
    /// whether it ends the send's wait (it was waiting for this Ack).
    pub fn ack_last(&mut self) -> bool {
        match &mut self.stage {
            SendStage::Sending { acked, .. } => {
                *acked = true;
                false
            }
            SendStage::AwaitAck => true,
            SendStage::Front { .. }
            | SendStage::AwaitData
            | SendStage::AwaitTurn { .. }
            | SendStage::StatusWrite => false,
        }
    }

    /// Its VI left `connected`: a send in its front end is marked flushed (cut short once
    /// decoded), a sending one sends no more fragments. (The caller adds
    /// `DESCRIPTOR_FLUSHED`, which ends a wait for an Ack.)
    pub fn flush(&mut self) {
        match &mut self.stage {
            SendStage::Front { flushed, .. } => *flushed = true,
            SendStage::Sending { cut, .. } => *cut = true,
            SendStage::AwaitAck
            | SendStage::AwaitData
            | SendStage::AwaitTurn { .. }
            | SendStage::StatusWrite => {}
        }
    }

    /// Whether it is done and waiting for (or in) its status write.
    pub fn is_ready(&self) -> bool {
        matches!(
            self.stage,
            SendStage::AwaitTurn { .. } | SendStage::StatusWrite
        )
    }

    /// Whether the descriptor is still in the engine's front end (counts against
    /// `max_send_contexts` and blocks its VI's next send).
    pub fn in_front(&self) -> bool {
        match self.stage {
            // A flush cuts a decoded send short: it leaves the front end.
            SendStage::Front { step, flushed } => !(flushed && step == FrontStep::BufTranslate),
            SendStage::Sending { cut, .. } => !cut && self.assigned < self.frags,
            SendStage::AwaitAck
            | SendStage::AwaitData
            | SendStage::AwaitTurn { .. }
            | SendStage::StatusWrite => false,
        }
    }

    /// Whether it wants a TX slot for its next fragment.
    pub fn wants_slot(&self) -> bool {
        matches!(self.stage, SendStage::Sending { cut: false, .. }) && self.assigned < self.frags
    }

    /// Whether a cumulative Ack of every fragment up to `k` covers this send's last
    /// fragment while it waits for it (sending or awaiting the Ack).
    pub fn acked_by(&self, k: u32) -> bool {
        matches!(self.stage, SendStage::Sending { .. } | SendStage::AwaitAck)
            && self.last_seq.is_some_and(|l| !seq_before(k, l))
    }

    /// Whether frame `seq` is one of this send's fragments that has been sent, so it can
    /// be resent (the send is not done yet).
    pub fn holds_sent(&self, seq: u32) -> bool {
        matches!(self.stage, SendStage::Sending { .. } | SendStage::AwaitAck)
            && seq.wrapping_sub(self.first_seq) < self.assigned
    }

    /// A fragment of it is being resent: a send waiting for its Ack is sending again.
    pub fn resend_started<T: TransitionSink + ?Sized>(&mut self, sink: &mut T) {
        self.resending += 1;
        if self.stage == SendStage::AwaitAck {
            self.set_stage(
                SendStage::Sending {
                    cut: false,
                    acked: false,
                },
                sink,
            );
        }
    }

    /// Whether an error Nak for fragment `seq` belongs to this send (a fragment of it
    /// has been given a slot and it is not done yet).
    pub fn awaits_ack_for(&self, seq: u32) -> bool {
        matches!(
            self.stage,
            SendStage::Sending { .. } | SendStage::AwaitAck | SendStage::AwaitData
        ) && self.assigned > 0
            && seq >= self.first_seq
            && self.last_seq.is_none_or(|l| seq <= l)
    }
}

impl SendCtx {
    /// The segment count the descriptor read so far announces.
    pub fn seg_count(&self) -> u16 {
        ControlSegment::new_unchecked(&self.desc_bytes[..]).seg_count()
    }
}

/// Offset of the status word in a descriptor.
pub(crate) const STATUS_OFFSET: u64 = control_segment::field::STATUS.start as u64;

/// What a TX slot holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SlotKind {
    /// Fragment `seq` (its sequence number) of send context `send`; `resend`: sent again
    /// (a go-back), not counted as a first sending.
    Data {
        send: SendId,
        seq: u32,
        resend: bool,
    },
    /// A control frame.
    Control,
}

/// A TX buffer slot in use.
#[derive(Clone, Debug)]
pub(crate) struct TxSlot {
    pub msg: MsgId,
    pub kind: SlotKind,
    /// Frame length without FCS \[bytes\].
    pub frame_len: u32,
    /// Runs queued or moving into the slot.
    pub runs: u32,
    /// Payload DMA reads outstanding.
    pub dmas: u32,
    /// Every payload DMA issued.
    pub issued_all: bool,
    /// A payload DMA failed: the frame goes out with op 0 (dropped by receivers).
    pub poisoned: bool,
    pub mark: Time,
    pub last_dma: Option<Time>,
    pub handed: bool,
}

impl TxSlot {
    pub(crate) fn filled(&self) -> bool {
        self.issued_all && self.runs == 0 && self.dmas == 0
    }
}

/// A run of bytes for the TX buffer.
#[derive(Clone, Debug)]
pub(crate) struct TxRun {
    pub slot: usize,
    /// Buffer RAM address of its first byte.
    pub dst: u64,
    pub data: Vec<u8>,
    /// Send FIFO bytes it frees when done (0 for headers).
    pub fifo: u64,
}

/// The fragment being fetched.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fetch {
    pub send: SendId,
    pub slot: usize,
    /// Message offset of the next byte to fetch / of the fragment's first byte / end.
    pub next: u64,
    pub start: u64,
    pub end: u64,
}

/// A control frame waiting for a TX slot.
#[derive(Clone, Debug)]
pub(crate) struct ControlFrame {
    pub dst: MacAddr,
    pub hdr: WireHeaderRepr,
    pub payload: Vec<u8>,
    pub msg: MsgId,
    pub at: Time,
}

/// The send data path.
#[derive(Clone, Debug)]
pub(crate) struct TxPath {
    pub slots: Vec<Option<TxSlot>>,
    pub next_assign: usize,
    pub next_handoff: usize,
    pub fifo: FifoSpace,
    pub fetch: Option<Fetch>,
    /// Last send context served (round robin).
    pub rr: SendId,
    pub mover: Mover<TxRun>,
    pub mover_fsm: Fsm<MoverState>,
    pub control: VecDeque<ControlFrame>,
    /// Byte buffers of TX runs that finished, kept for the next frames' headers.
    pub spare: SpareBuffers,
}

impl TxPath {
    /// A path with `slots` TX slots and a Send FIFO of `fifo` bytes.
    pub fn new(slots: u16, fifo: u64) -> Self {
        Self {
            slots: vec![None; usize::from(slots)],
            next_assign: 0,
            next_handoff: 0,
            fifo: FifoSpace::new(fifo),
            fetch: None,
            rr: SendId::default(),
            mover: Mover::default(),
            mover_fsm: Fsm::new("tx.mover", MoverState::Idle),
            control: VecDeque::new(),
            spare: SpareBuffers::default(),
        }
    }

    /// Queues a control frame (Ack, Nak, connection frame) for `dst`, sent after the
    /// ones queued before it.
    pub fn queue_control(
        &mut self,
        dst: MacAddr,
        hdr: WireHeaderRepr,
        payload: Vec<u8>,
        msg: MsgId,
        at: Time,
    ) {
        self.control.push_back(ControlFrame {
            dst,
            hdr,
            payload,
            msg,
            at,
        });
    }
}

/// The send path's state (see the module doc).
#[derive(Clone, Debug)]
pub(crate) struct SendPath {
    /// Send contexts in flight, by id (ids count up: the map is in posting order).
    pub ctxs: BTreeMap<SendId, SendCtx>,
    /// The last id handed out.
    pub next: SendId,
    /// The data path.
    pub tx: TxPath,
}

impl SendPath {
    /// A send path with `slots` TX slots and a Send FIFO of `fifo` bytes.
    pub fn new(slots: u16, fifo: u64) -> Self {
        Self {
            ctxs: BTreeMap::new(),
            next: SendId::default(),
            tx: TxPath::new(slots, fifo),
        }
    }

    /// A fresh send id.
    pub fn new_id(&mut self) -> SendId {
        self.next = self.next.next();
        self.next
    }

    /// Send contexts in their front end (they count against `max_send_contexts`).
    pub fn active(&self) -> usize {
        self.ctxs.values().filter(|s| s.in_front()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records the traced transitions.
    #[derive(Default)]
    struct Sink(Vec<(&'static str, &'static str)>);

    impl TransitionSink for Sink {
        fn record_transition(&mut self, _: &'static str, from: &'static str, to: &'static str) {
            self.0.push((from, to));
        }
    }

    fn ctx(flushed: bool, reliable: bool, sink: &mut Sink) -> SendCtx {
        SendCtx::new(
            SendStart {
                id: SendId(1),
                msg: MsgId(1),
                vi: 0,
                desc_va: 0x1000,
                desc_handle: MemHandle::default(),
                mark: Time::ZERO,
                status: Status::empty(),
                flushed,
                reliable,
                peer_mac: MacAddr::default(),
                peer_vi: 0,
            },
            sink,
        )
    }

    /// Walks a send through the front end into sending with `frags` fragments.
    fn sending(frags: u32, reliable: bool, sink: &mut Sink) -> SendCtx {
        let mut s = ctx(false, reliable, sink);
        for step in [
            FrontStep::DescRead,
            FrontStep::Decode,
            FrontStep::BufTranslate,
        ] {
            s.set_front(step, sink);
            assert!(s.in_front());
        }
        s.frags = frags;
        s.set_stage(
            SendStage::Sending {
                cut: false,
                acked: false,
            },
            sink,
        );
        s
    }

    #[test]
    fn the_traced_phase_follows_the_stage_and_both_waits_are_completing() {
        let mut sink = Sink::default();
        let mut s = sending(1, true, &mut sink);
        s.set_stage(SendStage::AwaitAck, &mut sink);
        s.set_stage(SendStage::AwaitTurn { reachable: true }, &mut sink);
        s.set_stage(SendStage::StatusWrite, &mut sink);
        assert_eq!(
            sink.0,
            vec![
                ("desc-translate", "desc-read"),
                ("desc-read", "decode"),
                ("decode", "buf-translate"),
                ("buf-translate", "data"),
                ("data", "completing"),
                // AwaitAck -> AwaitTurn stays `completing`: no transition recorded.
                ("completing", "status-write"),
            ]
        );
    }

    #[test]
    fn a_send_wants_slots_until_its_fragments_are_assigned_or_it_is_cut() {
        let mut sink = Sink::default();
        let mut s = sending(2, false, &mut sink);
        assert!(s.wants_slot() && s.in_front());
        s.assigned = 1;
        assert!(s.wants_slot());
        s.cut();
        assert!(!s.wants_slot() && !s.in_front());
        let mut s = sending(2, false, &mut sink);
        s.assigned = 2;
        assert!(
            !s.wants_slot() && !s.in_front(),
            "every fragment has a slot"
        );
    }

    #[test]
    fn an_ack_of_the_last_fragment_is_kept_while_sending_and_ends_the_wait_after() {
        let mut sink = Sink::default();
        let mut s = sending(1, true, &mut sink);
        assert!(
            !s.ack_last(),
            "still sending: remembered, not the end of a wait"
        );
        assert_eq!(
            s.stage(),
            SendStage::Sending {
                cut: false,
                acked: true
            }
        );
        s.set_stage(SendStage::AwaitAck, &mut sink);
        assert!(s.ack_last(), "the Ack the send waits for");
        s.set_stage(SendStage::AwaitTurn { reachable: true }, &mut sink);
        assert!(!s.ack_last() && s.is_ready());
    }

    #[test]
    fn acks_belong_to_a_send_with_a_fragment_out_and_in_its_sequence_range() {
        let mut sink = Sink::default();
        let mut s = sending(3, true, &mut sink);
        s.first_seq = 10;
        assert!(!s.awaits_ack_for(10), "no fragment given a slot yet");
        s.assigned = 1;
        assert!(s.awaits_ack_for(10) && s.awaits_ack_for(12) && !s.awaits_ack_for(9));
        s.last_seq = Some(12);
        assert!(!s.awaits_ack_for(13));
        s.set_stage(SendStage::AwaitTurn { reachable: true }, &mut sink);
        assert!(
            !s.awaits_ack_for(12),
            "a send that is done takes no more acks"
        );
    }

    #[test]
    fn a_cumulative_ack_covers_a_send_from_its_last_fragment_on() {
        let mut sink = Sink::default();
        let mut s = sending(3, true, &mut sink);
        s.first_seq = u32::MAX - 1;
        s.assigned = 2;
        assert!(!s.acked_by(u32::MAX), "last fragment not given a slot yet");
        s.assigned = 3;
        s.last_seq = Some(0);
        assert!(!s.acked_by(u32::MAX), "before the last fragment");
        assert!(
            s.acked_by(0) && s.acked_by(7),
            "at or after it, across the wrap"
        );
        s.set_stage(SendStage::AwaitAck, &mut sink);
        assert!(s.acked_by(0));
        s.set_stage(SendStage::AwaitTurn { reachable: true }, &mut sink);
        assert!(!s.acked_by(0), "done: no longer waiting");
    }

    #[test]
    fn a_flush_marks_the_front_end_and_cuts_a_decoded_send_short() {
        let mut sink = Sink::default();
        let mut s = ctx(false, false, &mut sink);
        s.flush();
        assert!(
            s.flushed_in_front() && s.in_front(),
            "not decoded: still in front"
        );
        s.set_front(FrontStep::Decode, &mut sink);
        assert!(
            s.flushed_in_front(),
            "the mark survives the front end's steps"
        );
        s.set_front(FrontStep::BufTranslate, &mut sink);
        assert!(!s.in_front(), "decoded and flushed: cut short");
        let mut s = sending(4, false, &mut sink);
        s.flush();
        assert!(!s.wants_slot());
        assert!(
            ctx(true, false, &mut sink).flushed_in_front(),
            "posted on a VI not connected"
        );
    }
}
