//! The many-node traffic patterns of `hvia traffic` (`incast`: nodes 1 .. N-1 each
//! stream to node 0; `all-to-all`: every node streams to every other), run with
//! `host_driver::programs::mesh_node` on every node, and their figures: per node and
//! aggregate bandwidth, each message's latency under load (posted to seen), PAUSE
//! frames, drops, and what became of every message.
//!
//! **Delivery.** Every pair's receiver checks every byte of every message it sees; a
//! message it never saw is counted lost (`lost_messages`): on unreliable VIs the card
//! fails a message one of whose frames was dropped, and the receiving program gives up
//! on it once a later message of the same sender has landed, or once nothing at all has
//! arrived for the quiet time (`quiet`; `hvia traffic` uses [`quiet_time`]: 10 ms plus
//! the wire time of everything that can be in flight to one receiver, far above the gap
//! between two whole messages of a healthy stream, even behind PAUSE). A message
//! overwritten in its ring slot before the receiver read it (the ring has no credit
//! flow back, see `mesh_node`) is counted lost too. So nothing is silently missing:
//! `received_messages + lost_messages` is every message sent. A run that cannot go on
//! (a connection that never comes, a send that never completes) stops with the stall
//! diagnosis.

use std::collections::HashMap;

use host_driver::programs::{
    mesh_node, mesh_peer_message, MeshParams, PingPongParams, StreamParams,
};
use host_driver::ProgramReport;
use sim_kernel::{Duration, RunStats};

use super::delivery::Delivery;
use super::pingpong::RunError;
use super::run::RunEnd;
use super::System;
use crate::config::SystemConfig;

/// The quiet time after which a receiver counts what is missing as lost (see the
/// module doc).
pub const QUIET: Duration = Duration::from_ns(10_000_000);

/// The quiet time for a run over `n` nodes: [`QUIET`] plus the wire time at 1 Gb/s
/// (8 ns a byte) of everything that can be in flight to one receiver at once (in incast
/// and all-to-all a receiver has N-1 senders, each with `min(window, messages)`
/// messages of `size` outstanding): with many senders sharing one port, a receiver may
/// wait that long for its next whole message while every sender progresses.
#[must_use]
pub fn quiet_time(n: u32, s: StreamParams) -> Duration {
    let senders = u64::from(n.saturating_sub(1));
    let bytes = senders * u64::from(s.window.min(s.messages)) * u64::from(s.size);
    Duration::from_ns(QUIET.as_ps() / 1000 + bytes.saturating_mul(8))
}

/// Which many-node pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MeshPattern {
    /// Nodes 1 .. N-1 each stream to node 0.
    Incast,
    /// Every node streams to every other, staggered (node r to r+1, r+2, ...).
    AllToAll,
}

/// One node's figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeFigures {
    /// Its rank.
    pub node: usize,
    /// Messages it posted.
    pub sent_messages: u64,
    /// Their bytes.
    pub sent_bytes: u64,
    /// Messages it received, every byte checked.
    pub received_messages: u64,
    /// Their bytes.
    pub received_bytes: u64,
    /// Messages sent to it that it never saw.
    pub lost_messages: u64,
    /// Received bytes over its first incoming post to its last message seen \[MB/s\].
    pub receive_mb_s: f64,
    /// Sent bytes over its first post to its last send completed \[MB/s\].
    pub send_mb_s: f64,
    /// PAUSE frames its DP83820 sent (pause and resume).
    pub pause_frames: u64,
}

