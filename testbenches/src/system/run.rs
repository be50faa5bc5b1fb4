//! Run control: advancing a built [`System`] until every host program has returned, and
//! telling a run that is merely long from one that can never end.
//!
//! The loop runs the kernel in slices of simulated time; a slice always reaches the next
//! queued event, however far away it is (registering a large buffer costs milliseconds
//! of CPU time in one op), so simulated time always advances. There is no time or event
//! budget: a valid configuration may take as long as its work takes. A run ends early
//! only when it can prove that nothing will ever happen again:
//!
//! - no event is left while a program has not returned (e.g. a CPU stalled on a
//!   memory-mapped read nobody answers), or
//! - every queued event belongs to a host CPU in a poll loop without a deadline: only a
//!   DMA write by another component could end such a loop, and no other component has
//!   anything left to do;
//! - every unfinished program waits, with no deadline, for the card (a memory poll, or a
//!   library loop reading card registers, as a connection wait does), the only queued
//!   events are for CPUs, system buses and engines (the register reads), every engine is
//!   idle, and over a whole slice no work was done (no DMA job, frame, doorbell,
//!   translation or status write): the register reads change nothing, so the same
//!   state repeats for ever.
//!
//! Either way the run stops with a [`Stall`] that names every unfinished CPU and what it
//! waits for. A program that returns an error stops the run at once (the other node may
//! be waiting for it forever).

use super::build::System;
use super::world::Comp;
use host_driver::{CpuWait, HostCpu};
use nic_model::engine::Engine;
use sim_kernel::{Duration, RunLimit, RunOutcome, Time};
use std::fmt;

/// Simulated time per slice of the run loop: how often the loop checks for completion
/// and for a stall. It changes nothing the model computes.
const SLICE: Duration = Duration::from_ns(1_000_000);

/// Why a run can never finish.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stall {
    /// When the stall was detected.
    pub at: Time,
    /// What is left: no event, or only poll loops.
    pub reason: StallReason,
    /// Each unfinished CPU (by name) and what it waits for.
    pub waiting: Vec<(String, String)>,
    /// Counters of lost or refused work that are not zero (by component), the usual
    /// reason a wait never ends: e.g. frames the MAC refused or dropped.
    pub losses: Vec<(String, String)>,
}

/// What a stalled system has left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StallReason {
    /// The event queue is empty.
    NoEvent,
    /// Only host CPUs' poll loops without a deadline are queued.
    OnlyPolls,
    /// The programs wait for the card, which is idle, and nothing but register reads
    /// happened for a whole slice.
    NoProgress,
}

impl fmt::Display for Stall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = match self.reason {
            StallReason::NoEvent => "no event is left",
            StallReason::OnlyPolls => {
                "only host CPUs polling memory are left, and no other component has work that could change it"
            }
            StallReason::NoProgress => {
                "every program waits for the card, the card is idle, and nothing but register reads happened for a whole slice"
            }
        };
        write!(f, "the simulation stalled at {}: {why}", self.at)?;
        for (name, what) in &self.waiting {
            write!(f, "; {name} {what}")?;
        }
        for (name, what) in &self.losses {
            write!(f, "; {name}: {what}")?;
        }
        Ok(())
    }
}

/// How a slice of the run loop ended the run (`System::slice_end`).
enum SliceEnd {
    /// Every program returned.
    Finished,
    /// A program returned an error.
    Failed,
    /// The run can never finish.
    Stalled(StallReason),
}

/// How a run of the loaded programs ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunEnd {
    /// Every program returned (successfully or not).
    Finished,
    /// A program returned an error; the others may still be running.
    ProgramFailed,
    /// The run can never finish.
    Stalled(Stall),
}

impl System {
    /// Runs until every node's program has returned, one returned an error, or the run
    /// stalls (see the module doc). Events after the last program returned, up to the
    /// end of the slice, are run too (they are part of the reported statistics).
    pub fn run_programs(&mut self) -> RunEnd {
        // The work done at the end of the last slice in which the system was quiet.
        let mut quiet_at: Option<u64> = None;
        loop {
            if self.all_finished() {
                return RunEnd::Finished;
            }
            let now = self.kernel.now();
            let Some(next) = self.kernel.next_event_time() else {
                return RunEnd::Stalled(self.stall(self.dry_reason()));
            };
            let until = (now + SLICE).max(next);
            let outcome = self.kernel.run(
                &mut self.world,
                RunLimit {
                    until,
                    max_events: u64::MAX,
                },
            );
            let Some(end) = self.slice_end(outcome, &mut quiet_at) else {
                continue;
            };
            // The run ends here: every bus, and every transmitter's gap, where per-clock
            // stepping stands before anything reads their counters.
            self.settle_parts(until);
            return match end {
                SliceEnd::Finished => RunEnd::Finished,
                SliceEnd::Failed => RunEnd::ProgramFailed,
                SliceEnd::Stalled(reason) => RunEnd::Stalled(self.stall(reason)),
            };
        }
    }

