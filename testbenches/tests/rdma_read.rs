//! RDMA read through the whole two-node system (the `rdma-read` preset): the ping-pong
//! reads every size byte-exact (the program compares every byte of every read), lost
//! frames are recovered, the breakdown tiles the read, and a read of a region
//! registered without RDMA read enabled is refused: the initiator's descriptor
//! completes with the RDMA protection error, both VIs go to `error`, and not one byte
//! moves.

use host_driver::program::{CallExt, ProgramError, ProgramReport, ProgramResult};
use host_driver::programs::setup::{
    post_send_and_wait, recv_wait, setup, Role, INFO_BYTES, INFO_OUT, RDMA_DESC, SEND_DESC,
};
use host_driver::programs::PingPongParams;
use host_driver::vipl::descriptor::{data_segment, rdma_read_descriptor, send_descriptor};
use host_driver::{Timeout, VipMemAttributes, Vipl};
use testbenches::config::SystemConfig;
use testbenches::system::{breakdown, run_pingpong, Op, PingPongSpec, RecvPost, System};
use via_abi::bar::{Reliability, ViStateCode};
use via_abi::{CompletedOp, MemHandle, Status};

fn preset() -> SystemConfig {
    SystemConfig::from_preset("rdma-read").expect("preset")
}

fn spec(size: u32, iterations: u32) -> PingPongSpec {
    PingPongSpec {
        op: Op::RdmaRead,
        size,
        iterations,
        warmup: 1,
        trace: false,
        recv_post: RecvPost::Timed,
    }
}

#[test]
fn every_byte_of_every_read_is_verified() {
    let cfg = preset();
    for size in [4, 1460, 5000, 65_536] {
        let run = run_pingpong(&cfg, spec(size, 3)).expect("run");
        assert_eq!(run.initiator.iterations.len(), 4);
        for it in &run.initiator.iterations {
            assert_eq!(
                it.verified_bytes,
                u64::from(size),
                "{size}: iteration {}",
                it.index
            );
        }
        // The read is its own round trip: its whole time is the one-way figure.
        assert_eq!(run.one_way, run.initiator.mean_elapsed());
        let e0 = run.system.engine(0).expect("engine 0").stats();
        let e1 = run.system.engine(1).expect("engine 1").stats();
        assert_eq!(e0.read_requests_sent, 4, "{size}");
        assert_eq!(e1.read_requests_received, 4, "{size}");
        assert_eq!(e0.read_bytes_placed, 4 * u64::from(size), "{size}");
        assert_eq!(
            e1.read_response_frames_sent,
            4 * u64::from(size.div_ceil(1460)),
            "{size}"
        );
        assert_eq!(run.delivery.lost, 0);
    }
}

#[test]
fn a_read_takes_longer_than_a_write_s_one_way_trip() {
    let cfg = preset();
    let read = run_pingpong(&cfg, spec(4, 3)).expect("read");
    let mut w = spec(4, 3);
    w.op = Op::RdmaWrite;
    let write = run_pingpong(&cfg, w).expect("write");
    // A read carries a request there and the data back: more than one one-way write,
    // less than a whole write round trip plus the responder's program.
    assert!(
        read.one_way > write.one_way,
        "{:?} {:?}",
        read.one_way,
        write.one_way
    );
}

#[test]
fn lost_frames_are_recovered() {
    let mut cfg = preset();
    cfg.faults.frame_loss = 0.05;
    let run = run_pingpong(&cfg, spec(16_384, 6)).expect("run");
    for it in &run.initiator.iterations {
        assert_eq!(it.verified_bytes, 16_384);
    }
    assert!(run.delivery.retransmissions > 0, "{:?}", run.delivery);
    assert!(run.delivery.frames_dropped["wire_loss"] > 0);
    assert_eq!(run.delivery.lost, 0);
}

#[test]
fn the_breakdown_tiles_the_read() {
    let bd = breakdown::measure(&preset(), Op::RdmaRead, 1460).expect("breakdown");
    assert!(!bd.stages.is_empty());
    let names: Vec<&str> = bd.stages.iter().map(|s| s.name.as_str()).collect();
    assert!(
        !names.contains(&breakdown::UNATTRIBUTED),
        "a gap in the spans: {names:?}"
    );
    for w in bd.stages.windows(2) {
        assert_eq!(w[0].end, w[1].start);
    }
    assert_eq!(bd.stages.first().map(|s| s.start), Some(bd.start));
    assert_eq!(bd.stages.last().map(|s| s.end), Some(bd.end));
    for stage in [
        "read translate",
        "payload DMA read",
        "payload DMA write",
        "status write",
        "VipSendWait detection",
    ] {
        assert!(names.contains(&stage), "{stage} missing: {names:?}");
    }
}

