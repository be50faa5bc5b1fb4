//! Unit **receive path**: the receive front end ([`RxPath`]: frames waiting, the frame
//! being handled and its placement plan, the Recv FIFO space, the RX word mover) and the
//! messages being received ([`RxMessage`], keyed by [`RxId`], each with the receive
//! descriptor it consumes). The steps are the engine's `rx`, `rxdata`, `recvdesc`,
//! `rxdrain` and `rxerror` files.

use super::pieces::SegPieces;
use crate::att::Piece;
use crate::engine::fifo::{FifoSpace, Mover, MoverState};
use crate::engine::ids::{RxId, SendId};
use sim_kernel::{Fsm, MsgId, StateName, Time};
use std::collections::{BTreeMap, VecDeque};
use via_abi::wire_header::{WireHeaderRepr, WireOp};
use via_abi::{DescriptorRepr, MacAddr, MemHandle, Status};

/// States of the receive front end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RxState {
    /// No frame.
    Idle,
    /// Reading and checking a header.
    HeaderCheck,
    /// Fetching a receive descriptor.
    Descriptor,
    /// Translating the remote range of an RDMA write.
    Translate,
    /// Moving the payload into the Recv FIFO.
    Drain,
}

impl StateName for RxState {
    fn name(self) -> &'static str {
        match self {
            RxState::Idle => "idle",
            RxState::HeaderCheck => "header-check",
            RxState::Descriptor => "descriptor",
            RxState::Translate => "translate",
            RxState::Drain => "drain",
        }
    }
}

/// A frame the GEC has delivered.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RxIn {
    pub slot: u16,
    pub len: u32,
    pub msg: MsgId,
    pub at: Time,
}

/// The frame in the front end.
#[derive(Clone, Debug)]
pub(crate) struct RxWork {
    pub frame: RxIn,
    pub mark: Time,
    pub hdr: Option<WireHeaderRepr>,
    pub src: MacAddr,
    /// The message the payload belongs to.
    pub target: Option<RxId>,
    /// Payload chunks still to move, and runs queued or moving.
    pub plan: VecDeque<Chunk>,
    pub moving: u32,
}

/// The receive path.
#[derive(Clone, Debug)]
pub(crate) struct RxPath {
    pub queue: VecDeque<RxIn>,
    pub cur: Option<RxWork>,
    pub fsm: Fsm<RxState>,
    pub fifo: FifoSpace,
    pub mover: Mover<RxRun>,
    pub mover_fsm: Fsm<MoverState>,
    /// The bytes of the frame whose header is checked (a buffer kept between frames).
    pub frame_buf: Vec<u8>,
}

impl RxPath {
    /// A path with a Recv FIFO of `fifo` bytes.
    pub fn new(fifo: u64) -> Self {
        Self {
            queue: VecDeque::new(),
            cur: None,
            fsm: Fsm::new("rx", RxState::Idle),
            fifo: FifoSpace::new(fifo),
            mover: Mover::default(),
            mover_fsm: Fsm::new("rx.mover", MoverState::Idle),
            frame_buf: Vec::new(),
        }
    }
}

/// A receive descriptor taken for a message.
#[derive(Clone, Debug, Default)]
pub(crate) struct RecvDesc {
    pub va: u64,
    pub handle: MemHandle,
    pub pieces: Vec<Piece>,
    pub bytes: Vec<u8>,
    pub repr: Option<DescriptorRepr>,
    pub seg_pieces: Vec<SegPieces>,
    pub translating: usize,
    pub status: Status,
    pub ready: bool,
    /// Sequence number of the frame this copy was read for (per-frame reading).
    pub frame_seq: Option<u32>,
    /// Its data segments were translated already (kept from the post check).
    pub translated: bool,
}

/// A message being received (or completing).
#[derive(Clone, Debug)]
pub(crate) struct RxMessage {
    pub vi: u16,
    pub msg: MsgId,
    pub op: WireOp,
    pub len: u32,
    pub next_off: u64,
    pub immediate: Option<u32>,
    pub desc: Option<RecvDesc>,
    /// Where the message is (each stage carries what only it needs).
    pub stage: RxStage,
    /// Payload DMA writes outstanding.
    pub outstanding: u32,
    pub last_seq: u32,
    pub reliable: bool,
    pub mark: Time,
    /// An RDMA read response: the requester's read descriptor it lands in.
    pub read: Option<SendId>,
}

