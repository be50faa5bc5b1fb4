//! One-way streaming over RDMA write with a window of outstanding descriptors, the way
//! the bandwidth benchmarks of the time (vnettest, NetPIPE's streaming mode) measure it.
//!
//! ```text
//! sender                                       receiver
//!   set-up (ring of `window` slots of `size`)    set-up (ring of `window` slots)
//!   for message i:                               for message i:
//!     i >= window: VipSendWait (oldest)            poll slot i % window, last byte
//!     fill slot i % window (pattern i)               == flag(i); verify; record arrival
//!     VipPostSend(RDMA write slot -> peer slot)
//!   VipSendWait for the rest
//! ```
//!
//! Each message goes into slot `i % window` of both rings, its last byte the flag of
//! message `i` ([`super::flag`]). The sender reuses a slot only after the send that last
//! used it completed, which on an unreliable VI means its frames left the card, so the
//! window bounds the descriptors the card holds; the receiver polls each message in order
//! and checks every byte. The sender's record of message `i` starts when it is posted,
//! the receiver's ends when its flag is seen: their difference is the message's
//! latency under load. Windows of more than 64 are refused (descriptor region).

use super::setup::{setup, teardown, Endpoint, Role};
use super::{fill, pattern, verify, Direction, PingPongParams};
use crate::ops::PollCond;
use crate::program::{CallExt, IterationRecord, ProgramError, ProgramReport, ProgramResult};
use crate::vipl::descriptor::{data_segment, rdma_write_descriptor};
use crate::vipl::{VipMemAttributes, Vipl};
use sim_kernel::MsgId;

/// The stream's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamParams {
    /// Bytes of each message (at least 1).
    pub size: u32,
    /// Messages to send.
    pub messages: u32,
    /// Descriptors outstanding at most (1 ..= 64): also the slots of each ring.
    pub window: u32,
}

/// Bytes of one descriptor slot in the descriptor region.
const DESC_SLOT: u64 = 64;

fn check(s: &StreamParams) -> Result<(), ProgramError> {
    if s.size == 0 || s.messages == 0 || !(1..=64).contains(&s.window) {
        return Err(ProgramError::Protocol(
            "a stream needs size >= 1, messages >= 1 and a window of 1 to 64",
        ));
    }
    Ok(())
}

/// The ring both sides set up: `window` slots of `size` bytes.
fn ring(p: &PingPongParams, s: &StreamParams) -> Result<PingPongParams, ProgramError> {
    let bytes = s
        .size
        .checked_mul(s.window)
        .ok_or(ProgramError::Protocol("the ring does not fit 4 GiB"))?;
    Ok(PingPongParams {
        msg_bytes: bytes,
        ..*p
    })
}

/// Where a side's send descriptors live: one slot of [`DESC_SLOT`] bytes per window
/// entry, registered for the card to read.
#[derive(Clone, Copy, Debug)]
struct Outbound {
    descs: u64,
    descs_mh: via_abi::MemHandle,
}

/// Allocates and registers the descriptor region of a window.
async fn descriptor_region(
    vipl: &mut Vipl,
    ep: &Endpoint,
    s: &StreamParams,
) -> Result<Outbound, ProgramError> {
    let local = VipMemAttributes {
        ptag: ep.ptag,
        enable_rdma_write: false,
        enable_rdma_read: false,
    };
    let region = DESC_SLOT * u64::from(s.window);
    let descs = vipl.malloc(region, 64).await.call("malloc")?;
    let descs_mh = vipl
        .vip_register_mem(ep.nic, descs, region, &local)
        .await
        .call("VipRegisterMem")?;
    Ok(Outbound { descs, descs_mh })
}

