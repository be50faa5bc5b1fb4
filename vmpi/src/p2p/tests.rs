//! The protocol of two or three processes over a test network that carries real bytes:
//! every action is carried out (copies, registration, RDMA writes) and every received
//! buffer compared with what was sent.

use super::*;
use crate::types::{Source, TagSel};
use proptest::prelude::*;
use std::collections::BTreeMap;

enum Wire {
    Msg(Header, Vec<u8>),
    Write { data: Vec<u8>, immediate: u32 },
}

struct Proc {
    p: P2p,
    send_data: BTreeMap<SendId, Vec<u8>>,
    recv_bufs: BTreeMap<RecvId, Vec<u8>>,
    stashes: BTreeMap<StashId, Vec<u8>>,
    writes_posted: Vec<SendId>,
}

struct Net {
    procs: Vec<Proc>,
    /// In flight, per (from, to), in order.
    wire: BTreeMap<(u16, u16), VecDeque<Wire>>,
    copies: u32,
}

const EAGER: u32 = 16;

impl Net {
    fn new(n: u16, buffers: u16) -> Net {
        let procs = (0..n)
            .map(|r| Proc {
                p: P2p::new(P2pParams {
                    rank: Rank(r),
                    size: n,
                    eager_limit: EAGER,
                    buffers,
                    credit_threshold: 2,
                })
                .expect("valid"),
                send_data: BTreeMap::new(),
                recv_bufs: BTreeMap::new(),
                stashes: BTreeMap::new(),
                writes_posted: Vec::new(),
            })
            .collect();
        Net {
            procs,
            wire: BTreeMap::new(),
            copies: 0,
        }
    }

    fn send(&mut self, from: u16, to: u16, tag: i32, data: Vec<u8>) -> SendId {
        let len = u32::try_from(data.len()).expect("small");
        let pr = &mut self.procs[usize::from(from)];
        let id =
            pr.p.isend(Rank(to), Tag(tag), Context::WORLD, len)
                .expect("valid");
        pr.send_data.insert(id, data);
        self.run(from);
        id
    }

    fn recv(&mut self, at: u16, src: Option<u16>, tag: Option<i32>, cap: u32) -> RecvId {
        let pat = Pattern {
            src: src.map_or(Source::Any, |s| Source::Rank(Rank(s))),
            tag: tag.map_or(TagSel::Any, |t| TagSel::Tag(Tag(t))),
            ctx: Context::WORLD,
        };
        let pr = &mut self.procs[usize::from(at)];
        let id = pr.p.irecv(pat, cap).expect("valid");
        pr.recv_bufs.insert(id, vec![0; cap as usize]);
        self.run(at);
        id
    }

    /// Carries out process `r`'s actions.
    fn run(&mut self, r: u16) {
        while let Some(a) = self.procs[usize::from(r)].p.poll_action() {
            let pr = &mut self.procs[usize::from(r)];
            match a {
                Action::Send { peer, header, data } => {
                    let payload = data.map_or_else(Vec::new, |s| pr.send_data[&s].clone());
                    self.wire
                        .entry((r, peer.0))
                        .or_default()
                        .push_back(Wire::Msg(header, payload));
                }
                Action::RegisterRecv { recv } => pr.p.recv_registered(recv, u64::from(recv.0), 1),
                Action::RdmaWrite {
                    peer,
                    send,
                    len,
                    immediate,
                    ..
                } => {
                    let data = pr.send_data[&send][..len as usize].to_vec();
                    pr.writes_posted.push(send);
                    self.wire
                        .entry((r, peer.0))
                        .or_default()
                        .push_back(Wire::Write { data, immediate });
                }
                Action::Unstash { stash, recv, len } => {
                    let s = pr.stashes.remove(&stash).expect("stash exists");
                    let buf = pr.recv_bufs.get_mut(&recv).expect("buffer");
                    buf[..len as usize].copy_from_slice(&s[..len as usize]);
                    self.copies += 1;
                }
                Action::ReleaseRecv { .. } => {}
            }
        }
    }

