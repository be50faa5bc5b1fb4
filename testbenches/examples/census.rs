//! Event census of one ping-pong: events delivered per component and message kind
//! (development aid for simulation speed work). `census [size] [exact|fast] [rows]`; `CENSUS_DEPTH=3` splits
//! each kind one level further (e.g. the engine's wake-ups by kind). `CENSUS_TIME=1` also
//! times each delivery (`Instant` around the handler, about 25 ns of its own on this
//! machine, counted in every figure) and lists the kinds by their share of handler time.
use host_driver::programs::{rdma_pingpong_initiator, rdma_pingpong_responder, PingPongParams};
use sim_kernel::{ComponentId, Ctx, RunLimit, Time, World};
use std::collections::BTreeMap;
use testbenches::config::{SimStepping, SystemConfig};
use testbenches::system::world::{Msg, SystemWorld};
use testbenches::system::System;

struct Counting<'a> {
    inner: &'a mut SystemWorld,
    counts: BTreeMap<(u32, String), u64>,
    /// Handler wall time per kind \[ns\], when timing.
    ns: Option<BTreeMap<(u32, String), u64>>,
}

impl World<Msg> for Counting<'_> {
    fn deliver(&mut self, to: ComponentId, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        let kind = format!("{msg:?}");
        let kind = kind
            .split(['{', '(', ' '])
            .take(
                std::env::var("CENSUS_DEPTH")
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(2),
            )
            .collect::<Vec<_>>()
            .join(" ");
        *self.counts.entry((to.0, kind.clone())).or_insert(0) += 1;
        match &mut self.ns {
            None => self.inner.deliver(to, msg, ctx),
            Some(ns) => {
                let t0 = std::time::Instant::now();
                self.inner.deliver(to, msg, ctx);
                let t = u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
                *ns.entry((to.0, kind)).or_insert(0) += t;
            }
        }
    }
}

fn main() {
    let size: u32 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(65536);
    let mut cfg = SystemConfig::from_preset("hvia-ge").expect("preset");
    if std::env::args().nth(2).as_deref() == Some("exact") {
        cfg.sim.stepping = SimStepping::Exact;
    }
    let mut sys = System::build(&cfg, false).expect("build");
    let mut a = PingPongParams::new(size, 2, sys.macs[1]);
    a.warmup = 1;
    a.wait_timeout = host_driver::Timeout::Infinite;
    let b = PingPongParams {
        peer: sys.macs[0],
        ..a
    };
    sys.cpu_mut(0)
        .expect("cpu")
        .load(move |v| rdma_pingpong_initiator(v, a));
    sys.cpu_mut(1)
        .expect("cpu")
        .load(move |v| rdma_pingpong_responder(v, b));
    sys.start();
    let mut w = Counting {
        inner: &mut sys.world,
        counts: BTreeMap::new(),
        ns: (std::env::var("CENSUS_TIME").as_deref() == Ok("1")).then(BTreeMap::new),
    };
    sys.kernel.run(
        &mut w,
        RunLimit {
            until: Time(u64::MAX / 2),
            max_events: 200_000_000,
        },
    );
    let frames = u64::from(size.div_ceil(1460)).max(1) * 6;
    let total: u64 = w.counts.values().sum();
    let mut v: Vec<_> = w.counts.iter().collect();
    v.sort_by(|x, y| y.1.cmp(x.1));
    println!(
        "{total} events, {frames} data frames, {:.0} per frame",
        total as f64 / frames as f64
    );
    let rows = std::env::args()
        .nth(3)
        .and_then(|s| s.parse().ok())
        .unwrap_or(25);
    let Some(ns) = &w.ns else {
        for ((c, kind), n) in v.iter().take(rows) {
            println!(
                "{:>9} {:>7.1}/frame  {:<22} {}",
                n,
                **n as f64 / frames as f64,
                sys.kernel.component_name(ComponentId(*c)),
                kind
            );
        }
        return;
    };
    let all: u64 = ns.values().sum();
    println!("{:.1} ms in handlers, by share", all as f64 / 1e6);
    let mut t: Vec<_> = ns.iter().collect();
    t.sort_by(|x, y| y.1.cmp(x.1));
    for ((c, kind), spent) in t.iter().take(rows) {
        let n = w.counts.get(&(*c, kind.clone())).copied().unwrap_or(0);
        println!(
            "{:>9} {:>7.1}/frame {:>5.1} % {:>6.0} ns each  {:<22} {}",
            n,
            n as f64 / frames as f64,
            **spent as f64 * 100.0 / all.max(1) as f64,
            **spent as f64 / n.max(1) as f64,
            sys.kernel.component_name(ComponentId(*c)),
            kind
        );
    }
}
