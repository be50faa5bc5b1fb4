//! Unit **outstanding requests**: the translations the engine has asked the ATT manager
//! for and the DMA jobs it has given the DMA master, and what each answer is for
//! ([`AttFor`], [`DmaFor`]). It hands out the request ids and tags, writes the
//! `Translate` / `Dma` actions, and gives the purpose back when the answer arrives. Also
//! the page-list helper every path uses to address part of a translated range.

use crate::att::{AccessKind, Piece};
use crate::engine::ids::{DmaTag, JobId, RxId, SendId};
use crate::engine::io::{Action, Io};
use crate::msg::ReqId;
use pci_model::DmaDirection;
use sim_kernel::MsgId;
use std::collections::VecDeque;
use via_abi::{MemHandle, ProtectionTag};

/// What an outstanding translation is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AttFor {
    /// A send descriptor: its first 64 bytes (`rest == false`) or the rest.
    SendDesc { send: SendId, rest: bool },
    /// Data segment `seg` of a send descriptor.
    SendBuf { send: SendId, seg: usize },
    /// A receive descriptor of message `id`: first 64 bytes or the rest.
    RecvDesc { rx: RxId, rest: bool },
    /// Data segment `seg` of the receive descriptor of message `id`.
    RecvBuf { rx: RxId, seg: usize },
    /// The remote range of the RDMA-write frame being received.
    Remote,
    /// The source range of the RDMA read request being received (responder).
    ReadSource,
    /// The status word of a descriptor that is completed without being fetched.
    StatusOnly { job: JobId },
    /// The receive descriptor the doorbell unit is checking: first 64 bytes or the rest.
    RecvCheck { rest: bool },
    /// Data segment `seg` of the receive descriptor being checked.
    RecvCheckBuf { seg: usize },
    /// The Next link of a queue's tail, for the doorbell being dispatched.
    DoorbellLink,
}

/// What an outstanding DMA job is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DmaFor {
    /// Reading a send descriptor (first 64 bytes or the rest).
    SendDesc { send: SendId, rest: bool },
    /// A payload chunk of `len` bytes for TX slot `slot`, to land `offset` bytes into
    /// the slot.
    Payload { slot: usize, offset: u64, len: u64 },
    /// Reading a receive descriptor of message `id`.
    RecvDesc { rx: RxId, rest: bool },
    /// Writing a chunk of received payload of message `id`.
    RxChunk { rx: RxId, len: u64 },
    /// Writing a descriptor's status.
    Status { job: JobId },
    /// Reading the receive descriptor the doorbell unit is checking.
    RecvCheck { rest: bool },
    /// Reading the Next link of a queue's tail, for the doorbell being dispatched.
    DoorbellLink,
}

/// What each request still waiting for its answer is for, under the request's number.
/// Numbers are handed out in increasing order and answers come back in about that
/// order, so the waiting requests are a window of consecutive numbers: slot `i` holds
/// number `base + i` (`None`: answered, or a number never asked with), and the answered
/// ones at the front leave it. Putting and taking cost a few instructions, where a map
/// would search and rebalance a tree.
#[derive(Clone, Debug)]
pub(crate) struct Waiting<V> {
    base: u64,
    slots: VecDeque<Option<V>>,
}

impl<V> Default for Waiting<V> {
    fn default() -> Self {
        Self {
            base: 0,
            slots: VecDeque::new(),
        }
    }
}

impl<V> Waiting<V> {
    /// Puts `v` under number `n`, which is above every number put before.
    pub(crate) fn insert(&mut self, n: u64, v: V) {
        if self.slots.is_empty() {
            self.base = n;
        }
        let i = n.saturating_sub(self.base);
        debug_assert!(
            n >= self.base + self.slots.len() as u64,
            "numbers only grow"
        );
        while (self.slots.len() as u64) < i {
            self.slots.push_back(None);
        }
        self.slots.push_back(Some(v));
    }

    /// What number `n` was for, taking it out (`None`: not waiting).
    pub(crate) fn remove(&mut self, n: u64) -> Option<V> {
        let i = usize::try_from(n.checked_sub(self.base)?).ok()?;
        let v = self.slots.get_mut(i)?.take()?;
        while self.slots.front().is_some_and(Option::is_none) {
            self.slots.pop_front();
            self.base += 1;
        }
        Some(v)
    }

    /// Whether nothing is waiting.
    pub(crate) fn is_empty(&self) -> bool {
        // Answered slots never stay at the front, so a non-empty window holds one.
        self.slots.is_empty()
    }
}

/// The outstanding requests (see the module doc).
#[derive(Clone, Debug, Default)]
pub(crate) struct Outstanding {
    next_req: ReqId,
    next_dma: DmaTag,
    att_wait: Waiting<AttFor>,
    dma_wait: Waiting<DmaFor>,
}

impl Outstanding {
    /// A fresh request id for the ATT manager (translations and the registration
    /// mailbox share one counter).
    pub(crate) fn new_req(&mut self) -> ReqId {
        self.next_req = ReqId(self.next_req.0 + 1);
        self.next_req
    }

    /// What translation `req` was for, taking it out (`None`: no such request).
    pub(crate) fn take_att(&mut self, req: ReqId) -> Option<AttFor> {
        self.att_wait.remove(req.0)
    }

    /// What DMA job `tag` was for, taking it out (`None`: no such job).
    pub(crate) fn take_dma(&mut self, tag: DmaTag) -> Option<DmaFor> {
        self.dma_wait.remove(tag.0)
    }

