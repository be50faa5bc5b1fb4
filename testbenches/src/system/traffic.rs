//! The two-node traffic patterns of `hvia traffic`: the one-way `stream` between nodes
//! 0 and 1 with a window of outstanding descriptors
//! (`host_driver::programs::stream_sender` / `stream_receiver`) and `bidirectional`
//! (`stream_duplex`); the many-node ones are in [`super::mesh`]. Reported: the aggregate
//! bandwidth at the receiver (bytes of all messages over the time from the first post to
//! the last message seen), each message's latency under load (posted to seen) as
//! percentiles, the PAUSE frames the DP83820s and the switch sent and the frames dropped
//! on the way.

use host_driver::programs::{
    stream_duplex, stream_receiver, stream_sender, PingPongParams, StreamParams,
};
use host_driver::ProgramReport;
use sim_kernel::RunStats;

use super::delivery::Delivery;
use super::pingpong::RunError;
use super::run::RunEnd;
use super::System;
use crate::config::SystemConfig;

/// One finished stream.
pub struct StreamRun {
    /// What was asked.
    pub params: StreamParams,
    /// The sender's records (posted, completed).
    pub sender: ProgramReport,
    /// The receiver's records (polling from, seen), every byte checked.
    pub receiver: ProgramReport,
    /// Bytes of all messages over first post to last message seen \[MB/s, 10^6 B\].
    pub aggregate_mb_s: f64,
    /// Each message's latency under load, posted to seen, sorted \[ps\].
    pub latencies_ps: Vec<u64>,
    /// PAUSE frames the DP83820s (flow control at a full RX FIFO) and the switch sent.
    pub pause_frames: u64,
    /// What became of the messages.
    pub delivery: Delivery,
    /// Kernel statistics of the run.
    pub stats: RunStats,
    /// Every component's counters at the end (what `--stats FILE` writes).
    pub counters: Vec<crate::stats::Counter>,
}

impl StreamRun {
    /// The latency at quantile `q` (0 ..= 1, nearest rank) \[ps\].
    #[must_use]
    pub fn percentile(&self, q: f64) -> u64 {
        percentile(&self.latencies_ps, q)
    }
}

/// The value at quantile `q` (0 ..= 1, nearest rank) of `sorted` (0 if empty).
#[must_use]
pub fn percentile(sorted: &[u64], q: f64) -> u64 {
    let n = sorted.len();
    if n == 0 {
        return 0;
    }
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
    sorted[rank - 1]
}

/// Streams `s` from node 0 to node 1 on the system `cfg` describes.
///
/// # Errors
/// The system cannot be built, a program fails, or the run does not finish.
pub fn run_stream(cfg: &SystemConfig, s: StreamParams) -> Result<StreamRun, RunError> {
    let (sys, sender, receiver) = run_two(cfg, s, false)?;
    Ok(finish(&sys, s, sender, receiver))
}

/// Both directions at once: node 0 streams `s` to node 1 while node 1 streams `s` to
/// node 0. Returns one [`StreamRun`] per direction (0 to 1, 1 to 0); each carries the
/// whole run's delivery, PAUSE frames and statistics.
///
/// # Errors
/// As [`run_stream`].
pub fn run_bidirectional(
    cfg: &SystemConfig,
    s: StreamParams,
) -> Result<(StreamRun, StreamRun), RunError> {
    let (sys, a, b) = run_two(cfg, s, true)?;
    // Each node's records: its sends (verified_bytes 0) and its receives.
    let split = |r: &ProgramReport| -> (ProgramReport, ProgramReport) {
        let (recv, sent): (Vec<_>, Vec<_>) = r
            .iterations
            .iter()
            .cloned()
            .partition(|i| i.verified_bytes > 0);
        (
            ProgramReport {
                iterations: sent,
                ..r.clone()
            },
            ProgramReport {
                iterations: recv,
                ..r.clone()
            },
        )
    };
    let (a_sent, a_recv) = split(&a);
    let (b_sent, b_recv) = split(&b);
    let forward = finish(&sys, s, a_sent, b_recv);
    let backward = finish(&sys, s, b_sent, a_recv);
    Ok((forward, backward))
}

