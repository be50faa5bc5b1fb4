//! Ping-pong over send/receive: the receiver posts a receive descriptor ahead of each
//! message and waits for it in VipRecvWait.
//!
//! ```text
//! initiator                                   responder
//!   fill src (ping i), start
//!   VipPostRecv (pong i; i = 0 at set-up)
//!   VipPostSend, VipSendWait    ------------->  VipRecvWait, verify
//!                                               fill src (pong i)
//!   VipRecvWait, end  <-----------------------  VipPostSend, VipSendWait
//!   verify, record                              VipPostRecv (ping i + 1)
//! ```
//!
//! The responder times each of its VipPostRecv calls the way the paper did: between two
//! `gettimeofday` calls, building the receive descriptor, posting it and ringing the
//! doorbell; the interval is the span [`POST_RECV_TIMED`].
//!
//! **Where the initiator's VipPostRecv goes.** A ping-pong loop timed as a whole (clock
//! read before the loop and after it, the mean taken) has the initiator post the receive
//! for its pong inside each round trip, right before sending its ping, so that the pong
//! always finds it: one VipPostRecv per round trip is on the clock, half of it in each
//! one-way figure. That is the shape assumed for the paper's send/recv figures
//! (`PingPongParams::post_recv_timed`, default): its "2.9 us more than RDMA write,
//! regardless of size" is then about half the 6 us VipPostRecv plus the status write,
//! both independent of the size. With `post_recv_timed` off the initiator posts before
//! it starts the clock (as a per-iteration timer allows), and the difference is the
//! card's receive-side work alone. The responder posts right after sending its pong,
//! while the pong and the next ping travel, off the round trip either way. Every measured
//! round trip has the same shape, from the first to the last: the one-way latency does
//! not depend on how many round trips are measured.

use super::setup::{
    post_iteration_send, recv_wait, setup, teardown, wait_iteration_send, Endpoint, Role,
    RECV_DESC, SEND_DESC,
};
use super::{Direction, PingPongParams, Scratch};
use crate::program::{CallExt, IterationRecord, ProgramError, ProgramReport, ProgramResult};
use crate::vipl::descriptor::{data_segment, recv_descriptor, send_descriptor};
use crate::vipl::{Completion, Vipl};
use sim_kernel::MsgId;

/// The span of the responder's CPU from the clock read before to the clock read after a
/// VipPostRecv (with the descriptor's build), as `gettimeofday` measures it.
pub const POST_RECV_TIMED: &str = "VipPostRecv (gettimeofday)";

fn check_len(c: &Completion, len: u32) -> Result<(), ProgramError> {
    if c.length == len {
        Ok(())
    } else {
        Err(ProgramError::Protocol(
            "received message of the wrong length",
        ))
    }
}

/// Builds the send descriptor both sides post at every iteration: all of their `src`
/// buffer.
async fn build_send(vipl: &Vipl, ep: &Endpoint) -> Result<(), ProgramError> {
    let (src, src_mh) = ep.src;
    let send = send_descriptor(vec![data_segment(src, src_mh, ep.len)], None);
    vipl.build_descriptor(ep.ctl.0 + SEND_DESC, &send)
        .await
        .call("build")
}

