//! Reliable VIs on a lossy wire: the fake GEC loses chosen frames (`FakeGec::lose`) or a
//! test delivers hand-made ones. Cumulative Acks at the sender.

mod common;

use common::*;
use nic_model::engine::frame::headers;
use via_abi::bar::Reliability;
use via_abi::wire_header::{WireHeader, WireHeaderRepr, WireOp};
use via_abi::{CompletedOp, Queue};

const PTAG: u16 = 7;

fn connected(rel: Reliability) -> Sys {
    let mut s = Sys::new(Config::default());
    for i in 0..2 {
        s.create_vi(i, 0, PTAG, rel, true);
    }
    s.connect(0, 0, 0x100);
    s
}

/// The VIA headers of every frame node `i` sent.
fn sent_headers(s: &Sys, i: usize) -> Vec<WireHeaderRepr> {
    s.node(i)
        .gec
        .sent
        .iter()
        .map(|(_, b)| WireHeaderRepr::parse(&WireHeader::new_unchecked(&b[14..])).unwrap())
        .collect()
}

/// Posts `n` one-frame RDMA writes of 4 bytes on VI 0 of node 0 (not run); returns the
/// descriptors' addresses and the bytes node 1 must end with.
fn post_small_writes(s: &mut Sys, n: u64) -> (Vec<u64>, Region, Vec<u8>) {
    let desc = region(s, 0, 0x1000_0000, 4096, PTAG, false);
    let src = region(s, 0, 0x3000_0000, 4 * n, PTAG, false);
    let dst = region(s, 1, 0x5000_0000, 4 * n, PTAG, true);
    let data: Vec<u8> = (0..4 * n).map(|b| 0xA0 ^ b as u8).collect();
    s.write_mem(0, src.va, &data);
    let mut descs = Vec::new();
    for k in 0..n {
        let d = rdma_desc(dst.va + 4 * k, dst.h, &[(src.va + 4 * k, src.h, 4)], None);
        let va = desc.va + 256 * k;
        s.post(0, 0, Queue::Send, va, desc.h, &d);
        descs.push(va);
    }
    (descs, dst, data)
}

#[test]
fn one_ack_completes_every_send_it_covers() {
    let mut s = connected(Reliability::ReliableDelivery);
    // Node 1's next frame is its Ack of the first write: lost on the wire.
    let first_ack = s.node(1).gec.sent.len();
    s.w.store[1].gec.lose.insert(first_ack);
    let (descs, dst, data) = post_small_writes(&mut s, 2);
    s.run();

    let acks: Vec<u32> = sent_headers(&s, 1)[first_ack..]
        .iter()
        .filter(|h| h.op == WireOp::Ack)
        .map(|h| h.seq)
        .collect();
    assert_eq!(acks, vec![0, 1], "one Ack per message, the first lost");
    for va in descs {
        let st = s.status(0, va);
        assert!(st.is_done() && !st.is_error(), "{st:?}");
        assert_eq!(st.completed_op(), CompletedOp::RdmaWrite);
    }
    assert_eq!(s.read_mem(1, dst.va, data.len()), data);
    let e0 = s.engine(0).stats();
    assert_eq!(
        (e0.acks_unmatched, e0.acks_duplicate, e0.send_errors),
        (0, 0, 0)
    );
    assert_eq!(s.engine(0).vi(0).unwrap().counters.sends_completed, 2);
    assert!(s.engine(0).is_idle() && s.engine(1).is_idle());
}

#[test]
fn an_ack_older_than_the_window_is_a_duplicate_and_one_never_sent_is_unmatched() {
    let mut s = connected(Reliability::ReliableDelivery);
    let (descs, _, _) = post_small_writes(&mut s, 2);
    s.run();
    assert!(descs.iter().all(|&va| s.status(0, va).is_done()));
    // The peer repeats its Ack of frame 0, then acknowledges frame 9 (never sent).
    let gec = s.node(0).ids.gec;
    for (k, seq) in [0u32, 9].into_iter().enumerate() {
        let mut h = nic_model::engine::frame::control(WireOp::Ack, 0, 0, 0);
        h.seq = seq;
        let bytes = headers(mac(1), mac(0), &h);
        let at = s.k.now() + sim_kernel::Duration::from_ns(10_000 * (k as u64 + 1));
        s.k.post(
            gec,
            at,
            Msg::Deliver {
                bytes,
                msg: sim_kernel::MsgId(500 + k as u64),
            },
        );
    }
    s.run();
    let e0 = s.engine(0).stats();
    assert_eq!((e0.acks_duplicate, e0.acks_unmatched), (1, 1));
    let vi = s.engine(0).vi(0).unwrap();
    assert_eq!(
        (vi.counters.acks_duplicate, vi.counters.sends_completed),
        (1, 2)
    );
    assert_eq!(e0.bookkeeping_misses, 0);
    assert!(s.engine(0).is_idle());
}

