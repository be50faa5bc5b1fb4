//! Streams between many nodes at once (`incast`, `all-to-all`): one program per node,
//! one VI per peer, RDMA write into a ring per sender at each receiver, as in
//! [`super::stream_sender`] / [`super::stream_receiver`].
//!
//! **Connections.** Every node opens its NIC once, then connects to its peers one after
//! the other, in a fixed order that never deadlocks: first it accepts each lower rank,
//! ascending (`VipConnectWait`), then it requests each higher rank, ascending
//! (`VipConnectRequest`). A pair `(a, b)` (`a < b`) uses its own discriminator
//! ([`mesh_discriminator`]), so a request can never land on the VI meant for another
//! peer; a request that arrives before its listener is kept by the card (or refused
//! when too many are kept, and then retried). Each connection exchanges the RDMA targets
//! as in the two-node set-up, over one shared control region. Then a start barrier
//! (ready to node 0, go from node 0, over send/receive): no data flows before every
//! connection is made, so no set-up message has to compete with data.
//!
//! **The loop.** Posting follows a fixed order, message-major and staggered by rank:
//! message 0 to `sends_to[0]`, `sends_to[1]`, ..., then message 1, ... (the caller gives
//! `sends_to` starting at rank+1, rank+2, ..., so the senders do not all hit one node
//! first). A post waits while its peer has `slots` sends outstanding (`slots` =
//! min(window, messages), also the ring slots). Between posts the node looks for the next
//! message of each sender in turn, a poll of its flag byte with a short deadline
//! ([`LOOK`]). With nothing to post and nothing to receive it waits for its oldest send.
//!
//! **Loss.** On an unreliable VI a message can be lost (a frame dropped on the wire or
//! in the switch: the card fails the message, its flag never lands). Frames of one VI
//! arrive in order, so once a later message of the same sender is visible, an earlier
//! one that is not has been lost: when a sender's next message has been awaited for
//! [`SCAN_AFTER`] the receiver reads the flag bytes of the sender's ring (at most once per
//! [`SCAN_AFTER`] per sender) and counts the messages before the latest one it finds as
//! lost (or takes those whose flag is there). When no message at all arrived for
//! `quiet` (the caller's `wait_timeout`), the senders are done or can no longer get
//! through: the receiver scans once more and counts what is still missing as lost. It
//! never waits for ever on a message that will not come. A sender whose receiver has
//! given up (and disconnected: `VipPostSend` finds the VI no longer connected) sends no
//! more on that VI. The ring has no credit flow back to the sender: a slot is reused once
//! the send that last used it completed (its frames left the card), so a receiver that
//! falls `window` messages behind a sender finds a message overwritten before it read
//! it, and counts it lost too although its card delivered it (`lost_messages` then
//! exceeds the cards' `delivery.lost`). (A flag is `i % 255 + 1`, so a
//! ring byte is ambiguous only after 255 / slots losses in a row in one slot.)
//!
//! **Records** (one [`ProgramReport`]): a sent message's record has `verified_bytes`
//! 0, `start` when posted, `end` when its send completed; a received one has
//! `verified_bytes` = its size (every byte checked), `start` when the receiver began
//! looking for it, `end` when it saw the flag. `index` is [`mesh_index`]`(peer, i)`:
//! the peer it went to or came from and its number in that pair's stream. Lost messages
//! have no record: the harness counts them as the messages a pair's receiver has no
//! record of.

use std::collections::VecDeque;

use super::setup::{
    alloc_registered, connect_peer, open_nic, post_send_and_wait, recv_wait, ConnectionPlan,
    OpenNic, Role, CTL_BYTES,
};
use super::stream::StreamParams;
use super::{fill, flag, pattern, verify, Direction, PingPongParams};
use crate::ops::PollCond;
use crate::program::{CallExt, IterationRecord, ProgramError, ProgramReport, ProgramResult};
use crate::vipl::descriptor::{data_segment, rdma_write_descriptor, send_descriptor};
use crate::vipl::{Timeout, ViHandle, VipError, Vipl};
use sim_kernel::{Duration, MsgId, Time};
use via_abi::{MacAddr, MemHandle};

/// Messages per pair at most in a record index: [`mesh_index`] is `peer * STRIDE + i`.
pub const MESH_STRIDE: u32 = 1 << 17;

