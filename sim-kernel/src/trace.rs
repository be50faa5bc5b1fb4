//! The trace sink: spans of work (which message, which stage, which component and clock
//! domain, from when to when) and state transitions of component state machines.
//!
//! Reports are built from it: the per-clock latency breakdown, VCD waveforms, pcap and
//! Perfetto traces. Recording costs one predictable branch when the sink is disabled.
//! A trace hashes to a stable 64-bit value ([`TraceSink::digest`]) so tests can check
//! that two runs of one scenario are identical bit for bit.

use crate::kernel::{ComponentId, DomainId};
use crate::time::Time;

/// Identifies one message (or transaction) across the components it passes through.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MsgId(pub u64);

/// One stage of work on a message, by one component, in one clock domain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Span {
    /// The message or transaction the work belongs to.
    pub msg: MsgId,
    /// What the work was (e.g. `descriptor DMA read`).
    pub stage: &'static str,
    /// Who did it.
    pub component: ComponentId,
    /// The clock domain it was clocked in.
    pub domain: DomainId,
    /// First instant of the stage.
    pub start: Time,
    /// Instant the stage ended (exclusive).
    pub end: Time,
}

/// A state machine changed state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transition {
    /// When.
    pub time: Time,
    /// Whose state machine.
    pub component: ComponentId,
    /// The state machine's name within the component (e.g. `tx`).
    pub machine: &'static str,
    /// The state left.
    pub from: &'static str,
    /// The state entered.
    pub to: &'static str,
}

/// A numeric level of a component changed (a FIFO's fill): a sample of a counter, for
/// waveforms and counter tracks. Levels are observations derived from the state, not
/// part of the digests (which cover spans and transitions).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Level {
    /// When the level took its value.
    pub time: Time,
    /// Whose level.
    pub component: ComponentId,
    /// The level's name within the component (e.g. `send_fifo`).
    pub name: &'static str,
    /// Its unit (e.g. `bytes`).
    pub unit: &'static str,
    /// The value from `time` on.
    pub value: u64,
}

/// Collects spans, transitions and levels when enabled; does nothing (one branch) when
/// not.
#[derive(Clone, Debug, Default)]
pub struct TraceSink {
    enabled: bool,
    spans: Vec<Span>,
    transitions: Vec<Transition>,
    levels: Vec<Level>,
}

impl TraceSink {
    /// A sink that records (`true`) or ignores (`false`) what it is given.
    #[must_use]
    pub fn new(enabled: bool) -> Self {
        Self {
            enabled,
            ..Self::default()
        }
    }

    /// Whether the sink records.
    #[inline]
    #[must_use]
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Turns recording on or off (what was recorded stays).
    pub fn set_enabled(&mut self, enabled: bool) {
        self.enabled = enabled;
    }

    /// Records a span.
    #[inline]
    pub fn span(&mut self, span: Span) {
        if self.enabled {
            self.spans.push(span);
        }
    }

    /// Records a span built lazily (nothing is built when disabled).
    #[inline]
    pub fn span_with(&mut self, f: impl FnOnce() -> Span) {
        if self.enabled {
            self.spans.push(f());
        }
    }

    /// Records a state transition.
    #[inline]
    pub fn transition(&mut self, t: Transition) {
        if self.enabled {
            self.transitions.push(t);
        }
    }

    /// Records a level's new value.
    #[inline]
    pub fn level(&mut self, l: Level) {
        if self.enabled {
            self.levels.push(l);
        }
    }

    /// Levels recorded so far, in order.
    #[must_use]
    pub fn levels(&self) -> &[Level] {
        &self.levels
    }

    /// Spans recorded so far, in the order they were recorded.
    #[must_use]
    pub fn spans(&self) -> &[Span] {
        &self.spans
    }

    /// Transitions recorded so far, in order.
    #[must_use]
    pub fn transitions(&self) -> &[Transition] {
        &self.transitions
    }

    /// Forgets everything recorded (the enabled flag stays).
    pub fn clear(&mut self) {
        self.spans.clear();
        self.transitions.clear();
        self.levels.clear();
    }

    /// A stable 64-bit digest (FNV-1a) of everything recorded, in order.
    #[must_use]
    pub fn digest(&self) -> u64 {
        Self::digest_of(&self.spans, &self.transitions)
    }