/// Where a message being received is. A failed message keeps whether its last frame
/// was seen (that frame's drain still ends the VI's current message) and whether its
/// error status was already issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RxStage {
    /// Frames arriving; `last_seen`: the last fragment's header was taken.
    Receiving { last_seen: bool },
    /// Every frame is in the Recv FIFO; completes when its writes are done.
    Drained,
    /// Completed: its status write (and Ack) issued.
    Completed,
    /// Failed (an error, abandoned); `status_issued`: its descriptor's status is written
    /// or the message had completed before it failed.
    Failed {
        last_seen: bool,
        status_issued: bool,
    },
}

impl RxMessage {
    /// Whether it failed.
    pub fn is_failed(&self) -> bool {
        matches!(self.stage, RxStage::Failed { .. })
    }

    /// Whether the last fragment's header was taken.
    pub fn last_seen(&self) -> bool {
        match self.stage {
            RxStage::Receiving { last_seen } | RxStage::Failed { last_seen, .. } => last_seen,
            RxStage::Drained | RxStage::Completed => true,
        }
    }

    /// A frame's header was taken; `last`: it is the message's last fragment.
    pub fn frame_taken(&mut self, last: bool) {
        if let RxStage::Receiving { last_seen } = &mut self.stage {
            *last_seen = last;
        }
    }

    /// The last frame is in the Recv FIFO.
    pub fn drained(&mut self) {
        if let RxStage::Receiving { last_seen: true } = self.stage {
            self.stage = RxStage::Drained;
        }
    }

    /// Whether nothing more is to be issued for it (completed, or its error status
    /// issued).
    pub fn is_settled(&self) -> bool {
        matches!(
            self.stage,
            RxStage::Completed
                | RxStage::Failed {
                    status_issued: true,
                    ..
                }
        )
    }

    /// The message failed (a failed write or read, an error, abandoned). Returns whether
    /// it had already failed.
    pub fn fail(&mut self) -> bool {
        self.stage = match self.stage {
            RxStage::Failed { .. } => return true,
            RxStage::Receiving { last_seen } => RxStage::Failed {
                last_seen,
                status_issued: false,
            },
            RxStage::Drained => RxStage::Failed {
                last_seen: true,
                status_issued: false,
            },
            RxStage::Completed => RxStage::Failed {
                last_seen: true,
                status_issued: true,
            },
        };
        false
    }

    /// The failed message's error status was issued.
    pub fn status_issued(&mut self) {
        if let RxStage::Failed { status_issued, .. } = &mut self.stage {
            *status_issued = true;
        }
    }
}

/// A chunk of a frame's payload to move and write.
#[derive(Clone, Debug)]
pub(crate) struct Chunk {
    /// Offset in the frame's payload.
    pub off: u64,
    pub len: u64,
    /// Host pages it goes to (ATT layout).
    pub pages: Vec<u64>,
}

/// A run of the RX mover: a chunk on its way into the Recv FIFO.
#[derive(Clone, Debug)]
pub(crate) struct RxRun {
    pub src: u64,
    pub len: u64,
    pub data: Vec<u8>,
    pub pages: Vec<u64>,
    pub msg: RxId,
    /// A word of it could not be read from the buffer RAM: the chunk is dropped, never
    /// written with made-up bytes.
    pub read_failed: bool,
}

impl RxRun {
    /// Appends the bytes of words `[from, to)` (4 bytes each, clipped to the run) read
    /// from `ram`; a failed read marks the run failed and appends nothing (nor does any
    /// read once one failed). The bytes land in the run's buffer directly.
    pub fn read_words(&mut self, ram: &gige_mac::BufferRam, from: u64, to: u64) {
        if self.read_failed {
            return;
        }
        let (a, b) = ((from * 4).min(self.len), (to * 4).min(self.len));
        let old = self.data.len();
        self.data
            .resize(old + usize::try_from(b - a).unwrap_or(0), 0);
        if ram.read(self.src + a, &mut self.data[old..]).is_err() {
            self.data.truncate(old);
            self.read_failed = true;
        }
    }
}

