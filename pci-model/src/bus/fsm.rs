//! The bus-phase state machine: what the shared bus signals do in one PCI clock.
//!
//! Each clock `c` is evaluated in this order: posted writes due at edge `c` commit; the
//! REQ# lines of clock `c-1` are sampled; the bus activity of clock `c` is decided (a
//! master starting, or the master's FRAME# and the target's DEVSEL#/TRDY#/STOP# of the
//! transaction in progress); the phase moves by one `match (phase, input)`; the arbiter
//! sets GNT# for clock `c`; the counters advance.
//!
//! Phases (signals asserted in that clock):
//!
//! | phase   | FRAME# | IRDY# | meaning |
//! |---------|--------|-------|---------|
//! | Idle    | -      | -     | no transaction; also the turnaround clock after one |
//! | Address | yes    | -     | address and command on AD and C/BE# |
//! | Wait    | any    | yes   | no data: read turnaround, DEVSEL# decode, TRDY# wait states |
//! | Data    | any    | yes   | TRDY# and IRDY#: one word moves |
//! | Stop    | any    | yes   | STOP# without data (retry, disconnect, target abort), or the clock after STOP# in which the master deasserts FRAME#; also a master abort's last clock |

use super::tenure::{Resp, TenureClock};
use super::{BusPhase as P, PciBus};
use crate::memory::HostMemory;
use crate::msg::PciMsg;
use crate::stats::TenureEnd;
use sim_kernel::{Ctx, StateName};
use ClockInput as In;

/// The bus phase of one PCI clock (see the module table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BusPhase {
    /// FRAME# and IRDY# deasserted.
    Idle,
    /// The address phase.
    Address,
    /// A data-phase clock in which no data moves.
    Wait,
    /// A data-phase clock in which one word moves.
    Data,
    /// A termination clock (STOP#, or FRAME# released after it).
    Stop,
}

impl StateName for BusPhase {
    fn name(self) -> &'static str {
        match self {
            BusPhase::Idle => "idle",
            BusPhase::Address => "address",
            BusPhase::Wait => "wait",
            BusPhase::Data => "data",
            BusPhase::Stop => "stop",
        }
    }
}

/// What happens on the bus in one clock, before the phase moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ClockInput {
    /// Bus idle in the previous clock and no master both granted and requesting.
    Quiet,
    /// This master had REQ# and GNT# and saw the bus idle: it drives FRAME# and the address.
    Start(usize),
    /// The transaction ended in the previous clock: FRAME# and IRDY# are released.
    Release,
    /// A transaction clock without data: no DEVSEL# yet, or TRDY# held off.
    NoData(TenureClock),
    /// TRDY# and IRDY#: one word moves; `true`: STOP# with it.
    Transfer(TenureClock, bool),
    /// STOP# without TRDY#: Retry, disconnect without data or target abort.
    Stop(TenureClock, TenureEnd),
    /// The clock after STOP# with FRAME# asserted: FRAME# released, no data.
    Hold,
    /// No DEVSEL# by the fifth clock.
    MasterAbort,
}