    /// After a slice that ended with `outcome`: whether the run ends, and how.
    /// `quiet_at`: the work done at the end of the last slice in which the system was
    /// quiet.
    fn slice_end(&self, outcome: RunOutcome, quiet_at: &mut Option<u64>) -> Option<SliceEnd> {
        if self.all_finished() {
            return Some(SliceEnd::Finished);
        }
        if self.any_failed() {
            return Some(SliceEnd::Failed);
        }
        if outcome == RunOutcome::Idle {
            return Some(SliceEnd::Stalled(self.dry_reason()));
        }
        if self.only_polls_left() {
            return Some(SliceEnd::Stalled(StallReason::OnlyPolls));
        }
        let work = self.work_done();
        if self.quiet() {
            if *quiet_at == Some(work) {
                return Some(SliceEnd::Stalled(StallReason::NoProgress));
            }
            *quiet_at = Some(work);
        } else {
            *quiet_at = None;
        }
        None
    }

    /// Brings every PCI bus to where per-clock stepping stands at the end of a run
    /// whose last slice ran every event at or before `until` (`PciBus::settle`): fast
    /// stepping steps clocks without an output late, so a bus's counters would
    /// otherwise lag where the slice cuts a transaction, and it steps a fixed
    /// turnaround early. Ends, too, every DP83820 transmitter's gap that ended by
    /// `until` without its wake-up (`GmiiTx::settle`).
    fn settle_parts(&mut self, until: Time) {
        let (world, kernel) = (&mut self.world, &mut self.kernel);
        let (parts, nodes) = world.parts_and_store_mut();
        for (id, part) in parts {
            match part {
                Comp::SystemBus(n, b) => {
                    let mem = nodes.get_mut(*n).map(|s| &mut s.mem);
                    b.settle(kernel, id, until, mem);
                }
                Comp::LocalBus(n, b) => {
                    if let Some(s) = nodes.get_mut(*n) {
                        b.settle_ram(kernel, id, until, &mut s.ram);
                    }
                }
                // A gap its transmitter ended without a wake-up (`GmiiTx::set_lazy_gap`).
                Comp::MacSide(_, m) => m.settle(until),
                _ => {}
            }
        }
    }

    /// A count that grows with every piece of work any card does: DMA jobs, frames,
    /// doorbells, status writes, translations and registrations. Register reads and
    /// writes do not count.
    fn work_done(&self) -> u64 {
        self.world.iter().fold(0u64, |sum, (_, c)| {
            let n = match c {
                Comp::Dma(n, _) | Comp::FoldedDma(n) => self.dma(*n).map_or(0, |d| d.stats().jobs),
                Comp::Engine(_, e) => {
                    let s = e.stats();
                    s.doorbells
                        + s.sends_started
                        + s.status_writes
                        + s.data_frames_sent
                        + s.control_frames_sent
                        + s.rx_frames
                }
                Comp::Att(_, a) => {
                    let s = a.stats();
                    s.translations + s.registrations + s.deregistrations
                }
                Comp::Gec(n) => self
                    .gec(*n)
                    .map_or(0, |g| g.stats().tx_frames + g.stats().rx_frames),
                Comp::MacSide(_, m) => {
                    let s = m.stats();
                    s.tx_frames + s.rx_good + s.rx_bad + s.rx_overflows
                }
                _ => 0,
            };
            sum.wrapping_add(n)
        })
    }

