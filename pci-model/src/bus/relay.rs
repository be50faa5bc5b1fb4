//! Relayed transaction ends (untraced `Stepping::FastForward`, on a bus without a host
//! bridge, when turned on with [`PciBus::set_relay_ends`]): the bus is not woken for the
//! clock in which a transaction ends when what that clock sends is already fixed.
//!
//! Where the bus would queue its wake-up for clock `k` (the first clock that can have
//! an output, see `next_tick`) while a transaction is in progress, it steps a copy of
//! itself to `k` with its outputs collected instead of sent. If the copy ended the
//! transaction there, started no other and sent only its completion (`TransactionDone`,
//! and a device write's `TargetWrite`), each of those messages is queued as a kernel
//! relay ([`sim_kernel::Ctx::relay`]) at clock `k`'s edge with the wake-up's late
//! priority: it stands in the queue where the wake-up would have stood, so the message
//! is queued at the same place in the order of events as the wake-up's own send. The
//! bus then queues its wake-up where the copy's look-ahead after `k` says (none if the
//! copy is idle), and keeps the copy.
//!
//! At its next event after clock `k` the bus takes the copy's state (the same clocks,
//! stepped by the same function: statistics, log, arbiter) instead of stepping them
//! again. An input landing before clock `k` can change the transaction's end (a request
//! of another master takes GNT# away, which the latency timer acts on): the relays are
//! cancelled, the copy dropped, and the bus goes on as without relays. An input landing
//! at clock `k` itself cannot change clock `k` if it is a request (REQ# of clock `k`
//! is sampled in clock `k + 1`): the relays stay, the copy is dropped, the bus steps
//! clock `k` itself later with its outputs not sent again; any other input at clock `k`
//! cancels them. A run that ends with a copy not taken yet takes it in
//! [`PciBus::settle`].

use super::PciBus;
use crate::msg::PciMsg;
use crate::params::Stepping;
use sim_kernel::{ComponentId, Ctx, EventToken, Priority, Time};

/// The relays of one transaction end.
#[derive(Clone, Debug)]
pub(crate) struct Relayed {
    /// The clock whose outputs the relays carry.
    pub clock: u64,
    /// The relays, to cancel them.
    tokens: Vec<EventToken>,
    /// The bus stepped through `clock` (and the turnaround after it, if stepped ahead),
    /// with no input since: taken at the bus's next event after `clock`.
    ahead: Option<Box<PciBus>>,
}

/// An output a plan's copy collected: target, instant, message.
pub(crate) type Captured = (ComponentId, Time, PciMsg);

impl PciBus {
    /// Turns relayed transaction ends on or off (see the module doc). Only a bus
    /// without a host bridge uses them.
    pub fn set_relay_ends(&mut self, on: bool) {
        self.relay_ends = on;
    }

    /// Test hook: relays queued `clocks` clocks late, a deliberately broken fast path
    /// that the lockstep harness must catch. 0 (the default) in every real run.
    pub fn set_relay_skew_clocks(&mut self, clocks: u64) {
        self.relay_skew = clocks;
    }

    /// At the end of a run: takes the state a relay plan stepped ahead if its relays
    /// have run (`queued` tells whether a kernel entry is still queued), so that the
    /// bus's counters cover the clocks they would without relays (the wake-up the
    /// relays stand for would have stepped them).
    pub fn settle(&mut self, queued: impl Fn(EventToken) -> bool) {
        let Some(r) = self.relayed.as_ref() else {
            return;
        };
        if r.ahead.is_none() || r.tokens.iter().any(|&t| queued(t)) {
            return;
        }
        if let Some(ahead) = self.relayed.take().and_then(|r| r.ahead) {
            self.adopt(*ahead);
        }
    }