impl PciBus {
    /// Simulates clock `c`.
    pub(super) fn step<M: From<PciMsg>>(
        &mut self,
        c: u64,
        ctx: &mut Ctx<'_, M>,
        mem: &mut Option<&mut HostMemory>,
    ) {
        self.commit_clock(c, ctx, mem);
        // With no request queued, or only the one in progress, every REQ# line is off
        // (a master requests for a queued request other than the one it is moving):
        // the lines, the arbiter's look at them and the grant-wait counters need no loop.
        debug_assert_eq!(
            self.queued,
            self.masters.iter().map(|p| p.queue.len()).sum::<usize>(),
            "the count of queued requests"
        );
        let lines_off = self.queued == 0 || (self.queued == 1 && self.active.is_some());
        let gnt_prev = self.arb.gnt();
        // All queued work one master's (the owner's, or the granted master's): only its
        // line can be on, and it is found without filling every line.
        let sole = if lines_off {
            None
        } else {
            self.sole_requester(gnt_prev, c)
        };
        let gnt_req = if lines_off {
            false
        } else if let Some((m, on)) = sole {
            on && gnt_prev == Some(m)
        } else {
            // REQ# lines in a buffer the bus keeps: no allocation per clock.
            let busy = self.active.as_ref().map_or(usize::MAX, |t| t.master);
            fill_req_lines(&self.masters, busy, c, &mut self.reqs_buf);
            gnt_prev.is_some_and(|g| self.reqs_buf.get(g).copied().unwrap_or(false))
        };
        let input = self.clock_input(c, gnt_req, gnt_prev);
        let from = self.phase.state();
        let owner = self.active.as_ref().map(|t| t.master);
        let mut started = None;
        let to = match (from, input) {
            // Nobody may start: the bus stays idle.
            (P::Idle, In::Quiet) => P::Idle,
            // The granted, requesting master saw the bus idle at this edge: address phase.
            (P::Idle, In::Start(m)) => {
                self.begin(m, c, ctx);
                started = Some(m);
                P::Address
            }
            // A transaction always begins with an address phase and ends in a busy phase.
            (
                P::Idle,
                In::Release
                | In::NoData(_)
                | In::Transfer(..)
                | In::Stop(..)
                | In::Hold
                | In::MasterAbort,
            ) => {
                self.impossible(from, input);
                P::Idle
            }
            // No DEVSEL# yet, or TRDY# held off: turnaround, decode or a wait state.
            (P::Address | P::Wait | P::Data, In::NoData(tc)) => {
                self.apply_frame(tc);
                self.stats.wait_cycles += 1;
                P::Wait
            }
            // TRDY# and IRDY#: one word moves; the last one (FRAME# deasserted) ends the
            // transaction; STOP# with it while FRAME# is asserted is a disconnect with data.
            (P::Address | P::Wait | P::Data, In::Transfer(tc, stop)) => {
                self.apply_frame(tc);
                self.transfer(c, stop);
                if !tc.frame {
                    self.finish(c, c, None, ctx, mem);
                }
                P::Data
            }
            // STOP# without data: with FRAME# still asserted the master releases it next
            // clock; with FRAME# already deasserted the transaction ends here.
            (P::Address | P::Wait | P::Data, In::Stop(tc, end)) => {
                self.apply_frame(tc);
                self.stats.wait_cycles += 1;
                self.stop(end, tc.frame);
                if !tc.frame {
                    self.finish(c, c, None, ctx, mem);
                }
                P::Stop
            }
            // The clock after STOP# (after a retry, or a disconnect with data): FRAME#
            // deasserted, IRDY# asserted, no data; the transaction ends here.
            (P::Data | P::Stop, In::Hold) => {
                self.stats.wait_cycles += 1;
                self.finish(c, c, None, ctx, mem);
                P::Stop
            }
            // Hold only follows a clock with STOP# asserted.
            (P::Address | P::Wait, In::Hold) => {
                self.impossible(from, input);
                self.finish(c, c, Some(TenureEnd::TargetAbort), ctx, mem);
                P::Stop
            }
            // No DEVSEL# by the fifth clock: master abort. With FRAME# still asserted the
            // master deasserts it now (IRDY# stays one more clock); otherwise IRDY# goes
            // now and the bus is idle in this clock.
            (P::Wait, In::MasterAbort) => {
                let frame_was = self.active.as_ref().is_some_and(|t| t.frame);
                if frame_was {
                    self.stats.wait_cycles += 1;
                    self.finish(c, c, Some(TenureEnd::MasterAbort), ctx, mem);
                    P::Stop
                } else {
                    self.finish(c, c - 1, Some(TenureEnd::MasterAbort), ctx, mem);
                    P::Idle
                }
            }
            // Master abort is only decided after four clocks of Wait.
            (P::Address | P::Data | P::Stop, In::MasterAbort) => {
                self.impossible(from, input);
                self.finish(c, c, Some(TenureEnd::MasterAbort), ctx, mem);
                P::Stop
            }
            // After a STOP# clock only Hold follows.
            (P::Stop, In::NoData(_) | In::Transfer(..) | In::Stop(..)) => {
                self.impossible(from, input);
                self.finish(c, c, Some(TenureEnd::TargetAbort), ctx, mem);
                P::Stop
            }
            // The transaction's last clock was the previous one: FRAME# and IRDY# are
            // deasserted, the bus is idle (the turnaround clock).
            (P::Data | P::Stop, In::Release) => P::Idle,
            // A transaction cannot end in its address phase or in a wait clock.
            (P::Address | P::Wait, In::Release) => {
                self.impossible(from, input);
                P::Idle
            }
            // While a transaction owns the bus nobody else starts.
            (P::Address | P::Wait | P::Data | P::Stop, In::Quiet | In::Start(_)) => {
                self.impossible(from, input);
                P::Idle
            }
        };
        debug_assert!(
            from == to || c == self.now_clk || !ctx.tracing(),
            "phase change {from:?} -> {to:?} in clock {c} stepped late at clock {}",
            self.now_clk
        );
        self.phase.set(to, ctx);
        self.stats.cycles += 1;
        if to == P::Idle {
            self.stats.idle_cycles += 1;
        } else {
            self.stats.busy_cycles += 1;
        }
        if lines_off {
            // No line on: nobody starts (a start needs its REQ# line) or waits.
            self.arb.step_no_requests(to == P::Idle);
            return;
        }
        if let Some((m, on)) = sole {
            self.arb.step_one(m, on, started, to == P::Idle);
            if on && started != Some(m) && owner != Some(m) {
                if let Some(s) = self.stats.per_master.get_mut(m) {
                    s.wait_for_grant_cycles += 1;
                }
            }
            return;
        }
        let reqs = &self.reqs_buf;
        self.arb.step(reqs, started, to == P::Idle);
        for (m, &r) in reqs.iter().enumerate() {
            if r && started != Some(m) && owner != Some(m) {
                if let Some(s) = self.stats.per_master.get_mut(m) {
                    s.wait_for_grant_cycles += 1;
                }
            }
        }
    }

