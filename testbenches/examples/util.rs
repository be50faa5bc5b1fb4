//! Bus utilisation during a ping-pong (development aid for calibration).
use testbenches::config::SystemConfig;
use testbenches::system::{run_pingpong, Comp, Op, PingPongSpec};

fn main() {
    let size: u32 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(65536);
    let preset = std::env::args()
        .find_map(|a| a.strip_prefix("preset=").map(str::to_owned))
        .unwrap_or_else(|| "hvia-ge".into());
    let mut cfg = SystemConfig::from_preset(&preset).expect("preset");
    for a in std::env::args()
        .skip(1)
        .filter(|a| a.contains('=') && !a.starts_with("preset="))
    {
        cfg.apply_set(&a).expect("--set");
    }
    let spec = PingPongSpec {
        op: Op::RdmaWrite,
        size,
        iterations: 1,
        warmup: 0,
        trace: false,
        recv_post: testbenches::system::RecvPost::Timed,
    };
    let r = run_pingpong(&cfg, spec).expect("run");
    println!(
        "one-way {:.1} ns, {:.2} MB/s",
        r.one_way_ns(),
        r.bandwidth_mb_s()
    );
    for (id, c) in r.system.world.iter() {
        let name = r.system.kernel.component_name(id);
        match c {
            Comp::SystemBus(_, b) | Comp::LocalBus(_, b) => {
                let s = b.stats();
                println!("{name:<16} busy {:>5.1}% of {} cycles, data phases {}, wait {}, transactions {}, bytes {}", 100.0 * s.busy_cycles as f64 / s.cycles.max(1) as f64, s.cycles, s.data_phases, s.wait_cycles, s.transactions, s.bytes);
            }
            _ => {}
        }
    }
}
