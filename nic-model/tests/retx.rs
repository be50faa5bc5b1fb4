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

/// Two cards with retransmission on and VI 0 of each connected at `rel`.
fn retx_connected(rel: Reliability) -> Sys {
    use nic_model::engine::EngineParams;
    let mut s = Sys::new(Config {
        engine: EngineParams {
            retransmit: true,
            ..EngineParams::default()
        },
        ..Config::default()
    });
    for i in 0..2 {
        s.create_vi(i, 0, PTAG, rel, true);
    }
    s.connect(0, 0, 0x100);
    s
}

/// Posts one RDMA write of `len` bytes on VI 0 of node 0 (not run); returns its
/// descriptor's address, the target region and the bytes node 1 must end with.
fn post_big_write(s: &mut Sys, len: u64) -> (u64, Region, Vec<u8>) {
    let desc = region(s, 0, 0x1000_0000, 4096, PTAG, false);
    let src = region(s, 0, 0x3000_0000, len, PTAG, false);
    let dst = region(s, 1, 0x5000_0000, len, PTAG, true);
    let data: Vec<u8> = (0..len).map(|b| (b * 7 + 3) as u8).collect();
    s.write_mem(0, src.va, &data);
    let len32 = u32::try_from(len).unwrap();
    let d = rdma_desc(dst.va, dst.h, &[(src.va, src.h, len32)], None);
    s.post(0, 0, Queue::Send, desc.va, desc.h, &d);
    (desc.va, dst, data)
}

/// Data frame numbers node 0 sent from index `from` of its frames on, in order.
fn data_seqs(s: &Sys, from: usize) -> Vec<u32> {
    sent_headers(s, 0)[from..]
        .iter()
        .filter(|h| matches!(h.op, WireOp::RdmaWrite | WireOp::Send))
        .map(|h| h.seq)
        .collect()
}

/// Runs a 10-frame RDMA write with node 0's frames `lost` (indices counted from its
/// first data frame) lost on the wire; checks the message arrives byte-exact, once, and
/// the send completes without error. Returns the system for further checks.
fn lossy_write(lost: &[usize]) -> Sys {
    let mut s = retx_connected(Reliability::ReliableDelivery);
    let first = s.node(0).gec.sent.len();
    for &k in lost {
        s.w.store[0].gec.lose.insert(first + k);
    }
    let (desc, dst, data) = post_big_write(&mut s, 10 * 1460);
    s.run();
    let st = s.status(0, desc);
    assert!(st.is_done() && !st.is_error(), "{st:?}");
    assert!(
        s.read_mem(1, dst.va, data.len()) == data,
        "placed byte-exact"
    );
    let (e0, e1) = (s.engine(0).stats(), s.engine(1).stats());
    assert_eq!((e0.bookkeeping_misses, e1.bookkeeping_misses), (0, 0));
    assert_eq!(e1.rdma_bytes_placed, data.len() as u64, "every byte once");
    let v1 = s.engine(1).vi(0).unwrap();
    assert_eq!(v1.counters.messages_received, 1);
    assert_eq!(s.engine(0).vi(0).unwrap().counters.sends_completed, 1);
    assert_eq!(s.vi_state(0, 0), ViStateCode::Connected);
    assert!(s.engine(0).is_idle() && s.engine(1).is_idle());
    s
}

use via_abi::bar::ViStateCode;

#[test]
fn a_lost_middle_frame_is_resent_after_one_goback_nak() {
    let s = lossy_write(&[3]);
    let seqs = data_seqs(&s, 0);
    let resent_from = seqs.iter().skip(4).position(|&q| q == 3).map(|p| p + 4);
    let Some(p) = resent_from else {
        panic!("frame 3 never resent: {seqs:?}");
    };
    assert_eq!(&seqs[..p], &(0..p as u32).collect::<Vec<_>>()[..]);
    assert_eq!(
        &seqs[p..],
        &(3..10).collect::<Vec<_>>()[..],
        "go back to 3 and send 3..9 again in order"
    );
    let (v0, v1) = (s.engine(0).vi(0).unwrap(), s.engine(1).vi(0).unwrap());
    assert_eq!(v1.counters.goback_naks_sent, 1);
    assert_eq!(v0.counters.goback_naks_received, 1);
    assert_eq!(v0.counters.frames_resent, seqs.len() as u64 - 10);
    assert_eq!(v0.counters.retx_timeouts, 0, "the Nak was enough");
    assert_eq!(
        v1.counters.rx_out_of_order + 1,
        p as u64 - 3,
        "every frame after the gap before the resend was dropped"
    );
}

#[test]
fn a_lost_first_frame_is_resent() {
    let s = lossy_write(&[0]);
    let seqs = data_seqs(&s, 0);
    assert_eq!(seqs.iter().filter(|&&q| q == 0).count(), 2, "{seqs:?}");
    assert_eq!(s.engine(0).vi(0).unwrap().counters.goback_naks_received, 1);
}

