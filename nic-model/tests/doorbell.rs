//! The doorbell FIFO under a flood of doorbells: the card makes the bus Retry doorbell
//! writes while the FIFO is full, and no doorbell is ever lost.

mod common;

use common::*;
use nic_model::engine::EngineParams;
use via_abi::bar::Reliability;
use via_abi::{Queue, Status};

#[test]
fn a_full_doorbell_fifo_retries_writes_and_loses_nothing() {
    let mut s = Sys::new(Config {
        engine: EngineParams {
            doorbell_fifo_depth: 4,
            doorbell_skid: 1,
            max_send_contexts: 1,
            ..EngineParams::default()
        },
        ..Config::default()
    });
    for vi in 0..2u16 {
        for i in 0..2 {
            s.create_vi(i, vi, 5, Reliability::Unreliable, true);
        }
        s.connect(vi, vi, u32::from(vi) + 40);
    }
    let desc = region(&mut s, 0, 0x1000_0000, 8192, 5, false);
    let src = region(&mut s, 0, 0x2000_0000, 4096, 5, false);
    let dst = region(&mut s, 1, 0x3000_0000, 4096, 5, true);
    let bytes: Vec<u8> = (0..=255).collect();
    s.write_mem(0, src.va, &bytes);
    const N: u64 = 40;
    for k in 0..N {
        let d = rdma_desc(dst.va + 4 * k, dst.h, &[(src.va + 4 * k, src.h, 4)], None);
        let vi = (k % 2) as u16;
        s.post(0, vi, Queue::Send, desc.va + 64 * k, desc.h, &d);
    }
    s.run();
    for k in 0..N {
        let st = s.status(0, desc.va + 64 * k);
        assert_eq!(
            (st.is_done(), st.errors()),
            (true, Status::empty()),
            "descriptor {k}"
        );
    }
    assert_eq!(s.read_mem(1, dst.va, 160), bytes[..160].to_vec());
    let e = s.engine(0).stats();
    assert_eq!(e.doorbells, N);
    assert_eq!(e.doorbell_overruns, 0);
    assert!(e.doorbell_fifo_max <= 4, "{e:?}");
    assert!(e.doorbell_backpressure > 0, "{e:?}");
    let bus = s.node(0).bus.stats();
    assert!(bus.write_retry_refusals > 0, "{bus:?}");
    assert!(
        s.node(0).bus.write_retry_windows().is_empty(),
        "back-pressure released"
    );
}

#[test]
fn receive_doorbells_wait_while_the_receive_queue_is_full() {
    let mut s = Sys::new(Config {
        engine: EngineParams {
            recv_queue_depth: 2,
            doorbell_fifo_depth: 3,
            ..EngineParams::default()
        },
        ..Config::default()
    });
    s.create_vi(1, 0, 5, Reliability::Unreliable, false);
    let desc = region(&mut s, 1, 0x1000_0000, 4096, 5, false);
    let buf = region(&mut s, 1, 0x2000_0000, 64, 5, false);
    for k in 0..6u64 {
        s.post(
            1,
            0,
            Queue::Receive,
            desc.va + 64 * k,
            desc.h,
            &recv_desc(&[(buf.va, buf.h, 64)]),
        );
    }
    // The sixth doorbell write is Retried for as long as nobody drains the queue.
    let until = s.k.now() + sim_kernel::Duration::from_ns(100_000);
    s.k.run_until(&mut s.w, until);
    let e = s.engine(1);
    assert_eq!(e.vi(0).unwrap().recv_posted, 2);
    // Retry goes on at depth - skid = 2 doorbells: two wait, two writes are still
    // being Retried on the bus.
    assert_eq!(e.doorbells_waiting(), 2);
    assert_eq!(e.stats().doorbells, 4);
    assert_eq!(e.stats().doorbell_overruns, 0);
    assert!(s.node(1).bus.stats().write_retry_refusals > 0);
}
