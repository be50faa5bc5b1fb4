//! The ping-pong testbench: node 0 runs the VIPL ping-pong initiator, node 1 the
//! responder, over RDMA write, send/receive or RDMA read, through the whole system
//! model. The one-way latency is half the mean round trip of the measured iterations
//! (RDMA read: the mean read, from VipPostSend to the completion VipSendWait returns, a
//! round trip by itself); bandwidth is size / one-way latency (MB = 10^6 bytes).

use super::build::{BuildError, System};
use super::delivery::Delivery;
use super::run::{RunEnd, Stall};
use crate::config::SystemConfig;
use host_driver::programs::{
    rdma_pingpong_initiator, rdma_pingpong_responder, rdma_read_pingpong_initiator,
    rdma_read_pingpong_responder, sendrecv_pingpong_initiator, sendrecv_pingpong_responder,
    PingPongParams,
};
use host_driver::ProgramReport;
use sim_kernel::{Duration, RunStats};

/// Which VIA operation carries the messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// RDMA write; the receiver polls the last byte of its buffer.
    RdmaWrite,
    /// Send / receive; the receiver waits on its receive descriptor.
    SendRecv,
    /// RDMA read (needs `card.engine.rdma_read` and a reliable VI): the initiator reads
    /// the responder's buffer; each iteration is one read, whose whole time (post to
    /// completion) is the reported one-way latency.
    RdmaRead,
}

impl Op {
    /// The name used on the command line and in JSON (`rdma-write`, `send-recv`).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Op::RdmaWrite => "rdma-write",
            Op::SendRecv => "send-recv",
            Op::RdmaRead => "rdma-read",
        }
    }

    /// What the one-way latency of this operation is: half the round trip of a
    /// ping-pong, or for an RDMA read the whole read (its request and its data are one
    /// round trip already).
    #[must_use]
    pub const fn one_way_meaning(self) -> &'static str {
        match self {
            Op::RdmaWrite | Op::SendRecv => "half the mean round trip",
            Op::RdmaRead => {
                "the whole RDMA read (mean), from VipPostSend to its completion; not half of it"
            }
        }
    }
}

/// What one ping-pong run asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PingPongSpec {
    /// The operation.
    pub op: Op,
    /// Message size \[bytes\], at least 1.
    pub size: u32,
    /// Measured round trips.
    pub iterations: u32,
    /// Warm-up round trips before them.
    pub warmup: u32,
    /// Record trace spans (for breakdowns).
    pub trace: bool,
    /// Send/recv: where the initiator posts the receive for each pong.
    pub recv_post: RecvPost,
}

/// Where a send/recv initiator posts the receive for each pong (RDMA write posts none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RecvPost {
    /// Inside the timed round trip, right before the ping: a loop timed as a whole, the
    /// shape assumed for the paper's figures (half a VipPostRecv in each one-way figure).
    #[default]
    Timed,
    /// Before the round trip's clock starts (a per-iteration timer): the one-way figure
    /// holds the card's receive-side work only.
    Ahead,
}

impl RecvPost {
    /// The `--recv-post` word.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            RecvPost::Timed => "timed",
            RecvPost::Ahead => "ahead",
        }
    }
}

/// Why a ping-pong run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The system could not be built.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// A host program failed (a VIPL error, a bad completion, a data mismatch).
    #[error("node {node} program failed: {reason}")]
    Program {
        /// Which node.
        node: usize,
        /// What it said.
        reason: String,
    },
    /// The run can never finish (see [`super::run`]).
    #[error("{0}")]
    Stalled(Stall),
    /// A message was lost for good (unreliable VIs do not retransmit; a reliable one
    /// whose connection broke): the programs wait for it, so the run stopped.
    #[error("a message was lost and the ping-pong cannot go on ({}){}; {stall}", .delivery.summary(), if *.unreliable { ". Unreliable VIs do not retransmit; via.reliability=reliable-delivery recovers lost frames" } else { "" })]
    Lost {
        /// What became of the messages.
        delivery: Box<Delivery>,
        /// Whether the VIs were unreliable.
        unreliable: bool,
        /// Where the programs wait.
        stall: Stall,
    },
    /// A host program found a message whose bytes differ from what was sent.
    #[error("node {node} found corrupted data ({}): {reason}", .delivery.summary())]
    Corrupted {
        /// Which node.
        node: usize,
        /// What it said.
        reason: String,
        /// What became of the messages.
        delivery: Box<Delivery>,
    },
    /// A message was routed to a component of the wrong kind (a wiring bug).
    #[error("{0} messages were misrouted")]
    Misrouted(u64),
    /// Components received messages of a kind they do not take (a wiring bug); each
    /// component with its count.
    #[error("messages of a kind their component does not take: {}", .0.iter().map(|(c, n)| format!("{c} {n}")).collect::<Vec<_>>().join(", "))]
    WrongInputs(Vec<(String, u64)>),
}

/// The outcome of one ping-pong run.
pub struct PingPongRun {
    /// What was asked.
    pub spec: PingPongSpec,
    /// Half the mean round trip of the measured iterations.
    pub one_way: Duration,
    /// The initiator's report (per-iteration start/end).
    pub initiator: ProgramReport,
    /// The responder's report.
    pub responder: ProgramReport,
    /// What became of the messages (all delivered, unless faults were injected).
    pub delivery: Delivery,
    /// Kernel statistics of the run.
    pub stats: RunStats,
    /// The system after the run (trace, component statistics).
    pub system: System,
}

