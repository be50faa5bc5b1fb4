//! The targets `hvia calibrate` fits to and the quick whole-model measurements behind
//! them: the same experiments as `hvia validate`, at the sizes where each figure is
//! decided (the peak bandwidth at 1 MiB, the send/receive gap and `VipPostRecv` at
//! 4 bytes), so one evaluation takes seconds.

use rayon::prelude::*;

use crate::config::SystemConfig;
use crate::dma::{throughput, BusArg, DirectionArg, DmaArgs};
use crate::system::{run_pingpong, Op, PingPongSpec};

/// One published figure the calibration fits to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Target {
    /// What it is.
    pub figure: &'static str,
    /// The published value.
    pub published: f64,
    /// What one unit of residual is (the validation tolerance), in the figure's unit.
    pub scale: f64,
    /// Unit.
    pub unit: &'static str,
}

/// The targets, in the order of [`Evaluation::model`].
pub const TARGETS: [Target; 6] = [
    Target {
        figure: "RDMA write, 4 B, one-way latency",
        published: 12.5,
        scale: 0.375,
        unit: "us",
    },
    Target {
        figure: "RDMA write, bandwidth at 1 MiB (the peak)",
        published: 95.5,
        scale: 2.865,
        unit: "MB/s",
    },
    Target {
        figure: "send/recv minus RDMA write, 4 B",
        published: 2.9,
        scale: 0.5,
        unit: "us",
    },
    Target {
        figure: "VipPostRecv CPU time, 4 B",
        published: 6.0,
        scale: 0.9,
        unit: "us",
    },
    Target {
        figure: "DMA, 512-byte bursts, system bus (best of read, write)",
        published: 120.0,
        scale: 4.8,
        unit: "MB/s",
    },
    Target {
        figure: "DMA, 512-byte bursts, local bus (best of read, write)",
        published: 117.0,
        scale: 4.68,
        unit: "MB/s",
    },
];

/// The model's values of every target at one point, and the cost.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// One value per [`TARGETS`] entry.
    pub model: [f64; 6],
    /// Sum of the squared scaled residuals.
    pub cost: f64,
}

impl Evaluation {
    /// `(model - published) / scale` per target.
    #[must_use]
    pub fn residuals(&self) -> [f64; 6] {
        let mut r = [0.0; 6];
        for (i, t) in TARGETS.iter().enumerate() {
            r[i] = (self.model[i] - t.published) / t.scale;
        }
        r
    }
}

enum Job {
    PingPong(Op, u32, bool),
    Dma(BusArg, DirectionArg),
}

enum Got {
    OneWay(f64, Option<f64>),
    Dma(f64),
}

fn job(cfg: &SystemConfig, j: &Job) -> Result<Got, String> {
    match *j {
        Job::PingPong(op, size, trace) => {
            let spec = PingPongSpec {
                op,
                size,
                iterations: if size > 65536 { 2 } else { 3 },
                warmup: 1,
                trace,
                recv_post: crate::system::RecvPost::Timed,
            };
            let r = run_pingpong(cfg, spec).map_err(|e| e.to_string())?;
            let post = trace.then(|| {
                let responder = r.system.nodes[1].cpu;
                let spans: Vec<f64> = r
                    .system
                    .kernel
                    .trace()
                    .spans()
                    .iter()
                    .filter(|s| {
                        s.component == responder
                            && s.stage == host_driver::programs::POST_RECV_TIMED
                    })
                    .map(|s| (s.end - s.start).as_ns_f64())
                    .collect();
                #[allow(clippy::cast_precision_loss)]
                let mean = spans.iter().sum::<f64>() / spans.len().max(1) as f64;
                mean
            });
            Ok(Got::OneWay(r.one_way_ns(), post))
        }
        Job::Dma(bus, direction) => {
            let args = DmaArgs {
                bus,
                direction,
                bytes: 256 << 10,
                burst: Some(512),
                offset: 0,
                stats: None,
            };
            throughput(&args, cfg)
                .map(|r| Got::Dma(r.throughput_mb_s))
                .map_err(|e| format!("{e:?}"))
        }
    }
}

/// Measures every target on `cfg`.
///
/// # Errors
/// A run that failed, with why.
pub fn evaluate(cfg: &SystemConfig) -> Result<Evaluation, String> {
    let jobs = [
        Job::PingPong(Op::RdmaWrite, 1 << 20, false),
        Job::PingPong(Op::RdmaWrite, 4, false),
        Job::PingPong(Op::SendRecv, 4, true),
        Job::Dma(BusArg::System, DirectionArg::Read),
        Job::Dma(BusArg::System, DirectionArg::Write),
        Job::Dma(BusArg::Local, DirectionArg::Read),
        Job::Dma(BusArg::Local, DirectionArg::Write),
    ];
    let got: Vec<Got> = jobs
        .par_iter()
        .with_max_len(1)
        .map(|j| job(cfg, j))
        .collect::<Result<_, _>>()?;
    let one_way = |i: usize| match got.get(i) {
        Some(Got::OneWay(ns, _)) => *ns,
        _ => f64::NAN,
    };
    let dma = |i: usize| match got.get(i) {
        Some(Got::Dma(v)) => *v,
        _ => f64::NAN,
    };
    let post = match got.get(2) {
        Some(Got::OneWay(_, Some(p))) => *p,
        _ => f64::NAN,
    };
    let model = [
        one_way(1) / 1e3,
        f64::from(1u32 << 20) * 1e3 / one_way(0),
        (one_way(2) - one_way(1)) / 1e3,
        post / 1e3,
        dma(3).max(dma(4)),
        dma(5).max(dma(6)),
    ];
    let mut e = Evaluation { model, cost: 0.0 };
    e.cost = e.residuals().iter().map(|r| r * r).sum();
    if !e.cost.is_finite() {
        return Err("a target could not be measured".into());
    }
    Ok(e)
}
