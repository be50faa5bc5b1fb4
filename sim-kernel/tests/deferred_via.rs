//! `Ctx::send_deferred_via`: a message queued as if an event that is not queued had
//! queued a wake-up, and that wake-up had sent it. A run in which components relay
//! messages through two wake-ups of their own (the reference) and the same run in which
//! each relay is a deferred send through two places deliver every work message at the
//! same instant and in the same order, also when runs stop at time limits or event
//! budgets and resume, and when a component takes a relay back at either place
//! (`Ctx::deferred_place`, `Ctx::cancel`, `Ctx::wake_at_place`) because an input
//! reached it first. A message deferred to the first place alone is caught.

use proptest::prelude::*;
use sim_kernel::{
    ClockDomain, ComponentId, Ctx, Cycles, EventKey, EventToken, Kernel, Priority, RunLimit,
    SplitMix64, Time, World,
};

/// A message: work (an id and how many more generations it may spawn), or the
/// reference's relays: `Hop` wakes its component again `cycles` later with `then`
/// priority, and `Send` sends the work on.
#[derive(Clone, Copy, Debug)]
enum Msg {
    Work {
        id: u64,
        depth: u32,
    },
    Hop {
        to: ComponentId,
        id: u64,
        depth: u32,
        cycles: Cycles,
        then: Priority,
    },
    Send {
        to: ComponentId,
        id: u64,
        depth: u32,
    },
}

/// How a run relays.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// Through two wake-ups.
    Wake,
    /// Through `send_deferred_via`.
    Via,
    /// The same, each relay taken back into wake-ups at the next work delivered to its
    /// component before the message is queued for real.
    ViaUnfold,
    /// Deferred to the first place alone (a broken fold: the test that it is caught).
    FirstOnly,
}

/// A relay deferred through two places, kept by its component for taking it back.
#[derive(Clone, Copy, Debug)]
struct Pending {
    token: EventToken,
    first: EventKey,
    hop: Msg,
    send: Msg,
}

struct Sys {
    mode: Mode,
    comps: Vec<ComponentId>,
    pending: Vec<Vec<Pending>>,
    /// Every work delivery: receiver, instant, id.
    log: Vec<(ComponentId, Time, u64)>,
    /// Relays taken back at their first place and at their second.
    unfolded: [u64; 2],
}

fn child(id: u64, j: u64) -> u64 {
    SplitMix64::new(id ^ (j.wrapping_mul(0x9E37_79B9_7F4A_7C15))).next_u64()
}

const PRIOS: [Priority; 3] = [Priority::EARLY, Priority::NORMAL, Priority::LATE];

impl Sys {
    /// Takes back every relay of `me` whose message is not queued for real yet: its
    /// wake-up queued at the place still to come.
    fn unfold(&mut self, me: ComponentId, ctx: &mut Ctx<'_, Msg>) {
        for p in std::mem::take(&mut self.pending[me.0 as usize]) {
            let Some(place) = ctx.deferred_place(p.token) else {
                continue;
            };
            assert!(place > ctx.event_key(), "a place passed and kept");
            assert!(ctx.cancel(p.token));
            if place == p.first {
                self.unfolded[0] += 1;
                ctx.wake_at_place(place, p.hop);
            } else {
                self.unfolded[1] += 1;
                ctx.wake_at_place(place, p.send);
            }
        }
    }
}

