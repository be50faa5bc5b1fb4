//! Ping-pong over RDMA write, as in the paper's latency test: each side writes the
//! other's buffer and polls its own for the flag byte.
//!
//! ```text
//! initiator                                   responder
//!   fill src (ping i, last byte flag(i))
//!   VipPostSend(RDMA write src -> peer dst)  ---->  poll dst[len-1] == flag(i), verify
//!   VipSendWait                                     fill src (pong i)
//!   poll dst[len-1] == flag(i)  <----------------   VipPostSend(RDMA write), VipSendWait
//!   verify, record round trip
//! ```

use super::setup::{post_iteration_send, setup, teardown, Endpoint, Role, RDMA_DESC};
use super::{Direction, PingPongParams, Scratch};
use crate::ops::PollCond;
use crate::program::{CallExt, IterationRecord, ProgramError, ProgramReport, ProgramResult};
use crate::vipl::descriptor::{data_segment, rdma_write_descriptor};
use crate::vipl::Vipl;
use sim_kernel::MsgId;

/// Builds the RDMA write descriptor both sides post at every iteration: all of their
/// `src` buffer to the peer's `dst` buffer.
async fn build_rdma_write(vipl: &Vipl, ep: &Endpoint) -> Result<(), ProgramError> {
    let (src, src_mh) = ep.src;
    let desc = rdma_write_descriptor(
        vec![data_segment(src, src_mh, ep.len)],
        ep.peer_dst.0,
        ep.peer_dst.1,
        None,
    );
    vipl.build_descriptor(ep.ctl.0 + RDMA_DESC, &desc)
        .await
        .call("build")
}

/// The initiator of an RDMA-write ping-pong: one record per round trip (`start` before
/// VipPostSend of the ping, `end` when the pong's flag byte is seen).
///
/// # Errors
/// The first failing VIPL call, a completion in error, or a byte that does not match.
pub async fn rdma_pingpong_initiator(mut vipl: Vipl, p: PingPongParams) -> ProgramResult {
    let ep = setup(&mut vipl, &p, Role::Initiator, false).await?;
    let (ctl, ctl_mh) = ep.ctl;
    let (src, _) = ep.src;
    let (dst, _) = ep.dst;
    let len = ep.len;
    build_rdma_write(&vipl, &ep).await?;
    let mut report = ProgramReport {
        program: "rdma-pingpong-initiator",
        setup_done: vipl.now(),
        ..ProgramReport::default()
    };
    let flag_at = dst + u64::from(len) - 1;
    let mut scratch = Scratch::default();
    for i in 0..p.total() {
        vipl.set_trace_msg(MsgId(u64::from(i)));
        scratch
            .fill(&vipl, src, (i, Direction::Ping, len), p.touch_data)
            .await
            .call("store")?;
        let start = vipl.now();
        let last = i + 1 == p.total();
        post_iteration_send(
            &mut vipl,
            ep.vi,
            (ctl + RDMA_DESC, ctl_mh),
            p.wait_timeout,
            last,
        )
        .await?;
        vipl.poll_mem(
            flag_at,
            PollCond::ByteEquals(super::flag(i)),
            p.wait_timeout,
        )
        .await
        .call("poll")?;
        let end = vipl.now();
        let verified = scratch
            .verify(&vipl, dst, (i, Direction::Pong, len), p.touch_data)
            .await?;
        report.iterations.push(IterationRecord {
            index: i,
            bytes: len,
            start,
            end,
            verified_bytes: verified,
            warmup: i < p.warmup,
        });
    }
    teardown(&mut vipl, &ep).await;
    report.finished = vipl.now();
    Ok(report)
}

/// The responder of an RDMA-write ping-pong: one record per iteration (`start` when it
/// begins polling for the ping, `end` when its pong's send has completed).
///
/// # Errors
/// The first failing VIPL call, a completion in error, or a byte that does not match.
pub async fn rdma_pingpong_responder(mut vipl: Vipl, p: PingPongParams) -> ProgramResult {
    let ep = setup(&mut vipl, &p, Role::Responder, false).await?;
    let (ctl, ctl_mh) = ep.ctl;
    let (src, _) = ep.src;
    let (dst, _) = ep.dst;
    let len = ep.len;
    build_rdma_write(&vipl, &ep).await?;
    let mut report = ProgramReport {
        program: "rdma-pingpong-responder",
        setup_done: vipl.now(),
        ..ProgramReport::default()
    };
    let flag_at = dst + u64::from(len) - 1;
    let mut scratch = Scratch::default();
    for i in 0..p.total() {
        vipl.set_trace_msg(MsgId(u64::from(i)));
        let start = vipl.now();
        vipl.poll_mem(
            flag_at,
            PollCond::ByteEquals(super::flag(i)),
            p.wait_timeout,
        )
        .await
        .call("poll")?;
        let verified = scratch
            .verify(&vipl, dst, (i, Direction::Ping, len), p.touch_data)
            .await?;
        scratch
            .fill(&vipl, src, (i, Direction::Pong, len), p.touch_data)
            .await
            .call("store")?;
        let last = i + 1 == p.total();
        post_iteration_send(
            &mut vipl,
            ep.vi,
            (ctl + RDMA_DESC, ctl_mh),
            p.wait_timeout,
            last,
        )
        .await?;
        report.iterations.push(IterationRecord {
            index: i,
            bytes: len,
            start,
            end: vipl.now(),
            verified_bytes: verified,
            warmup: i < p.warmup,
        });
    }
    teardown(&mut vipl, &ep).await;
    report.finished = vipl.now();
    Ok(report)
}