/// How long one look for a sender's next message lasts: a few frame times of a
/// gigabit wire (a 1514-byte frame takes 12.3 us), so a node that sends and receives
/// turns back to its posts soon, and the round over its senders stays short.
pub const LOOK: Duration = Duration::from_ns(2_000);

/// How long a sender's next message is awaited before the receiver looks for later
/// ones in its ring (loss detection, see the module doc): about one 64 KiB message at
/// the gigabit line rate.
pub const SCAN_AFTER: Duration = Duration::from_ns(500_000);

/// Bytes of one descriptor slot.
const DESC_SLOT: u64 = 64;

/// Bytes of one start-barrier slot: receive descriptor, send descriptor, message.
const BARRIER_SLOT: u64 = 192;

/// Bytes of a start-barrier message.
const BARRIER_BYTES: u32 = 4;

/// The record index of message `i` to or from `peer`.
#[must_use]
pub fn mesh_index(peer: u32, i: u32) -> u32 {
    peer.saturating_mul(MESH_STRIDE).saturating_add(i)
}

/// The peer and message number of a record index (see [`mesh_index`]).
#[must_use]
pub fn mesh_peer_message(index: u32) -> (u32, u32) {
    (index / MESH_STRIDE, index % MESH_STRIDE)
}

/// The connect discriminator of the pair of ranks `a`, `b` (either order): distinct
/// for every pair of 64 nodes.
#[must_use]
pub fn mesh_discriminator(a: u32, b: u32) -> u32 {
    let (lo, hi) = (a.min(b) & 0xFF, a.max(b) & 0xFF);
    0x4D45_0000 | (lo << 8) | hi
}

/// One node's part of a many-node pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MeshParams {
    /// This node's rank.
    pub rank: u32,
    /// Every node's MAC address, by rank.
    pub macs: Vec<MacAddr>,
    /// The ranks this node streams to, in posting order.
    pub sends_to: Vec<u32>,
    /// The ranks that stream to this node.
    pub receives_from: Vec<u32>,
    /// Size, messages per pair and window of every stream.
    pub stream: StreamParams,
    /// No message arriving for this long ends the receiving: what is missing is lost.
    pub quiet: Duration,
}

/// The pair's message direction: from the lower rank `Ping`, else `Pong`.
fn direction(from: u32, to: u32) -> Direction {
    if from < to {
        Direction::Ping
    } else {
        Direction::Pong
    }
}

struct Out {
    peer: u32,
    vi: ViHandle,
    src: (u64, MemHandle),
    descs: (u64, MemHandle),
    target: (u64, MemHandle),
    posted: u32,
    pending: VecDeque<usize>,
}

struct In {
    peer: u32,
    ring: u64,
    next: u32,
    since: Option<Time>,
    scanned: Time,
}

fn check(m: &MeshParams) -> Result<u32, ProgramError> {
    let s = m.stream;
    if s.size == 0 || s.messages == 0 || !(1..=64).contains(&s.window) {
        return Err(ProgramError::Protocol(
            "a stream needs size >= 1, messages >= 1 and a window of 1 to 64",
        ));
    }
    if s.messages >= MESH_STRIDE {
        return Err(ProgramError::Protocol("at most 131071 messages per pair"));
    }
    let n = u32::try_from(m.macs.len()).unwrap_or(u32::MAX);
    let ok = |r: &u32| *r < n && *r != m.rank;
    if m.rank >= n || !m.sends_to.iter().all(ok) || !m.receives_from.iter().all(ok) {
        return Err(ProgramError::Protocol("a peer rank outside the nodes"));
    }
    Ok(s.window.min(s.messages))
}

