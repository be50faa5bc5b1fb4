//! Unit **doorbell FIFO**: the partly written doorbell records (by VI), the bounded FIFO
//! of rung doorbells, the write back-pressure flag, the dispatcher's state machine and
//! each work queue's tail (the last descriptor taken, whose Next link leads to the next,
//! with that link once a read of the tail found it already written: [`Tail`]).
//! The dispatch rules are in the engine's `doorbell` step file.

use super::pieces::SegPieces;
use crate::att::Piece;
use sim_kernel::{Fsm, MsgId, StateName, Time};
use std::collections::{BTreeMap, VecDeque};
use via_abi::doorbell::{DoorbellRepr, DOORBELL_LEN};
use via_abi::{MemHandle, Status};

/// States of the doorbell dispatcher.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DoorbellState {
    /// Nothing to dispatch.
    Idle,
    /// Decoding the next doorbell.
    Decoding,
    /// Doorbells wait, none can go yet.
    Blocked,
    /// Checking a posted receive descriptor before taking it (`recvcheck`).
    Checking,
    /// Reading the queue's link to the posted descriptor (the previous descriptor's
    /// Next fields).
    Linking,
}

impl StateName for DoorbellState {
    fn name(self) -> &'static str {
        match self {
            DoorbellState::Idle => "idle",
            DoorbellState::Decoding => "decoding",
            DoorbellState::Blocked => "blocked",
            DoorbellState::Checking => "checking",
            DoorbellState::Linking => "linking",
        }
    }
}

/// A rung doorbell.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    /// The VI of the window it was written to.
    pub vi: u16,
    pub rec: DoorbellRepr,
    pub msg: MsgId,
    pub at: Time,
    /// A send parked behind its VI's send in the front end: already counted as taken
    /// (its window's `POSTS_PENDING` no longer shows it).
    pub parked: bool,
}

/// The receive descriptor being checked before its doorbell is taken.
#[derive(Clone, Debug)]
pub(crate) struct RecvCheck {
    pub entry: Entry,
    /// End of the last span.
    pub mark: Time,
    /// The descriptor bytes read so far.
    pub bytes: Vec<u8>,
    /// Where its first 64 bytes are.
    pub pieces: Vec<Piece>,
    /// Data-segment translations outstanding.
    pub translating: usize,
    /// Errors found so far.
    pub status: Status,
    /// The descriptor, once decoded.
    pub repr: Option<via_abi::DescriptorRepr>,
    /// Each data segment's translation (by segment index).
    pub seg_pieces: Vec<SegPieces>,
}

impl RecvCheck {
    /// A check of doorbell `entry`'s descriptor, starting at `now`.
    pub fn new(entry: Entry, now: Time) -> Self {
        Self {
            entry,
            mark: now,
            bytes: Vec::new(),
            pieces: Vec::new(),
            translating: 0,
            status: Status::empty(),
            repr: None,
            seg_pieces: Vec::new(),
        }
    }

    /// The descriptor's memory handle.
    pub fn handle(&self) -> MemHandle {
        self.entry.rec.desc_handle
    }

    /// The descriptor's virtual address.
    pub fn va(&self) -> u64 {
        self.entry.rec.desc_va
    }
}

/// A doorbell whose descriptor is being found through its queue's link.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LinkRead {
    pub entry: Entry,
    /// End of the last span.
    pub mark: Time,
}

/// Bytes of a descriptor's Next link (Next VA, 8, and Next handle, 4: control segment
/// bytes 0..12).
pub(crate) const LINK_LEN: u64 = 12;

/// The work queue of a tail: the send queue or the receive queue of a VI window.
pub(crate) type TailKey = (u16, bool);

/// A work queue's tail: the last descriptor the dispatcher took from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tail {
    pub va: u64,
    pub handle: MemHandle,
    /// Its Next link (VA, handle), when a DMA read of this descriptor, made after it was
    /// taken, found the link already written (non-zero, and not to itself): the provider
    /// writes a new descriptor's Next as zero, links it into the previous tail, then
    /// rings, so a non-zero Next read after the tail's doorbell names the post that
    /// follows, unless the post was the tail itself posted again (it then links itself).
    /// `None`: not read yet, read null, or a link to itself.
    pub next: Option<(u64, MemHandle)>,
}

impl Tail {
    /// Descriptor (`va`, `handle`), just taken, with no link known.
    pub fn new(va: u64, handle: MemHandle) -> Self {
        Self {
            va,
            handle,
            next: None,
        }
    }
}

/// The Next link (VA, handle) in a descriptor's first bytes (`None`: fewer than
/// [`LINK_LEN`] bytes, or a null Next address).
pub(crate) fn next_link(bytes: &[u8]) -> Option<(u64, MemHandle)> {
    let va = u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?);
    let handle = u32::from_le_bytes(bytes.get(8..LINK_LEN as usize)?.try_into().ok()?);
    (va != 0).then_some((va, MemHandle(handle)))
}

