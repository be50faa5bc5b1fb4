//! `Kernel::call` and `Kernel::call_at`: a component run outside any event, as at the
//! current instant or a later one. What it records is stamped with that instant, what it
//! queues lands as if sent then, nothing is counted as an event, and the kernel's now
//! is back where it was afterwards.

use sim_kernel::{ClockDomain, ComponentId, Ctx, Cycles, Kernel, Time, TransitionSink, World};

/// Records (receiver, time) of every delivery.
#[derive(Default)]
struct Log(Vec<(ComponentId, Time)>);

impl World<u8> for Log {
    fn deliver(&mut self, to: ComponentId, _msg: u8, ctx: &mut Ctx<'_, u8>) {
        self.0.push((to, ctx.now()));
    }
}

#[test]
fn a_call_at_a_later_instant_stamps_and_sends_from_it_and_restores_now() {
    let mut k: Kernel<u8> = Kernel::new(true);
    let d = k.add_domain(ClockDomain::from_mhz("clk", 100.0).unwrap()); // 10 ns
    let a = k.add_component("a", d);
    let b = k.add_component("b", d);
    let mut w = Log::default();
    k.post(a, Time(20_000), 0);
    k.run_to_idle(&mut w);
    assert_eq!(k.now(), Time(20_000));
    let events = k.stats().events;

    let seen = k.call(a, |ctx| {
        ctx.send(b, 1);
        (ctx.now(), ctx.me())
    });
    assert_eq!(seen, (Time(20_000), a));
    let stamped = k.call_at(b, Time(50_000), |ctx| {
        ctx.record_transition("m", "x", "y");
        ctx.send_after(a, Cycles(2), 2);
        ctx.now()
    });
    assert_eq!(stamped, Time(50_000));
    assert_eq!(k.now(), Time(20_000), "now is restored");
    assert_eq!(k.stats().events, events, "a call is not an event");
    let t = k.trace().transitions();
    assert_eq!(t.len(), 1);
    assert_eq!((t[0].time, t[0].component), (Time(50_000), b));

    k.run_to_idle(&mut w);
    // Sent from 20 ns one cycle later; from 50 ns two cycles later.
    assert_eq!(w.0[1..], [(b, Time(30_000)), (a, Time(70_000))]);
}

#[test]
#[should_panic(expected = "unknown component")]
fn a_call_for_an_id_the_kernel_did_not_hand_out_panics() {
    let mut k: Kernel<u8> = Kernel::new(false);
    k.call(ComponentId(3), |_| ());
}

/// Records the horizon of every delivery.
#[derive(Default)]
struct Horizons(Vec<Time>);

impl World<u8> for Horizons {
    fn deliver(&mut self, _to: ComponentId, _msg: u8, ctx: &mut Ctx<'_, u8>) {
        self.0.push(ctx.horizon());
    }
}

/// `Ctx::horizon`: a run to a time limit promises that instant, one with an event
/// budget (which may end at any event) and a call outside a run promise none.
#[test]
fn the_horizon_is_the_time_limit_of_a_run_without_an_event_budget() {
    let mut k: Kernel<u8> = Kernel::new(false);
    let d = k.add_domain(ClockDomain::from_mhz("clk", 100.0).unwrap());
    let a = k.add_component("a", d);
    let mut w = Horizons::default();
    for t in [10_000, 20_000, 30_000, 40_000] {
        k.post(a, Time(t), 0);
    }
    k.run_until(&mut w, Time(25_000));
    assert_eq!(w.0, [Time(25_000), Time(25_000)]);
    k.run(
        &mut w,
        sim_kernel::RunLimit {
            until: Time(100_000),
            max_events: 1,
        },
    );
    assert_eq!(w.0[2], Time::ZERO, "a run with an event budget");
    assert_eq!(k.call(a, |ctx| ctx.horizon()), Time::ZERO, "outside a run");
    k.run_to_idle(&mut w);
    assert_eq!(w.0[3], Time(u64::MAX), "a run to idle");
}
