//! `Ctx::relay`: a relay queued where a component's own wake-up would have been queued
//! sends its message exactly where that wake-up's send would have been queued, so every
//! component receives the same messages at the same instants in the same order; a
//! cancelled relay sends nothing, as a cancelled wake-up. Relays are not events.

use proptest::prelude::*;
use sim_kernel::{
    ClockDomain, ComponentId, Ctx, Cycles, Duration, Kernel, Priority, SplitMix64, Time, World,
};

/// A message: who sent it and a serial number; `Wake` is a deferring component's own
/// wake-up carrying what it will send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum M {
    Data(u32),
    Wake {
        to: ComponentId,
        at: Time,
        serial: u32,
    },
}

/// Components that forward random traffic; each may also defer a message: queue it for
/// a later instant (its own late-priority wake-up that sends it, or a relay standing for
/// that wake-up) and sometimes take it back before it is due.
struct Net {
    relays: bool,
    rng: SplitMix64,
    peers: Vec<ComponentId>,
    left: u32,
    serial: u32,
    log: Vec<(ComponentId, Time, u32)>,
    pending: Vec<sim_kernel::EventToken>,
}

impl World<M> for Net {
    fn deliver(&mut self, to: ComponentId, msg: M, ctx: &mut Ctx<'_, M>) {
        match msg {
            M::Wake {
                to: dst,
                at,
                serial,
            } => {
                ctx.send_at(dst, at, M::Data(serial));
                return;
            }
            M::Data(s) => self.log.push((to, ctx.now(), s)),
        }
        if self.left == 0 {
            return;
        }
        let n = 1 + self.rng.below(3);
        for _ in 0..n {
            self.left = self.left.saturating_sub(1);
            self.serial += 1;
            let dst =
                self.peers[usize::try_from(self.rng.below(self.peers.len() as u64)).unwrap_or(0)];
            match self.rng.below(4) {
                0 => {
                    // Defer: a wake-up of this component `k` of its cycles from now that
                    // sends to `dst`, or the relay standing for it.
                    let k = 1 + self.rng.below(4);
                    let when = ctx.my_domain().edge_after(ctx.now(), Cycles(k));
                    let at = when + Duration(self.rng.below(30_000));
                    let serial = self.serial;
                    let token = if self.relays {
                        ctx.relay(when, Priority::LATE, dst, at, M::Data(serial))
                    } else {
                        ctx.wake_after_cancellable(
                            Cycles(k),
                            Priority::LATE,
                            M::Wake {
                                to: dst,
                                at,
                                serial,
                            },
                        )
                    };
                    self.pending.push(token);
                }
                1 if !self.pending.is_empty() => {
                    // Take back a deferred message (if still queued), in both variants alike.
                    let i = usize::try_from(self.rng.below(self.pending.len() as u64)).unwrap_or(0);
                    let t = self.pending.swap_remove(i);
                    ctx.cancel(t);
                }
                _ => {
                    let at = ctx.now() + Duration(self.rng.below(30_000));
                    ctx.send_at(dst, at, M::Data(self.serial));
                }
            }
        }
    }
}

fn run(seed: u64, relays: bool) -> (Vec<(ComponentId, Time, u32)>, u64, u64) {
    let mut k = Kernel::new(false);
    let a = k.add_domain(ClockDomain::from_mhz("a", 33.0).expect("clock"));
    let b = k.add_domain(ClockDomain::from_mhz("b", 125.0).expect("clock"));
    let c = k.add_domain(ClockDomain::from_mhz("c", 66.0).expect("clock"));
    let peers: Vec<ComponentId> = [a, b, c, a, b]
        .iter()
        .enumerate()
        .map(|(i, d)| k.add_component(format!("n{i}"), *d))
        .collect();
    let mut w = Net {
        relays,
        rng: SplitMix64::new(seed),
        peers: peers.clone(),
        left: 400,
        serial: 0,
        log: Vec::new(),
        pending: Vec::new(),
    };
    for (i, p) in peers.iter().enumerate() {
        k.post(*p, Time(0), M::Data(u32::try_from(1000 + i).unwrap_or(0)));
    }
    k.run_to_idle(&mut w);
    (w.log, k.stats().events, k.stats().relays)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Relays and the wake-ups they stand for give every component the same messages,
    /// at the same instants, in the same order; relays are counted apart from events.
    #[test]
    fn a_relay_sends_where_the_wake_up_would_have(seed in any::<u64>()) {
        let (woken, woken_events, none) = run(seed, false);
        let (relayed, relayed_events, relays) = run(seed, true);
        prop_assert_eq!(none, 0);
        prop_assert_eq!(&woken, &relayed);
        prop_assert_eq!(woken_events, relayed_events + relays);
    }
}