#[test]
fn a_lost_last_frame_is_recovered_by_the_timer() {
    let s = lossy_write(&[9]);
    let v0 = s.engine(0).vi(0).unwrap();
    assert_eq!(v0.counters.retx_timeouts, 1, "no later frame shows the gap");
    assert_eq!(v0.counters.goback_naks_received, 0);
    // No frame asked for an Ack before the last (a quarter of the 64-frame window), so
    // the window base is still 0: go-back-N sends all ten again, and the receiver drops
    // the nine it has.
    let again: Vec<u32> = (0..10).collect();
    assert_eq!(data_seqs(&s, 0)[10..], again[..]);
    assert_eq!(s.engine(1).vi(0).unwrap().counters.rx_duplicates, 9);
}

#[test]
fn a_lost_ack_makes_the_sender_resend_and_the_receiver_repeat_it() {
    let mut s = retx_connected(Reliability::ReliableDelivery);
    let ack = s.node(1).gec.sent.len();
    s.w.store[1].gec.lose.insert(ack);
    let (desc, dst, data) = post_big_write(&mut s, 3 * 1460);
    s.run();
    let st = s.status(0, desc);
    assert!(st.is_done() && !st.is_error(), "{st:?}");
    assert!(s.read_mem(1, dst.va, data.len()) == data);
    let v1 = s.engine(1).vi(0).unwrap();
    assert_eq!(v1.counters.rx_duplicates, 3, "the whole window came again");
    assert_eq!(v1.counters.messages_received, 1, "placed once");
    assert_eq!(s.engine(1).stats().rdma_bytes_placed, data.len() as u64);
    assert_eq!(s.engine(0).vi(0).unwrap().counters.retx_timeouts, 1);
    assert!(s.engine(0).is_idle() && s.engine(1).is_idle());
}

#[test]
fn a_window_of_frames_flows_with_acks_on_request() {
    use nic_model::engine::EngineParams;
    let mut s = Sys::new(Config {
        engine: EngineParams {
            retransmit: true,
            retx_window_frames: 8,
            ..EngineParams::default()
        },
        ..Config::default()
    });
    for i in 0..2 {
        s.create_vi(i, 0, PTAG, Reliability::ReliableDelivery, true);
    }
    s.connect(0, 0, 0x100);
    let from = s.node(1).gec.sent.len();
    let (desc, dst, data) = post_big_write(&mut s, 40 * 1460);
    s.run();
    assert!(s.status(0, desc).is_done() && !s.status(0, desc).is_error());
    assert!(s.read_mem(1, dst.va, data.len()) == data);
    let acks: Vec<u32> = sent_headers(&s, 1)[from..]
        .iter()
        .filter(|h| h.op == WireOp::Ack)
        .map(|h| h.seq)
        .collect();
    // Every second frame asks (a quarter of 8): Acks of 1, 3, .., 37 and the message's
    // 39 once placed.
    let expect: Vec<u32> = (1..39).step_by(2).chain([39]).collect();
    assert_eq!(acks, expect);
}

#[test]
fn past_the_retry_limit_the_vi_breaks_with_a_transport_error() {
    let mut s = retx_connected(Reliability::ReliableDelivery);
    let first = s.node(0).gec.sent.len();
    s.w.store[0].gec.lose.extend(first..first + 1000);
    let started = s.k.now();
    let (desc, _, _) = post_big_write(&mut s, 2 * 1460);
    // A second send behind it is flushed when the VI breaks.
    let d2 = region(&mut s, 0, 0x1100_0000, 4096, PTAG, false);
    let src = region(&mut s, 0, 0x3100_0000, 64, PTAG, false);
    let dst = region(&mut s, 1, 0x5100_0000, 64, PTAG, true);
    s.post(
        0,
        0,
        Queue::Send,
        d2.va,
        d2.h,
        &rdma_desc(dst.va, dst.h, &[(src.va, src.h, 64)], None),
    );
    s.run();
    let st = s.status(0, desc);
    assert!(st.is_done(), "{st:?}");
    assert!(st.contains(via_abi::Status::TRANSPORT_ERROR), "{st:?}");
    let st2 = s.status(0, d2.va);
    assert!(
        st2.is_done() && st2.contains(via_abi::Status::FLUSHED),
        "{st2:?}"
    );
    assert_eq!(s.vi_state(0, 0), ViStateCode::Error);
    let e0 = s.engine(0).stats();
    let limit = u64::from(nic_model::engine::EngineParams::default().retx_limit);
    assert_eq!((e0.retx_timeouts, e0.retx_give_ups), (limit, 1));
    assert_eq!(e0.bookkeeping_misses, 0);
    assert!(s.engine(0).is_idle());
    // Back-off: the deadlines are 1, 2, 4, .. times the timeout, so the VI breaks after
    // (2^(limit + 1) - 1) timeouts, not after limit + 1 of them.
    let p = nic_model::engine::EngineParams::default();
    let timeout_ps = p.retx_timeout_cycles.0 * 30_303;
    let waited = (s.k.now() - started).0;
    let backoff = ((1u64 << (limit + 1)) - 1) * timeout_ps;
    assert!(
        waited >= backoff && waited < backoff + 2 * timeout_ps,
        "gave up after {waited} ps; back-off sums to {backoff} ps"
    );
}

