//! RDMA read end to end (`EngineParams::rdma_read`): the requester's descriptor sends a
//! read request, the responder's engine translates the source (RDMA-read enable, tag,
//! bounds), reads it by DMA and sends it back; the bytes land exactly in the requester's
//! buffers and its descriptor completes. Refusals move no byte; lost frames are
//! recovered on reliable VIs.

mod common;

use common::*;
use sim_kernel::SplitMix64;
use via_abi::bar::{self, Reliability, ViStateCode};
use via_abi::wire_header::{WireHeader, WireHeaderRepr, WireOp};
use via_abi::{CompletedOp, MemAttributes, Queue, Status};

const PTAG: u16 = 7;

fn config(rdma_read: bool) -> Config {
    let mut c = Config::default();
    c.engine.rdma_read = rdma_read;
    c
}

/// Two nodes, VI 0 of each connected, both with RDMA read enabled on the VI.
fn connected(rel: Reliability, rdma_read: bool) -> Sys {
    let mut s = Sys::new(config(rdma_read));
    for i in 0..2 {
        s.create_vi_with(i, 0, PTAG, rel, bar::VI_ATTR_RDMA_READ);
    }
    s.connect(0, 0, 0x77);
    s
}

fn sent_headers(s: &Sys, i: usize) -> Vec<WireHeaderRepr> {
    s.node(i)
        .gec
        .sent
        .iter()
        .map(|(_, b)| WireHeaderRepr::parse(&WireHeader::new_unchecked(&b[14..])).unwrap())
        .collect()
}

/// The read's set-up: node 1's source (`read_enable`: registered with RDMA read
/// enabled) filled with random bytes, node 0's destination split in `segs` segments
/// filled with 0xEE. Returns the descriptor's VA, the source bytes and the destination.
struct Setup {
    desc: u64,
    data: Vec<u8>,
    dst: u64,
}

fn post_read(s: &mut Sys, len: u32, segs: u32, read_enable: bool, seed: u64) -> Setup {
    let desc = region(s, 0, 0x1000_0000, 4096, PTAG, false);
    let mut attrs = MemAttributes::empty();
    attrs.set(MemAttributes::ENABLE_RDMA_READ, read_enable);
    let src_va = 0x5000_0123;
    let src_h = s
        .register_with(1, src_va, u64::from(len), PTAG, attrs)
        .expect("registered");
    let mut data = vec![0u8; len as usize];
    SplitMix64::new(seed).fill(&mut data);
    s.write_mem(1, src_va, &data);
    let dst = region(s, 0, 0x3000_0040, u64::from(len) + 64, PTAG, false);
    s.write_mem(0, dst.va, &vec![0xEE; len as usize + 64]);
    let per = len / segs;
    let mut local = Vec::new();
    for k in 0..segs {
        let l = if k + 1 == segs { len - per * k } else { per };
        local.push((dst.va + u64::from(per * k), dst.h, l));
    }
    let d = rdma_read_desc(src_va, src_h, &local);
    s.post(0, 0, Queue::Send, desc.va, desc.h, &d);
    Setup {
        desc: desc.va,
        data,
        dst: dst.va,
    }
}

fn check_landed(s: &Sys, r: &Setup) {
    let st = s.status(0, r.desc);
    assert!(st.is_done() && !st.is_error(), "{st:?}");
    assert_eq!(st.completed_op(), CompletedOp::RdmaRead);
    let got = s.read_mem(0, r.dst, r.data.len() + 64);
    assert!(got[..r.data.len()] == r.data[..], "bytes differ");
    assert!(
        got[r.data.len()..].iter().all(|&b| b == 0xEE),
        "past the end"
    );
}

#[test]
fn a_read_lands_byte_exact_and_completes() {
    for (len, segs) in [(4, 1), (1460, 1), (5000, 3)] {
        let mut s = connected(Reliability::ReliableDelivery, true);
        let r = post_read(&mut s, len, segs, true, u64::from(len));
        s.run();
        check_landed(&s, &r);
        let (e0, e1) = (s.engine(0).stats(), s.engine(1).stats());
        let frames = u64::from(len.div_ceil(1460));
        assert_eq!(e0.read_requests_sent, 1);
        assert_eq!(e1.read_requests_received, 1);
        assert_eq!(e1.read_response_frames_sent, frames);
        assert_eq!(e0.read_response_frames_received, frames);
        assert_eq!(e0.read_bytes_placed, u64::from(len));
        assert_eq!(e1.read_responses_completed, 1);
        assert_eq!(e1.read_requests_refused, 0);
        let h0 = sent_headers(&s, 0);
        let req: Vec<_> = h0
            .iter()
            .filter(|h| h.op == WireOp::RdmaReadRequest)
            .collect();
        assert_eq!(req.len(), 1);
        assert_eq!((req[0].msg_len, req[0].frag_len), (len, 0));
        let resp: Vec<_> = sent_headers(&s, 1)
            .into_iter()
            .filter(|h| h.op == WireOp::RdmaReadResponse)
            .collect();
        assert_eq!(resp.len() as u64, frames);
        assert!(
            resp.iter().all(|h| h.immediate == req[0].seq),
            "names the request"
        );
        assert!(s.engine(0).is_idle() && s.engine(1).is_idle());
    }
}

