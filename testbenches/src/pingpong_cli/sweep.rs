//! The size sweep of `hvia pingpong`: one independent ping-pong simulation per size, run
//! in parallel on rayon's pool, largest first (the longest runs start early), collected
//! back in size order. Each simulation is a pure function of its config and spec, so the
//! results do not depend on the number of threads or the order they finish in.
//!
//! A progress bar (indicatif) shows on stderr while a sweep of several sizes runs, only
//! when stderr is a terminal: pipes and files never see it.

use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use std::io::IsTerminal;
use std::time::Instant;

use crate::config::SystemConfig;
use crate::config::ViaReliability;
use crate::system::{run_pingpong, Delivery, Op, PingPongSpec, RunError};

/// The result of one size.
#[derive(Clone, Debug, PartialEq)]
pub struct SizeResult {
    /// Message size \[bytes\].
    pub size: u32,
    /// Measured round trips.
    pub iterations: u32,
    /// Warm-up round trips before them.
    pub warmup: u32,
    /// Half the mean measured round trip \[ns\].
    pub one_way_ns: f64,
    /// The mean measured round trip \[ns\].
    pub round_trip_ns: f64,
    /// Size / one-way latency \[MB/s, 10^6 bytes\].
    pub bandwidth_mb_s: f64,
    /// Events the simulation delivered.
    pub events: u64,
    /// Simulated time the run reached \[ps\].
    pub simulated_ps: u64,
    /// What became of the run's messages.
    pub delivery: Delivery,
    /// Every component's counters at the end of the run (`--stats`; empty unless
    /// asked for: collecting them is a few percent of a short run's wall time).
    pub counters: Vec<crate::stats::Counter>,
}

/// A whole sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    /// The operation.
    pub op: Op,
    /// Measured round trips per size.
    pub iterations: u32,
    /// Warm-up round trips per size.
    pub warmup: u32,
    /// One result per size, in size order.
    pub results: Vec<SizeResult>,
    /// Simulated time, summed over the runs \[ps\].
    pub simulated_ps: u64,
    /// Events, summed over the runs.
    pub events: u64,
    /// Host time the sweep took, start to end \[s\].
    pub wall_seconds: f64,
    /// Whether the output shows each size's delivery: faults are injected, the VIs are
    /// reliable, or something other than clean delivery happened.
    pub show_delivery: bool,
}

/// Runs one size; `counters`: collect every component's counters at the end.
fn one(cfg: &SystemConfig, spec: PingPongSpec, counters: bool) -> Result<SizeResult, RunError> {
    let start = Instant::now();
    let run = run_pingpong(cfg, spec)?;
    tracing::debug!(
        target: "hvia",
        size = spec.size,
        one_way_ns = run.one_way_ns(),
        events = run.stats.events,
        wall_s = start.elapsed().as_secs_f64(),
        "ping-pong size done"
    );
    Ok(SizeResult {
        size: spec.size,
        iterations: spec.iterations,
        warmup: spec.warmup,
        one_way_ns: run.one_way_ns(),
        round_trip_ns: run.initiator.mean_elapsed().as_ns_f64(),
        bandwidth_mb_s: run.bandwidth_mb_s(),
        events: run.stats.events,
        simulated_ps: run.stats.simulated.as_ps(),
        counters: if counters {
            crate::stats::of_system(&run.system)
        } else {
            Vec::new()
        },
        delivery: run.delivery,
    })
}

/// A progress bar for `n` sizes, hidden unless stderr is a terminal and `n > 1`.
fn progress(n: usize) -> ProgressBar {
    if n < 2 || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(n as u64);
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} sizes {msg}",
    ) {
        bar.set_style(style);
    }
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    bar
}

/// Runs `sizes` (sorted) in parallel and returns the sweep in size order, or the first
/// size (in size order) whose run failed, with its error; `counters`: each size's
/// result carries every component's counters (`--stats`).
///
/// # Errors
/// The smallest size whose run failed, and why.
pub fn run(
    cfg: &SystemConfig,
    op: Op,
    sizes: &[u32],
    iterations: u32,
    warmup: u32,
    recv_post: crate::system::RecvPost,
    counters: bool,
) -> Result<Sweep, (u32, RunError)> {
    let start = Instant::now();
    let bar = progress(sizes.len());
    // Largest first: the longest simulations start while the others fill the cores.
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(sizes[i]));
    let mut done: Vec<(usize, Result<SizeResult, RunError>)> = order
        .into_par_iter()
        .with_max_len(1)
        .map(|i| {
            let spec = PingPongSpec {
                op,
                size: sizes[i],
                iterations,
                warmup,
                trace: false,
                recv_post,
            };
            let r = one(cfg, spec, counters);
            bar.set_message(format!("({} bytes done)", sizes[i]));
            bar.inc(1);
            (i, r)
        })
        .collect();
    bar.finish_and_clear();
    done.sort_by_key(|(i, _)| *i);
    let mut results = Vec::with_capacity(done.len());
    for (i, r) in done {
        results.push(r.map_err(|e| (sizes[i], e))?);
    }
    let faults_on = !(cfg.wire_fault_params(0).is_off() && cfg.wire_fault_params(1).is_off());
    let show_delivery = faults_on
        || cfg.via.reliability != ViaReliability::Unreliable
        || results.iter().any(|r| r.delivery.eventful());
    Ok(Sweep {
        show_delivery,
        op,
        iterations,
        warmup,
        simulated_ps: results.iter().map(|r| r.simulated_ps).sum(),
        events: results.iter().map(|r| r.events).sum(),
        results,
        wall_seconds: start.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DEFAULT_PRESET;

    #[test]
    fn parallel_equals_serial_and_keeps_size_order() {
        let cfg = SystemConfig::from_preset(DEFAULT_PRESET).unwrap();
        let sizes = [4, 64, 200];
        let par = run(
            &cfg,
            Op::RdmaWrite,
            &sizes,
            1,
            1,
            crate::system::RecvPost::Timed,
            true,
        )
        .unwrap();
        let serial: Vec<SizeResult> = sizes
            .iter()
            .map(|&size| {
                let spec = PingPongSpec {
                    op: Op::RdmaWrite,
                    size,
                    iterations: 1,
                    warmup: 1,
                    trace: false,
                    recv_post: crate::system::RecvPost::Timed,
                };
                one(&cfg, spec, true).unwrap()
            })
            .collect();
        assert_eq!(par.results, serial);
        assert_eq!(par.events, serial.iter().map(|r| r.events).sum::<u64>());
        assert!(par.results.windows(2).all(|w| w[0].size < w[1].size));
        assert!(par.results.iter().all(|r| !r.counters.is_empty()));
    }

    #[test]
    fn counters_are_collected_only_when_asked_for_and_change_nothing_else() {
        let cfg = SystemConfig::from_preset(DEFAULT_PRESET).unwrap();
        let sweep = |counters| {
            run(
                &cfg,
                Op::RdmaWrite,
                &[4, 1460],
                1,
                1,
                crate::system::RecvPost::Timed,
                counters,
            )
            .unwrap()
        };
        let (with, without) = (sweep(true), sweep(false));
        assert!(without.results.iter().all(|r| r.counters.is_empty()));
        let mut stripped = with.results.clone();
        for r in &mut stripped {
            assert!(!r.counters.is_empty());
            r.counters.clear();
        }
        assert_eq!(stripped, without.results);
    }
}