    /// Delivers the oldest message from `from` to `to`; false if none.
    fn deliver(&mut self, from: u16, to: u16) -> bool {
        let Some(w) = self.wire.get_mut(&(from, to)).and_then(VecDeque::pop_front) else {
            return false;
        };
        let pr = &mut self.procs[usize::from(to)];
        match w {
            Wire::Msg(h, payload) => {
                let bytes = [&h.emit()[..], &payload[..]].concat();
                let h = Header::parse(&bytes).expect("well formed");
                match pr.p.arrived(Rank(from), &h).expect("accepted") {
                    Payload::ToRecv(recv, len) => {
                        let buf = pr.recv_bufs.get_mut(&recv).expect("buffer");
                        buf[..len as usize].copy_from_slice(&payload[..len as usize]);
                        self.copies += 1;
                    }
                    Payload::Stash(s) => {
                        pr.stashes.insert(s, payload);
                        self.copies += 1;
                    }
                    Payload::None => {}
                }
            }
            Wire::Write { data, immediate } => {
                let recv = pr.p.write_landed(Rank(from), immediate).expect("known");
                let buf = pr.recv_bufs.get_mut(&recv).expect("buffer");
                buf[..data.len()].copy_from_slice(&data);
                let sender = &mut self.procs[usize::from(from)];
                let s = sender.writes_posted.remove(0);
                sender.p.write_done(s);
                self.run(from);
            }
        }
        self.run(to);
        true
    }

    fn drain(&mut self) {
        let n = u16::try_from(self.procs.len()).expect("small");
        while (0..n).any(|a| (0..n).any(|b| self.deliver(a, b))) {}
    }

    fn got(&self, at: u16, r: RecvId) -> (RecvStatus, &[u8]) {
        let pr = &self.procs[usize::from(at)];
        let st = pr.p.recv_status(r).expect("complete");
        (st, &pr.recv_bufs[&r][..st.len as usize])
    }
}

fn bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

#[test]
fn an_eager_message_before_its_receive_is_stashed_and_copied_twice() {
    let mut net = Net::new(2, 4);
    let d = bytes(10, 1);
    let s = net.send(0, 1, 3, d.clone());
    assert!(net.procs[0].p.send_done(s), "eager: complete once copied");
    net.drain();
    assert_eq!(net.copies, 1, "copied out of the bounce buffer");
    let r = net.recv(1, Some(0), Some(3), 64);
    let (st, got) = net.got(1, r);
    assert_eq!(got, &d[..]);
    assert_eq!(
        (st.source, st.tag, st.len, st.truncated),
        (Rank(0), Tag(3), 10, false)
    );
    assert_eq!(net.copies, 2, "and again into the user buffer");
}

#[test]
fn a_receive_before_its_message_takes_one_copy() {
    let mut net = Net::new(2, 4);
    let r = net.recv(1, None, None, 16);
    let d = bytes(16, 2);
    net.send(0, 1, 0, d.clone());
    net.drain();
    assert_eq!(net.got(1, r).1, &d[..]);
    assert_eq!(net.copies, 1);
}

#[test]
fn just_above_the_eager_limit_goes_synchronous_either_order() {
    for recv_first in [false, true] {
        let mut net = Net::new(2, 4);
        let d = bytes(EAGER as usize + 1, 3);
        let r0 = recv_first.then(|| net.recv(1, Some(0), Some(9), 100));
        let s = net.send(0, 1, 9, d.clone());
        assert!(!net.procs[0].p.send_done(s), "waits for the CTS");
        net.drain();
        let r = r0.unwrap_or_else(|| net.recv(1, Some(0), Some(9), 100));
        net.drain();
        assert!(net.procs[0].p.send_done(s), "done once the write completed");
        let (st, got) = net.got(1, r);
        assert_eq!(got, &d[..]);
        assert_eq!(st.len, EAGER + 1);
        assert_eq!(net.copies, 0, "no copy in synchronous mode");
    }
}

#[test]
fn a_message_longer_than_the_buffer_is_cut_and_flagged() {
    let mut net = Net::new(2, 4);
    let r1 = net.recv(1, Some(0), None, 4);
    let r2 = net.recv(1, Some(0), None, 8);
    net.send(0, 1, 0, bytes(10, 4));
    net.send(0, 1, 0, bytes(40, 5));
    net.drain();
    let (st, got) = net.got(1, r1);
    assert!(st.truncated);
    assert_eq!(got, &bytes(10, 4)[..4]);
    let (st, got) = net.got(1, r2);
    assert!(st.truncated);
    assert_eq!(got, &bytes(40, 5)[..8], "the write moved only what fits");
}

