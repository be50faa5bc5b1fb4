//! Unit **VI table** (the VI protocol manager's state): [`ViTable`], one [`Vi`] context per created VI (state,
//! peer, reliability, protection tag, RDMA enables, work queues, sequence numbers,
//! counters), and the state changes every path uses.
//!
//! States (`vi` state machine of each VI, traced; `VI_STATE` shows [`ViStateCode`]):
//!
//! | state | `VI_STATE` | entered by |
//! |---|---|---|
//! | `idle` | Idle | `VI_CMD` Create, Disconnect, ConnectReject, a rejected request |
//! | `requesting` | ConnectPending | ConnectRequest (a request frame is out) |
//! | `listening` | ConnectPending | ConnectWait (waiting for a matching request) |
//! | `connected` | Connected | the accept frame (requester) / a matching request (listener) |
//! | `error` | Error | a reliable VI's transport or remote error, the peer's Disconnect |
//!
//! Leaving `connected` flushes the VI: queued send doorbells and posted receive
//! descriptors complete with `DESCRIPTOR_FLUSHED`, sends waiting for an acknowledgement
//! complete with it too.

use super::recv::RecvDesc;
use super::retx::{RxAck, TxWindow};
use crate::engine::ids::{RxId, SendId, ViCmdSeq};
use crate::engine::stats::{ViCounters, ViInfo};
use sim_kernel::{Fsm, MsgId, StateName, Time};
use std::collections::VecDeque;
use via_abi::bar::{Reliability, ViStateCode};
use via_abi::{MacAddr, MemHandle, ProtectionTag};

/// States of a VI (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ViState {
    /// Created, not connected.
    Idle,
    /// A connect request is out, waiting for the answer.
    Requesting,
    /// Waiting for a matching connect request.
    Listening,
    /// Connected.
    Connected,
    /// Broken connection.
    Error,
}

impl StateName for ViState {
    fn name(self) -> &'static str {
        match self {
            ViState::Idle => "idle",
            ViState::Requesting => "requesting",
            ViState::Listening => "listening",
            ViState::Connected => "connected",
            ViState::Error => "error",
        }
    }
}

impl ViState {
    /// The `VI_STATE` code.
    #[must_use]
    pub fn code(self) -> ViStateCode {
        match self {
            ViState::Idle => ViStateCode::Idle,
            ViState::Requesting | ViState::Listening => ViStateCode::ConnectPending,
            ViState::Connected => ViStateCode::Connected,
            ViState::Error => ViStateCode::Error,
        }
    }
}

/// A receive descriptor posted by a receive doorbell.
#[derive(Clone, Debug)]
pub(crate) struct PostedRecv {
    pub va: u64,
    pub handle: MemHandle,
    pub msg: MsgId,
    /// What the post check read and translated (when the card checks posts): the
    /// descriptor as the card keeps it, so a message needs no second fetch.
    pub kept: Option<Box<RecvDesc>>,
}

/// One VI context.
#[derive(Clone, Debug)]
pub(crate) struct Vi {
    pub num: u16,
    pub fsm: Fsm<ViState>,
    pub ptag: ProtectionTag,
    pub reliability: Reliability,
    pub rdma_write: bool,
    /// RDMA reads of this VI's peer may target this side (VI attribute EnableRdmaRead).
    pub rdma_read: bool,
    pub peer_mac: MacAddr,
    pub peer_vi: u16,
    pub discriminator: u32,
    /// Sequence number of the next data frame sent.
    pub tx_seq: u32,
    /// Sequence number expected of the next data frame received.
    pub rx_seq: u32,
    /// The sender's acknowledgement window (reliable VIs): what the peer's cumulative
    /// Acks have covered.
    pub tx: TxWindow,
    /// The receiver's acknowledgement registers (reliable VIs).
    pub rxa: RxAck,
    pub recv_queue: VecDeque<PostedRecv>,
    /// Send contexts in posting order (they complete in this order).
    pub send_order: VecDeque<SendId>,
    /// The send context whose fragments are not all assigned yet.
    pub tx_active: Option<SendId>,
    /// The message being received.
    pub rx_cur: Option<RxId>,
    /// The VI command waiting for this VI's connection (its `VI_RESULT`).
    pub connect_cmd: Option<ViCmdSeq>,
    /// Requesting: when the connect request is sent again if no answer came.
    pub connect_deadline: Option<Time>,
    /// Requesting: connect requests sent again so far.
    pub connect_tries: u8,
    pub counters: ViCounters,
}

