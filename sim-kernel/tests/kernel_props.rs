//! Property tests of the kernel's ordering rules: delivery order is the
//! `(time, priority, sequence)` order whatever the insertion order, time never goes
//! backwards, messages land on the receiver's edges at least one of its cycles later,
//! and two runs of one scenario give the same trace bit for bit.

use proptest::prelude::*;
use sim_kernel::{
    ClockDomain, ComponentId, Ctx, Cycles, Kernel, MsgId, Priority, SplitMix64, Time, World,
};

/// Records every delivery: (time, target, message).
#[derive(Default)]
struct Recorder {
    seen: Vec<(Time, ComponentId, u32)>,
}

impl World<u32> for Recorder {
    fn deliver(&mut self, to: ComponentId, msg: u32, ctx: &mut Ctx<'_, u32>) {
        self.seen.push((ctx.now(), to, msg));
    }
}

proptest! {
    /// Events posted in any order come out sorted by time, then in posting order.
    #[test]
    fn delivery_follows_time_then_fifo(times in prop::collection::vec(0u64..40, 1..200)) {
        let mut k = Kernel::new(false);
        let d = k.add_domain(ClockDomain::from_mhz("d", 1_000.0).unwrap()); // 1 ns edges
        let c = k.add_component("c", d);
        for (i, t) in times.iter().enumerate() {
            k.post(c, Time(t * 1_000), u32::try_from(i).unwrap());
        }
        let mut w = Recorder::default();
        k.run_to_idle(&mut w);
        let mut expected: Vec<(u64, usize)> =
            times.iter().enumerate().map(|(i, t)| (t * 1_000, i)).collect();
        expected.sort_unstable();
        let got: Vec<(u64, usize)> = w.seen.iter().map(|(t, _, m)| (t.0, *m as usize)).collect();
        prop_assert_eq!(got, expected);
    }
}

/// A random network of components in random domains that forward messages to random
/// peers with random cycle delays and priorities, checking the kernel's rules as it goes.
struct Chaos {
    rng: SplitMix64,
    peers: Vec<ComponentId>,
    left: u32,
    last: Time,
    violations: Vec<String>,
}

/// A message carries when and by whom it was sent, and the edge it must land on (by
/// the receiver's `ClockDomain::edge_after`, the reference the kernel's cached edges
/// must agree with).
#[derive(Clone, Copy)]
struct Note {
    sent: Time,
    id: u32,
    due: Time,
}

impl World<Note> for Chaos {
    fn deliver(&mut self, to: ComponentId, msg: Note, ctx: &mut Ctx<'_, Note>) {
        let now = ctx.now();
        if now < self.last {
            self.violations
                .push(format!("time went back {:?} -> {:?}", self.last, now));
        }
        self.last = now;
        let d = ctx.my_domain().clone();
        if !d.is_edge(now) {
            self.violations
                .push(format!("{to} woken off its edge at {now}"));
        }
        if msg.sent != Time::MAX && d.edge_after(msg.sent, Cycles(1)) > now {
            self.violations.push(format!(
                "{to} got a message less than a cycle after {}",
                msg.sent
            ));
        }
        if msg.sent != Time::MAX && now != msg.due {
            self.violations
                .push(format!("{to} got at {now} a message due at {}", msg.due));
        }
        ctx.span(MsgId(u64::from(msg.id)), "hop", msg.sent.min(now), now);
        if self.left == 0 {
            return;
        }
        self.left -= 1;
        let fanout = 1 + self.rng.below(2);
        for _ in 0..fanout {
            #[allow(clippy::cast_possible_truncation)]
            let peer = self.peers[self.rng.below(self.peers.len() as u64) as usize];
            let delay = Cycles(self.rng.below(4));
            #[allow(clippy::cast_possible_truncation)]
            let prio = Priority(self.rng.below(3) as u8);
            let mut note = Note {
                sent: now,
                id: msg.id.wrapping_mul(7).wrapping_add(1),
                due: ctx.domain_of(peer).edge_after(now, Cycles(delay.0.max(1))),
            };
            if peer != to {
                ctx.send_after_with(peer, delay, prio, note);
            } else if self.rng.below(2) == 0 {
                // A wake-up, by the kernel's path for the component being run.
                ctx.wake_after_with(delay, prio, note);
            } else {
                // A wake-up at an instant up to 40 ns away, on or off an edge.
                let at = now + sim_kernel::Duration::from_ps(self.rng.below(40_000));
                let d = ctx.my_domain();
                note.due = d.edge_after(now, Cycles(1)).max(d.edge_at_or_after(at));
                ctx.wake_at(at, note);
            }
        }
    }
}

