//! `Ctx::event_key`, `Ctx::next_sequence` and `ClockDomain::landing`: a component can
//! tell the key an event it queues will have, before the kernel delivers it, and keys
//! are delivered in strictly increasing order.

use proptest::prelude::*;
use sim_kernel::{
    ClockDomain, ComponentId, Ctx, Cycles, Duration, EventKey, Kernel, Priority, SplitMix64, Time,
    World,
};

/// Forwards messages to random peers (`send_at` with a random earliest time, or a
/// prioritised send a random number of cycles later) and checks that every event is
/// delivered with the key predicted when it was queued.
struct Predictor {
    rng: SplitMix64,
    peers: Vec<ComponentId>,
    predicted: Vec<EventKey>,
    last: Option<EventKey>,
    left: u32,
    checked: u32,
    violations: Vec<String>,
}

impl World<usize> for Predictor {
    fn deliver(&mut self, _to: ComponentId, msg: usize, ctx: &mut Ctx<'_, usize>) {
        let key = ctx.event_key();
        if key.time != ctx.now() {
            self.violations
                .push(format!("key {key:?} at {:?}", ctx.now()));
        }
        if self.last.is_some_and(|l| l >= key) {
            self.violations
                .push(format!("keys out of order: {:?} then {key:?}", self.last));
        }
        self.last = Some(key);
        if let Some(&p) = self.predicted.get(msg) {
            if p != key {
                self.violations
                    .push(format!("message {msg}: predicted {p:?}, delivered {key:?}"));
            }
            self.checked += 1;
        }
        let fanout = 1 + self.rng.below(2);
        for _ in 0..fanout {
            if self.left == 0 {
                return;
            }
            self.left -= 1;
            let to = self.peers[usize::try_from(self.rng.below(self.peers.len() as u64)).unwrap()];
            let id = self.predicted.len();
            let d = ctx.domain_of(to).clone();
            if self.rng.below(2) == 0 {
                let earliest = ctx.now() + Duration(self.rng.below(20_000));
                let time = d.landing(ctx.now(), earliest);
                let sequence = ctx.next_sequence();
                self.predicted.push(EventKey {
                    time,
                    priority: Priority::NORMAL,
                    sequence,
                });
                ctx.send_at(to, earliest, id);
            } else {
                let n = Cycles(1 + self.rng.below(3));
                let prio = [Priority::EARLY, Priority::NORMAL, Priority::LATE]
                    [usize::try_from(self.rng.below(3)).unwrap()];
                let time = d.edge_after(ctx.now(), n);
                let sequence = ctx.next_sequence();
                self.predicted.push(EventKey {
                    time,
                    priority: prio,
                    sequence,
                });
                ctx.send_after_with(to, n, prio, id);
            }
        }
    }
}

proptest! {
    #[test]
    fn queued_events_are_delivered_with_the_predicted_key(seed in any::<u64>()) {
        let mut k = Kernel::new(false);
        let mut peers = Vec::new();
        for (i, (mhz, phase)) in [(33.0, 0), (125.0, 1_000), (100.0, 0), (66.0, 7_000)]
            .into_iter()
            .enumerate()
        {
            let base = ClockDomain::from_mhz(format!("d{i}"), mhz).unwrap();
            let d = ClockDomain::new(format!("d{i}"), base.period(), Duration(phase)).unwrap();
            let id = k.add_domain(d);
            peers.push(k.add_component(format!("c{i}"), id));
        }
        let mut w = Predictor {
            rng: SplitMix64::new(seed),
            peers: peers.clone(),
            predicted: Vec::new(),
            last: None,
            left: 400,
            checked: 0,
            violations: Vec::new(),
        };
        // The first message is posted from outside: no prediction for it.
        k.post(peers[0], Time::ZERO, usize::MAX);
        k.run_to_idle(&mut w);
        prop_assert!(w.violations.is_empty(), "{:?}", &w.violations[..w.violations.len().min(3)]);
        prop_assert_eq!(w.checked as usize, w.predicted.len());
    }
}

/// `landing` is the kernel's rule: at least one cycle of the receiver after now, then
/// the first edge at or after the earliest time.
#[test]
fn landing_follows_the_send_rules() {
    let d = ClockDomain::new("d", Duration(10_000), Duration(2_000)).unwrap();
    // Sent on an edge: the next edge at the earliest.
    assert_eq!(d.landing(Time(12_000), Time::ZERO), Time(22_000));
    // Sent between edges: one cycle after the next edge.
    assert_eq!(d.landing(Time(13_000), Time(14_000)), Time(32_000));
    // A later earliest time: the first edge at or after it.
    assert_eq!(d.landing(Time(12_000), Time(35_000)), Time(42_000));
    assert_eq!(d.landing(Time(12_000), Time(42_000)), Time(42_000));
}