/// The responder: set-up, then registers a second buffer of the VI's tag with RDMA read
/// *not* enabled, fills it and tells the initiator where it is.
async fn refusing_responder(mut vipl: Vipl, p: PingPongParams) -> ProgramResult {
    let ep = setup(&mut vipl, &p, Role::Responder, false).await?;
    let (ctl, ctl_mh) = ep.ctl;
    let len = u64::from(ep.len);
    let attrs = VipMemAttributes {
        ptag: ep.ptag,
        enable_rdma_write: true,
        enable_rdma_read: false,
    };
    let va = vipl.malloc(len, 64).await.call("malloc")?;
    let mh = vipl
        .vip_register_mem(ep.nic, va, len, &attrs)
        .await
        .call("VipRegisterMem")?;
    vipl.poke(va, &vec![0x5A; ep.len as usize])
        .await
        .call("store")?;
    let mut info = [0u8; INFO_BYTES as usize];
    info[..8].copy_from_slice(&va.to_le_bytes());
    info[8..12].copy_from_slice(&mh.raw().to_le_bytes());
    info[12..].copy_from_slice(&ep.len.to_le_bytes());
    vipl.write_mem(ctl + INFO_OUT, &info).await.call("store")?;
    let send = send_descriptor(vec![data_segment(ctl + INFO_OUT, ctl_mh, INFO_BYTES)], None);
    vipl.build_descriptor(ctl + SEND_DESC, &send)
        .await
        .call("build")?;
    post_send_and_wait(&mut vipl, ep.vi, ctl + SEND_DESC, ctl_mh, p.wait_timeout).await?;
    Ok(ProgramReport::default())
}

/// The initiator: learns the buffer, poisons its own, reads the peer's buffer; returns
/// the read's completion error, after checking that not one byte of its buffer moved.
async fn refused_initiator(mut vipl: Vipl, p: PingPongParams) -> ProgramResult {
    let ep = setup(&mut vipl, &p, Role::Initiator, true).await?;
    let (ctl, ctl_mh) = ep.ctl;
    let (dst, dst_mh) = ep.dst;
    recv_wait(&mut vipl, ep.vi, p.wait_timeout).await?;
    let msg = vipl.peek(dst, u64::from(INFO_BYTES)).await.call("load")?;
    let va = u64::from_le_bytes(msg[0..8].try_into().unwrap_or([0; 8]));
    let mh = u32::from_le_bytes(msg[8..12].try_into().unwrap_or([0; 4]));
    let poison = vec![0xEE; ep.len as usize];
    vipl.poke(dst, &poison).await.call("store")?;
    let read = rdma_read_descriptor(
        vec![data_segment(dst, dst_mh, ep.len)],
        va,
        MemHandle::from_raw(mh),
    );
    vipl.build_descriptor(ctl + RDMA_DESC, &read)
        .await
        .call("build")?;
    let r = post_send_and_wait(&mut vipl, ep.vi, ctl + RDMA_DESC, ctl_mh, p.wait_timeout).await;
    if vipl.peek(dst, u64::from(ep.len)).await.call("load")? != poison {
        return Err(ProgramError::Protocol("a byte of the refused read moved"));
    }
    r.map(|_| ProgramReport::default())
}

#[test]
fn a_read_of_a_region_without_read_enable_is_refused_and_moves_nothing() {
    let cfg = preset();
    let mut sys = System::build(&cfg, false).expect("system");
    let mut a = PingPongParams::new(4096, 1, sys.macs[1]);
    a.reliability = Reliability::ReliableDelivery;
    a.rdma_read = true;
    a.wait_timeout = Timeout::Infinite;
    let b = PingPongParams {
        peer: sys.macs[0],
        ..a
    };
    sys.cpu_mut(0)
        .expect("cpu 0")
        .load(move |v| refused_initiator(v, a));
    sys.cpu_mut(1)
        .expect("cpu 1")
        .load(move |v| refusing_responder(v, b));
    sys.start();
    sys.run_programs();
    match sys.cpu(0).and_then(|c| c.outcome()) {
        Some(Err(ProgramError::Completion { status, .. })) => {
            assert_eq!(status.errors(), Status::RDMA_PROTECTION_ERROR, "{status:?}");
            assert_eq!(status.completed_op(), CompletedOp::RdmaRead);
        }
        other => panic!("the read was not refused: {other:?}"),
    }
    let (e0, e1) = (sys.engine(0).expect("e0"), sys.engine(1).expect("e1"));
    assert_eq!(e1.stats().read_requests_refused, 1);
    assert_eq!(e1.stats().read_response_frames_sent, 0);
    assert_eq!(e0.stats().read_bytes_placed, 0, "0 bytes moved");
    assert_eq!(e1.vi(0).expect("VI").counters.rx_protection_errors, 1);
    // VIA 1.0, reliable delivery: the error breaks the connection on both sides.
    assert_eq!(e0.vi(0).expect("VI").state, ViStateCode::Error);
    assert_eq!(e1.vi(0).expect("VI").state, ViStateCode::Error);
}