impl Vi {
    /// A new VI in `idle`.
    pub fn new(num: u16, ptag: ProtectionTag, reliability: Reliability, rdma_write: bool) -> Self {
        Self {
            num,
            fsm: Fsm::new("vi", ViState::Idle),
            ptag,
            reliability,
            rdma_write,
            rdma_read: false,
            peer_mac: MacAddr::default(),
            peer_vi: 0,
            discriminator: 0,
            tx_seq: 0,
            rx_seq: 0,
            tx: TxWindow::default(),
            rxa: RxAck::default(),
            recv_queue: VecDeque::new(),
            send_order: VecDeque::new(),
            tx_active: None,
            rx_cur: None,
            connect_cmd: None,
            connect_deadline: None,
            connect_tries: 0,
            counters: ViCounters::default(),
        }
    }

    /// Current state.
    pub fn state(&self) -> ViState {
        self.fsm.state()
    }

    /// A new connection: sequence numbers and the acknowledgement window start at 0.
    pub fn reset_seq(&mut self) {
        self.tx_seq = 0;
        self.rx_seq = 0;
        self.tx = TxWindow::default();
        self.rxa = RxAck::default();
    }

    /// Whether the VI delivers reliably (reliable delivery or reliable reception).
    pub fn reliable(&self) -> bool {
        matches!(
            self.reliability,
            Reliability::ReliableDelivery | Reliability::ReliableReception
        )
    }

    /// The snapshot the engine exposes.
    pub fn info(&self) -> ViInfo {
        ViInfo {
            vi: self.num,
            state: self.state().code(),
            ptag: self.ptag,
            reliability: self.reliability,
            rdma_write: self.rdma_write,
            peer_mac: self.peer_mac,
            peer_vi: self.peer_vi,
            recv_posted: self.recv_queue.len(),
            counters: self.counters.clone(),
        }
    }
}

/// A connect request kept until a VI listens on its discriminator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PendingConnect {
    pub mac: MacAddr,
    pub vi: u16,
    pub discriminator: u32,
    pub reliability: u8,
}

/// The VI table: one slot per VI number (`max_vis`), and the connect requests kept while
/// no VI listens on their discriminator.
#[derive(Clone, Debug)]
pub(crate) struct ViTable {
    vis: Vec<Option<Vi>>,
    /// The numbers of the VIs that exist, ascending: what [`ViTable::iter`] visits (a
    /// table of `max_vis` slots holds a few VIs, and the TX path asks on most events
    /// whether one of them has a go-back under way).
    live: Vec<u16>,
    /// Connect requests kept until a `ConnectWait` matches (at most
    /// `max_pending_connects`).
    pub pending: VecDeque<PendingConnect>,
}

impl ViTable {
    /// A table of `max` empty slots.
    pub fn new(max: u16) -> Self {
        Self {
            vis: vec![None; usize::from(max)],
            live: Vec::new(),
            pending: VecDeque::new(),
        }
    }

    /// VI `n`, if it exists.
    pub fn get(&self, n: u16) -> Option<&Vi> {
        self.vis.get(usize::from(n)).and_then(Option::as_ref)
    }

    /// VI `n`, if it exists.
    pub fn get_mut(&mut self, n: u16) -> Option<&mut Vi> {
        self.vis.get_mut(usize::from(n)).and_then(Option::as_mut)
    }

    /// Creates (`Some`) or destroys (`None`) VI `n` (nothing if `n` is out of range).
    pub fn put(&mut self, n: u16, vi: Option<Vi>) {
        if let Some(slot) = self.vis.get_mut(usize::from(n)) {
            *slot = vi;
            let exists = slot.is_some();
            match self.live.binary_search(&n) {
                Ok(i) if !exists => {
                    self.live.remove(i);
                }
                Err(i) if exists => self.live.insert(i, n),
                _ => {}
            }
        }
    }

