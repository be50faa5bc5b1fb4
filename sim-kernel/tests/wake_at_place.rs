//! `Ctx::wake_at_place`: a wake-up whose sequence number a component reserved where it
//! would have queued it, queued later. Component `a` would wake itself at instant `T`;
//! instead it reserves the place and queues the wake-up at a later event of its own,
//! still before `T`. Meanwhile other components queue events at `T` with every
//! priority, before and after the reservation. Every delivery comes in the same order
//! as when the wake-up is queued at once, also when it is queued as a message at the
//! place (`Ctx::send_at_place`); a wake-up queued with a fresh sequence number instead
//! is caught.

use proptest::prelude::*;
use sim_kernel::{ClockDomain, ComponentId, Ctx, Cycles, EventKey, Kernel, Priority, Time, World};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Msg {
    /// `a` starts: it would queue its wake-up now.
    Start,
    /// `a` is told to queue the reserved wake-up now (lazy mode).
    Now,
    /// `b` sends its `n`-th message: to `to`, `cycles` later, with priority `prio`.
    Poke { to: u32, cycles: u64, prio: u8 },
    /// A delivery to log.
    Mark(u32),
    /// `a`'s wake-up.
    Wake,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    AtOnce,
    Placed,
    /// Queued as a message to `a` at the reserved place (`Ctx::send_at_place`).
    Sent,
    /// Queued at the later event with a fresh sequence number (a broken fold).
    Fresh,
}

struct Sys {
    mode: Mode,
    wake_cycles: u64,
    wake_prio: Priority,
    place: Option<EventKey>,
    log: Vec<(Time, ComponentId, Msg)>,
}

impl World<Msg> for Sys {
    fn deliver(&mut self, to: ComponentId, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        self.log.push((ctx.now(), to, msg));
        match msg {
            Msg::Start => {
                if self.mode == Mode::AtOnce {
                    ctx.wake_after_with(Cycles(self.wake_cycles), self.wake_prio, Msg::Wake);
                } else {
                    let time = ctx
                        .my_domain()
                        .edge_after(ctx.now(), Cycles(self.wake_cycles));
                    self.place = Some(EventKey {
                        time,
                        priority: self.wake_prio,
                        sequence: ctx.reserve_sequence(),
                    });
                }
            }
            Msg::Now => match (self.mode, self.place.take()) {
                (Mode::Placed, Some(p)) => {
                    ctx.wake_at_place(p, Msg::Wake);
                }
                (Mode::Sent, Some(p)) => {
                    ctx.send_at_place(to, p, Msg::Wake);
                }
                (Mode::Fresh, Some(p)) => {
                    let n = p.time.saturating_since(ctx.now()).as_ps() / 10_000;
                    ctx.wake_after_with(Cycles(n), p.priority, Msg::Wake);
                }
                _ => {}
            },
            Msg::Poke { to, cycles, prio } => {
                let prio = Priority(prio);
                ctx.send_after_with(ComponentId(to), Cycles(cycles), prio, Msg::Mark(to));
            }
            Msg::Mark(_) | Msg::Wake => {}
        }
    }
}

/// `pokes`: (instant in cycles, target index, cycles, priority index) of `b`'s sends;
/// `now_at`: the cycle `a` queues its reserved wake-up (before the wake-up's).
fn run(
    mode: Mode,
    wake_cycles: u64,
    prio: u8,
    now_at: u64,
    pokes: &[(u64, u32, u64, u8)],
) -> Vec<(Time, ComponentId, Msg)> {
    let mut k: Kernel<Msg> = Kernel::new(false);
    let d = k.add_domain(ClockDomain::from_mhz("d", 100.0).unwrap()); // 10 ns
    let a = k.add_component("a", d);
    let b = k.add_component("b", d);
    let c = k.add_component("c", d);
    let prios = [Priority::EARLY.0, Priority::NORMAL.0, Priority::LATE.0];
    k.post(a, Time(0), Msg::Start);
    k.post(a, Time(now_at * 10_000), Msg::Now);
    for &(at, to, cycles, p) in pokes {
        let to = [a, b, c][to as usize % 3].0;
        k.post(
            b,
            Time(at * 10_000),
            Msg::Poke {
                to,
                cycles,
                prio: prios[p as usize % 3],
            },
        );
    }
    let mut w = Sys {
        mode,
        wake_cycles,
        wake_prio: Priority(prios[prio as usize % 3]),
        place: None,
        log: Vec::new(),
    };
    k.run_to_idle(&mut w);
    w.log
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Queued later at its reserved place, the wake-up and every other event come in
    /// the order they come in when it is queued at once.
    #[test]
    fn a_wake_up_at_its_reserved_place_keeps_the_order(
        wake_cycles in 3u64..12,
        prio in 0u8..3,
        now_frac in 1u64..100,
        pokes in prop::collection::vec((0u64..12, 0u32..3, 1u64..4, 0u8..3), 0..12),
    ) {
        let now_at = 1 + now_frac % (wake_cycles - 1);
        let reference = run(Mode::AtOnce, wake_cycles, prio, now_at, &pokes);
        let placed = run(Mode::Placed, wake_cycles, prio, now_at, &pokes);
        prop_assert_eq!(&reference, &placed);
        let sent = run(Mode::Sent, wake_cycles, prio, now_at, &pokes);
        prop_assert_eq!(&reference, &sent);
    }
}

/// The comparison compares something: a wake-up queued later with a fresh sequence
/// number is out of order somewhere.
#[test]
fn a_wake_up_with_a_fresh_sequence_number_is_caught() {
    let pokes: Vec<_> = (0..8u64)
        .map(|i| (i % 4, (i % 3) as u32, 4 - i % 4, 2))
        .collect();
    let caught = (3..10u64).any(|w| {
        (1..w).any(|now_at| {
            run(Mode::AtOnce, w, 2, now_at, &pokes) != run(Mode::Fresh, w, 2, now_at, &pokes)
        })
    });
    assert!(caught, "a fresh sequence number went unnoticed");
}
