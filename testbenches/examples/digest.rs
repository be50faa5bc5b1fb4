//! The determinism digest: canonical trace digests (what was recorded, not the order of
//! recording: `TraceSink::canonical_digest`), one-way latencies, simulated time and event
//! counts of a fixed set of ping-pong runs on every preset. A change that must not move
//! results leaves this output byte-identical apart from the event counts when it changes
//! how the simulation steps; run it before and after (`cargo run --release --example
//! digest`).
use testbenches::config::{SystemConfig, PRESETS};
use testbenches::system::{run_pingpong, Op, PingPongSpec};

fn main() {
    for preset in PRESETS.iter().map(|p| p.name) {
        let Ok(cfg) = SystemConfig::from_preset(preset) else {
            println!("{preset}: cannot load");
            continue;
        };
        for (op, size) in [
            (Op::RdmaWrite, 4),
            (Op::RdmaWrite, 1461),
            (Op::RdmaWrite, 65536),
            (Op::SendRecv, 4),
            (Op::SendRecv, 4096),
        ] {
            let spec = PingPongSpec {
                op,
                size,
                iterations: 3,
                warmup: 1,
                trace: true,
                recv_post: testbenches::system::RecvPost::Timed,
            };
            match run_pingpong(&cfg, spec) {
                Ok(r) => println!(
                    "{preset} {} {size}: digest {:016x} one-way {} ps events {} simulated {} ps",
                    op.name(),
                    r.system.kernel.trace().canonical_digest(),
                    r.one_way.0,
                    r.stats.events,
                    r.stats.simulated.0
                ),
                Err(e) => println!("{preset} {} {size}: error {e}", op.name()),
            }
        }
    }
}