    /// A digest of what was recorded, not of the order it was recorded in: spans sorted
    /// by (start, end, component, domain, stage, message), transitions by (component,
    /// time), each component's own transitions keeping their order. A component stepped
    /// lazily (it records a stretch of clocks when it is next woken) and one stepped
    /// clock by clock give the same canonical digest: it is the determinism check of a
    /// change that must not move results, however it moves events.
    #[must_use]
    pub fn canonical_digest(&self) -> u64 {
        let mut spans = self.spans.clone();
        spans.sort_by_key(|s| (s.start, s.end, s.component, s.domain, s.stage, s.msg));
        let mut transitions = self.transitions.clone();
        transitions.sort_by_key(|t| (t.component, t.time));
        Self::digest_of(&spans, &transitions)
    }

    fn digest_of(spans: &[Span], transitions: &[Transition]) -> u64 {
        let mut h = Fnv::new();
        for s in spans {
            h.u64(s.msg.0);
            h.bytes(s.stage.as_bytes());
            h.u64(u64::from(s.component.0));
            h.u64(u64::from(s.domain.0));
            h.u64(s.start.0);
            h.u64(s.end.0);
        }
        for t in transitions {
            h.u64(t.time.0);
            h.u64(u64::from(t.component.0));
            h.bytes(t.machine.as_bytes());
            h.bytes(t.from.as_bytes());
            h.bytes(t.to.as_bytes());
        }
        h.finish()
    }
}

/// FNV-1a, 64-bit: stable across platforms and releases (unlike `DefaultHasher`).
#[derive(Clone, Debug)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Self::new()
    }
}

impl Fnv {
    /// A fresh hash state.
    #[must_use]
    pub const fn new() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }

    /// Mixes in bytes, then a separator so `"ab","c"` and `"a","bc"` differ.
    pub fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 ^= u64::from(x);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 ^= 0xff;
        self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
    }

    /// Mixes in a 64-bit value.
    pub fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }

    /// The digest.
    #[must_use]
    pub const fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(start: u64) -> Span {
        Span {
            msg: MsgId(1),
            stage: "s",
            component: ComponentId(0),
            domain: DomainId(0),
            start: Time(start),
            end: Time(start + 5),
        }
    }

    #[test]
    fn disabled_sink_records_nothing() {
        let mut t = TraceSink::new(false);
        t.span(span(0));
        t.span_with(|| unreachable!("not built when disabled"));
        assert!(t.spans().is_empty());
        t.set_enabled(true);
        t.span(span(0));
        assert_eq!(t.spans().len(), 1);
    }

    #[test]
    fn digest_sees_every_field() {
        let mut a = TraceSink::new(true);
        let mut b = TraceSink::new(true);
        a.span(span(0));
        b.span(span(0));
        assert_eq!(a.digest(), b.digest());
        b.span(span(1));
        a.span(span(2));
        assert_ne!(a.digest(), b.digest());
    }

    fn transition(component: u32, time: u64, to: &'static str) -> Transition {
        Transition {
            time: Time(time),
            component: ComponentId(component),
            machine: "m",
            from: "a",
            to,
        }
    }

    #[test]
    fn canonical_digest_ignores_the_order_of_recording_only() {
        let mut a = TraceSink::new(true);
        let mut b = TraceSink::new(true);
        a.span(span(0));
        a.span(span(7));
        b.span(span(7));
        b.span(span(0));
        // Two components recorded in another interleaving.
        a.transition(transition(0, 10, "x"));
        a.transition(transition(1, 5, "y"));
        b.transition(transition(1, 5, "y"));
        b.transition(transition(0, 10, "x"));
        assert_ne!(a.digest(), b.digest());
        assert_eq!(a.canonical_digest(), b.canonical_digest());
        // One component's own order at one instant is kept.
        a.transition(transition(2, 20, "p"));
        a.transition(transition(2, 20, "q"));
        b.transition(transition(2, 20, "q"));
        b.transition(transition(2, 20, "p"));
        assert_ne!(a.canonical_digest(), b.canonical_digest());
        // A moved time is seen.
        let mut c = TraceSink::new(true);
        c.span(span(1));
        let mut d = TraceSink::new(true);
        d.span(span(2));
        assert_ne!(c.canonical_digest(), d.canonical_digest());
    }
}
