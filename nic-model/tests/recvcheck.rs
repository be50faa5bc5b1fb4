//! The receive post check (`check_recv_on_post`) and per-frame receive-descriptor
//! reading (`recv_descriptor_per_frame`): a bad receive descriptor completes at its post
//! with its error and never takes a message; a good one receives as before; with
//! per-frame reading, every frame of a send reads the descriptor again and the bytes
//! still land unchanged.

mod common;

use common::*;
use sim_kernel::{MsgId, SplitMix64};
use via_abi::bar::Reliability;
use via_abi::{CompletedOp, Queue, Status};

const PTAG: u16 = 3;

fn sys(engine: nic_model::EngineParams, trace: bool) -> (Sys, Region, Region) {
    let mut s = Sys::new(Config {
        engine,
        trace,
        ..Config::default()
    });
    for i in 0..2 {
        s.create_vi(i, 2, PTAG, Reliability::Unreliable, false);
    }
    s.connect(2, 2, 77);
    let sdesc = region(&mut s, 0, 0x1000_0000, 8192, PTAG, false);
    let rdesc = region(&mut s, 1, 0x1000_0000, 8192, PTAG, false);
    (s, sdesc, rdesc)
}

fn checked() -> nic_model::EngineParams {
    nic_model::EngineParams {
        check_recv_on_post: true,
        ..nic_model::EngineParams::default()
    }
}

fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut d = vec![0u8; len];
    SplitMix64::new(seed).fill(&mut d);
    d
}

#[test]
fn a_bad_receive_descriptor_completes_at_its_post() {
    let (mut s, sdesc, rdesc) = sys(checked(), false);
    let r = region(&mut s, 1, 0x3000_0000, 256, PTAG, false);
    s.write_mem(1, r.va, &[0x55; 256]);
    // An RDMA-write descriptor on the receive queue: a format error.
    let bad = rdma_desc(0x4000_0000, r.h, &[(r.va, r.h, 256)], None);
    s.post(1, 2, Queue::Receive, rdesc.va, rdesc.h, &bad);
    s.run();
    let st = s.status(1, rdesc.va);
    assert!(st.is_done(), "{st:?}");
    assert_eq!(st.errors(), Status::FORMAT_ERROR);
    assert_eq!(st.completed_op(), CompletedOp::Receive);
    assert_eq!(s.engine(1).stats().recv_post_refused, 1);
    assert_eq!(s.engine(1).vi(2).unwrap().recv_posted, 0, "never queued");
    // A message now finds no receive descriptor: dropped, no byte placed.
    let a = region(&mut s, 0, 0x2000_0000, 64, PTAG, false);
    s.write_mem(0, a.va, &[0xAB; 64]);
    s.post(
        0,
        2,
        Queue::Send,
        sdesc.va,
        sdesc.h,
        &send_desc(&[(a.va, a.h, 64)], None),
    );
    s.run();
    assert_eq!(s.engine(1).vi(2).unwrap().counters.rx_no_descriptor, 1);
    assert_eq!(s.read_mem(1, r.va, 256), vec![0x55; 256]);
}

#[test]
fn a_receive_buffer_outside_its_region_is_refused_at_its_post() {
    let (mut s, _sdesc, rdesc) = sys(checked(), false);
    let r = region(&mut s, 1, 0x3000_0000, 100, PTAG, false);
    // 200 bytes of a 100-byte region: the buffer does not translate.
    s.post(
        1,
        2,
        Queue::Receive,
        rdesc.va,
        rdesc.h,
        &recv_desc(&[(r.va, r.h, 200)]),
    );
    s.run();
    let st = s.status(1, rdesc.va);
    assert!(st.is_done());
    assert_eq!(st.errors(), Status::PROTECTION_ERROR);
    assert_eq!(s.engine(1).vi(2).unwrap().recv_posted, 0);
}

#[test]
fn a_checked_receive_takes_its_message_unchanged() {
    let (mut s, sdesc, rdesc) = sys(checked(), true);
    let a = region(&mut s, 0, 0x2000_0100, 3000, PTAG, false);
    let r = region(&mut s, 1, 0x3000_0010, 4000, PTAG, false);
    let msg = data(3000, 7);
    s.write_mem(0, a.va, &msg);
    s.post(
        1,
        2,
        Queue::Receive,
        rdesc.va,
        rdesc.h,
        &recv_desc(&[(r.va, r.h, 4000)]),
    );
    s.run();
    assert_eq!(
        s.engine(1).vi(2).unwrap().recv_posted,
        1,
        "queued after its check"
    );
    s.post(
        0,
        2,
        Queue::Send,
        sdesc.va,
        sdesc.h,
        &send_desc(&[(a.va, a.h, 3000)], None),
    );
    s.run();
    let rt = s.status(1, rdesc.va);
    assert_eq!((rt.is_done(), rt.errors()), (true, Status::empty()));
    assert_eq!(s.length(1, rdesc.va), 3000);
    assert_eq!(s.read_mem(1, r.va, 3000), msg);
    // The check read the descriptor at its post: the spans of the post's trace id.
    let stages: Vec<_> =
        s.k.trace()
            .spans()
            .iter()
            .map(|sp| sp.stage)
            .filter(|st| st.starts_with("recv post"))
            .collect();
    for want in [
        "recv post translate",
        "recv post DMA read",
        "recv post decode",
        "recv post buffer translate",
    ] {
        assert!(stages.contains(&want), "{want} missing: {stages:?}");
    }
    // The card kept what it checked: the message decodes the copy, with no second
    // translation or DMA read of the descriptor.
    let arrival: Vec<_> =
        s.k.trace()
            .spans()
            .iter()
            .map(|sp| sp.stage)
            .filter(|st| st.starts_with("recv descriptor") || *st == "recv buffer translate")
            .collect();
    assert_eq!(arrival, vec!["recv descriptor decode"], "{arrival:?}");
}

#[test]
fn per_frame_reading_reads_the_descriptor_for_every_frame() {
    let engine = nic_model::EngineParams {
        recv_descriptor_per_frame: true,
        ..nic_model::EngineParams::default()
    };
    let (mut s, sdesc, rdesc) = sys(engine, true);
    // 5000 bytes: 4 fragments on the wire.
    let a = region(&mut s, 0, 0x2000_0000, 5000, PTAG, false);
    let r = region(&mut s, 1, 0x3000_0000, 6000, PTAG, false);
    let msg = data(5000, 9);
    s.write_mem(0, a.va, &msg);
    s.post(
        1,
        2,
        Queue::Receive,
        rdesc.va,
        rdesc.h,
        &recv_desc(&[(r.va, r.h, 6000)]),
    );
    s.run();
    s.post(
        0,
        2,
        Queue::Send,
        sdesc.va,
        sdesc.h,
        &send_desc(&[(a.va, a.h, 5000)], None),
    );
    s.run();
    assert_eq!(s.read_mem(1, r.va, 5000), msg);
    let rt = s.status(1, rdesc.va);
    assert_eq!((rt.is_done(), rt.errors()), (true, Status::empty()));
    let decodes =
        s.k.trace()
            .spans()
            .iter()
            .filter(|sp| sp.stage == "recv descriptor decode" && sp.msg != MsgId(u64::MAX))
            .count();
    assert_eq!(decodes, 4, "one descriptor read per frame");
}
