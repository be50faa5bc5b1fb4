//! Event census of one ping-pong: events delivered per component and message kind
//! (development aid for simulation speed work). `census [size] [exact|fast] [rows]`;
//! `CENSUS_DEPTH=3` splits each kind one level further (e.g. the engine's wake-ups by
//! kind); `CENSUS_ITERS=n` measures `n` round trips after the warm-up instead of 2 (a
//! steady state for small messages, whose setup would otherwise dominate).
//!
//! `CENSUS_TIME=n` times each delivery instead (an `Instant` around the handler, about
//! 25 ns of its own on this machine, counted in every figure) in `n` runs of the same
//! ping-pong, and lists the kinds by their share of handler wall time, each figure the
//! median of the runs (a run's first touches of memory, page faults included, land in
//! whichever handler makes them, so one run alone can put a kind far off).
use host_driver::programs::{rdma_pingpong_initiator, rdma_pingpong_responder, PingPongParams};
use sim_kernel::{ComponentId, Ctx, RunLimit, RunOutcome, Time, World};
use std::collections::BTreeMap;
use testbenches::config::{SimStepping, SystemConfig};
use testbenches::system::world::{Comp, Msg, SystemWorld};
use testbenches::system::System;

/// A message kind at a component.
type Kind = (u32, String);

struct Counting<'a> {
    inner: &'a mut SystemWorld,
    depth: usize,
    timing: bool,
    /// Per kind: events, and handler wall time \[ns\] when timing.
    tally: BTreeMap<Kind, (u64, u64)>,
}

impl World<Msg> for Counting<'_> {
    fn deliver(&mut self, to: ComponentId, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        let text = format!("{msg:?}");
        let kind = text
            .split(['{', '(', ' '])
            .take(self.depth)
            .collect::<Vec<_>>()
            .join(" ");
        let t0 = self.timing.then(std::time::Instant::now);
        self.inner.deliver(to, msg, ctx);
        let t = t0.map_or(0, |t0| {
            u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX)
        });
        let (n, spent) = self.tally.entry((to.0, kind)).or_insert((0, 0));
        *n += 1;
        *spent = spent.saturating_add(t);
    }
}

/// What one run counted: per kind, events and handler time (0 untimed); the components'
/// names.
struct Census {
    tally: BTreeMap<Kind, (u64, u64)>,
    names: Vec<String>,
    /// The DP83820's completions and register writes the local buses ran themselves,
    /// and those they sent (`PciBus::folded_completions`).
    folded: (u64, u64),
}

/// One census run, timed if `timing`.
fn run(size: u32, iters: u32, cfg: &SystemConfig, timing: bool) -> Census {
    let mut sys = System::build(cfg, false).expect("build");
    let mut a = PingPongParams::new(size, iters, sys.macs[1]);
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
        depth: std::env::var("CENSUS_DEPTH")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(2),
        timing,
        tally: BTreeMap::new(),
    };
    // Bounded by simulated time, not by an event budget: a run with a budget promises
    // no instant (`Ctx::horizon`), and the local bus then runs none of the DP83820's
    // completions itself, which would count events a real run does not have.
    let outcome = sys.kernel.run(
        &mut w,
        RunLimit {
            until: Time(10_000_000_000_000), // 10 s simulated
            max_events: u64::MAX,
        },
    );
    // A ping-pong ends idle; one still running at the bound would be counted in part.
    if outcome == RunOutcome::TimeLimit {
        eprintln!("census: the run did not end within 10 s simulated (size {size}, {iters} round trips): its counts would be partial");
        std::process::exit(1);
    }
    let tally = w.tally;
    let names = (0..sys.kernel.component_count())
        .map(|c| {
            let id = ComponentId(u32::try_from(c).unwrap_or(u32::MAX));
            sys.kernel.component_name(id).to_string()
        })
        .collect();
    let folded = sys.world.iter().fold((0, 0), |(f, s), (_, c)| match c {
        Comp::LocalBus(_, b) => {
            let (bf, bs) = b.folded_completions();
            (f + bf, s + bs)
        }
        _ => (f, s),
    });
    Census {
        tally,
        names,
        folded,
    }
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

fn main() {
    let arg = |i: usize| std::env::args().nth(i);
    let size: u32 = arg(1).and_then(|s| s.parse().ok()).unwrap_or(65536);
    let mut cfg = SystemConfig::from_preset("hvia-ge").expect("preset");
    if arg(2).as_deref() == Some("exact") {
        cfg.sim.stepping = SimStepping::Exact;
    }
    let rows = arg(3).and_then(|s| s.parse().ok()).unwrap_or(25);
    let runs: usize = std::env::var("CENSUS_TIME")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let iters: u32 = std::env::var("CENSUS_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(2);
    let first = run(size, iters, &cfg, runs > 0);
    let name = |c: u32| first.names.get(c as usize).map_or("?", String::as_str);
    // Both directions of every round trip, the warm-up's included.
    let frames = u64::from(size.div_ceil(1460)).max(1) * 2 * (u64::from(iters) + 1);
    let total: u64 = first.tally.values().map(|(n, _)| n).sum();
    println!(
        "{total} events, {frames} data frames, {:.0} per frame",
        total as f64 / frames as f64
    );
    println!(
        "the local buses ran {} of the DP83820's completions and register writes \
         themselves, sent {} (an input could reach it first, or the run end first)",
        first.folded.0, first.folded.1
    );
    if runs == 0 {
        let mut v: Vec<_> = first.tally.iter().map(|(k, (n, _))| (k, *n)).collect();
        v.sort_by_key(|x| std::cmp::Reverse(x.1));
        for ((c, kind), n) in v.iter().take(rows) {
            println!(
                "{:>9} {:>7.1}/frame  {:<22} {}",
                n,
                *n as f64 / frames as f64,
                name(*c),
                kind
            );
        }
        return;
    }
    // Per kind, its handler time in each run; per run, the total.
    let mut spent: BTreeMap<Kind, Vec<u64>> = BTreeMap::new();
    let mut totals = Vec::new();
    let mut add = |w: &Census| {
        totals.push(w.tally.values().map(|(_, t)| t).sum::<u64>());
        for (k, (_, t)) in &w.tally {
            spent.entry(k.clone()).or_default().push(*t);
        }
    };
    add(&first);
    for _ in 1..runs {
        add(&run(size, iters, &cfg, true));
    }
    let all = median(totals.clone());
    let (lo, hi) = (
        totals.iter().min().copied().unwrap_or(0),
        totals.iter().max().copied().unwrap_or(0),
    );
    println!(
        "{runs} runs: {:.1} ms in handlers (median; {:.1}-{:.1})",
        all as f64 / 1e6,
        lo as f64 / 1e6,
        hi as f64 / 1e6
    );
    println!("   events  a frame  share   ns each  component              kind");
    let mut t: Vec<_> = spent.into_iter().map(|(k, v)| (k, median(v))).collect();
    t.sort_by_key(|x| std::cmp::Reverse(x.1));
    for ((c, kind), ns) in t.iter().take(rows) {
        let n = first.tally.get(&(*c, kind.clone())).map_or(0, |(n, _)| *n);
        println!(
            "{:>9} {:>8.1} {:>5.1} % {:>7.0}  {:<22} {}",
            n,
            n as f64 / frames as f64,
            *ns as f64 * 100.0 / all.max(1) as f64,
            *ns as f64 / n.max(1) as f64,
            name(*c),
            kind
        );
    }
}