/// The initiator of a send/receive ping-pong: one record per round trip (`start` before
/// VipPostSend of the ping, `end` when VipRecvWait returns the pong).
///
/// # Errors
/// The first failing VIPL call, a completion in error, or a byte that does not match.
pub async fn sendrecv_pingpong_initiator(mut vipl: Vipl, p: PingPongParams) -> ProgramResult {
    let ep = setup(&mut vipl, &p, Role::Initiator, true).await?;
    let (ctl, ctl_mh) = ep.ctl;
    let (src, _) = ep.src;
    let (dst, _) = ep.dst;
    let len = ep.len;
    build_send(&vipl, &ep).await?;
    let mut report = ProgramReport {
        program: "sendrecv-pingpong-initiator",
        setup_done: vipl.now(),
        ..ProgramReport::default()
    };
    let mut scratch = Scratch::default();
    for i in 0..p.total() {
        vipl.set_trace_msg(MsgId(u64::from(i)));
        // The receive for this round trip's pong (the first one was posted during
        // set-up), on the clock or before it starts (see the module doc).
        if i > 0 && !p.post_recv_timed {
            vipl.vip_post_recv(ep.vi, ctl + RECV_DESC, ctl_mh)
                .await
                .call("VipPostRecv")?;
        }
        scratch
            .fill(&vipl, src, (i, Direction::Ping, len), p.touch_data)
            .await
            .call("store")?;
        let start = vipl.now();
        if i > 0 && p.post_recv_timed {
            vipl.vip_post_recv(ep.vi, ctl + RECV_DESC, ctl_mh)
                .await
                .call("VipPostRecv")?;
        }
        let last = i + 1 == p.total();
        post_iteration_send(
            &mut vipl,
            ep.vi,
            (ctl + SEND_DESC, ctl_mh),
            p.wait_timeout,
            last,
        )
        .await?;
        let c = recv_wait(&mut vipl, ep.vi, p.wait_timeout).await?;
        let end = vipl.now();
        check_len(&c, len)?;
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

/// The responder's receive for the next ping, posted while the pong is on its way: off
/// the round trip's critical path, long before the next ping can arrive. Timed as the
/// paper timed VipPostRecv: between two gettimeofday calls, building the descriptor,
/// posting it and ringing the doorbell.
async fn post_next_recv(vipl: &mut Vipl, ep: &Endpoint) -> Result<(), ProgramError> {
    let (ctl, ctl_mh) = ep.ctl;
    let t0 = vipl.gettimeofday().await;
    let (dst_va, dst_mh) = ep.dst;
    let desc = recv_descriptor(vec![data_segment(dst_va, dst_mh, ep.len)]);
    vipl.build_descriptor(ctl + RECV_DESC, &desc)
        .await
        .call("build")?;
    vipl.vip_post_recv(ep.vi, ctl + RECV_DESC, ctl_mh)
        .await
        .call("VipPostRecv")?;
    let t1 = vipl.gettimeofday().await;
    vipl.record_span_between(POST_RECV_TIMED, t0, t1);
    Ok(())
}

/// The responder of a send/receive ping-pong: one record per iteration (`start` when it
/// begins waiting for the ping, `end` when its pong's send has completed).
///
/// # Errors
/// The first failing VIPL call, a completion in error, or a byte that does not match.
pub async fn sendrecv_pingpong_responder(mut vipl: Vipl, p: PingPongParams) -> ProgramResult {
    let ep = setup(&mut vipl, &p, Role::Responder, true).await?;
    let (ctl, ctl_mh) = ep.ctl;
    let (src, _) = ep.src;
    let (dst, _) = ep.dst;
    let len = ep.len;
    build_send(&vipl, &ep).await?;
    let mut report = ProgramReport {
        program: "sendrecv-pingpong-responder",
        setup_done: vipl.now(),
        ..ProgramReport::default()
    };
    let mut scratch = Scratch::default();
    for i in 0..p.total() {
        vipl.set_trace_msg(MsgId(u64::from(i)));
        let start = vipl.now();
        let c = recv_wait(&mut vipl, ep.vi, p.wait_timeout).await?;
        check_len(&c, len)?;
        let verified = scratch
            .verify(&vipl, dst, (i, Direction::Ping, len), p.touch_data)
            .await?;
        scratch
            .fill(&vipl, src, (i, Direction::Pong, len), p.touch_data)
            .await
            .call("store")?;
        let last = i + 1 == p.total();
        // On a reliable VI the pong's send completes only on the initiator's Ack, which
        // may be lost (and made up by a resend after the card's timeout) while the next
        // ping is already on its way: the receive for it goes in before the wait. On an
        // unreliable VI the send completes as its frame leaves, long before the next
        // ping, and the receive is posted after it (the paper's order).
        let early = p.reliability != via_abi::bar::Reliability::Unreliable;
        if early {
            vipl.vip_post_send(ep.vi, ctl + SEND_DESC, ctl_mh)
                .await
                .call("VipPostSend")?;
            if !last {
                post_next_recv(&mut vipl, &ep).await?;
            }
            wait_iteration_send(&mut vipl, ep.vi, p.wait_timeout, last).await?;
        } else {
            post_iteration_send(
                &mut vipl,
                ep.vi,
                (ctl + SEND_DESC, ctl_mh),
                p.wait_timeout,
                last,
            )
            .await?;
            if !last {
                post_next_recv(&mut vipl, &ep).await?;
            }
        }
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