    /// The non-zero counters of lost, refused or failed work, per component.
    fn losses(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (id, c) in self.world.iter() {
            let counts: Vec<(&str, u64)> = match c {
                Comp::MacSide(_, m) => {
                    let s = m.stats();
                    let w = m.tx().faults().map(|f| *f.stats()).unwrap_or_default();
                    vec![
                        ("frames refused by the transmitter", s.tx_refused),
                        ("transmit underruns", s.tx_underruns),
                        ("frames lost on its wire (faults.frame_loss)", w.frames_lost),
                        (
                            "frames lost on its wire to the link going down (faults.link_down_*)",
                            w.link_down_lost,
                        ),
                        (
                            "frames corrupted on its wire (faults.bit_error_rate)",
                            w.frames_corrupted,
                        ),
                        (
                            "frames duplicated on its wire (faults.duplicate)",
                            w.frames_duplicated,
                        ),
                        (
                            "frames held back on its wire (faults.reorder)",
                            w.frames_held,
                        ),
                        ("frames received with errors", s.rx_bad),
                        ("of them with CRC errors", s.rx_crc_errors),
                        ("RX FIFO overflows", s.rx_overflows),
                    ]
                }
                Comp::Gec(n) => self.gec(*n).map_or_else(Vec::new, |g| {
                    let s = g.stats();
                    vec![
                        ("transmissions failed", s.tx_failed),
                        ("transmissions refused", s.tx_refused),
                    ]
                }),
                Comp::Engine(_, e) => {
                    let s = e.stats();
                    vec![
                        ("send errors", s.send_errors),
                        ("DMA failures", s.dma_failures),
                        ("frames failed", s.tx_failures),
                        ("malformed frames", s.rx_malformed),
                        ("frames for no VI", s.rx_no_vi),
                        ("frames for an unconnected VI", s.rx_not_connected),
                    ]
                }
                Comp::SystemBus(_, b) => vec![
                    (
                        "DMA transactions ended with Target-Abort (faults.pci_abort)",
                        b.stats().target_aborts,
                    ),
                    (
                        "DMA transactions ended with Master-Abort (faults.pci_abort)",
                        b.stats().master_aborts,
                    ),
                ],
                Comp::Att(_, a) => vec![(
                    "bits flipped in the ATT in card SDRAM (faults.att_flip_*)",
                    a.stats().bit_flips,
                )],
                Comp::Dma(n, _) | Comp::FoldedDma(n) => vec![(
                    "failed DMA jobs",
                    self.dma(*n).map_or(0, |d| d.stats().failed_jobs),
                )],
                _ => Vec::new(),
            };
            let text: Vec<String> = counts
                .into_iter()
                .filter(|(_, n)| *n > 0)
                .map(|(what, n)| format!("{n} {what}"))
                .collect();
            if !text.is_empty() {
                out.push((self.kernel.component_name(id).to_owned(), text.join(", ")));
            }
        }
        out
    }

    /// Whether every unfinished program waits for the card with no deadline, every
    /// engine is idle, and only CPUs, system buses and engines have events queued.
    fn quiet(&self) -> bool {
        let waiting = self
            .cpus()
            .all(|(_, c)| c.is_some_and(|c| c.is_finished() || c.wait().waits_for_card()));
        let engines_idle =
            (0..self.nodes.len()).all(|n| self.engine(n).is_some_and(Engine::is_idle));
        let allowed = |id| {
            self.nodes
                .iter()
                .any(|ids| id == ids.cpu || id == ids.system_bus || id == ids.engine)
        };
        waiting && engines_idle && self.kernel.pending_targets().all(allowed)
    }

    fn cpus(&self) -> impl Iterator<Item = (usize, Option<&HostCpu>)> + '_ {
        (0..self.nodes.len()).map(|n| (n, self.cpu(n)))
    }

    fn all_finished(&self) -> bool {
        self.cpus()
            .all(|(_, c)| c.is_some_and(HostCpu::is_finished))
    }

    fn any_failed(&self) -> bool {
        self.cpus()
            .any(|(_, c)| c.and_then(HostCpu::outcome).is_some_and(Result::is_err))
    }

    /// Why a run whose queue ran dry stalled: fast polls wait without events, so a
    /// queue that ran dry under a CPU polling memory with no deadline is the same stall
    /// as one holding nothing but its iterations (`OnlyPolls`); else `NoEvent`.
    fn dry_reason(&self) -> StallReason {
        let polling = self
            .cpus()
            .any(|(_, c)| c.is_some_and(|c| !c.is_finished() && c.wait().needs_outside_change()));
        if polling {
            StallReason::OnlyPolls
        } else {
            StallReason::NoEvent
        }
    }

    /// Whether every queued event is for a CPU whose program can only be ended by a
    /// change some other component makes.
    fn only_polls_left(&self) -> bool {
        let polling = |id| {
            self.nodes.iter().enumerate().any(|(n, ids)| {
                ids.cpu == id && self.cpu(n).is_some_and(|c| c.wait().needs_outside_change())
            })
        };
        self.kernel.pending_targets().all(polling)
    }

    fn stall(&self, reason: StallReason) -> Stall {
        let waiting = self
            .cpus()
            .filter_map(|(n, c)| {
                let c = c?;
                let w = c.wait();
                if w == CpuWait::Finished {
                    return None;
                }
                let name = self.kernel.component_name(self.nodes[n].cpu).to_owned();
                let after = match c.last_call() {
                    Some((call, at)) => format!(" (last call {call}, returned at {at})"),
                    None => String::new(),
                };
                Some((name, format!("{w}{after}")))
            })
            .collect();
        Stall {
            at: self.kernel.now(),
            reason,
            waiting,
            losses: self.losses(),
        }
    }
}