    /// Relays pending: what an event at clock `now` (before the bus does anything else)
    /// means for them. `input` is the message, `None` for the bus's own wake-up.
    pub(super) fn relays_before<M: From<PciMsg>>(
        &mut self,
        now: u64,
        input: Option<&PciMsg>,
        ctx: &mut Ctx<'_, M>,
    ) {
        let Some(r) = self.relayed.as_ref() else {
            return;
        };
        if now > r.clock {
            // The relays have run: the copy's state is the bus's (without a copy the
            // bus steps clock `k` itself, its outputs not sent again: `relays_done`).
            if r.ahead.is_some() {
                if let Some(ahead) = self.relayed.take().and_then(|r| r.ahead) {
                    self.adopt(*ahead);
                }
            }
            return;
        }
        let keep = now == r.clock
            && matches!(
                input,
                Some(PciMsg::Request(_) | PciMsg::CpuRead { .. } | PciMsg::CpuWrite { .. })
            );
        if keep {
            // Clock `k` is stepped by the bus itself, its outputs not sent again.
            if let Some(r) = self.relayed.as_mut() {
                r.ahead = None;
            }
            return;
        }
        if let Some(r) = self.relayed.take() {
            for t in r.tokens {
                ctx.cancel(t);
            }
        }
    }

    /// Whether the relays of clock `k`'s outputs are done (its clocks stepped, by the
    /// bus or by taking the copy): then they no longer suppress outputs.
    pub(super) fn relays_done(&mut self) {
        if self
            .relayed
            .as_ref()
            .is_some_and(|r| r.ahead.is_none() && self.clk_next > r.clock)
        {
            self.relayed = None;
        }
    }

    /// Takes `ahead`'s stepped state, keeping this bus's own wake-up and test hooks.
    fn adopt(&mut self, mut ahead: PciBus) {
        ahead.capture = None;
        ahead.relay_ends = self.relay_ends;
        ahead.relayed = None;
        ahead.tick = self.tick;
        ahead.tick_token = self.tick_token.take();
        ahead.generation = self.generation;
        ahead.now_clk = self.now_clk;
        *self = ahead;
    }

    /// Instead of a wake-up at clock `k`: relays of clock `k`'s outputs, if they are
    /// fixed (see the module doc). Returns the wake-up to queue instead (`Some(None)`:
    /// none), or `None` where no relay applies.
    pub(super) fn plan_relays<M: From<PciMsg>>(
        &mut self,
        k: u64,
        ctx: &mut Ctx<'_, M>,
    ) -> Option<Option<u64>> {
        if !self.relay_ends
            || self.params.stepping != Stepping::FastForward
            || ctx.tracing()
            || self.relayed.is_some()
            || self.bridge.is_some()
            || self.samples_out > 0
            || !self.fold_new.is_empty()
            || k < self.clk_next
        {
            return None;
        }
        let mut copy = self.clone();
        copy.capture = Some(Vec::new());
        copy.relay_ends = false;
        copy.run_to(k, ctx, &mut None);
        let out = copy.capture.take().unwrap_or_default();
        let ended = copy.active.is_none()
            && copy.stats.transactions <= self.stats.transactions + 1
            && copy.fold_new.is_empty()
            && !out.is_empty()
            && out.iter().all(|(_, _, m)| {
                matches!(m, PciMsg::TransactionDone(_) | PciMsg::TargetWrite { .. })
            });
        if !ended {
            return None;
        }
        // The rest of the wake-up at `k`: the turnaround stepped ahead, the look-ahead.
        copy.capture = Some(Vec::new());
        let mut last = k;
        if copy.turnaround_is_fixed(k, false) {
            copy.step(k + 1, ctx, &mut None);
            copy.clk_next = k + 2;
            last = k + 1;
        }
        if copy.capture.as_ref().is_some_and(|c| !c.is_empty()) {
            return None;
        }
        copy.capture = None;
        let after = copy.next_tick(last, false);
        let when = self.edge(k.saturating_add(self.relay_skew));
        let tokens = out
            .into_iter()
            .map(|(to, at, m)| ctx.relay(when, Priority::LATE, to, at, m.into()))
            .collect();
        self.relayed = Some(super::relay::Relayed {
            clock: k,
            tokens,
            ahead: Some(Box::new(copy)),
        });
        Some(after)
    }
}
