//! The experiments behind `hvia validate`: every measurement the HVIA-GE paper publishes
//! (section 5), run through the whole model with the configured system.
//!
//! - RDMA-write and send/receive ping-pong sweeps, 4 B .. 1 MiB (powers of two);
//! - traced send/receive ping-pongs at 4 B, 64 B, 1 KiB, 4 KiB and 16 KiB: the
//!   receiver's `VipPostRecv` times as the paper took them (between two `gettimeofday`
//!   calls around building the descriptor and posting it, `POST_RECV_TIMED`) and its
//!   `VipRecvWait` processing time (see [`recv_wait_processing`]);
//! - the breakdown of a 4-byte RDMA write;
//! - `hvia dma` with 512-byte bursts, read and write, on the system and the local bus.

use rayon::prelude::*;

use crate::config::SystemConfig;
use crate::dma::{throughput, BusArg, DirectionArg, DmaArgs, DmaFailure};
use crate::pingpong_cli::{SizeResult, Sweep};
use crate::system::breakdown::{self, Breakdown};
use crate::system::{run_pingpong, Op, PingPongSpec, RunError};

/// Sizes of the sweeps \[bytes\]: 4 B .. 1 MiB, powers of two.
pub fn sweep_sizes() -> Vec<u32> {
    (2..=20).map(|p| 1u32 << p).collect()
}

/// Sizes of the per-size send/receive figures \[bytes\] (the paper's "regardless of
/// message size" claims are checked over these).
pub const FIGURE_SIZES: [u32; 5] = [4, 64, 1024, 4096, 16384];

/// Measured round trips per size of the sweeps, after [`WARMUP`].
pub const ITERATIONS: u32 = 5;
/// Warm-up round trips per size.
pub const WARMUP: u32 = 2;

/// What one traced send/receive run at one size gives.
#[derive(Clone, Debug, PartialEq)]
pub struct RecvSide {
    /// Message size \[bytes\].
    pub size: u32,
    /// Mean CPU time of the receiver's `VipPostRecv` calls \[ns\].
    pub post_recv_ns: f64,
    /// `VipRecvWait` processing time of the broken-down message \[ns\].
    pub recv_wait_ns: f64,
}

/// Every measurement of one validation.
#[derive(Clone, Debug)]
pub struct Measurements {
    /// RDMA-write sweep.
    pub rdma: Sweep,
    /// Send/receive sweep.
    pub sendrecv: Sweep,
    /// Receive-side figures per size of [`FIGURE_SIZES`].
    pub recv: Vec<RecvSide>,
    /// The 4-byte RDMA-write breakdown.
    pub breakdown: Breakdown,
    /// Best 512-byte-burst DMA throughput on the system bus (read or write) \[MB/s\].
    pub dma_system_mb_s: f64,
    /// The same on the local bus \[MB/s\].
    pub dma_local_mb_s: f64,
}

impl Measurements {
    /// The sweep result at `size`, if measured.
    #[must_use]
    pub fn at(sweep: &Sweep, size: u32) -> Option<&SizeResult> {
        sweep.results.iter().find(|r| r.size == size)
    }
}

/// Why a validation could not measure something (a failed run).
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    /// A ping-pong run failed.
    #[error("{what} failed: {source}")]
    Run {
        /// Which experiment.
        what: String,
        /// Why.
        source: RunError,
    },
    /// A DMA run failed.
    #[error("{what} failed: {reason}")]
    Dma {
        /// Which experiment.
        what: String,
        /// Why.
        reason: String,
    },
}

fn run_err(what: impl Into<String>) -> impl FnOnce(RunError) -> MeasureError {
    let what = what.into();
    move |source| MeasureError::Run { what, source }
}