#[test]
fn a_read_of_a_region_without_read_enable_is_refused_and_moves_nothing() {
    let mut s = connected(Reliability::ReliableDelivery, true);
    let r = post_read(&mut s, 3000, 1, false, 9);
    s.run();
    let st = s.status(0, r.desc);
    assert!(st.is_done(), "{st:?}");
    assert_eq!(st.errors(), Status::RDMA_PROTECTION_ERROR);
    assert_eq!(st.completed_op(), CompletedOp::RdmaRead);
    let got = s.read_mem(0, r.dst, r.data.len() + 64);
    assert!(got.iter().all(|&b| b == 0xEE), "not one byte moved");
    let (e0, e1) = (s.engine(0).stats(), s.engine(1).stats());
    assert_eq!(e1.read_requests_refused, 1);
    assert_eq!(e1.read_response_frames_sent, 0);
    assert_eq!(e0.read_bytes_placed, 0);
    // VIA 1.0, reliable delivery: the error breaks the connection on both sides.
    assert_eq!(s.vi_state(0, 0), ViStateCode::Error);
    assert_eq!(s.vi_state(1, 0), ViStateCode::Error);
}

#[test]
fn a_read_without_the_vi_enable_is_refused() {
    let mut s = Sys::new(config(true));
    s.create_vi_with(
        0,
        0,
        PTAG,
        Reliability::ReliableDelivery,
        bar::VI_ATTR_RDMA_READ,
    );
    s.create_vi_with(1, 0, PTAG, Reliability::ReliableDelivery, 0);
    s.connect(0, 0, 0x77);
    let r = post_read(&mut s, 64, 1, true, 3);
    s.run();
    assert_eq!(s.status(0, r.desc).errors(), Status::RDMA_PROTECTION_ERROR);
    assert_eq!(s.engine(0).stats().read_bytes_placed, 0);
}

#[test]
fn a_read_on_an_unreliable_vi_or_a_card_without_read_is_a_format_error() {
    for (rel, enabled) in [
        (Reliability::Unreliable, true),
        (Reliability::ReliableDelivery, false),
    ] {
        let mut s = connected(rel, enabled);
        let r = post_read(&mut s, 64, 1, true, 4);
        s.run();
        let st = s.status(0, r.desc);
        assert!(st.is_done(), "{st:?}");
        assert_eq!(st.errors(), Status::FORMAT_ERROR, "{rel:?} {enabled}");
        assert_eq!(s.engine(0).stats().read_requests_sent, 0);
        assert_eq!(s.engine(1).stats().read_requests_received, 0);
    }
}

#[test]
fn lost_request_and_response_frames_are_recovered() {
    let mut s = connected(Reliability::ReliableDelivery, true);
    // Node 0's next frame is the request: lost, resent on the timeout.
    let req = s.node(0).gec.sent.len();
    s.w.store[0].gec.lose.insert(req);
    // Node 1's first frames after the request: its Ack, then response frames 1 and 3
    // of 4 (index 0 is the Ack of the resent request).
    let base = s.node(1).gec.sent.len();
    s.w.store[1].gec.lose.extend([base + 2, base + 4]);
    let r = post_read(&mut s, 5000, 2, true, 11);
    s.run();
    check_landed(&s, &r);
    let (e0, e1) = (s.engine(0).stats(), s.engine(1).stats());
    assert_eq!(e0.read_requests_sent, 1, "first sendings only");
    assert!(e0.frames_resent >= 1, "the request was resent");
    assert!(
        e1.frames_resent >= 2,
        "the lost response frames were resent"
    );
    assert_eq!(e0.read_bytes_placed, 5000, "every byte placed once");
    assert_eq!(
        e1.read_requests_received, 1,
        "the resent request taken once"
    );
    assert!(s.engine(0).is_idle() && s.engine(1).is_idle());
}