/// Lets `ns` of simulated time pass (an inert message to node 0's CPU stub).
fn wait_ns(s: &mut Sys, ns: u64) {
    let cpu = s.node(0).ids.cpu;
    let at = s.k.now() + sim_kernel::Duration::from_ns(ns);
    s.k.post(
        cpu,
        at,
        Msg::Pci(pci_model::PciMsg::CpuReadData {
            tag: 0,
            data: Vec::new(),
            status: pci_model::TxnStatus::Ok,
        }),
    );
    s.run();
}

/// Node 0 asks to connect VI 0 to node 1's listening VI 0, with node 0's frames
/// `lost_0` and node 1's frames `lost_1` (indices from now) lost; the host reads
/// `VI_RESULT` every 0.5 ms, `reads` times. Returns the results read.
fn connect_lossy(
    s: &mut Sys,
    lost_0: &[usize],
    lost_1: &[usize],
    reads: usize,
) -> Vec<via_abi::bar::CmdResult> {
    use via_abi::bar;
    for (i, lost) in [(0, lost_0), (1, lost_1)] {
        let base = s.node(i).gec.sent.len();
        s.w.store[i].gec.lose.extend(lost.iter().map(|k| base + k));
    }
    s.write_reg(1, bar::VI_DISCRIMINATOR, 0x77);
    s.vi_cmd(1, 0, bar::ViCmd::ConnectWait);
    let m = mac(1).octets();
    s.write_reg(
        0,
        bar::VI_PEER_MAC_LO,
        u32::from_le_bytes([m[0], m[1], m[2], m[3]]),
    );
    s.write_reg(
        0,
        bar::VI_PEER_MAC_HI,
        u32::from_le_bytes([m[4], m[5], 0, 0]),
    );
    s.write_reg(0, bar::VI_DISCRIMINATOR, 0x77);
    s.write_reg(0, bar::VI_SEL, 0);
    s.write_reg(0, bar::VI_CMD, bar::ViCmd::ConnectRequest.raw());
    (0..reads)
        .map(|_| {
            wait_ns(s, 500_000);
            bar::CmdResult::from_raw(s.read_reg(0, bar::VI_RESULT))
        })
        .collect()
}

#[test]
fn a_lost_connect_request_or_accept_is_made_up() {
    use via_abi::bar::CmdResult;
    for (lost_0, lost_1, what) in [
        (&[0usize][..], &[][..], "request lost"),
        (&[][..], &[0usize][..], "accept lost"),
        (
            &[0, 1][..],
            &[0][..],
            "request, accept and the next request lost",
        ),
    ] {
        let mut s = Sys::new(Config::default());
        for i in 0..2 {
            s.create_vi(i, 0, PTAG, Reliability::ReliableDelivery, true);
        }
        let results = connect_lossy(&mut s, lost_0, lost_1, 8);
        assert_eq!(results.last(), Some(&CmdResult::Ok), "{what}: {results:?}");
        assert_eq!(s.vi_state(0, 0), ViStateCode::Connected, "{what}");
        assert_eq!(s.vi_state(1, 0), ViStateCode::Connected, "{what}");
        let (e0, e1) = (s.engine(0).stats(), s.engine(1).stats());
        assert!(e0.connect_requests_resent >= 1, "{what}: {e0:?}");
        if !lost_1.is_empty() {
            assert!(e1.connect_accepts_repeated >= 1, "{what}");
        }
        // The connection carries data afterwards.
        let (descs, dst, data) = post_small_writes(&mut s, 1);
        s.run();
        assert!(s.status(0, descs[0]).is_done() && !s.status(0, descs[0]).is_error());
        assert_eq!(s.read_mem(1, dst.va, data.len()), data, "{what}");
    }
}

#[test]
fn an_unanswered_connect_request_is_given_up_after_the_limit() {
    use via_abi::bar::CmdResult;
    let mut s = Sys::new(Config::default());
    for i in 0..2 {
        s.create_vi(i, 0, PTAG, Reliability::Unreliable, true);
    }
    let limit = usize::from(nic_model::engine::EngineParams::default().retx_limit);
    let all: Vec<usize> = (0..100).collect();
    let results = connect_lossy(&mut s, &all, &[], 2 * (limit + 2));
    assert_eq!(results.last(), Some(&CmdResult::TimedOut), "{results:?}");
    assert_eq!(s.vi_state(0, 0), ViStateCode::Idle);
    let e0 = s.engine(0).stats();
    assert_eq!(
        (e0.connect_requests_resent, e0.connect_timeouts),
        (limit as u64, 1)
    );
    assert_eq!(
        s.node(0).gec.sent.len(),
        limit + 1,
        "the request and its resends"
    );
}
