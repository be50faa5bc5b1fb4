//! `Ctx::send_deferred`: a message queued as if an event that is not queued sent it
//! where it would have stood. A run in which components relay messages through wake-ups
//! of their own (the reference) and the same run in which each relay is a deferred send
//! instead deliver every work message at the same instant and in the same order, one
//! or two messages a place, also when runs stop at time limits or event budgets and
//! resume; a deferred message given the wrong place is caught, and a cancelled one is
//! never delivered.

use proptest::prelude::*;
use sim_kernel::{
    ClockDomain, ComponentId, Ctx, Cycles, EventKey, Kernel, Priority, RunLimit, SplitMix64, Time,
    World,
};

/// A message: work (an id and how many more generations it may spawn), or the
/// reference's relay, a wake-up that sends `id` on to `to` one of its cycles later.
#[derive(Clone, Copy, Debug)]
enum Msg {
    Work {
        id: u64,
        depth: u32,
    },
    Relay {
        to: ComponentId,
        id: u64,
        depth: u32,
        two: bool,
    },
}

/// How a run relays: through wake-ups, deferred sends, or deferred sends whose place is
/// the first of its instant and priority, before the events queued there already (a
/// broken fold, for the test that it is caught).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Wake,
    Deferred,
    DeferredEarly,
}

struct Sys {
    mode: Mode,
    comps: Vec<ComponentId>,
    /// Every work delivery: receiver, instant, id.
    log: Vec<(ComponentId, Time, u64)>,
}

fn child(id: u64, j: u64) -> u64 {
    SplitMix64::new(id ^ (j.wrapping_mul(0x9E37_79B9_7F4A_7C15))).next_u64()
}

impl World<Msg> for Sys {
    fn deliver(&mut self, to: ComponentId, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        let (id, depth) = match msg {
            Msg::Relay {
                to: dest,
                id,
                depth,
                two,
            } => {
                ctx.send(dest, Msg::Work { id, depth });
                if two {
                    let id = child(id, 99);
                    ctx.send(dest, Msg::Work { id, depth });
                }
                return;
            }
            Msg::Work { id, depth } => (id, depth),
        };
        self.log.push((to, ctx.now(), id));
        if depth == 0 {
            return;
        }
        let mut r = SplitMix64::new(id);
        let n = r.below(4);
        for j in 0..n {
            let dest = self.comps[r.below(self.comps.len() as u64) as usize];
            let cycles = Cycles(1 + r.below(3));
            let prio = [Priority::EARLY, Priority::NORMAL, Priority::LATE][r.below(3) as usize];
            let m = Msg::Work {
                id: child(id, j),
                depth: depth - 1,
            };
            if r.below(3) == 0 {
                // A relay: a wake-up of this component `cycles` later, which sends on
                // one message or two.
                let two = r.below(2) == 0;
                let dest_relay = Msg::Relay {
                    to: dest,
                    id: child(id, j),
                    depth: depth - 1,
                    two,
                };
                match self.mode {
                    Mode::Wake => ctx.wake_after_with(cycles, prio, dest_relay),
                    Mode::Deferred | Mode::DeferredEarly => {
                        let t2 = ctx.my_domain().edge_after(ctx.now(), cycles);
                        let reserved = ctx.reserve_sequence();
                        let sequence = if self.mode == Mode::DeferredEarly {
                            0
                        } else {
                            reserved
                        };
                        let at = ctx.domain_of(dest).landing(t2, Time::ZERO);
                        let place = EventKey {
                            time: t2,
                            priority: prio,
                            sequence,
                        };
                        ctx.send_deferred(dest, at, Priority::NORMAL, m, place);
                        if two {
                            let second = Msg::Work {
                                id: child(child(id, j), 99),
                                depth: depth - 1,
                            };
                            ctx.send_deferred(dest, at, Priority::NORMAL, second, place);
                        }
                    }
                }
            } else if prio == Priority::NORMAL {
                ctx.send_after(dest, cycles, m);
            } else {
                ctx.send_after_with(dest, cycles, prio, m);
            }
        }
    }
}

