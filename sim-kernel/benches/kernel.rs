//! Kernel throughput: a self-rescheduling clocked component, and message ping-pong
//! between two components in different clock domains. Divan reports time per run of
//! `EVENTS` events; events per second = EVENTS / that time.

use sim_kernel::{ClockDomain, ComponentId, Ctx, Cycles, Kernel, World};

const EVENTS: u64 = 1_000_000;

fn main() {
    divan::main();
}

/// One component that wakes itself every cycle until it has ticked `left` times.
struct Ticker {
    left: u64,
    state: u64,
}

impl World<u64> for Ticker {
    fn deliver(&mut self, _to: ComponentId, msg: u64, ctx: &mut Ctx<'_, u64>) {
        self.state = self.state.wrapping_mul(31).wrapping_add(msg);
        if self.left > 0 {
            self.left -= 1;
            ctx.wake_after(Cycles(1), msg + 1);
        }
    }
}

/// Two components bouncing one message between a 33 MHz and a 125 MHz domain.
struct PingPong {
    a: ComponentId,
    b: ComponentId,
    left: u64,
}

impl World<u64> for PingPong {
    fn deliver(&mut self, to: ComponentId, msg: u64, ctx: &mut Ctx<'_, u64>) {
        if self.left > 0 {
            self.left -= 1;
            let peer = if to == self.a { self.b } else { self.a };
            ctx.send(peer, msg + 1);
        }
    }
}

#[divan::bench]
fn self_rescheduling_clocked_component(bencher: divan::Bencher<'_, '_>) {
    bencher
        .counter(divan::counter::ItemsCount::new(EVENTS))
        .bench_local(|| {
            let mut k = Kernel::new(false);
            let d = k.add_domain(ClockDomain::from_mhz("core", 100.0).expect("valid"));
            let c = k.add_component("ticker", d);
            let mut w = Ticker {
                left: EVENTS - 1,
                state: 0,
            };
            k.post(c, sim_kernel::Time::ZERO, 0);
            k.run_to_idle(&mut w);
            assert_eq!(k.stats().events, EVENTS);
            w.state
        });
}

#[divan::bench]
fn message_ping_pong_two_domains(bencher: divan::Bencher<'_, '_>) {
    bencher
        .counter(divan::counter::ItemsCount::new(EVENTS))
        .bench_local(|| {
            let mut k = Kernel::new(false);
            let pci = k.add_domain(ClockDomain::from_mhz("pci", 33.0).expect("valid"));
            let gmii = k.add_domain(ClockDomain::from_mhz("gmii", 125.0).expect("valid"));
            let a = k.add_component("a", pci);
            let b = k.add_component("b", gmii);
            let mut w = PingPong {
                a,
                b,
                left: EVENTS - 1,
            };
            k.post(a, sim_kernel::Time::ZERO, 0);
            k.run_to_idle(&mut w);
            assert_eq!(k.stats().events, EVENTS);
            k.now()
        });
}