fn chaos_run(seed: u64, events: u32) -> (u64, Vec<String>, u64) {
    let mut k = Kernel::new(true);
    // Two domains of one clock (as the PCI buses and the card core are): the same
    // edges, different domains.
    let mhz = [33.0, 66.0, 125.0, 800.0, 100.0, 33.0];
    let mut peers = Vec::new();
    for (i, f) in mhz.iter().enumerate() {
        let d = k.add_domain(ClockDomain::from_mhz(format!("d{i}"), *f).unwrap());
        peers.push(k.add_component(format!("c{i}"), d));
        peers.push(k.add_component(format!("c{i}b"), d));
    }
    let mut w = Chaos {
        rng: SplitMix64::new(seed),
        peers: peers.clone(),
        left: events,
        last: Time::ZERO,
        violations: Vec::new(),
    };
    for (i, p) in peers.iter().enumerate() {
        k.post(
            *p,
            Time(0),
            Note {
                sent: Time::MAX,
                id: u32::try_from(i).unwrap(),
                due: Time::MAX,
            },
        );
    }
    k.run_to_idle(&mut w);
    (k.trace().digest(), w.violations, k.stats().events)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    /// Time never goes backwards, every delivery is on the receiver's edge and at least
    /// one of its cycles after the send, on exactly the edge its delay asks for.
    #[test]
    fn rules_hold_in_random_networks(seed in any::<u64>()) {
        let (_, violations, events) = chaos_run(seed, 2_000);
        prop_assert!(events > 2_000);
        prop_assert!(violations.is_empty(), "{:?}", &violations[..violations.len().min(3)]);
    }

    /// The same scenario twice gives the same trace, bit for bit; another seed does not.
    #[test]
    fn same_scenario_same_trace(seed in any::<u64>()) {
        let (a, _, ea) = chaos_run(seed, 1_000);
        let (b, _, eb) = chaos_run(seed, 1_000);
        prop_assert_eq!(a, b);
        prop_assert_eq!(ea, eb);
        let (c, _, _) = chaos_run(seed ^ 0x5555, 1_000);
        prop_assert_ne!(a, c);
    }
}

#[test]
fn run_limits_and_stop() {
    struct Stopper;
    impl World<u32> for Stopper {
        fn deliver(&mut self, _to: ComponentId, msg: u32, ctx: &mut Ctx<'_, u32>) {
            if msg == 3 {
                ctx.stop();
            }
            ctx.wake_after(Cycles(1), msg + 1);
        }
    }
    let mut k = Kernel::new(false);
    let d = k.add_domain(ClockDomain::from_mhz("d", 100.0).unwrap());
    let c = k.add_component("c", d);
    k.post(c, Time(0), 0);
    assert_eq!(k.run_to_idle(&mut Stopper), sim_kernel::RunOutcome::Stopped);
    assert_eq!(k.now(), Time(30_000));
    assert_eq!(
        k.run_until(&mut Stopper, Time(55_000)),
        sim_kernel::RunOutcome::TimeLimit
    );
    assert_eq!(k.now(), Time(50_000));
    assert_eq!(k.stats().events, 6);
    assert_eq!(k.pending(), 1);
}

#[test]
fn the_queue_can_be_inspected_without_running() {
    struct Idle;
    impl World<u32> for Idle {
        fn deliver(&mut self, _to: ComponentId, _msg: u32, _ctx: &mut Ctx<'_, u32>) {}
    }
    let mut k: Kernel<u32> = Kernel::new(false);
    let d = k.add_domain(ClockDomain::from_mhz("d", 100.0).unwrap());
    let a = k.add_component("a", d);
    let b = k.add_component("b", d);
    assert_eq!(k.next_event_time(), None);
    assert_eq!(k.pending_targets().count(), 0);
    k.post(b, Time(70_000), 1);
    k.post(a, Time(20_000), 2);
    k.post(b, Time(40_000), 3);
    assert_eq!(k.next_event_time(), Some(Time(20_000)));
    let mut targets: Vec<ComponentId> = k.pending_targets().collect();
    targets.sort_by_key(|c| c.0);
    assert_eq!(targets, vec![a, b, b]);
    // A limit before the next event runs nothing and leaves time where it was: a run
    // loop must look at `next_event_time` to move on.
    assert_eq!(
        k.run_until(&mut Idle, Time(10_000)),
        sim_kernel::RunOutcome::TimeLimit
    );
    assert_eq!(k.now(), Time(0));
    assert_eq!(
        k.run_until(&mut Idle, Time(40_000)),
        sim_kernel::RunOutcome::TimeLimit
    );
    assert_eq!(k.next_event_time(), Some(Time(70_000)));
    assert_eq!(k.pending_targets().collect::<Vec<_>>(), vec![b]);
}
