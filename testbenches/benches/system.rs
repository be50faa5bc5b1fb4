//! Whole-system simulation speed: one ping-pong through every component of both nodes.
//! Divan reports the wall time per run; the events of each run are its counter, so the
//! report reads as events per second. (The kernel alone is benchmarked in sim-kernel.)

use testbenches::config::SystemConfig;
use testbenches::system::{run_pingpong, Op, PingPongSpec};

fn main() {
    divan::main();
}

fn events(size: u32) -> u64 {
    let cfg = SystemConfig::from_preset("hvia-ge").expect("preset");
    let spec = PingPongSpec {
        op: Op::RdmaWrite,
        size,
        iterations: 2,
        warmup: 1,
        trace: false,
    };
    run_pingpong(&cfg, spec).expect("run").stats.events
}

#[divan::bench(args = [4, 65536], sample_count = 10)]
fn rdma_pingpong(bencher: divan::Bencher<'_, '_>, size: u32) {
    let n = events(size);
    bencher
        .counter(divan::counter::ItemsCount::new(n))
        .bench(|| events(size));
}