    /// What clock `c` does first: the host bridge commits the posted writes due at its
    /// edge, and every watcher of host memory a commit wrote into is told.
    #[inline(always)]
    fn commit_clock<M: From<PciMsg>>(
        &mut self,
        c: u64,
        ctx: &mut Ctx<'_, M>,
        mem: &mut Option<&mut HostMemory>,
    ) {
        let t_c = self.edge(c);
        if let Some(b) = self.bridge.as_mut() {
            b.commit_due(t_c, mem);
            if let Some(m) = mem.as_deref_mut().filter(|m| m.has_hits()) {
                for who in m.drain_hits() {
                    ctx.send(who, PciMsg::WatchedWrite { at: t_c }.into());
                }
            }
        }
    }

    /// Clock `c` of a quiet bus (idle, nothing queued, GNT# stable: `idle_quiescent`)
    /// in which a posted write commits, as [`PciBus::step`] steps it (fast stepping):
    /// the commit and its watchers told, nobody starts, an idle clock, the arbiter with
    /// every REQ# line off.
    pub(super) fn quiet_commit<M: From<PciMsg>>(
        &mut self,
        c: u64,
        ctx: &mut Ctx<'_, M>,
        mem: &mut Option<&mut HostMemory>,
    ) {
        debug_assert!(self.idle_quiescent(), "a quiet commit clock on a busy bus");
        self.commit_clock(c, ctx, mem);
        self.stats.cycles += 1;
        self.stats.idle_cycles += 1;
        self.arb.step_no_requests(true);
    }

    /// Decides the bus activity of clock `c`.
    /// `gnt_req`: the master granted in the previous clock (`gnt_prev`) had REQ# on.
    #[inline(always)]
    fn clock_input(&mut self, c: u64, gnt_req: bool, gnt_prev: Option<usize>) -> ClockInput {
        if self.active.is_some() {
            let tc = self.tenure_clock(c, gnt_prev);
            return match tc.resp {
                Resp::NoDevsel | Resp::Wait => ClockInput::NoData(tc),
                Resp::Transfer { stop } => ClockInput::Transfer(tc, stop),
                Resp::Stop(end) => ClockInput::Stop(tc, end),
                Resp::Hold => ClockInput::Hold,
                Resp::MasterAbort => ClockInput::MasterAbort,
            };
        }
        match self.phase.state() {
            P::Idle => match gnt_prev {
                Some(g) if gnt_req => ClockInput::Start(g),
                _ => ClockInput::Quiet,
            },
            P::Address | P::Wait | P::Data | P::Stop => ClockInput::Release,
        }
    }

    /// When every queued request is master `m`'s, `m` being the owner of the transaction
    /// in progress or else the master granted in the previous clock (`gnt_prev`): `m`
    /// and its REQ# line in clock `c - 1` (every other line is off).
    #[inline]
    fn sole_requester(&self, gnt_prev: Option<usize>, c: u64) -> Option<(usize, bool)> {
        let busy = self.active.as_ref().map(|t| t.master);
        let m = busy.or(gnt_prev)?;
        let port = self.masters.get(m).filter(|_| !self.others_queued(m))?;
        Some((m, req_line(port, busy == Some(m), c)))
    }

    /// REQ# of every master in clock `c - 1` (none before clock 0), into `out`.
    pub(super) fn req_lines(&self, c: u64, out: &mut Vec<bool>) {
        let busy = self.active.as_ref().map_or(usize::MAX, |t| t.master);
        fill_req_lines(&self.masters, busy, c, out);
    }

    /// An internal invariant broke: log it (and stop a debug build).
    #[cold]
    #[inline(never)]
    fn impossible(&self, from: P, input: ClockInput) {
        tracing::error!(target: "pci::bus", ?from, ?input, "impossible bus transition");
        debug_assert!(false, "impossible bus transition {from:?} / {input:?}");
    }
}

/// REQ# of every master in clock `c - 1` (none before clock 0) into `out`, with `busy`
/// the owner of the transaction in progress (`usize::MAX`: none), which requests for its
/// next request. A free function so that `step` can fill the bus's own buffer.
#[inline(always)]
fn fill_req_lines(masters: &[super::MasterPort], busy: usize, c: u64, out: &mut Vec<bool>) {
    // The buffer keeps its length from clock to clock: each line is overwritten.
    out.resize(masters.len(), false);
    for (m, (line, port)) in out.iter_mut().zip(masters).enumerate() {
        *line = req_line(port, m == busy, c);
    }
}

/// REQ# of one master in clock `c - 1` (off before clock 0): on once its hold-off has
/// passed and the request it asks the bus for has arrived. `busy`: it owns the
/// transaction in progress, so it requests for the request queued behind that one.
#[inline(always)]
pub(super) fn req_line(port: &super::MasterPort, busy: bool, c: u64) -> bool {
    let Some(prev) = c.checked_sub(1) else {
        return false;
    };
    let next = if busy {
        port.queue.get(1)
    } else {
        port.queue.front()
    };
    prev >= port.hold_until && next.is_some_and(|q| q.arrival <= prev)
}