/// One finished many-node run.
pub struct MeshRun {
    /// The pattern.
    pub pattern: MeshPattern,
    /// Size, messages per pair, window.
    pub params: StreamParams,
    /// Every node's program report, by rank.
    pub reports: Vec<ProgramReport>,
    /// Every node's figures, by rank.
    pub per_node: Vec<NodeFigures>,
    /// All bytes received over the first post to the last message seen \[MB/s\].
    pub aggregate_mb_s: f64,
    /// Each received message's latency under load, posted to seen, sorted \[ps\].
    pub latencies_ps: Vec<u64>,
    /// Messages the pattern sends.
    pub expected_messages: u64,
    /// PAUSE frames the DP83820s and the switch sent (pauses and resumes).
    pub pause_frames: u64,
    /// What became of the messages, from the cards' and switch's counters.
    pub delivery: Delivery,
    /// Kernel statistics of the run.
    pub stats: RunStats,
    /// Every component's counters at the end (what `--stats FILE` writes).
    pub counters: Vec<crate::stats::Counter>,
}

impl MeshRun {
    /// Messages received by some node.
    #[must_use]
    pub fn received_messages(&self) -> u64 {
        self.per_node.iter().map(|n| n.received_messages).sum()
    }

    /// Messages sent and never seen by their receiver.
    #[must_use]
    pub fn lost_messages(&self) -> u64 {
        self.per_node.iter().map(|n| n.lost_messages).sum()
    }
}

/// The peers node `rank` of `n` sends to (in posting order) and receives from.
#[must_use]
pub fn plan(pattern: MeshPattern, rank: u32, n: u32) -> (Vec<u32>, Vec<u32>) {
    match pattern {
        MeshPattern::Incast if rank == 0 => (Vec::new(), (1..n).collect()),
        MeshPattern::Incast => (vec![0], Vec::new()),
        MeshPattern::AllToAll => (
            (1..n).map(|d| (rank + d) % n).collect(),
            (0..n).filter(|&r| r != rank).collect(),
        ),
    }
}

/// Runs `pattern` over every node of `cfg` (`topology.nodes`) with streams `s`;
/// receivers give up on missing messages after `quiet` without any arrival.
///
/// # Errors
/// The system cannot be built, a program fails, or the run cannot go on.
pub fn run_mesh(
    cfg: &SystemConfig,
    pattern: MeshPattern,
    s: StreamParams,
    quiet: Duration,
) -> Result<MeshRun, RunError> {
    let mut sys = System::build(cfg, false)?;
    let n = u32::try_from(sys.nodes.len()).unwrap_or(u32::MAX);
    let mut p = PingPongParams::new(s.size.max(1), 1, sys.macs[0]);
    p.wait_timeout = host_driver::Timeout::Infinite;
    p.reliability = cfg.via.reliability.level();
    // A request refused because the card keeps too many early ones is retried; with no
    // timeout on the waits, a connection that never comes is a stall, diagnosed.
    p.connect_attempts = u32::MAX;
    for rank in 0..n {
        let (sends_to, receives_from) = plan(pattern, rank, n);
        let m = MeshParams {
            rank,
            macs: sys.macs.clone(),
            sends_to,
            receives_from,
            stream: s,
            quiet,
        };
        if let Some(c) = sys.cpu_mut(rank as usize) {
            c.load(move |v| mesh_node(v, p, m));
        }
    }
    sys.start();
    if let RunEnd::Stalled(stall) = sys.run_programs() {
        return Err(RunError::Stalled(stall));
    }
    // A failed program stops the run at once: report it, not the others' missing
    // outcomes.
    let outcomes: Vec<_> = (0..sys.nodes.len())
        .map(|k| sys.cpu_mut(k).and_then(host_driver::HostCpu::take_outcome))
        .collect();
    if let Some((node, e)) = outcomes.iter().enumerate().find_map(|(k, o)| match o {
        Some(Err(e)) => Some((k, e)),
        _ => None,
    }) {
        return Err(RunError::Program {
            node,
            reason: e.to_string(),
        });
    }
    let mut reports = Vec::new();
    for (k, o) in outcomes.into_iter().enumerate() {
        match o {
            Some(Ok(r)) => reports.push(r),
            _ => {
                return Err(RunError::Program {
                    node: k,
                    reason: "no outcome".into(),
                })
            }
        }
    }
    Ok(figures(&sys, pattern, s, reports))
}