/// Fills slot `i % window` of the outgoing ring with message `i` (pattern of `dir`),
/// builds its RDMA write to the same slot of the peer's ring and posts it; returns the
/// message's record (`start` = `end` = the post).
async fn post_message(
    vipl: &mut Vipl,
    ep: &Endpoint,
    out: Outbound,
    s: &StreamParams,
    i: u32,
    dir: Direction,
    touch: bool,
) -> Result<IterationRecord, ProgramError> {
    let size = u64::from(s.size);
    let slot = u64::from(i % s.window);
    let (src, src_mh) = ep.src;
    let at = src + slot * size;
    fill(vipl, at, pattern(i, dir, s.size), touch)
        .await
        .call("store")?;
    let desc = rdma_write_descriptor(
        vec![data_segment(at, src_mh, s.size)],
        ep.peer_dst.0 + slot * size,
        ep.peer_dst.1,
        None,
    );
    let desc_va = out.descs + slot * DESC_SLOT;
    vipl.build_descriptor(desc_va, &desc).await.call("build")?;
    let start = vipl.now();
    vipl.vip_post_send(ep.vi, desc_va, out.descs_mh)
        .await
        .call("VipPostSend")?;
    Ok(IterationRecord {
        index: i,
        bytes: s.size,
        start,
        end: start,
        verified_bytes: 0,
        warmup: false,
    })
}

/// The sending side: one record per message (`start` when posted, `end` when its send
/// completed).
///
/// # Errors
/// The first failing VIPL call or a completion in error.
pub async fn stream_sender(mut vipl: Vipl, p: PingPongParams, s: StreamParams) -> ProgramResult {
    check(&s)?;
    let ep = setup(&mut vipl, &ring(&p, &s)?, Role::Initiator, false).await?;
    let out = descriptor_region(&mut vipl, &ep, &s).await?;
    let mut report = ProgramReport {
        program: "stream-sender",
        setup_done: vipl.now(),
        ..ProgramReport::default()
    };
    let mut pending: std::collections::VecDeque<usize> = std::collections::VecDeque::new();
    for i in 0..s.messages {
        if pending.len() >= s.window as usize {
            complete_oldest(&mut vipl, &ep, &mut pending, &mut report, p.wait_timeout).await?;
        }
        vipl.set_trace_msg(MsgId(u64::from(i)));
        let rec = post_message(&mut vipl, &ep, out, &s, i, Direction::Ping, p.touch_data).await?;
        report.iterations.push(rec);
        pending.push_back(report.iterations.len() - 1);
    }
    while !pending.is_empty() {
        complete_oldest(&mut vipl, &ep, &mut pending, &mut report, p.wait_timeout).await?;
    }
    teardown(&mut vipl, &ep).await;
    report.finished = vipl.now();
    Ok(report)
}

/// VipSendWait for the oldest outstanding send; its record ends now.
async fn complete_oldest(
    vipl: &mut Vipl,
    ep: &Endpoint,
    pending: &mut std::collections::VecDeque<usize>,
    report: &mut ProgramReport,
    timeout: crate::vipl::Timeout,
) -> Result<(), ProgramError> {
    let c = vipl
        .vip_send_wait(ep.vi, timeout)
        .await
        .call("VipSendWait")?;
    super::setup::checked(c, "VipSendWait")?;
    if let Some(k) = pending.pop_front() {
        if let Some(r) = report.iterations.get_mut(k) {
            r.end = vipl.now();
        }
    }
    Ok(())
}

/// The receiving side: one record per message (`start` when it began polling for it,
/// `end` when its flag was seen), every byte checked.
///
/// # Errors
/// The first failing VIPL call, or a byte that does not match.
pub async fn stream_receiver(mut vipl: Vipl, p: PingPongParams, s: StreamParams) -> ProgramResult {
    check(&s)?;
    let ep = setup(&mut vipl, &ring(&p, &s)?, Role::Responder, false).await?;
    let mut report = ProgramReport {
        program: "stream-receiver",
        setup_done: vipl.now(),
        ..ProgramReport::default()
    };
    let size = u64::from(s.size);
    for i in 0..s.messages {
        vipl.set_trace_msg(MsgId(u64::from(i)));
        let at = ep.dst.0 + u64::from(i % s.window) * size;
        let start = vipl.now();
        vipl.poll_mem(
            at + size - 1,
            PollCond::ByteEquals(super::flag(i)),
            p.wait_timeout,
        )
        .await
        .call("poll")?;
        let end = vipl.now();
        let verified = verify(
            &vipl,
            at,
            &pattern(i, Direction::Ping, s.size),
            p.touch_data,
            i,
        )
        .await?;
        report.iterations.push(IterationRecord {
            index: i,
            bytes: s.size,
            start,
            end,
            verified_bytes: verified,
            warmup: false,
        });
    }
    teardown(&mut vipl, &ep).await;
    report.finished = vipl.now();
    Ok(report)
}