/// One node of a many-node pattern (see the module doc).
///
/// # Errors
/// The first failing VIPL call, a completion in error, a byte that does not match, or
/// a peer whose ring is smaller than this node's messages need.
#[allow(clippy::too_many_lines)]
pub async fn mesh_node(mut vipl: Vipl, p: PingPongParams, m: MeshParams) -> ProgramResult {
    let slots = check(&m)?;
    let s = m.stream;
    let size = u64::from(s.size);
    let ring_bytes = s
        .size
        .checked_mul(slots)
        .ok_or(ProgramError::Protocol("the ring does not fit 4 GiB"))?;
    let open = open_nic(&mut vipl).await?;
    let ctl = alloc_registered(&mut vipl, &open, CTL_BYTES, false, false).await?;
    let n = u64::try_from(m.macs.len()).unwrap_or(u64::MAX);
    let barrier = alloc_registered(
        &mut vipl,
        &open,
        BARRIER_SLOT * if m.rank == 0 { n } else { 1 },
        false,
        false,
    )
    .await?;
    let bslot = |peer: u32| {
        let k = if m.rank == 0 { u64::from(peer) } else { 0 };
        barrier.0 + k * BARRIER_SLOT
    };
    let mut barrier_vis: Vec<(u32, ViHandle)> = Vec::new();
    let mut regions = vec![ctl, barrier];
    let mut peers: Vec<u32> = m.sends_to.iter().chain(&m.receives_from).copied().collect();
    peers.sort_unstable();
    peers.dedup();
    // Lower ranks first (they request, we accept), then higher ones (we request).
    let mut outs: Vec<Out> = Vec::new();
    let mut ins: Vec<In> = Vec::new();
    for &peer in &peers {
        let receives = m.receives_from.contains(&peer);
        let sends = m.sends_to.contains(&peer);
        let ring = if receives {
            let r = alloc_registered(&mut vipl, &open, u64::from(ring_bytes), true, false).await?;
            regions.push(r);
            Some(r)
        } else {
            None
        };
        let conn = PingPongParams {
            peer: m.macs.get(peer as usize).copied().unwrap_or(open.mac),
            discriminator: mesh_discriminator(m.rank, peer),
            ..p
        };
        let role = if peer < m.rank {
            Role::Responder
        } else {
            Role::Initiator
        };
        let plan = ConnectionPlan {
            ctl,
            target: ring.map_or((0, MemHandle::from_raw(0), 0), |(va, mh)| {
                (va, mh, ring_bytes)
            }),
            max_transfer: s.size,
            // The start barrier's message (ready at node 0, go at the others), posted
            // before connecting so it always finds its receive.
            data_recv: (m.rank == 0 || peer == 0).then_some((
                (bslot(peer), barrier.1),
                (bslot(peer) + 2 * DESC_SLOT, barrier.1, BARRIER_BYTES),
            )),
        };
        let (vi, (peer_va, peer_mh, peer_len)) =
            connect_peer(&mut vipl, &open, &conn, role, &plan).await?;
        if m.rank == 0 || peer == 0 {
            barrier_vis.push((peer, vi));
        }
        if let Some((va, _)) = ring {
            ins.push(In {
                peer,
                ring: va,
                next: 0,
                since: None,
                scanned: Time::ZERO,
            });
        }
        if sends {
            if peer_len < ring_bytes {
                return Err(ProgramError::Protocol(
                    "a peer's ring is smaller than the stream needs",
                ));
            }
            let src =
                alloc_registered(&mut vipl, &open, u64::from(ring_bytes), false, false).await?;
            let descs =
                alloc_registered(&mut vipl, &open, DESC_SLOT * u64::from(slots), false, false)
                    .await?;
            regions.extend([src, descs]);
            outs.push(Out {
                peer,
                vi,
                src,
                descs,
                target: (peer_va, peer_mh),
                posted: 0,
                pending: VecDeque::new(),
            });
        } else {
            // Only receives on this VI: nothing to keep but the handle for teardown.
            outs.push(Out {
                peer,
                vi,
                src: (0, MemHandle::from_raw(0)),
                descs: (0, MemHandle::from_raw(0)),
                target: (0, MemHandle::from_raw(0)),
                posted: s.messages, // nothing to post
                pending: VecDeque::new(),
            });
        }
    }
    start_barrier(
        &mut vipl,
        &m,
        &barrier_vis,
        bslot,
        barrier.1,
        p.wait_timeout,
    )
    .await?;
    // Posting order: message-major over `sends_to` as given.
    let order: Vec<usize> = m
        .sends_to
        .iter()
        .filter_map(|r| outs.iter().position(|o| o.peer == *r))
        .collect();
    let mut report = ProgramReport {
        program: "mesh-node",
        setup_done: vipl.now(),
        ..ProgramReport::default()
    };
    let total_posts = order.len() * s.messages as usize;
    let mut post_at = 0usize;
    let mut turn = 0usize; // which sender to look at next
    let mut last_arrival = vipl.now();
    loop {
        let receiving = ins.iter().any(|r| r.next < s.messages);
        // Post the next message if its peer's window allows.
        if post_at < total_posts {
            let k = order[post_at % order.len()];
            let o = &mut outs[k];
            reap(&mut vipl, o, &mut report, false).await?;
            if o.pending.len() < slots as usize {
                let i = o.posted;
                match post(&mut vipl, o, &s, slots, m.rank, i, p.touch_data).await? {
                    Some(rec) => {
                        report.iterations.push(rec);
                        o.pending.push_back(report.iterations.len() - 1);
                    }
                    None => {
                        // The receiver gave up and disconnected (see the module doc):
                        // the rest of this stream is not sent; it counts them lost.
                        tracing::warn!(target: "host::mesh", rank = m.rank, peer = o.peer, unsent = s.messages - i, "the receiver disconnected: the rest of the stream is not sent");
                    }
                }
                o.posted += 1;
                post_at += 1;
                continue;
            }
        }
        if receiving {
            let live: Vec<usize> = (0..ins.len())
                .filter(|&k| ins[k].next < s.messages)
                .collect();
            let k = live[turn % live.len()];
            turn = turn.wrapping_add(1);
            let only_waiting = post_at == total_posts
                && outs.iter().all(|o| o.pending.is_empty())
                && live.len() == 1;
            let r = &mut ins[k];
            let j = r.next;
            let at = r.ring + u64::from(j % slots) * size;
            let since = *r.since.get_or_insert(vipl.now());
            let dir = direction(r.peer, m.rank);
            let look = if only_waiting {
                Timeout::After(m.quiet)
            } else {
                Timeout::After(LOOK)
            };
            vipl.set_trace_msg(MsgId(u64::from(mesh_index(r.peer, j))));
            match vipl
                .poll_mem(at + size - 1, PollCond::ByteEquals(flag(j)), look)
                .await
            {
                Ok(_) => {
                    let end = vipl.now();
                    let verified =
                        verify(&vipl, at, &pattern(j, dir, s.size), p.touch_data, j).await?;
                    report.iterations.push(IterationRecord {
                        index: mesh_index(r.peer, j),
                        bytes: s.size,
                        start: since,
                        end,
                        verified_bytes: verified,
                        warmup: false,
                    });
                    r.next += 1;
                    r.since = None;
                    last_arrival = end;
                }
                Err(VipError::Timeout) => {
                    let now = vipl.now();
                    let quiet = now.as_ps().saturating_sub(last_arrival.as_ps()) >= m.quiet.as_ps();
                    let stuck = now.as_ps().saturating_sub(since.as_ps()) >= SCAN_AFTER.as_ps()
                        && now.as_ps().saturating_sub(r.scanned.as_ps()) >= SCAN_AFTER.as_ps();
                    if stuck || quiet {
                        r.scanned = now;
                        let before = r.next;
                        scan(&vipl, r, &s, slots, m.rank, p.touch_data, &mut report).await?;
                        if r.next != before {
                            last_arrival = vipl.now();
                        } else if quiet {
                            // Nothing came for `quiet`: what is missing is lost.
                            tracing::warn!(target: "host::mesh", rank = m.rank, peer = r.peer, missing = s.messages - r.next, "no message for the quiet time: the rest counted lost");
                            r.next = s.messages;
                        }
                    }
                }
                Err(error) => {
                    return Err(ProgramError::Vipl {
                        call: "poll",
                        error,
                    })
                }
            }
            continue;
        }
        // Nothing to receive: wait for the oldest outstanding send.
        if let Some(o) = outs.iter_mut().find(|o| !o.pending.is_empty()) {
            reap(&mut vipl, o, &mut report, true).await?;
            continue;
        }
        if post_at >= total_posts {
            break;
        }
    }
    // Teardown: every VI, then the memory, the tag and the NIC (best effort, as in the
    // two-node teardown: a peer may have disconnected first).
    for o in &outs {
        let _ = vipl.vip_disconnect(o.vi).await;
        let _ = vipl.vip_destroy_vi(o.vi).await;
    }
    close(&mut vipl, &open, &regions).await;
    report.finished = vipl.now();
    Ok(report)
}