#[allow(clippy::cast_precision_loss)]
fn mb_s(bytes: u64, from_ps: u64, to_ps: u64) -> f64 {
    if to_ps > from_ps {
        bytes as f64 * 1e6 / (to_ps - from_ps) as f64
    } else {
        0.0
    }
}

fn figures(
    sys: &System,
    pattern: MeshPattern,
    s: StreamParams,
    reports: Vec<ProgramReport>,
) -> MeshRun {
    let n = u32::try_from(reports.len()).unwrap_or(u32::MAX);
    // When each message was posted: (from, to, i) -> ps.
    let mut posted: HashMap<(u32, u32, u32), u64> = HashMap::new();
    for (from, r) in (0..n).zip(&reports) {
        for rec in r.iterations.iter().filter(|i| i.verified_bytes == 0) {
            let (to, i) = mesh_peer_message(rec.index);
            posted.insert((from, to, i), rec.start.as_ps());
        }
    }
    let mut latencies_ps = Vec::new();
    let mut per_node = Vec::new();
    let first_post = posted.values().copied().min().unwrap_or(0);
    let (mut last_seen, mut all_bytes) = (0u64, 0u64);
    for (rank, r) in (0..n).zip(&reports) {
        let (sent, recv): (Vec<_>, Vec<_>) =
            r.iterations.iter().partition(|i| i.verified_bytes == 0);
        let (_, from) = plan(pattern, rank, n);
        let expected = from.len() as u64 * u64::from(s.messages);
        let received_bytes: u64 = recv.iter().map(|i| u64::from(i.bytes)).sum();
        let sent_bytes: u64 = sent.iter().map(|i| u64::from(i.bytes)).sum();
        let mut first_in = u64::MAX;
        let mut last_in = 0u64;
        for rec in &recv {
            let (peer, i) = mesh_peer_message(rec.index);
            if let Some(&t) = posted.get(&(peer, rank, i)) {
                latencies_ps.push(rec.end.as_ps().saturating_sub(t));
            }
            last_in = last_in.max(rec.end.as_ps());
        }
        for (&(_, to, _), &t) in &posted {
            if to == rank {
                first_in = first_in.min(t);
            }
        }
        let first_out = sent.iter().map(|i| i.start.as_ps()).min().unwrap_or(0);
        let last_out = sent.iter().map(|i| i.end.as_ps()).max().unwrap_or(0);
        last_seen = last_seen.max(last_in);
        all_bytes += received_bytes;
        let pause_frames = sys
            .mac_side(rank as usize)
            .map_or(0, |m| m.stats().pause_sent + m.stats().resume_sent);
        per_node.push(NodeFigures {
            node: rank as usize,
            sent_messages: sent.len() as u64,
            sent_bytes,
            received_messages: recv.len() as u64,
            received_bytes,
            lost_messages: expected.saturating_sub(recv.len() as u64),
            receive_mb_s: if first_in == u64::MAX {
                0.0
            } else {
                mb_s(received_bytes, first_in, last_in)
            },
            send_mb_s: mb_s(sent_bytes, first_out, last_out),
            pause_frames,
        });
    }
    latencies_ps.sort_unstable();
    let expected_messages = (0..n)
        .map(|r| plan(pattern, r, n).0.len() as u64 * u64::from(s.messages))
        .sum();
    MeshRun {
        pattern,
        params: s,
        aggregate_mb_s: mb_s(all_bytes, first_post, last_seen),
        pause_frames: per_node.iter().map(|n| n.pause_frames).sum::<u64>()
            + sys.switch_pause_frames(),
        per_node,
        latencies_ps,
        expected_messages,
        delivery: Delivery::of(sys, 0),
        stats: sys.kernel.stats(),
        counters: crate::stats::of_system(sys),
        reports,
    }
}