/// The tail key of doorbell `e` (`None`: an unknown queue byte, which has no list).
pub(crate) fn tail_key(e: &Entry) -> Option<TailKey> {
    match e.rec.queue {
        via_abi::Queue::Send => Some((e.vi, false)),
        via_abi::Queue::Receive => Some((e.vi, true)),
        via_abi::Queue::Unknown(_) => None,
    }
}

/// The doorbell unit's state.
#[derive(Clone, Debug)]
pub(crate) struct DoorbellUnit {
    /// Partly written records, by VI.
    pub stage: BTreeMap<u16, [u8; DOORBELL_LEN]>,
    pub fifo: VecDeque<Entry>,
    pub retry_on: bool,
    pub fsm: Fsm<DoorbellState>,
    /// The receive check running, if any.
    pub check: Option<RecvCheck>,
    /// Doorbells rung and not yet taken, by the VI of their window (what the window's
    /// `POSTS_PENDING` bit reads).
    pub pending: BTreeMap<u16, u32>,
    /// The last descriptor taken from each work queue: where the next post's link is
    /// (or that link itself, once known).
    pub tails: BTreeMap<TailKey, Tail>,
    /// The queue link being read, if any.
    pub link: Option<LinkRead>,
}

impl Default for DoorbellUnit {
    fn default() -> Self {
        Self {
            stage: BTreeMap::new(),
            fifo: VecDeque::new(),
            retry_on: false,
            fsm: Fsm::new("doorbell", DoorbellState::Idle),
            check: None,
            pending: BTreeMap::new(),
            tails: BTreeMap::new(),
            link: None,
        }
    }
}

impl DoorbellUnit {
    /// Stages the bytes a dword write covers in VI window `vi`'s record (`within`: the
    /// dword's offset in it; bytes not covered keep their value). Writing the last dword
    /// rings the record: its 16 bytes are returned. They stay staged, so a later ring
    /// that writes only the last dword reuses the rest.
    pub fn stage(
        &mut self,
        vi: u16,
        within: u64,
        bytes: [Option<u8>; 4],
    ) -> Option<[u8; DOORBELL_LEN]> {
        let rec = self.stage.entry(vi).or_insert([0; DOORBELL_LEN]);
        for (k, b) in bytes.iter().enumerate() {
            if let (Some(v), Some(dst)) = (b, rec.get_mut(within as usize + k)) {
                *dst = *v;
            }
        }
        (within == DOORBELL_LEN as u64 - 4).then_some(*rec)
    }

    /// Queues rung doorbell `e` behind the others. Returns whether the FIFO already held
    /// `depth` doorbells (an overrun: `e` is kept all the same).
    pub fn push(&mut self, e: Entry, depth: usize) -> bool {
        let overrun = self.fifo.len() >= depth;
        self.fifo.push_back(e);
        overrun
    }

    /// Takes out the first doorbell, in FIFO order, that `can_go` lets go; the others
    /// keep their order.
    pub fn take_first(&mut self, can_go: impl FnMut(&Entry) -> bool) -> Option<Entry> {
        let i = self.fifo.iter().position(can_go)?;
        self.fifo.remove(i)
    }

    /// A doorbell of VI window `vi` was rung.
    pub fn rung(&mut self, vi: u16) {
        *self.pending.entry(vi).or_insert(0) += 1;
    }