impl World<Msg> for Sys {
    fn deliver(&mut self, to: ComponentId, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        let (id, depth) = match msg {
            Msg::Hop {
                to: dest,
                id,
                depth,
                cycles,
                then,
            } => {
                ctx.wake_after_with(
                    cycles,
                    then,
                    Msg::Send {
                        to: dest,
                        id,
                        depth,
                    },
                );
                return;
            }
            Msg::Send {
                to: dest,
                id,
                depth,
            } => {
                ctx.send(dest, Msg::Work { id, depth });
                return;
            }
            Msg::Work { id, depth } => (id, depth),
        };
        if self.mode == Mode::ViaUnfold {
            self.unfold(to, ctx);
        }
        self.log.push((to, ctx.now(), id));
        if depth == 0 {
            return;
        }
        let mut r = SplitMix64::new(id);
        let n = r.below(4);
        for j in 0..n {
            let dest = self.comps[r.below(self.comps.len() as u64) as usize];
            let cycles = Cycles(1 + r.below(3));
            let prio = PRIOS[r.below(3) as usize];
            let m = Msg::Work {
                id: child(id, j),
                depth: depth - 1,
            };
            if r.below(2) == 0 {
                let then_cycles = Cycles(1 + r.below(3));
                let then = PRIOS[r.below(3) as usize];
                let send = Msg::Send {
                    to: dest,
                    id: child(id, j),
                    depth: depth - 1,
                };
                let hop = Msg::Hop {
                    to: dest,
                    id: child(id, j),
                    depth: depth - 1,
                    cycles: then_cycles,
                    then,
                };
                if self.mode == Mode::Wake {
                    ctx.wake_after_with(cycles, prio, hop);
                    continue;
                }
                let t1 = ctx.my_domain().edge_after(ctx.now(), cycles);
                let t2 = ctx.my_domain().edge_after(t1, then_cycles);
                let first = EventKey {
                    time: t1,
                    priority: prio,
                    sequence: ctx.reserve_sequence(),
                };
                let at = ctx.domain_of(dest).landing(t2, Time::ZERO);
                if self.mode == Mode::FirstOnly {
                    ctx.send_deferred(dest, at, Priority::NORMAL, m, first);
                    continue;
                }
                let token = ctx.send_deferred_via(dest, at, Priority::NORMAL, m, first, (t2, then));
                self.pending[to.0 as usize].push(Pending {
                    token,
                    first,
                    hop,
                    send,
                });
            } else if prio == Priority::NORMAL {
                ctx.send_after(dest, cycles, m);
            } else {
                ctx.send_after_with(dest, cycles, prio, m);
            }
        }
    }
}

type Log = Vec<(ComponentId, Time, u64)>;

/// Runs a system of `n` components on two clock grids from `seeds`, stopping at each
/// of `stops` (ns, or when odd after a budget of that many events) and resuming; the
/// work deliveries in order, and the relays taken back.
fn run(mode: Mode, n: usize, seeds: &[u64], stops: &[u64]) -> (Log, [u64; 2]) {
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
        pending: vec![Vec::new(); n],
        log: Vec::new(),
        unfolded: [0; 2],
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
    (w.log, w.unfolded)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Relaying through a message deferred via two places delivers every message as
    /// relaying through two wake-ups does, taken back or not.
    #[test]
    fn a_message_deferred_via_two_places_delivers_as_its_two_wake_ups(
        n in 1usize..5,
        seeds in prop::collection::vec(any::<u64>(), 1..4),
        mut stops in prop::collection::vec(0u64..400, 0..4),
    ) {
        stops.sort_unstable();
        let (reference, _) = run(Mode::Wake, n, &seeds, &stops);
        let (via, _) = run(Mode::Via, n, &seeds, &stops);
        prop_assert_eq!(&reference, &via);
        let (unfolded, _) = run(Mode::ViaUnfold, n, &seeds, &stops);
        prop_assert_eq!(&reference, &unfolded);
    }
}

/// Relays are taken back at both places in these runs (the comparison above covers
/// both paths).
#[test]
fn relays_are_taken_back_at_both_places() {
    let mut seen = [0u64; 2];
    for s in 0..50u64 {
        let (_, u) = run(Mode::ViaUnfold, 3, &[s, s ^ 0x55], &[]);
        seen[0] += u[0];
        seen[1] += u[1];
    }
    assert!(seen[0] > 0 && seen[1] > 0, "taken back: {seen:?}");
}

/// A message deferred to the first place alone (its sequence number taken there, not
/// at the second place) changes the order somewhere.
#[test]
fn a_message_deferred_to_the_first_place_alone_is_caught() {
    let caught = (0..200u64).any(|s| {
        let seeds = [s, s.wrapping_mul(31) ^ 7];
        run(Mode::Wake, 3, &seeds, &[]).0 != run(Mode::FirstOnly, 3, &seeds, &[]).0
    });
    assert!(
        caught,
        "a message deferred to the first place alone went unnoticed"
    );
}