/// Runs every experiment on `cfg`.
///
/// # Errors
/// The first experiment that failed.
pub fn measure(cfg: &SystemConfig) -> Result<Measurements, MeasureError> {
    let sizes = sweep_sizes();
    let sweep = |op: Op| {
        crate::pingpong_cli::sweep_run(
            cfg,
            op,
            &sizes,
            ITERATIONS,
            WARMUP,
            crate::system::RecvPost::Timed,
            false,
        )
        .map_err(|(size, e)| run_err(format!("{} ping-pong at {size} bytes", op.name()))(e))
    };
    let (rdma, sendrecv) = rayon::join(|| sweep(Op::RdmaWrite), || sweep(Op::SendRecv));
    let recv: Result<Vec<RecvSide>, MeasureError> = FIGURE_SIZES
        .par_iter()
        .map(|&size| recv_side(cfg, size))
        .collect();
    let breakdown = breakdown::measure(cfg, Op::RdmaWrite, 4)
        .map_err(run_err("the 4-byte RDMA-write breakdown"))?;
    let dma = |bus: BusArg| -> Result<f64, MeasureError> {
        let mut best: f64 = 0.0;
        for direction in [DirectionArg::Read, DirectionArg::Write] {
            let args = DmaArgs {
                bus,
                direction,
                bytes: 1 << 20,
                burst: Some(512),
                offset: 0,
                stats: None,
            };
            let what = format!("dma {bus:?} {direction:?}").to_lowercase();
            let r = throughput(&args, cfg).map_err(|e| MeasureError::Dma {
                what,
                reason: match e {
                    DmaFailure::Input(e) => e.to_string(),
                    DmaFailure::Failed(s) => s,
                },
            })?;
            best = best.max(r.throughput_mb_s);
        }
        Ok(best)
    };
    Ok(Measurements {
        rdma: rdma?,
        sendrecv: sendrecv?,
        recv: recv?,
        breakdown,
        dma_system_mb_s: dma(BusArg::System)?,
        dma_local_mb_s: dma(BusArg::Local)?,
    })
}

/// The receive-side figures of a traced send/receive ping-pong at `size`.
fn recv_side(cfg: &SystemConfig, size: u32) -> Result<RecvSide, MeasureError> {
    let spec = PingPongSpec {
        op: Op::SendRecv,
        size,
        iterations: ITERATIONS,
        warmup: WARMUP,
        trace: true,
        recv_post: crate::system::RecvPost::Timed,
    };
    let what = format!("traced send-recv ping-pong at {size} bytes");
    let run = run_pingpong(cfg, spec).map_err(run_err(what.clone()))?;
    let responder = run.system.nodes[1].cpu;
    let posts: Vec<f64> = run
        .system
        .kernel
        .trace()
        .spans()
        .iter()
        .filter(|s| s.component == responder && s.stage == host_driver::programs::POST_RECV_TIMED)
        .map(|s| (s.end - s.start).as_ns_f64())
        .collect();
    if posts.is_empty() {
        return Err(run_err(what)(RunError::Program {
            node: 1,
            reason: "no VipPostRecv span at the receiver".into(),
        }));
    }
    #[allow(clippy::cast_precision_loss)]
    let post_recv_ns = posts.iter().sum::<f64>() / posts.len() as f64;
    let bd = breakdown::measure(cfg, Op::SendRecv, size)
        .map_err(run_err(format!("the {size}-byte send-recv breakdown")))?;
    Ok(RecvSide {
        size,
        post_recv_ns,
        recv_wait_ns: recv_wait_processing(&bd),
    })
}

/// `VipRecvWait` processing time of a send/receive breakdown \[ns\]: from the first
/// instant the receiving node works on the message (its first stage on node 1: the
/// first frame has arrived in the receiving DP83820) to `VipRecvWait` returning. The
/// network latency to the first frame is excluded; the rest of the message's arrival,
/// its DMA into the receive buffer, the status write-back and the detection are in.
#[must_use]
pub fn recv_wait_processing(bd: &Breakdown) -> f64 {
    let first = bd
        .stages
        .iter()
        .find(|s| s.component.starts_with("n1."))
        .map_or(bd.end, |s| s.start);
    (bd.end - first).as_ns_f64()
}