/// Runs the two programs of a pattern on nodes 0 and 1 (`duplex`: both stream both
/// ways), the other nodes idle; returns the system and the two reports.
fn run_two(
    cfg: &SystemConfig,
    s: StreamParams,
    duplex: bool,
) -> Result<(System, ProgramReport, ProgramReport), RunError> {
    let mut sys = System::build(cfg, false)?;
    let mut p = PingPongParams::new(s.size.max(1), 1, sys.macs[1]);
    p.wait_timeout = host_driver::Timeout::Infinite;
    p.reliability = cfg.via.reliability.level();
    let q = PingPongParams {
        peer: sys.macs[0],
        ..p
    };
    if let Some(c) = sys.cpu_mut(0) {
        if duplex {
            c.load(move |v| stream_duplex(v, p, s, true));
        } else {
            c.load(move |v| stream_sender(v, p, s));
        }
    }
    if let Some(c) = sys.cpu_mut(1) {
        if duplex {
            c.load(move |v| stream_duplex(v, q, s, false));
        } else {
            c.load(move |v| stream_receiver(v, q, s));
        }
    }
    for n in 2..sys.nodes.len() {
        if let Some(c) = sys.cpu_mut(n) {
            c.load(|_v| async { Ok(ProgramReport::default()) });
        }
    }
    sys.start();
    if let RunEnd::Stalled(stall) = sys.run_programs() {
        let delivery = Delivery::of(&sys, 0);
        if delivery.lost > 0 {
            return Err(RunError::Lost {
                delivery: Box::new(delivery),
                unreliable: cfg.via.reliability == crate::config::ViaReliability::Unreliable,
                stall,
            });
        }
        return Err(RunError::Stalled(stall));
    }
    let mut reports = Vec::new();
    for n in 0..2 {
        match sys.cpu_mut(n).and_then(host_driver::HostCpu::take_outcome) {
            Some(Ok(r)) => reports.push(r),
            Some(Err(e)) => {
                return Err(RunError::Program {
                    node: n,
                    reason: e.to_string(),
                })
            }
            None => {
                return Err(RunError::Program {
                    node: n,
                    reason: "no outcome".into(),
                })
            }
        }
    }
    let b = reports.pop().unwrap_or_default();
    let a = reports.pop().unwrap_or_default();
    Ok((sys, a, b))
}

/// The figures of one direction, from the sender's and the receiver's records.
fn finish(
    sys: &System,
    s: StreamParams,
    sender: ProgramReport,
    receiver: ProgramReport,
) -> StreamRun {
    let first = sender.iterations.first().map_or(0, |r| r.start.as_ps());
    let last = receiver.iterations.last().map_or(0, |r| r.end.as_ps());
    let bytes: u64 = receiver.iterations.iter().map(|r| u64::from(r.bytes)).sum();
    #[allow(clippy::cast_precision_loss)]
    let aggregate_mb_s = if last > first {
        bytes as f64 * 1e6 / (last - first) as f64
    } else {
        0.0
    };
    let mut latencies_ps: Vec<u64> = sender
        .iterations
        .iter()
        .zip(&receiver.iterations)
        .map(|(s, r)| r.end.as_ps().saturating_sub(s.start.as_ps()))
        .collect();
    latencies_ps.sort_unstable();
    let pause_frames = (0..sys.nodes.len())
        .filter_map(|n| sys.mac_side(n))
        .map(|m| m.stats().pause_sent + m.stats().resume_sent)
        .sum::<u64>()
        + sys.switch_pause_frames();
    StreamRun {
        params: s,
        sender,
        receiver,
        aggregate_mb_s,
        latencies_ps,
        pause_frames,
        delivery: Delivery::of(sys, 0),
        stats: sys.kernel.stats(),
        counters: crate::stats::of_system(sys),
    }
}