/// Both directions at once (`bidirectional`): each side streams `s` to the other while
/// it receives the other's stream, in one loop: complete what is done, post while the
/// window allows, look for the next incoming message (a poll of its flag with a short
/// deadline). Records: one per message sent (`start` posted, `end` completed,
/// `verified_bytes` 0) and one per message received (`start` when it began looking,
/// `end` when seen, every byte checked), in the order they happened.
///
/// # Errors
/// The first failing VIPL call, a completion in error, or a byte that does not match.
pub async fn stream_duplex(
    mut vipl: Vipl,
    p: PingPongParams,
    s: StreamParams,
    initiator: bool,
) -> ProgramResult {
    check(&s)?;
    let role = if initiator {
        Role::Initiator
    } else {
        Role::Responder
    };
    let (out_dir, in_dir) = if initiator {
        (Direction::Ping, Direction::Pong)
    } else {
        (Direction::Pong, Direction::Ping)
    };
    let ep = setup(&mut vipl, &ring(&p, &s)?, role, false).await?;
    let out = descriptor_region(&mut vipl, &ep, &s).await?;
    let mut report = ProgramReport {
        program: if initiator {
            "duplex-initiator"
        } else {
            "duplex-responder"
        },
        setup_done: vipl.now(),
        ..ProgramReport::default()
    };
    let size = u64::from(s.size);
    let look = crate::vipl::Timeout::After(sim_kernel::Duration::from_ns(2_000));
    let mut pending: std::collections::VecDeque<usize> = std::collections::VecDeque::new();
    let (mut sent, mut received) = (0u32, 0u32);
    let mut looking_since = None;
    while sent < s.messages || received < s.messages || !pending.is_empty() {
        // Completions first, without blocking.
        while !pending.is_empty() {
            match vipl.vip_send_done(ep.vi).await {
                Ok(c) => {
                    super::setup::checked(c, "VipSendDone")?;
                    if let Some(r) = pending
                        .pop_front()
                        .and_then(|k| report.iterations.get_mut(k))
                    {
                        r.end = vipl.now();
                    }
                }
                Err(crate::vipl::VipError::NotDone) => break,
                Err(error) => {
                    return Err(ProgramError::Vipl {
                        call: "VipSendDone",
                        error,
                    })
                }
            }
        }
        if sent < s.messages && pending.len() < s.window as usize {
            let rec = post_message(&mut vipl, &ep, out, &s, sent, out_dir, p.touch_data).await?;
            report.iterations.push(rec);
            pending.push_back(report.iterations.len() - 1);
            sent += 1;
            continue;
        }
        if received < s.messages {
            let j = received;
            let at = ep.dst.0 + u64::from(j % s.window) * size;
            let since = *looking_since.get_or_insert(vipl.now());
            match vipl
                .poll_mem(
                    at + size - 1,
                    PollCond::ByteEquals(super::flag(j)),
                    // With nothing of its own left to post or complete, the loop only
                    // waits for the peer: an untimed poll, so a message that never comes
                    // leaves the run stalled (and diagnosed), never spinning.
                    if sent == s.messages && pending.is_empty() {
                        p.wait_timeout
                    } else {
                        look
                    },
                )
                .await
            {
                Ok(_) => {
                    let end = vipl.now();
                    let verified =
                        verify(&vipl, at, &pattern(j, in_dir, s.size), p.touch_data, j).await?;
                    report.iterations.push(IterationRecord {
                        index: j,
                        bytes: s.size,
                        start: since,
                        end,
                        verified_bytes: verified,
                        warmup: false,
                    });
                    received += 1;
                    looking_since = None;
                }
                Err(crate::vipl::VipError::Timeout) => {}
                Err(error) => {
                    return Err(ProgramError::Vipl {
                        call: "poll",
                        error,
                    })
                }
            }
        } else if !pending.is_empty() {
            let c = vipl
                .vip_send_wait(ep.vi, p.wait_timeout)
                .await
                .call("VipSendWait")?;
            super::setup::checked(c, "VipSendWait")?;
            if let Some(r) = pending
                .pop_front()
                .and_then(|k| report.iterations.get_mut(k))
            {
                r.end = vipl.now();
            }
        }
    }
    teardown(&mut vipl, &ep).await;
    report.finished = vipl.now();
    Ok(report)
}