impl PingPongRun {
    /// One-way latency \[ns\].
    #[must_use]
    pub fn one_way_ns(&self) -> f64 {
        self.one_way.as_ns_f64()
    }

    /// Bandwidth = size / one-way latency \[MB/s, 10^6 bytes\].
    #[must_use]
    pub fn bandwidth_mb_s(&self) -> f64 {
        let ns = self.one_way_ns();
        if ns > 0.0 {
            f64::from(self.spec.size) * 1e3 / ns
        } else {
            0.0
        }
    }
}

/// Runs one ping-pong on the system `cfg` describes.
///
/// # Errors
/// The system cannot be built, a program fails, or the run does not finish.
pub fn run_pingpong(cfg: &SystemConfig, spec: PingPongSpec) -> Result<PingPongRun, RunError> {
    run_pingpong_adjusted(cfg, spec, |_| {})
}

/// [`run_pingpong`] with `adjust` applied to the built system before the programs
/// load: a test hook (e.g. to break a fast path on purpose and see the lockstep tests
/// catch it), not for ordinary runs.
///
/// # Errors
/// As [`run_pingpong`].
#[doc(hidden)]
pub fn run_pingpong_adjusted(
    cfg: &SystemConfig,
    spec: PingPongSpec,
    adjust: impl FnOnce(&mut System),
) -> Result<PingPongRun, RunError> {
    let mut sys = System::build(cfg, spec.trace)?;
    adjust(&mut sys);
    let mut params = PingPongParams::new(spec.size.max(1), spec.iterations, sys.macs[1]);
    params.warmup = spec.warmup;
    params.post_recv_timed = spec.recv_post == RecvPost::Timed;
    // No wait gives up on its own: a slow but valid configuration takes as long as it
    // takes, and a run that can never finish is caught by the run loop's stall check.
    params.wait_timeout = host_driver::Timeout::Infinite;
    params.reliability = cfg.via.reliability.level();
    let to_initiator = PingPongParams {
        peer: sys.macs[0],
        ..params
    };
    let (a, b) = (params, to_initiator);
    match spec.op {
        Op::RdmaWrite => {
            if let Some(c) = sys.cpu_mut(0) {
                c.load(move |v| rdma_pingpong_initiator(v, a));
            }
            if let Some(c) = sys.cpu_mut(1) {
                c.load(move |v| rdma_pingpong_responder(v, b));
            }
        }
        Op::SendRecv => {
            if let Some(c) = sys.cpu_mut(0) {
                c.load(move |v| sendrecv_pingpong_initiator(v, a));
            }
            if let Some(c) = sys.cpu_mut(1) {
                c.load(move |v| sendrecv_pingpong_responder(v, b));
            }
        }
        Op::RdmaRead => {
            if let Some(c) = sys.cpu_mut(0) {
                c.load(move |v| rdma_read_pingpong_initiator(v, a));
            }
            if let Some(c) = sys.cpu_mut(1) {
                c.load(move |v| rdma_read_pingpong_responder(v, b));
            }
        }
    }
    // Nodes beyond the two (behind a switch) take no part: their programs return at once.
    for n in 2..sys.nodes.len() {
        if let Some(c) = sys.cpu_mut(n) {
            c.load(|_v| async { Ok(ProgramReport::default()) });
        }
    }
    sys.start();
    match sys.run_programs() {
        RunEnd::Finished | RunEnd::ProgramFailed => {}
        RunEnd::Stalled(stall) => {
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
    }
    if sys.world.misrouted() > 0 {
        return Err(RunError::Misrouted(sys.world.misrouted()));
    }
    let wrong = sys.wrong_inputs();
    if !wrong.is_empty() {
        return Err(RunError::WrongInputs(wrong));
    }
    let outcomes: Vec<Option<host_driver::ProgramResult>> = (0..2)
        .map(|n| sys.cpu_mut(n).and_then(host_driver::HostCpu::take_outcome))
        .collect();
    // The program that failed is the one to report (the other may still be waiting).
    let failed = outcomes
        .iter()
        .position(|o| matches!(o, Some(Err(_))))
        .or_else(|| outcomes.iter().position(Option::is_none));
    if let Some(n) = failed {
        return Err(match &outcomes[n] {
            Some(Err(e @ host_driver::ProgramError::DataMismatch { .. })) => RunError::Corrupted {
                node: n,
                reason: e.to_string(),
                delivery: Box::new(Delivery::of(&sys, 1)),
            },
            Some(Err(e)) => RunError::Program {
                node: n,
                reason: e.to_string(),
            },
            _ => RunError::Program {
                node: n,
                reason: "no outcome".into(),
            },
        });
    }
    let mut reports = outcomes.into_iter().flatten().flatten();
    let (Some(initiator), Some(responder)) = (reports.next(), reports.next()) else {
        return Err(RunError::Program {
            node: 0,
            reason: "no outcome".into(),
        });
    };
    // An RDMA read's iteration is one read: its whole time is the one-way figure.
    let one_way = match spec.op {
        Op::RdmaRead => initiator.mean_elapsed(),
        Op::RdmaWrite | Op::SendRecv => Duration(initiator.mean_elapsed().0 / 2),
    };
    Ok(PingPongRun {
        spec,
        one_way,
        initiator,
        responder,
        delivery: Delivery::of(&sys, 0),
        stats: sys.kernel.stats(),
        system: sys,
    })
}