    /// The VIs that exist, by number.
    pub fn iter(&self) -> impl Iterator<Item = &Vi> {
        self.live.iter().filter_map(|&n| self.get(n))
    }

    /// `VI_STATE` of VI number `sel`.
    pub fn state_code(&self, sel: u32) -> ViStateCode {
        u16::try_from(sel)
            .ok()
            .and_then(|n| self.get(n))
            .map_or(ViStateCode::Absent, |v| v.state().code())
    }

    /// `VI_PEER_VI` of VI number `sel` (0 unless connected).
    pub fn peer_code(&self, sel: u32) -> u32 {
        u16::try_from(sel)
            .ok()
            .and_then(|n| self.get(n))
            .filter(|v| v.state() == ViState::Connected)
            .map_or(0, |v| u32::from(v.peer_vi))
    }

    /// The protection tag of VI `n` (tag 0, which matches nothing, if it is gone).
    pub fn ptag(&self, n: u16) -> ProtectionTag {
        self.get(n).map_or(ProtectionTag::NONE, |v| v.ptag)
    }

    /// Whether VI `vi` exists, is connected, and its peer is (`mac`, `peer_vi`).
    pub fn is_peer(&self, vi: u16, mac: MacAddr, peer_vi: u16) -> bool {
        self.get(vi).is_some_and(|v| {
            v.state() == ViState::Connected && v.peer_mac == mac && v.peer_vi == peer_vi
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim_kernel::TransitionSink;

    /// Records the traced transitions.
    #[derive(Default)]
    struct Sink(Vec<(&'static str, &'static str, &'static str)>);

    impl TransitionSink for Sink {
        fn record_transition(&mut self, m: &'static str, from: &'static str, to: &'static str) {
            self.0.push((m, from, to));
        }
    }

    const PEER: MacAddr = MacAddr([2, 0, 0, 0, 0, 9]);

    fn vi(n: u16, rel: Reliability) -> Vi {
        Vi::new(n, ProtectionTag(5), rel, false)
    }

    /// `iter` visits the VIs that exist, by number, whatever the order of creation,
    /// replacement and destruction (a number out of range changes nothing).
    #[test]
    fn iter_visits_the_existing_vis_in_number_order() {
        let mut t = ViTable::new(6);
        let nums = |t: &ViTable| t.iter().map(|v| v.num).collect::<Vec<_>>();
        for n in [4, 1, 5, 0] {
            t.put(n, Some(vi(n, Reliability::Unreliable)));
        }
        t.put(9, Some(vi(9, Reliability::Unreliable)));
        assert_eq!(nums(&t), [0, 1, 4, 5]);
        t.put(1, Some(vi(1, Reliability::ReliableDelivery)));
        t.put(4, None);
        t.put(2, None);
        assert_eq!(nums(&t), [0, 1, 5]);
        assert_eq!(
            t.iter().nth(1).map(|v| v.reliability),
            Some(Reliability::ReliableDelivery)
        );
        for n in [0, 1, 5] {
            t.put(n, None);
        }
        assert_eq!(nums(&t), Vec::<u16>::new());
        t.put(3, Some(vi(3, Reliability::Unreliable)));
        assert_eq!(nums(&t), [3]);
    }

    /// A table of 4 with VI 1 connected to `PEER` VI 3.
    fn connected() -> (ViTable, Sink) {
        let mut sink = Sink::default();
        let mut t = ViTable::new(4);
        let mut v = vi(1, Reliability::ReliableDelivery);
        v.peer_mac = PEER;
        v.peer_vi = 3;
        v.fsm.set(ViState::Connected, &mut sink);
        t.put(1, Some(v));
        (t, sink)
    }

    #[test]
    fn vis_are_created_and_found_by_number_only_in_range() {
        let mut t = ViTable::new(4);
        assert!(t.get(0).is_none());
        assert_eq!(t.state_code(0), ViStateCode::Absent);
        t.put(2, Some(vi(2, Reliability::Unreliable)));
        t.put(0, Some(vi(0, Reliability::Unreliable)));
        t.put(4, Some(vi(4, Reliability::Unreliable)));
        assert!(t.get(4).is_none(), "out of range: nothing created");
        let v = t.get(2).expect("VI 2");
        assert_eq!(
            (v.num, v.state(), v.ptag),
            (2, ViState::Idle, ProtectionTag(5))
        );
        assert_eq!(t.state_code(2), ViStateCode::Idle);
        assert_eq!(t.ptag(2), ProtectionTag(5));
        assert_eq!(t.iter().map(|v| v.num).collect::<Vec<_>>(), vec![0, 2]);
        assert_eq!(
            t.state_code(0x1_0002),
            ViStateCode::Absent,
            "VI_SEL past u16"
        );
        t.put(2, None);
        assert!(t.get_mut(2).is_none(), "destroyed");
        assert_eq!(
            t.ptag(2),
            ProtectionTag::NONE,
            "a gone VI's tag matches nothing"
        );
        assert_eq!(t.state_code(2), ViStateCode::Absent);
    }

    #[test]
    fn state_changes_are_traced_and_read_as_vi_state_codes() {
        let mut sink = Sink::default();
        let mut v = vi(0, Reliability::Unreliable);
        let mut codes = Vec::new();
        for s in [
            ViState::Requesting,
            ViState::Connected,
            ViState::Error,
            ViState::Idle,
            ViState::Listening,
        ] {
            v.fsm.set(s, &mut sink);
            codes.push(v.info().state);
        }
        assert_eq!(
            codes,
            vec![
                ViStateCode::ConnectPending,
                ViStateCode::Connected,
                ViStateCode::Error,
                ViStateCode::Idle,
                ViStateCode::ConnectPending,
            ]
        );
        assert_eq!(
            sink.0,
            vec![
                ("vi", "idle", "requesting"),
                ("vi", "requesting", "connected"),
                ("vi", "connected", "error"),
                ("vi", "error", "idle"),
                ("vi", "idle", "listening"),
            ]
        );
    }

    #[test]
    fn only_the_connected_peer_is_the_peer() {
        let (mut t, mut sink) = connected();
        assert!(t.is_peer(1, PEER, 3));
        assert_eq!(t.peer_code(1), 3);
        assert!(!t.is_peer(1, MacAddr([2, 0, 0, 0, 0, 8]), 3), "another MAC");
        assert!(!t.is_peer(1, PEER, 2), "another VI of the peer");
        assert!(!t.is_peer(0, PEER, 3), "no such VI");
        assert!(!t.is_peer(9, PEER, 3), "out of range");
        if let Some(v) = t.get_mut(1) {
            v.fsm.set(ViState::Error, &mut sink);
        }
        assert!(!t.is_peer(1, PEER, 3), "a broken connection refuses frames");
        assert_eq!(t.peer_code(1), 0, "VI_PEER_VI reads 0 unless connected");
    }

    #[test]
    fn reliability_and_the_snapshot() {
        assert!(!vi(0, Reliability::Unreliable).reliable());
        assert!(vi(0, Reliability::ReliableDelivery).reliable());
        assert!(vi(0, Reliability::ReliableReception).reliable());
        let (mut t, _) = connected();
        if let Some(v) = t.get_mut(1) {
            for va in [0x100, 0x200] {
                v.recv_queue.push_back(PostedRecv {
                    va,
                    handle: MemHandle(1),
                    msg: MsgId(va),
                    kept: None,
                });
            }
            v.counters.acks_sent = 4;
        }
        let info = t.get(1).map(Vi::info).expect("VI 1");
        assert_eq!(
            (
                info.vi,
                info.state,
                info.peer_mac,
                info.peer_vi,
                info.recv_posted
            ),
            (1, ViStateCode::Connected, PEER, 3, 2)
        );
        assert_eq!(info.counters.acks_sent, 4);
    }
}
