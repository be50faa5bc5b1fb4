//! Ping-pong over RDMA read: the initiator reads the responder's buffer, one read per
//! iteration; the responder's CPU takes no part once set up (its card answers).
//!
//! ```text
//! initiator                                      responder
//!   (set-up: learns the responder's buffer, registered with RDMA read enabled)
//!                                                  fill dst with the known pattern
//!   VipRecvWait ("ready")                     <-   send "ready" (1 byte)
//!   poison dst (instrumentation)                   VipRecvWait ("done")
//!   VipPostSend(RDMA read peer dst -> own dst)  -> request
//!   VipSendWait                                 <- response (the peer's card reads
//!   verify every byte, record the read's time       its host memory by DMA)
//!   ... every iteration ...
//!   send "done" (1 byte)                        ->  teardown
//! ```
//!
//! The responder's buffer holds a known pattern ([`pattern`] of iteration 0, pong
//! direction) for the whole run; before each read the initiator overwrites its own
//! landing buffer with the pattern's complement (instrumentation, no simulated cost),
//! so a byte the read did not move fails the check. One record per read: `start` before
//! VipPostSend, `end` when VipSendWait returns the read's completion. The read is its
//! own round trip (request out, data back), so the testbench reports its whole time as
//! the one-way latency of an RDMA read (not half of it). The "ready" and "done"
//! messages (1 byte each, into the data receive [`setup`] posts on both sides) are
//! outside the timed reads.

use super::setup::{
    post_iteration_send, recv_wait, setup, teardown, Endpoint, Role, INFO_OUT, RDMA_DESC, SEND_DESC,
};
use super::{pattern, verify, Direction, PingPongParams};
use crate::program::{CallExt, IterationRecord, ProgramError, ProgramReport, ProgramResult};
use crate::vipl::descriptor::{data_segment, rdma_read_descriptor, send_descriptor};
use crate::vipl::{Timeout, Vipl};
use sim_kernel::MsgId;

/// Sends the peer a 1-byte message (from the set-up message's place in the control
/// region, free once set up) and waits for its completion (`last`: accept it flushed by
/// the peer's disconnect).
async fn send_byte(
    vipl: &mut Vipl,
    ep: &Endpoint,
    timeout: Timeout,
    last: bool,
) -> Result<(), ProgramError> {
    let (ctl, ctl_mh) = ep.ctl;
    vipl.write_mem(ctl + INFO_OUT, &[1]).await.call("store")?;
    let msg = send_descriptor(vec![data_segment(ctl + INFO_OUT, ctl_mh, 1)], None);
    vipl.build_descriptor(ctl + SEND_DESC, &msg)
        .await
        .call("build")?;
    post_iteration_send(vipl, ep.vi, (ctl + SEND_DESC, ctl_mh), timeout, last).await
}

/// The initiator of an RDMA-read ping-pong: one record per read.
///
/// # Errors
/// The first failing VIPL call, a completion in error, or a byte that does not match.
pub async fn rdma_read_pingpong_initiator(mut vipl: Vipl, p: PingPongParams) -> ProgramResult {
    let p = PingPongParams {
        rdma_read: true,
        ..p
    };
    // The data receive set-up posts (into `dst`) takes the responder's "ready".
    let ep = setup(&mut vipl, &p, Role::Initiator, true).await?;
    let (ctl, ctl_mh) = ep.ctl;
    let (dst, dst_mh) = ep.dst;
    let len = ep.len;
    let read = rdma_read_descriptor(
        vec![data_segment(dst, dst_mh, len)],
        ep.peer_dst.0,
        ep.peer_dst.1,
    );
    vipl.build_descriptor(ctl + RDMA_DESC, &read)
        .await
        .call("build")?;
    let mut report = ProgramReport {
        program: "rdma-read-pingpong-initiator",
        setup_done: vipl.now(),
        ..ProgramReport::default()
    };
    let expected = pattern(0, Direction::Pong, len);
    let poison: Vec<u8> = expected.iter().map(|b| !b).collect();
    recv_wait(&mut vipl, ep.vi, p.wait_timeout).await?;
    for i in 0..p.total() {
        vipl.set_trace_msg(MsgId(u64::from(i)));
        vipl.poke(dst, &poison).await.call("poison")?;
        let start = vipl.now();
        post_iteration_send(
            &mut vipl,
            ep.vi,
            (ctl + RDMA_DESC, ctl_mh),
            p.wait_timeout,
            false,
        )
        .await?;
        let end = vipl.now();
        let verified = verify(&vipl, dst, &expected, p.touch_data, i).await?;
        report.iterations.push(IterationRecord {
            index: i,
            bytes: len,
            start,
            end,
            verified_bytes: verified,
            warmup: i < p.warmup,
        });
    }
    // Tell the responder the reads are over (it waits on a receive for this), under a
    // trace id of its own (not the last read's).
    vipl.set_trace_msg(MsgId(u64::from(p.total())));
    send_byte(&mut vipl, &ep, p.wait_timeout, true).await?;
    teardown(&mut vipl, &ep).await;
    report.finished = vipl.now();
    Ok(report)
}

/// The responder of an RDMA-read ping-pong: fills its buffer with the known pattern,
/// tells the initiator it is ready, then waits for the initiator's "done" message (its card serves the reads alone). No
/// iteration records.
///
/// # Errors
/// The first failing VIPL call, or a completion in error.
pub async fn rdma_read_pingpong_responder(mut vipl: Vipl, p: PingPongParams) -> ProgramResult {
    let p = PingPongParams {
        rdma_read: true,
        ..p
    };
    // The data receive set-up posts (into `dst`) takes the 1-byte "done" message.
    let ep = setup(&mut vipl, &p, Role::Responder, true).await?;
    let (dst, _) = ep.dst;
    let mut report = ProgramReport {
        program: "rdma-read-pingpong-responder",
        setup_done: vipl.now(),
        ..ProgramReport::default()
    };
    vipl.poke(dst, &pattern(0, Direction::Pong, ep.len))
        .await
        .call("store")?;
    send_byte(&mut vipl, &ep, p.wait_timeout, false).await?;
    recv_wait(&mut vipl, ep.vi, p.wait_timeout).await?;
    teardown(&mut vipl, &ep).await;
    report.finished = vipl.now();
    Ok(report)
}