/// No data before every node is connected: set-up messages (unreliable VIs) would
/// compete with data for the switch's queues and the receivers' FIFOs. Each node sends
/// "ready" to node 0 once all its connections are made; node 0, once it has every
/// node's, sends each "go".
async fn start_barrier(
    vipl: &mut Vipl,
    m: &MeshParams,
    vis: &[(u32, ViHandle)],
    slot: impl Fn(u32) -> u64,
    mh: MemHandle,
    timeout: Timeout,
) -> Result<(), ProgramError> {
    let n = u32::try_from(m.macs.len()).unwrap_or(u32::MAX);
    // The barrier message to or from `peer`: its send descriptor, built.
    let send = |peer: u32| {
        let at = slot(peer);
        let desc = send_descriptor(
            vec![data_segment(at + 2 * DESC_SLOT, mh, BARRIER_BYTES)],
            None,
        );
        (at + DESC_SLOT, desc)
    };
    if m.rank == 0 {
        if u32::try_from(vis.len()).unwrap_or(0) + 1 != n {
            return Err(ProgramError::Protocol(
                "node 0 needs a connection to every node (the start barrier)",
            ));
        }
        for &(_, vi) in vis {
            recv_wait(vipl, vi, timeout).await?;
        }
        for &(peer, vi) in vis {
            let (va, desc) = send(peer);
            vipl.build_descriptor(va, &desc).await.call("build")?;
            post_send_and_wait(vipl, vi, va, mh, timeout).await?;
        }
    } else {
        let Some(&(_, vi)) = vis.first() else {
            return Err(ProgramError::Protocol(
                "every node needs a connection to node 0 (the start barrier)",
            ));
        };
        let (va, desc) = send(0);
        vipl.build_descriptor(va, &desc).await.call("build")?;
        post_send_and_wait(vipl, vi, va, mh, timeout).await?;
        recv_wait(vipl, vi, timeout).await?;
    }
    Ok(())
}

