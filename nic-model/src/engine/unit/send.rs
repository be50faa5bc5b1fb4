//! Unit **send path**: the send contexts (one [`SendCtx`] per send descriptor in flight,
//! keyed by [`SendId`]) and the send data path ([`TxPath`]: TX slots, the fragment being
//! fetched, the Send FIFO space, the TX word mover, control frames waiting for a slot).
//! The steps that move a send through its phases are the engine's `tx`, `txcheck`,
//! `txdata`, `txmove` and `complete` files.

use crate::att::Piece;
use crate::engine::fifo::{FifoSpace, Mover, MoverState};
use crate::engine::ids::SendId;
use sim_kernel::{Fsm, MsgId, StateName, Time};
use std::collections::{BTreeMap, VecDeque};
use via_abi::descriptor::{control_segment, ControlSegment};
use via_abi::wire_header::WireHeaderRepr;
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

/// One send descriptor in flight.
#[derive(Clone, Debug)]
pub(crate) struct SendCtx {
    pub id: SendId,
    pub msg: MsgId,
    pub vi: u16,
    pub desc_va: u64,
    pub desc_handle: MemHandle,
    pub phase: Fsm<SendPhase>,
    /// End of the last span of the descriptor's front end / completion.
    pub mark: Time,
    /// Translation of the descriptor's first 64 bytes.
    pub desc_pieces: Vec<Piece>,
    pub desc_bytes: Vec<u8>,
    pub desc: Option<DescriptorRepr>,
    /// Translation of each data segment (empty for an empty segment).
    pub seg_pieces: Vec<Vec<Piece>>,
    pub translating: usize,
    /// Error bits so far (and `DESCRIPTOR_FLUSHED`).
    pub status: Status,
    pub flush: bool,
    pub op: Op,
    /// Message length \[bytes\].
    pub len: u64,
    pub frags: u32,
    /// Fragments given a TX slot / handed over and transmitted.
    pub assigned: u32,
    pub transmitted: u32,
    pub first_seq: u32,
    pub last_seq: Option<u32>,
    /// No more fragments will be sent (an error, a Nak).
    pub aborted: bool,
    /// The peer acknowledged the last fragment (reliable).
    pub acked: bool,
    /// Ready to complete (waiting for its turn in the VI's order).
    pub ready: bool,
    /// Its status cannot be written (its own address failed).
    pub unreachable: bool,
    pub reliable: bool,
    pub peer_mac: MacAddr,
    pub peer_vi: u16,
    /// Start of the next fragment's first span.
    pub frag_mark: Time,
}

impl SendCtx {
    /// Whether the descriptor is still in the engine's front end (counts against
    /// `max_send_contexts` and blocks its VI's next send).
    pub fn in_front(&self) -> bool {
        !self.ready && !self.aborted && (self.desc.is_none() || self.assigned < self.frags)
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
    /// A fragment of send context `io`.
    Data { send: SendId },
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
        }
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
