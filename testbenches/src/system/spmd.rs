//! One program on every node (single program, multiple data), as the message-passing
//! libraries run: [`run_spmd`] builds the system of `cfg`, loads `prog(vipl, rank,
//! macs)` on each node, runs until all return, and hands back every node's report and
//! the system (for its counters), or the first failure (a program's error, a stall).

use host_driver::{ProgramReport, ProgramResult, Vipl};
use std::future::Future;
use via_abi::MacAddr;
use vmpi::Rank;

use super::pingpong::RunError;
use super::run::RunEnd;
use super::System;
use crate::config::SystemConfig;

/// Runs `prog` on every node of `cfg`; every node's report, in rank order, and the
/// system after the run.
///
/// # Errors
/// [`RunError::Build`], the first node whose program failed ([`RunError::Program`]),
/// [`RunError::Stalled`].
pub fn run_spmd<F, Fut>(
    cfg: &SystemConfig,
    prog: F,
) -> Result<(Vec<ProgramReport>, System), RunError>
where
    F: Fn(Vipl, Rank, Vec<MacAddr>) -> Fut + Clone + 'static,
    Fut: Future<Output = ProgramResult> + 'static,
{
    run_spmd_adjusted(cfg, false, |_| {}, prog)
}

/// [`run_spmd`] with a trace (`trace`) and `adjust` applied to the built system before
/// the programs load (test hooks, e.g. the lockstep harness's deliberate errors).
///
/// # Errors
/// As [`run_spmd`].
#[doc(hidden)]
pub fn run_spmd_adjusted<F, Fut>(
    cfg: &SystemConfig,
    trace: bool,
    adjust: impl FnOnce(&mut System),
    prog: F,
) -> Result<(Vec<ProgramReport>, System), RunError>
where
    F: Fn(Vipl, Rank, Vec<MacAddr>) -> Fut + Clone + 'static,
    Fut: Future<Output = ProgramResult> + 'static,
{
    let mut sys = System::build(cfg, trace)?;
    adjust(&mut sys);
    let macs = sys.macs.clone();
    for n in 0..sys.nodes.len() {
        let (p, m) = (prog.clone(), macs.clone());
        let rank = Rank(u16::try_from(n).unwrap_or(u16::MAX));
        if let Some(c) = sys.cpu_mut(n) {
            c.load(move |v| p(v, rank, m));
        }
    }
    sys.start();
    let end = sys.run_programs();
    let mut reports = Vec::with_capacity(sys.nodes.len());
    let mut failed = None;
    for n in 0..sys.nodes.len() {
        match sys.cpu_mut(n).and_then(host_driver::HostCpu::take_outcome) {
            Some(Ok(r)) => reports.push(r),
            Some(Err(e)) => {
                failed.get_or_insert(RunError::Program {
                    node: n,
                    reason: e.to_string(),
                });
            }
            None => reports.push(ProgramReport::default()),
        }
    }
    if let Some(e) = failed {
        return Err(e);
    }
    if let RunEnd::Stalled(stall) = end {
        return Err(RunError::Stalled(stall));
    }
    Ok((reports, sys))
}
