//! Explicit state machines: a state enum plus one transition function that traces.
//!
//! Components keep each state machine in an [`Fsm`] and change state only through
//! [`Fsm::set`], so every transition reaches the trace sink (for waveforms) and the
//! `tracing` log, and none is silent.

use crate::kernel::Ctx;
use crate::trace::Transition;

/// A state enum that can name its states (for traces and waveforms).
pub trait StateName: Copy + PartialEq + core::fmt::Debug {
    /// The state's name, e.g. `"fetch-descriptor"`.
    fn name(self) -> &'static str;
}

/// One state machine of a component.
#[derive(Clone, Debug)]
pub struct Fsm<S> {
    machine: &'static str,
    state: S,
}

impl<S: StateName> Fsm<S> {
    /// A state machine called `machine` (e.g. `"tx"`) starting in `initial`.
    #[must_use]
    pub const fn new(machine: &'static str, initial: S) -> Self {
        Self {
            machine,
            state: initial,
        }
    }

    /// The current state.
    #[inline]
    #[must_use]
    pub fn state(&self) -> S {
        self.state
    }

    /// The machine's name.
    #[must_use]
    pub fn machine(&self) -> &'static str {
        self.machine
    }

    /// Moves to `to`, recording the transition in `sink` (a no-op transition is not
    /// recorded). The sink is the kernel's [`Ctx`] for a component that runs on it, or
    /// the outbox of a sans-IO unit that hands its effects back as values.
    #[inline]
    pub fn set<T: TransitionSink + ?Sized>(&mut self, to: S, sink: &mut T) {
        if to != self.state {
            self.change(to, sink);
        }
    }

    /// The transition of [`Fsm::set`] (out of line: most calls keep the state).
    #[inline(never)]
    fn change<T: TransitionSink + ?Sized>(&mut self, to: S, sink: &mut T) {
        let from = self.state;
        self.state = to;
        let log = tracing::level_enabled!(tracing::Level::TRACE);
        if log || sink.records_transitions() {
            self.record(from, to, log, sink);
        }
    }

    /// A transition's `tracing` event and its record in `sink`, out of line: the
    /// transition itself needs none of their frame when neither is wanted (the macro
    /// checks the level again).
    #[cold]
    #[inline(never)]
    fn record<T: TransitionSink + ?Sized>(&self, from: S, to: S, log: bool, sink: &mut T) {
        if log {
            tracing::trace!(target: "kernel::fsm", machine = self.machine, from = from.name(), to = to.name());
        }
        sink.record_transition(self.machine, from.name(), to.name());
    }
}

/// Where [`Fsm::set`] records a transition.
pub trait TransitionSink {
    /// State machine `machine` of the running component went from `from` to `to` now.
    fn record_transition(&mut self, machine: &'static str, from: &'static str, to: &'static str);

    /// Whether [`TransitionSink::record_transition`] would keep anything now (`false`
    /// lets a transition skip the call; a sink that always keeps its records need not
    /// say).
    fn records_transitions(&self) -> bool {
        true
    }
}

impl<M> TransitionSink for Ctx<'_, M> {
    #[inline]
    fn records_transitions(&self) -> bool {
        self.tracing()
    }

    fn record_transition(&mut self, machine: &'static str, from: &'static str, to: &'static str) {
        if self.tracing() {
            let t = Transition {
                time: self.now(),
                component: self.me(),
                machine,
                from,
                to,
            };
            self.trace().transition(t);
        }
    }
}