/// Completions of `o`'s sends: without waiting (`block` false, until none is done), or
/// the oldest one, waiting. A send flushed by the peer's disconnect counts as done: the
/// peer disconnects only once it has all it will get.
async fn reap(
    vipl: &mut Vipl,
    o: &mut Out,
    report: &mut ProgramReport,
    block: bool,
) -> Result<(), ProgramError> {
    while !o.pending.is_empty() {
        let r = if block {
            vipl.vip_send_wait(o.vi, Timeout::Infinite).await
        } else {
            vipl.vip_send_done(o.vi).await
        };
        match r {
            Ok(c) => {
                if c.status.errors() != via_abi::Status::FLUSHED {
                    super::setup::checked(c, "VipSendWait")?;
                }
                if let Some(rec) = o
                    .pending
                    .pop_front()
                    .and_then(|k| report.iterations.get_mut(k))
                {
                    rec.end = vipl.now();
                }
                if block {
                    return Ok(());
                }
            }
            Err(VipError::NotDone) => return Ok(()),
            Err(error) => {
                return Err(ProgramError::Vipl {
                    call: "VipSendDone",
                    error,
                })
            }
        }
    }
    Ok(())
}

/// Fills slot `i % slots` of `o`'s ring with message `i` and posts its RDMA write to
/// the same slot of the peer's ring; the record starts (and ends) at the post. `None`:
/// the VI is no longer connected (the receiver gave up and disconnected).
async fn post(
    vipl: &mut Vipl,
    o: &Out,
    s: &StreamParams,
    slots: u32,
    rank: u32,
    i: u32,
    touch: bool,
) -> Result<Option<IterationRecord>, ProgramError> {
    let size = u64::from(s.size);
    let slot = u64::from(i % slots);
    let at = o.src.0 + slot * size;
    vipl.set_trace_msg(MsgId(u64::from(mesh_index(o.peer, i))));
    fill(vipl, at, pattern(i, direction(rank, o.peer), s.size), touch)
        .await
        .call("store")?;
    let desc = rdma_write_descriptor(
        vec![data_segment(at, o.src.1, s.size)],
        o.target.0 + slot * size,
        o.target.1,
        None,
    );
    let desc_va = o.descs.0 + slot * DESC_SLOT;
    vipl.build_descriptor(desc_va, &desc).await.call("build")?;
    let start = vipl.now();
    match vipl.vip_post_send(o.vi, desc_va, o.descs.1).await {
        Ok(()) => {}
        Err(VipError::InvalidState) => return Ok(None),
        Err(error) => {
            return Err(ProgramError::Vipl {
                call: "VipPostSend",
                error,
            })
        }
    }
    Ok(Some(IterationRecord {
        index: mesh_index(o.peer, i),
        bytes: s.size,
        start,
        end: start,
        verified_bytes: 0,
        warmup: false,
    }))
}