    /// Whether nothing is outstanding.
    pub(crate) fn is_empty(&self) -> bool {
        self.att_wait.is_empty() && self.dma_wait.is_empty()
    }

    /// Asks the ATT manager to translate; the answer comes back as `AttTranslated`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn translate(
        &mut self,
        io: &mut Io,
        purpose: AttFor,
        msg: MsgId,
        handle: MemHandle,
        va: u64,
        len: u64,
        access: AccessKind,
        ptag: ProtectionTag,
    ) {
        let req = self.new_req();
        self.att_wait.insert(req.0, purpose);
        io.push(Action::Translate {
            req,
            msg,
            handle,
            va,
            len,
            access,
            ptag,
        });
    }

    /// Starts a DMA read of `len` bytes from the ATT-style page list `pages`.
    pub(crate) fn dma_read(&mut self, io: &mut Io, purpose: DmaFor, pages: Vec<u64>, len: u64) {
        self.dma(io, purpose, pages, DmaDirection::Read { len });
    }

    /// Starts a DMA write of `data` to the ATT-style page list `pages`.
    pub(crate) fn dma_write(
        &mut self,
        io: &mut Io,
        purpose: DmaFor,
        pages: Vec<u64>,
        data: Vec<u8>,
    ) {
        self.dma(io, purpose, pages, DmaDirection::Write { data });
    }

    fn dma(&mut self, io: &mut Io, purpose: DmaFor, pages: Vec<u64>, direction: DmaDirection) {
        self.next_dma = self.next_dma.next();
        let tag = self.next_dma;
        self.dma_wait.insert(tag.0, purpose);
        io.push(Action::Dma {
            tag,
            direction,
            pages,
        });
    }
}

/// The ATT-style page list (entry 0 = physical start, later = page bases) of bytes
/// `[off, off + len)` of a translated range whose pieces are `pieces` (in VA order,
/// split at page boundaries). `None` if the bytes are not all inside the pieces.
pub(crate) fn pages_for(pieces: &[Piece], off: u64, len: u64) -> Option<Vec<u64>> {
    pages_from(pieces, 0, 0, off, len)
}

/// [`pages_for`] with the scan started at piece `first`, which begins `at` bytes into
/// the range: the same answer when `at` is the length of `pieces[..first]` and no piece
/// before `first` ends after `off` (those pieces add nothing to the list).
pub(crate) fn pages_from(
    pieces: &[Piece],
    first: usize,
    mut at: u64,
    off: u64,
    len: u64,
) -> Option<Vec<u64>> {
    let end = off.checked_add(len)?;
    // A chunk spans a page or two: room for four at once, as the first push would make;
    // a spare list, which the DMA master gives back when the job is done.
    let mut pages = sim_kernel::spare::take_words(4);
    for p in pieces.get(first..).unwrap_or_default() {
        let p_end = at.checked_add(u64::from(p.len))?;
        if pages.is_empty() {
            if off < p_end {
                pages.push(p.pa.checked_add(off - at)?);
            }
        } else if at < end {
            pages.push(p.pa);
        }
        if p_end >= end && !pages.is_empty() {
            return Some(pages);
        }
        at = p_end;
    }
    // A zero-length range at the very end is empty but valid.
    (len == 0 && off <= at).then(Vec::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_requests_come_back_in_any_order_and_leave_no_slot() {
        let mut w = Waiting::default();
        assert!(w.is_empty());
        w.insert(5, 'a');
        w.insert(6, 'b');
        w.insert(9, 'c'); // 7 and 8 were never asked with
        assert_eq!(w.remove(6), Some('b'));
        assert_eq!(w.remove(6), None, "taken once");
        assert_eq!(w.remove(7), None, "never put");
        assert_eq!(w.remove(4), None, "below the window");
        assert_eq!(w.remove(10), None, "above the window");
        assert_eq!(w.remove(5), Some('a'));
        assert!(!w.is_empty());
        assert_eq!(w.remove(9), Some('c'));
        assert!(w.is_empty());
        assert_eq!(w.slots.len(), 0);
        // A new window starts at the next number put.
        w.insert(100, 'd');
        assert_eq!(w.remove(100), Some('d'));
        assert!(w.is_empty());
    }

    #[test]
    fn page_lists_of_sub_ranges() {
        // 0x1F00..: 256 bytes in the first page, then two whole pages.
        let pieces = [
            Piece {
                pa: 0x5_0F00,
                len: 256,
            },
            Piece {
                pa: 0x9_0000,
                len: 4096,
            },
            Piece {
                pa: 0x3_0000,
                len: 100,
            },
        ];
        assert_eq!(pages_for(&pieces, 0, 10), Some(vec![0x5_0F00]));
        assert_eq!(pages_for(&pieces, 250, 10), Some(vec![0x5_0FFA, 0x9_0000]));
        assert_eq!(pages_for(&pieces, 256, 4096), Some(vec![0x9_0000]));
        assert_eq!(
            pages_for(&pieces, 300, 4100),
            Some(vec![0x9_002C, 0x3_0000])
        );
        assert_eq!(pages_for(&pieces, 0, 4452).map(|p| p.len()), Some(3));
        assert_eq!(pages_for(&pieces, 0, 4453), None);
        assert_eq!(pages_for(&pieces, 4452, 0), Some(vec![]));
        assert_eq!(pages_for(&pieces, u64::MAX, 2), None);
    }
}
