//! `Ctx::send_deferred`: a message queued as if an event that is not queued sent it
//! where it would have stood. A run in which components relay messages through wake-ups
//! of their own (the reference) and the same run in which each relay is a deferred send
//! instead deliver every work message at the same instant and in the same order, one
//! or two messages a place, also when runs stop at time limits or event budgets and
//! resume; a deferred message given the wrong place is caught, and a cancelled one is
//! never delivered. A ticket deferred to a relay's place (`Ctx::reserve_at`) takes the
//! sequence number the relay's first push takes (a released one takes none), and a
//! wake-up queued at a reserved place (`Ctx::wake_at_place`) stands where the wake-up
//! queued at the reservation would have.

use proptest::prelude::*;
use sim_kernel::{
    ClockDomain, ComponentId, Ctx, Cycles, EventKey, Kernel, Priority, RunLimit, SplitMix64,
    Ticket, Time, World,
};

/// A message: work (an id and how many more generations it may spawn), or the
/// reference's relay, a wake-up that sends `id` on to `to` one of its cycles later.
#[derive(Clone, Copy, Debug)]
enum Msg {
    Work {
        id: u64,
        depth: u32,
        /// A ticket deferred to the place this message was deferred to, just before it.
        check: Option<Ticket>,
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
/// broken fold, for the test that it is caught); through wake-ups that take a sequence
/// number before they send, or deferred sends behind a ticket deferred to their place;
/// deferred sends behind a ticket released at once (it must take no number); or wake-ups
/// queued at a place reserved for them.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Wake,
    Deferred,
    DeferredEarly,
    WakeReserving,
    Ticketed,
    TicketReleased,
    WakeAtPlace,
}

struct Sys {
    mode: Mode,
    comps: Vec<ComponentId>,
    /// Every work delivery: receiver, instant, id.
    log: Vec<(ComponentId, Time, u64)>,
    /// Tickets that did not hold the sequence number just before their message's.
    bad_tickets: u32,
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
                if self.mode == Mode::WakeReserving {
                    let _ = ctx.reserve_sequence();
                }
                let check = None;
                ctx.send(dest, Msg::Work { id, depth, check });
                if two {
                    let id = child(id, 99);
                    ctx.send(dest, Msg::Work { id, depth, check });
                }
                return;
            }
            Msg::Work { id, depth, check } => {
                if let Some(t) = check {
                    let seq = ctx.event_key().sequence;
                    if ctx.ticket(t) != seq.checked_sub(1) {
                        self.bad_tickets += 1;
                    }
                    ctx.release_ticket(t);
                }
                (id, depth)
            }
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
                check: None,
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
                    Mode::Wake | Mode::WakeReserving => {
                        ctx.wake_after_with(cycles, prio, dest_relay);
                    }
                    Mode::WakeAtPlace => {
                        let place = EventKey {
                            time: ctx.my_domain().edge_after(ctx.now(), cycles),
                            priority: prio,
                            sequence: ctx.reserve_sequence(),
                        };
                        ctx.wake_at_place(place, dest_relay);
                    }
                    Mode::Deferred
                    | Mode::DeferredEarly
                    | Mode::Ticketed
                    | Mode::TicketReleased => {
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
                        let m = match self.mode {
                            Mode::Ticketed => Msg::Work {
                                id: child(id, j),
                                depth: depth - 1,
                                check: Some(ctx.reserve_at(place)),
                            },
                            Mode::TicketReleased => {
                                let t = ctx.reserve_at(place);
                                ctx.release_ticket(t);
                                m
                            }
                            _ => m,
                        };
                        ctx.send_deferred(dest, at, Priority::NORMAL, m, place);
                        if two {
                            let second = Msg::Work {
                                id: child(child(id, j), 99),
                                depth: depth - 1,
                                check: None,
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
    let (log, bad, held) = run_counted(mode, n, seeds, stops);
    assert_eq!(bad, 0, "a ticket off its message's sequence number");
    assert_eq!(held, 0, "tickets left held");
    log
}

/// [`run`], with the tickets off their message's sequence number and those still held.
fn run_counted(
    mode: Mode,
    n: usize,
    seeds: &[u64],
    stops: &[u64],
) -> (Vec<(ComponentId, Time, u64)>, u32, usize) {
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
            Msg::Work {
                id: s,
                depth: 6,
                check: None,
            },
        );
    }
    let first = comps[0];
    let mut w = Sys {
        mode,
        comps,
        log: Vec::new(),
        bad_tickets: 0,
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
    let held = k.call(first, |ctx| ctx.tickets_held());
    (w.log, w.bad_tickets, held)
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
        prop_assert_eq!(&reference, &deferred);
        // A ticket released at once disturbs no delivery; a wake-up at its reserved
        // place stands where the one queued at the reservation does.
        prop_assert_eq!(&reference, &run(Mode::TicketReleased, n, &seeds, &stops));
        prop_assert_eq!(&reference, &run(Mode::WakeAtPlace, n, &seeds, &stops));
    }

    /// A ticket deferred to a relay's place takes the sequence number the relay's first
    /// push takes: deferred sends behind tickets deliver as relays that push once first
    /// (`run` checks each ticket against its message's sequence number).
    #[test]
    fn a_ticket_takes_the_sequence_number_of_the_first_push_at_its_place(
        n in 1usize..5,
        seeds in prop::collection::vec(any::<u64>(), 1..4),
        mut stops in prop::collection::vec(0u64..400, 0..4),
    ) {
        stops.sort_unstable();
        let reference = run(Mode::WakeReserving, n, &seeds, &stops);
        prop_assert_eq!(reference, run(Mode::Ticketed, n, &seeds, &stops));
    }
}

/// The ticket check above can fail: a ticket read before its message's place is passed
/// is off (a relay that defers its message to the place after the ticket's).
#[test]
fn a_ticket_read_before_its_place_is_not_resolved() {
    let mut k: Kernel<u8> = Kernel::new(false);
    let d = k.add_domain(ClockDomain::from_mhz("clk", 100.0).unwrap()); // 10 ns
    let a = k.add_component("a", d);
    let (t, place) = k.call(a, |ctx| {
        let place = EventKey {
            time: Time(20_000),
            priority: Priority::NORMAL,
            sequence: ctx.reserve_sequence(),
        };
        (ctx.reserve_at(place), place)
    });
    assert_eq!(k.call(a, |ctx| ctx.ticket(t)), None, "not passed yet");
    k.post(a, Time(20_000), 5);
    k.post(a, Time(30_000), 6);
    let mut w = Log(Vec::new());
    k.run_until(&mut w, Time(25_000));
    // Passed: it took the number after every event queued before the run got there,
    // the reservation's included, and before the event queued at its instant after it.
    let seq = k
        .call(a, |ctx| ctx.ticket(t))
        .expect("resolved at its place");
    assert!(seq > place.sequence);
    assert!(k.call(a, |ctx| ctx.release_ticket(t)));
    assert_eq!(k.call(a, |ctx| ctx.tickets_held()), 0);
}

/// A ticket released before its place takes no sequence number there: the run's next
/// number is the one it is without the ticket.
#[test]
fn a_released_ticket_takes_no_sequence_number() {
    let next_after = |with_ticket: bool| {
        let mut k: Kernel<u8> = Kernel::new(false);
        let d = k.add_domain(ClockDomain::from_mhz("clk", 100.0).unwrap()); // 10 ns
        let a = k.add_component("a", d);
        k.call(a, |ctx| {
            let place = EventKey {
                time: Time(20_000),
                priority: Priority::NORMAL,
                sequence: ctx.reserve_sequence(),
            };
            if with_ticket {
                let t = ctx.reserve_at(place);
                assert!(ctx.release_ticket(t));
                assert!(!ctx.release_ticket(t), "released once");
            }
        });
        k.post(a, Time(30_000), 5);
        k.run_to_idle(&mut Log(Vec::new()));
        k.call(a, |ctx| ctx.next_sequence())
    };
    assert_eq!(next_after(true), next_after(false));
}

/// A wake-up queued at a reserved place from a later event stands before the events
/// queued at its instant and priority after the reservation, and after those before.
#[test]
fn a_wake_up_at_a_reserved_place_keeps_the_reservations_order() {
    let mut k: Kernel<u8> = Kernel::new(false);
    let d = k.add_domain(ClockDomain::from_mhz("clk", 100.0).unwrap()); // 10 ns
    let a = k.add_component("a", d);
    k.post(a, Time(50_000), 1); // queued before the reservation
    let place = k.call(a, |ctx| EventKey {
        time: Time(50_000),
        priority: Priority::NORMAL,
        sequence: ctx.reserve_sequence(),
    });
    k.post(a, Time(50_000), 3); // after it
    k.post(a, Time(10_000), 9);
    let mut w = Log(Vec::new());
    k.run_until(&mut w, Time(10_000));
    k.call(a, |ctx| ctx.wake_at_place(place, 2));
    k.run_to_idle(&mut w);
    assert_eq!(
        w.0,
        vec![
            (Time(10_000), 9),
            (Time(50_000), 1),
            (Time(50_000), 2),
            (Time(50_000), 3),
            (Time(60_000), 200), // the log's answer to message 1
        ]
    );
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