/// The receive path's state (see the module doc).
#[derive(Clone, Debug)]
pub(crate) struct RecvPath {
    /// The front end.
    pub front: RxPath,
    /// Messages being received or completing, by id.
    pub msgs: BTreeMap<RxId, RxMessage>,
    /// The last id handed out.
    pub next: RxId,
}

impl RecvPath {
    /// A receive path with a Recv FIFO of `fifo` bytes.
    pub fn new(fifo: u64) -> Self {
        Self {
            front: RxPath::new(fifo),
            msgs: BTreeMap::new(),
            next: RxId::default(),
        }
    }

    /// A fresh message id.
    pub fn new_id(&mut self) -> RxId {
        self.next = self.next.next();
        self.next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gige_mac::{BufferLayout, BufferRam};

    fn run_at(src: u64, len: u64) -> RxRun {
        RxRun {
            src,
            len,
            data: Vec::new(),
            pages: Vec::new(),
            msg: RxId::default(),
            read_failed: false,
        }
    }

    fn message() -> RxMessage {
        RxMessage {
            vi: 0,
            msg: MsgId(1),
            op: WireOp::Send,
            len: 8,
            next_off: 0,
            immediate: None,
            desc: None,
            stage: RxStage::Receiving { last_seen: false },
            outstanding: 0,
            last_seq: 0,
            reliable: false,
            mark: Time::ZERO,
            read: None,
        }
    }

    /// A message is drained only after its last fragment was taken, and completes once.
    #[test]
    fn a_message_drains_after_its_last_frame_and_then_completes() {
        let mut m = message();
        m.drained();
        assert_eq!(
            m.stage,
            RxStage::Receiving { last_seen: false },
            "not its last frame"
        );
        m.frame_taken(true);
        assert!(m.last_seen() && !m.is_settled());
        m.drained();
        assert_eq!(m.stage, RxStage::Drained);
        m.stage = RxStage::Completed;
        assert!(m.is_settled() && m.last_seen() && !m.is_failed());
    }

    /// Failing keeps what the rest of the engine still needs: whether the last frame was
    /// seen (its drain ends the VI's current message) and whether a status was issued;
    /// a second failure says so.
    #[test]
    fn a_failure_keeps_the_last_frame_and_whether_a_status_was_issued() {
        let mut m = message();
        m.frame_taken(true);
        assert!(!m.fail());
        assert_eq!(
            m.stage,
            RxStage::Failed {
                last_seen: true,
                status_issued: false
            }
        );
        assert!(m.is_failed() && !m.is_settled());
        m.drained();
        assert!(m.is_failed(), "a failed message never becomes drained");
        m.status_issued();
        assert!(m.is_settled());
        assert!(m.fail(), "already failed");
        let mut done = message();
        done.stage = RxStage::Completed;
        assert!(!done.fail());
        assert!(
            done.is_settled(),
            "a completed message's status is out already"
        );
        let mut early = message();
        early.fail();
        assert!(!early.last_seen(), "failed before its last frame");
    }

    /// The words a chunk moves come from the buffer RAM, clipped to the chunk.
    #[test]
    fn a_run_reads_its_words_from_the_buffer_ram() {
        let layout = BufferLayout::default();
        let mut ram = BufferRam::new(layout.clone()).expect("ram");
        ram.write(layout.base + 8, &[1, 2, 3, 4, 5, 6])
            .expect("write");
        let mut r = run_at(layout.base + 8, 6);
        r.read_words(&ram, 0, 1);
        r.read_words(&ram, 1, 2);
        assert_eq!(r.data, vec![1, 2, 3, 4, 5, 6]);
        assert!(!r.read_failed);
    }

    /// A word that cannot be read fails the run and adds nothing: no zero bytes stand
    /// in for data (they used to).
    #[test]
    fn a_failed_read_adds_no_bytes_and_fails_the_run() {
        let layout = BufferLayout::default();
        let ram = BufferRam::new(layout.clone()).expect("ram");
        let mut r = run_at(layout.base + layout.size() - 4, 12);
        r.read_words(&ram, 0, 1);
        r.read_words(&ram, 1, 3);
        assert!(r.read_failed);
        assert_eq!(r.data.len(), 4, "only the word that could be read");
        r.read_words(&ram, 0, 1);
        assert_eq!(r.data.len(), 4, "nothing more once failed");
    }
}