    /// A doorbell of VI window `vi` was taken (dispatched, or its check ended).
    pub fn taken(&mut self, vi: u16) {
        if let Some(n) = self.pending.get_mut(&vi) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.pending.remove(&vi);
            }
        }
    }

    /// Parks every send doorbell of a VI whose previous send is still in the front end
    /// (`busy(vi)`): the card has recorded it, so its window stops showing it pending;
    /// it is dispatched in order once that send is out.
    pub fn park_sends(&mut self, busy: impl Fn(u16) -> bool) {
        let mut parked = Vec::new();
        for e in &mut self.fifo {
            if !e.parked && e.rec.queue == via_abi::Queue::Send && busy(e.vi) {
                e.parked = true;
                parked.push(e.vi);
            }
        }
        for vi in parked {
            self.taken(vi);
        }
    }

    /// A DMA read of descriptor (`va`, `handle`) of work queue `key` returned `bytes`
    /// (its first bytes): with `follow` (`EngineParams::follow_read_links`), if that
    /// descriptor is still the queue's tail and its Next link is already written, the
    /// link is kept for the queue's next doorbell. Returns whether it was kept.
    pub fn descriptor_read(
        &mut self,
        follow: bool,
        key: TailKey,
        va: u64,
        handle: MemHandle,
        bytes: &[u8],
    ) -> bool {
        if !follow {
            return false;
        }
        // May miss: the queue took a later descriptor meanwhile, or the read is of a
        // descriptor that was never a tail (an unknown queue byte).
        let Some(t) = self.tails.get_mut(&key) else {
            return false;
        };
        if (t.va, t.handle) != (va, handle) || t.next.is_some() {
            return false;
        }
        // A link to the descriptor itself is its own post's: a provider that posts the
        // queue's tail again (a completed descriptor reused, as a ping-pong does) links
        // it into itself before ringing. It says nothing of the post after it, which may
        // be another descriptor; that one's link is read when it comes.
        t.next = next_link(bytes).filter(|&(next_va, _)| next_va != va);
        t.next.is_some()
    }

    /// Whether VI window `vi` has doorbells not yet taken.
    pub fn is_pending(&self, vi: u16) -> bool {
        self.pending.contains_key(&vi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use via_abi::doorbell::{Doorbell, HEAD};
    use via_abi::Queue;

    fn record(vi: u16, queue: Queue, va: u64) -> [u8; DOORBELL_LEN] {
        let mut rec = [0u8; DOORBELL_LEN];
        DoorbellRepr {
            desc_va: va,
            desc_handle: MemHandle(4),
            vi,
            queue,
            flags: HEAD,
        }
        .emit(&mut Doorbell::new_unchecked(&mut rec[..]));
        rec
    }

    /// The dword at `within` of `rec`, every byte written.
    fn dword(rec: &[u8; DOORBELL_LEN], within: u64) -> [Option<u8>; 4] {
        let i = within as usize;
        [rec[i], rec[i + 1], rec[i + 2], rec[i + 3]].map(Some)
    }

    fn entry(vi: u16, queue: Queue, va: u64) -> Entry {
        let rec = record(vi, queue, va);
        Entry {
            vi,
            rec: DoorbellRepr::parse(&Doorbell::new_unchecked(&rec[..])).expect("record"),
            msg: MsgId(va),
            at: Time::ZERO,
            parked: false,
        }
    }

    #[test]
    fn a_record_rings_when_its_last_dword_is_written_and_stays_staged() {
        let mut u = DoorbellUnit::default();
        let rec = record(2, Queue::Send, 0x4000_0040);
        // Any order; only the last dword rings.
        for within in [8, 0, 4] {
            assert_eq!(u.stage(2, within, dword(&rec, within)), None);
        }
        // Another VI's window stages its own record meanwhile.
        let other = record(3, Queue::Receive, 0x5000_0000);
        assert_eq!(u.stage(3, 0, dword(&other, 0)), None);
        assert_eq!(u.stage(2, 12, dword(&rec, 12)), Some(rec));
        // A byte-enable write changes only its bytes; the rest are the staged ones.
        assert_eq!(u.stage(2, 0, [Some(0x80), None, None, None]), None);
        let mut want = rec;
        want[0] = 0x80;
        assert_eq!(
            u.stage(2, 12, dword(&rec, 12)),
            Some(want),
            "re-rung with the staged bytes"
        );
        assert_eq!(
            u.stage.get(&3).map(|r| r[..4].to_vec()),
            Some(other[..4].to_vec())
        );
    }

    #[test]
    fn the_fifo_keeps_order_and_reports_an_overrun_but_keeps_the_doorbell() {
        let mut u = DoorbellUnit::default();
        for va in 1..=3 {
            assert!(!u.push(entry(0, Queue::Send, va), 3), "room for {va}");
        }
        assert!(
            u.push(entry(0, Queue::Send, 4), 3),
            "the fourth overruns a depth of 3"
        );
        assert_eq!(
            u.fifo.iter().map(|e| e.rec.desc_va).collect::<Vec<_>>(),
            vec![1, 2, 3, 4],
            "kept, in ringing order"
        );
    }

    #[test]
    fn dispatch_takes_the_first_that_can_go_and_the_rest_keep_their_order() {
        let mut u = DoorbellUnit::default();
        for (vi, va) in [(1, 10), (0, 20), (1, 11), (0, 21)] {
            u.push(entry(vi, Queue::Send, va), 16);
        }
        // VI 1 is blocked: VI 0's first doorbell goes, then its second.
        let vas = |e: Option<Entry>| e.map(|e| e.rec.desc_va);
        assert_eq!(vas(u.take_first(|e| e.vi == 0)), Some(20));
        assert_eq!(vas(u.take_first(|e| e.vi == 0)), Some(21));
        assert_eq!(vas(u.take_first(|e| e.vi == 0)), None, "none can go");
        assert_eq!(u.fifo.len(), 2, "blocked ones stay");
        assert_eq!(vas(u.take_first(|_| true)), Some(10));
        assert_eq!(vas(u.take_first(|_| true)), Some(11));
        assert!(u.take_first(|_| true).is_none());
    }

    #[test]
    fn pending_posts_count_per_window_and_never_go_below_zero() {
        let mut u = DoorbellUnit::default();
        u.rung(0);
        u.rung(0);
        u.rung(5);
        u.taken(0);
        assert!(u.is_pending(0) && u.is_pending(5));
        u.taken(0);
        u.taken(0);
        assert!(!u.is_pending(0), "all taken; an extra take is harmless");
        assert!(u.is_pending(5));
        u.rung(0);
        assert!(u.is_pending(0), "counting starts again from zero");
    }

    #[test]
    fn sends_behind_a_busy_vi_are_parked_once_and_stop_showing_pending() {
        let mut u = DoorbellUnit::default();
        for (vi, q, va) in [
            (0, Queue::Send, 0x100),
            (0, Queue::Send, 0x140),
            (0, Queue::Receive, 0x180),
            (1, Queue::Send, 0x200),
        ] {
            u.rung(vi);
            u.push(entry(vi, q, va), 16);
        }
        // VI 0 has a send in its front end; VI 1 is free.
        u.park_sends(|vi| vi == 0);
        assert!(
            u.is_pending(0),
            "the receive of VI 0 is still pending (it is not a send)"
        );
        u.park_sends(|vi| vi == 0);
        let parked: Vec<bool> = u.fifo.iter().map(|e| e.parked).collect();
        assert_eq!(parked, vec![true, true, false, false]);
        // Taking the receive leaves nothing of VI 0 pending; parking twice took once.
        u.taken(0);
        assert!(!u.is_pending(0));
        assert!(
            u.is_pending(1),
            "a send of a free VI waits for its dispatch"
        );
    }

    #[test]
    fn a_read_of_the_tail_keeps_its_written_link_only() {
        let mut u = DoorbellUnit::default();
        let mut desc = vec![0u8; 64];
        // No tail for the queue: nothing kept.
        assert!(!u.descriptor_read(true, (0, false), 0x100, MemHandle(4), &desc));
        u.tails.insert((0, false), Tail::new(0x100, MemHandle(4)));
        // The link still null when the card read it: nothing kept.
        assert!(!u.descriptor_read(true, (0, false), 0x100, MemHandle(4), &desc));
        desc[..8].copy_from_slice(&0x140u64.to_le_bytes());
        desc[8..12].copy_from_slice(&7u32.to_le_bytes());
        // Another descriptor than the tail (same VA, other handle; or other queue).
        assert!(!u.descriptor_read(true, (0, false), 0x100, MemHandle(5), &desc));
        assert!(!u.descriptor_read(true, (0, true), 0x100, MemHandle(4), &desc));
        assert!(u.descriptor_read(true, (0, false), 0x100, MemHandle(4), &desc));
        assert_eq!(
            u.tails.get(&(0, false)).and_then(|t| t.next),
            Some((0x140, MemHandle(7)))
        );
        // A second read does not change a known link.
        desc[..8].copy_from_slice(&0x180u64.to_le_bytes());
        assert!(!u.descriptor_read(true, (0, false), 0x100, MemHandle(4), &desc));
        assert_eq!(
            u.tails.get(&(0, false)).and_then(|t| t.next),
            Some((0x140, MemHandle(7)))
        );
        assert_eq!(next_link(&desc[..11]), None, "too short for a link");
        // A descriptor posted again after it completed links itself: not kept.
        u.tails.insert((1, false), Tail::new(0x140, MemHandle(7)));
        desc[..8].copy_from_slice(&0x140u64.to_le_bytes());
        assert!(!u.descriptor_read(true, (1, false), 0x140, MemHandle(7), &desc));
        assert_eq!(u.tails.get(&(1, false)).and_then(|t| t.next), None);
    }

    #[test]
    fn tails_are_per_vi_and_queue_and_unknown_queues_have_none() {
        assert_eq!(tail_key(&entry(3, Queue::Send, 1)), Some((3, false)));
        assert_eq!(tail_key(&entry(3, Queue::Receive, 1)), Some((3, true)));
        let mut e = entry(3, Queue::Send, 1);
        e.rec.queue = Queue::Unknown(9);
        assert_eq!(tail_key(&e), None);
        let check = RecvCheck::new(entry(1, Queue::Receive, 0x40), Time::ZERO);
        assert_eq!((check.va(), check.handle()), (0x40, MemHandle(4)));
        assert_eq!(DoorbellUnit::default().fsm.state(), DoorbellState::Idle);
    }
}