/// Runs a system of `n` components on two clock grids from `seeds`, stopping at each
/// of `stops` (ns, or when odd after a budget of that many events) and resuming; the
/// work deliveries in order.
fn run(mode: Mode, n: usize, seeds: &[u64], stops: &[u64]) -> Vec<(ComponentId, Time, u64)> {
    let mut k: Kernel<Msg> = Kernel::new(false);
    let fast = k.add_domain(ClockDomain::from_mhz("fast", 100.0).unwrap()); // 10 ns
    let slow = k.add_domain(ClockDomain::from_mhz("slow", 33.0).unwrap());
    let comps: Vec<_> = (0..n)
        .map(|i| k.add_component(format!("c{i}"), if i % 2 == 0 { fast } else { slow }))
        .collect();
    for (i, &s) in seeds.iter().enumerate() {
        k.post(
            comps[i % n],
            Time(1000 * (i as u64 % 5)),
            Msg::Work { id: s, depth: 6 },
        );
    }
    let mut w = Sys {
        mode,
        comps,
        log: Vec::new(),
    };
    for &s in stops {
        if s % 2 == 1 {
            let budget = RunLimit {
                until: Time::MAX,
                max_events: s,
            };
            k.run(&mut w, budget);
        } else {
            k.run_until(&mut w, Time(s * 1000));
        }
    }
    k.run_to_idle(&mut w);
    w.log
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Relaying through a deferred send delivers every message as relaying through a
    /// wake-up does: the same receivers, instants and order.
    #[test]
    fn a_deferred_send_delivers_as_the_wake_up_it_stands_for(
        n in 1usize..5,
        seeds in prop::collection::vec(any::<u64>(), 1..4),
        mut stops in prop::collection::vec(0u64..400, 0..4),
    ) {
        stops.sort_unstable();
        let reference = run(Mode::Wake, n, &seeds, &stops);
        let deferred = run(Mode::Deferred, n, &seeds, &stops);
        prop_assert_eq!(reference, deferred);
    }
}

/// A deferred send placed before the events already queued at its place's instant and
/// priority changes the order somewhere: the comparison above compares something.
#[test]
fn a_deferred_send_placed_too_early_is_caught() {
    let caught = (0..200u64).any(|s| {
        let seeds = [s, s.wrapping_mul(31) ^ 7];
        run(Mode::Wake, 3, &seeds, &[]) != run(Mode::DeferredEarly, 3, &seeds, &[])
    });
    assert!(caught, "a deferred send placed too early went unnoticed");
}

/// Every delivery of a run of `u8` messages with its instant; message 1 is answered
/// with message 200 a cycle later.
struct Log(Vec<(Time, u8)>);

impl World<u8> for Log {
    fn deliver(&mut self, _: ComponentId, msg: u8, ctx: &mut Ctx<'_, u8>) {
        self.0.push((ctx.now(), msg));
        if msg == 1 {
            ctx.send(ctx.me(), 200);
        }
    }
}

/// A deferred message cancelled before its place is never delivered; the other one to
/// that place is.
#[test]
fn a_cancelled_deferred_send_is_never_delivered() {
    let mut k: Kernel<u8> = Kernel::new(false);
    let d = k.add_domain(ClockDomain::from_mhz("clk", 100.0).unwrap()); // 10 ns
    let a = k.add_component("a", d);
    let (kept, gone) = k.call(a, |ctx| {
        let place = EventKey {
            time: Time(20_000),
            priority: Priority::NORMAL,
            sequence: ctx.reserve_sequence(),
        };
        let kept = ctx.send_deferred(a, Time(30_000), Priority::NORMAL, 1, place);
        let gone = ctx.send_deferred(a, Time(30_000), Priority::NORMAL, 2, place);
        (kept, gone)
    });
    assert!(k.call(a, |ctx| ctx.cancel(gone)));
    let mut w = Log(Vec::new());
    k.run_to_idle(&mut w);
    assert_eq!(w.0, vec![(Time(30_000), 1), (Time(40_000), 200)]);
    assert!(!k.call(a, |ctx| ctx.cancel(kept)), "delivered");
}

/// As above with a longer queue: two messages deferred to one instant and priority
/// share a key until their place, one in the queue's sorted array and one in its heap
/// (past 32 queued events); cancelling the second drops it alone, and the run goes on
/// (a slot freed while its entry was still queued corrupted the free list).
#[test]
fn a_cancelled_deferred_send_with_a_long_queue_is_never_delivered() {
    let mut k: Kernel<u8> = Kernel::new(false);
    let d = k.add_domain(ClockDomain::from_mhz("clk", 100.0).unwrap()); // 10 ns
    let a = k.add_component("a", d);
    for i in 0..31 {
        k.post(a, Time(50_000), 100 + i);
    }
    let gone = k.call(a, |ctx| {
        let place = EventKey {
            time: Time(20_000),
            priority: Priority::NORMAL,
            sequence: ctx.reserve_sequence(),
        };
        ctx.send_deferred(a, Time(30_000), Priority::NORMAL, 1, place);
        ctx.send_deferred(a, Time(30_000), Priority::NORMAL, 2, place)
    });
    assert!(k.call(a, |ctx| ctx.cancel(gone)));
    let mut w = Log(Vec::new());
    k.run_to_idle(&mut w);
    let mut want = vec![(Time(30_000), 1), (Time(40_000), 200)];
    want.extend((100..131).map(|i| (Time(50_000), i)));
    assert_eq!(w.0, want);
}