/// Reads the flag byte of every slot of `r`'s ring (costed loads) and finds the latest
/// message of the sender that has landed; every message before it is either there
/// (taken, every byte checked) or lost (skipped).
async fn scan(
    vipl: &Vipl,
    r: &mut In,
    s: &StreamParams,
    slots: u32,
    rank: u32,
    touch: bool,
    report: &mut ProgramReport,
) -> Result<(), ProgramError> {
    let size = u64::from(s.size);
    let last_byte = |k: u32| r.ring + u64::from(k % slots) * size + size - 1;
    let mut horizon = None;
    for d in 0..slots {
        let k = r.next + d;
        if k >= s.messages {
            break;
        }
        let b = vipl.read_mem(last_byte(k), 1).await.call("load")?;
        let b = b.first().copied().unwrap_or(0);
        let later = k + slots;
        if later < s.messages && b == flag(later) {
            horizon = horizon.max(Some(later));
        } else if b == flag(k) {
            horizon = horizon.max(Some(k));
        }
    }
    let Some(horizon) = horizon else {
        return Ok(());
    };
    let dir = direction(r.peer, rank);
    while r.next < horizon.min(s.messages) {
        let j = r.next;
        let at = r.ring + u64::from(j % slots) * size;
        let b = vipl.read_mem(at + size - 1, 1).await.call("load")?;
        if b.first() == Some(&flag(j)) {
            let since = r.since.unwrap_or_else(|| vipl.now());
            let verified = verify(vipl, at, &pattern(j, dir, s.size), touch, j).await?;
            report.iterations.push(IterationRecord {
                index: mesh_index(r.peer, j),
                bytes: s.size,
                start: since,
                end: vipl.now(),
                verified_bytes: verified,
                warmup: false,
            });
        } else {
            tracing::debug!(target: "host::mesh", rank, peer = r.peer, message = j, "a later message landed first: this one is lost");
        }
        r.next += 1;
        r.since = None;
    }
    Ok(())
}

/// Deregisters `regions`, destroys the tag and closes the NIC; failures are logged.
async fn close(vipl: &mut Vipl, open: &OpenNic, regions: &[(u64, MemHandle)]) {
    for &(va, mh) in regions.iter().rev() {
        if let Err(e) = vipl.vip_deregister_mem(open.nic, va, mh).await {
            tracing::debug!(target: "host::mesh", %e, "VipDeregisterMem failed");
        }
    }
    for (call, r) in [
        (
            "VipDestroyPtag",
            vipl.vip_destroy_ptag(open.nic, open.ptag).await,
        ),
        ("VipCloseNic", vipl.vip_close_nic(open.nic).await),
    ] {
        if let Err(e) = r {
            tracing::debug!(target: "host::mesh", call, %e, "teardown step failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pair_of_64_nodes_has_its_own_discriminator() {
        let mut seen = std::collections::BTreeSet::new();
        for a in 0..64 {
            for b in a + 1..64 {
                assert_eq!(mesh_discriminator(a, b), mesh_discriminator(b, a));
                assert!(seen.insert(mesh_discriminator(a, b)), "({a}, {b})");
            }
        }
        // None is the two-node programs' discriminator.
        assert!(!seen.contains(&0x5649_4121));
    }

    #[test]
    fn record_indices_give_back_peer_and_message() {
        for (peer, i) in [(0, 0), (63, 100_000), (5, MESH_STRIDE - 1)] {
            assert_eq!(mesh_peer_message(mesh_index(peer, i)), (peer, i));
        }
    }
}
