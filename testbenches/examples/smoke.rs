//! Smoke run of the full system: one ping-pong size, printed with its statistics.
use testbenches::config::SystemConfig;
use testbenches::system::{run_pingpong, Op, PingPongSpec};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let size: u32 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(4);
    let op = if args.get(2).map(String::as_str) == Some("send-recv") {
        Op::SendRecv
    } else {
        Op::RdmaWrite
    };
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
        op,
        size,
        iterations: 5,
        warmup: 2,
        trace: false,
        recv_post: testbenches::system::RecvPost::Timed,
    };
    let t = std::time::Instant::now();
    match run_pingpong(&cfg, spec) {
        Ok(r) => println!(
            "size {size}: one-way {:.1} ns, {:.2} MB/s, events {}, simulated {} , wall {:?}",
            r.one_way_ns(),
            r.bandwidth_mb_s(),
            r.stats.events,
            r.stats.simulated,
            t.elapsed()
        ),
        Err(e) => println!("error: {e}"),
    }
}