#[test]
fn credits_exhausted_the_sender_queues_until_the_receiver_reposts() {
    let mut net = Net::new(2, 3);
    for i in 0..5u8 {
        net.send(0, 1, 0, bytes(4, i));
    }
    // 3 buffers: 2 messages may go, the last credit is kept for a credit message.
    assert_eq!(net.procs[0].p.queued(Rank(1)), 3);
    assert_eq!(net.procs[0].p.credits(Rank(1)), Some((1, 0)));
    // The receiver reaps both (reposting), owes 2 and says so in a credit message.
    assert!(net.deliver(0, 1));
    assert!(net.deliver(0, 1));
    assert!(!net.deliver(0, 1));
    assert_eq!(net.procs[1].p.credits(Rank(0)), Some((2, 0)));
    net.drain();
    assert_eq!(net.procs[0].p.queued(Rank(1)), 0);
    let rs: Vec<RecvId> = (0..5).map(|_| net.recv(1, Some(0), None, 4)).collect();
    for (i, r) in rs.into_iter().enumerate() {
        assert_eq!(net.got(1, r).1, &bytes(4, i as u8)[..], "in order");
    }
}

#[test]
fn any_source_takes_messages_in_arrival_order_and_one_sender_never_overtakes() {
    let mut net = Net::new(3, 4);
    net.send(2, 0, 7, bytes(3, 20));
    net.send(1, 0, 7, bytes(3, 10));
    net.send(2, 0, 7, bytes(3, 21));
    assert!(net.deliver(2, 0));
    assert!(net.deliver(1, 0));
    assert!(net.deliver(2, 0));
    let a = net.recv(0, None, Some(7), 3);
    let b = net.recv(0, None, None, 3);
    let c = net.recv(0, Some(2), Some(7), 3);
    assert_eq!(net.got(0, a).1, &bytes(3, 20)[..]);
    assert_eq!(net.got(0, b).1, &bytes(3, 10)[..]);
    assert_eq!(net.got(0, c).1, &bytes(3, 21)[..]);
    assert_eq!(net.got(0, b).0.source, Rank(1));
}

#[test]
fn bad_calls_and_messages_are_errors() {
    let mut net = Net::new(2, 3);
    let p = &mut net.procs[0].p;
    assert_eq!(
        p.isend(Rank(0), Tag(0), Context::WORLD, 1),
        Err(P2pError::Rank(Rank(0)))
    );
    assert_eq!(
        p.isend(Rank(1), Tag(-1), Context::WORLD, 1),
        Err(P2pError::Tag(-1))
    );
    let mut cts = Header::new(Kind::Cts, Rank(1), Context::WORLD);
    cts.send_req = 42;
    assert_eq!(
        p.arrived(Rank(1), &cts),
        Err(P2pError::Request {
            kind: Kind::Cts,
            peer: Rank(1),
            id: 42
        })
    );
    assert!(p.write_landed(Rank(1), 0).is_err());
    assert_eq!(
        P2p::new(P2pParams {
            rank: Rank(2),
            size: 2,
            eager_limit: 0,
            buffers: 3,
            credit_threshold: 2
        })
        .err(),
        Some(P2pError::Rank(Rank(2)))
    );
}

proptest! {
    /// Random sends (eager and synchronous) among three processes, receives posted in
    /// random moments with wildcards, deliveries in any order that keeps each pair's
    /// order: every message arrives whole, unchanged, and every receive completes.
    #[test]
    fn every_byte_arrives_under_any_interleaving(
        ops in proptest::collection::vec((0u16..3, 0u16..2, 0usize..40, 0u8..3), 1..40),
        buffers in 3u16..6,
    ) {
        let mut net = Net::new(3, buffers);
        // Each receiver posts one receive per message sent to it, for that sender,
        // with ANY_TAG, so every message has a home.
        let mut expect: Vec<(u16, RecvId, Vec<u8>)> = Vec::new();
        let mut pending: Vec<(u16, u16, Vec<u8>)> = Vec::new();
        for (k, (from, hop, len, step)) in ops.into_iter().enumerate() {
            let to = (from + 1 + hop) % 3;
            let d = bytes(len, k as u8);
            net.send(from, to, i32::from(step), d.clone());
            pending.push((from, to, d));
            if step == 0 {
                let (f, t, d) = pending.remove(0);
                let r = net.recv(t, Some(f), None, 64);
                expect.push((t, r, d));
            }
            if step == 1 {
                for a in 0..3 { for b in 0..3 { net.deliver(a, b); } }
            }
        }
        for (f, t, d) in pending {
            let r = net.recv(t, Some(f), None, 64);
            expect.push((t, r, d));
        }
        net.drain();
        for (t, r, d) in expect {
            let (st, got) = net.got(t, r);
            prop_assert!(!st.truncated);
            prop_assert_eq!(got, &d[..]);
        }
    }
}
