//! Whole-system simulation speed: one ping-pong through every component of both nodes,
//! in each stepping mode (`sim.stepping`). Divan reports the wall time per run; the
//! events of each run are its counter, so the report reads as events per second. The
//! simulated time per wall second of a sweep is in `hvia pingpong --format json`'s
//! `simulation` block (README, "Simulation speed"). The kernel alone is benchmarked in
//! sim-kernel. `all_to_all_16` is the scale target: 16 nodes behind the
//! store-and-forward switch, every node streaming 4 messages of 64 KiB to every other
//! (`hvia traffic --pattern all-to-all --nodes 16 --size 65536`), one sample (about
//! 4.3 s, 21 M events, on the 2 shared cores of the README's figure).

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

#[divan::bench(sample_count = 1, sample_size = 1)]
fn all_to_all_16(bencher: divan::Bencher<'_, '_>) {
    use host_driver::programs::StreamParams;
    use testbenches::system::mesh::{quiet_time, run_mesh, MeshPattern};
    let mut cfg = SystemConfig::from_preset("hvia-ge").expect("preset");
    cfg.apply_set("topology.nodes=16").expect("nodes");
    cfg.apply_set("topology.switch=store-and-forward")
        .expect("switch");
    let s = StreamParams {
        size: 65536,
        messages: 4,
        window: 8,
    };
    let run = || {
        run_mesh(&cfg, MeshPattern::AllToAll, s, quiet_time(16, s))
            .expect("run")
            .stats
            .events
    };
    let n = run();
    bencher
        .counter(divan::counter::ItemsCount::new(n))
        .bench(run);
}
