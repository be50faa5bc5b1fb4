//! Whole-system simulation speed: one ping-pong through every component of both nodes,
//! in each stepping mode (`sim.stepping`). Divan reports the wall time per run; the
//! events of each run are its counter, so the report reads as events per second. The
//! simulated time per wall second of a sweep is in `hvia pingpong --format json`'s
//! `simulation` block (README, "Simulation speed"). The kernel alone is benchmarked in
//! sim-kernel.

use testbenches::config::{SimStepping, SystemConfig};
use testbenches::system::{run_pingpong, Op, PingPongSpec};

fn main() {
    divan::main();
}

fn events(size: u32, stepping: SimStepping) -> u64 {
    let mut cfg = SystemConfig::from_preset("hvia-ge").expect("preset");
    cfg.sim.stepping = stepping;
    let spec = PingPongSpec {
        op: Op::RdmaWrite,
        size,
        iterations: 2,
        warmup: 1,
        trace: false,
        recv_post: testbenches::system::RecvPost::Timed,
    };
    run_pingpong(&cfg, spec).expect("run").stats.events
}

#[divan::bench(args = [4, 65536, 1048576], sample_count = 5)]
fn rdma_pingpong_fast(bencher: divan::Bencher<'_, '_>, size: u32) {
    let n = events(size, SimStepping::Fast);
    bencher
        .counter(divan::counter::ItemsCount::new(n))
        .bench(|| events(size, SimStepping::Fast));
}

#[divan::bench(args = [4, 65536], sample_count = 5)]
fn rdma_pingpong_exact(bencher: divan::Bencher<'_, '_>, size: u32) {
    let n = events(size, SimStepping::Exact);
    bencher
        .counter(divan::counter::ItemsCount::new(n))
        .bench(|| events(size, SimStepping::Exact));
}