#[test]
fn the_receiver_drops_duplicates_and_gaps_and_asks_once_for_a_go_back() {
    use nic_model::engine::EngineParams;
    use via_abi::bar::ViStateCode;
    use via_abi::wire_header::WireFlags;
    let mut s = Sys::new(Config {
        engine: EngineParams {
            retransmit: true,
            ..EngineParams::default()
        },
        ..Config::default()
    });
    for i in 0..2 {
        s.create_vi(i, 0, PTAG, Reliability::ReliableDelivery, true);
    }
    s.connect(0, 0, 0x100);
    let t = region(&mut s, 1, 0x5000_0000, 4096, PTAG, true);
    let before = s.read_mem(1, t.va, 3000);
    let frame = |seq: u32, off: u32, len: u16, flags: WireFlags, fill: u8| {
        let h = WireHeaderRepr {
            op: WireOp::RdmaWrite,
            flags,
            dst_vi: 0,
            src_vi: 0,
            seq,
            msg_len: 3000,
            frag_offset: off,
            frag_len: len,
            remote_va: t.va,
            remote_handle: t.h,
            immediate: 0,
        };
        let mut b = headers(mac(0), mac(1), &h);
        b.extend(vec![fill; usize::from(len)]);
        b
    };
    let (first, last) = (WireFlags::FIRST, WireFlags::LAST);
    let frames = [
        frame(0, 0, 1460, first, 0xA1),
        frame(2, 2920, 80, last, 0xC3), // gap: 1 expected -> Nak(1)
        frame(2, 2920, 80, last, 0xC3), // the same gap: no second Nak
        frame(0, 0, 1460, first, 0xEE), // duplicate, no LAST: dropped silently
        frame(1, 1460, 1460, WireFlags::empty(), 0xB2),
        frame(2, 2920, 80, last, 0xC3), // completes the message: Ack(2)
        frame(2, 2920, 80, last, 0xEE), // duplicate LAST: re-Ack(2), nothing placed
    ];
    let gec = s.node(1).ids.gec;
    let sent_before = s.node(1).gec.sent.len();
    for (k, bytes) in frames.into_iter().enumerate() {
        let at = s.k.now() + sim_kernel::Duration::from_ns(30_000 * (k as u64 + 1));
        s.k.post(
            gec,
            at,
            Msg::Deliver {
                bytes,
                msg: sim_kernel::MsgId(700 + k as u64),
            },
        );
    }
    s.run();
    let mut expect = before;
    expect[..1460].fill(0xA1);
    expect[1460..2920].fill(0xB2);
    expect[2920..].fill(0xC3);
    assert!(
        s.read_mem(1, t.va, 3000) == expect,
        "placed byte-exact, once"
    );
    let control: Vec<(WireOp, u32, u32)> = sent_headers(&s, 1)[sent_before..]
        .iter()
        .map(|h| (h.op, h.seq, h.immediate))
        .collect();
    assert_eq!(
        control,
        vec![
            (WireOp::Nak, 1, 0),
            (WireOp::Ack, 2, 0),
            (WireOp::Ack, 2, 0)
        ]
    );
    let vi = s.engine(1).vi(0).unwrap();
    let c = &vi.counters;
    assert_eq!(
        (c.rx_duplicates, c.rx_out_of_order, c.goback_naks_sent),
        (2, 2, 1)
    );
    assert_eq!(
        (c.messages_received, c.rx_sequence_errors, c.naks_sent),
        (1, 0, 0)
    );
    assert_eq!(s.vi_state(1, 0), ViStateCode::Connected);
    assert!(s.engine(1).is_idle());
}
