//! Development aid: per-iteration round trips of one ping-pong (`op size iters`).
use testbenches::config::SystemConfig;
use testbenches::system::{run_pingpong, Op, PingPongSpec};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let op = if a.get(1).map(String::as_str) == Some("send-recv") {
        Op::SendRecv
    } else {
        Op::RdmaWrite
    };
    let size = a.get(2).and_then(|s| s.parse().ok()).unwrap_or(4);
    let iterations = a.get(3).and_then(|s| s.parse().ok()).unwrap_or(20);
    let mut cfg = SystemConfig::from_preset("hvia-ge").expect("preset");
    for s in a.iter().skip(4) {
        cfg.apply_set(s).expect("--set");
    }
    let spec = PingPongSpec {
        op,
        size,
        iterations,
        warmup: 0,
        trace: false,
        recv_post: testbenches::system::RecvPost::Timed,
    };
    let r = run_pingpong(&cfg, spec).expect("run");
    if let Some(c) = r.system.cpu(1) {
        let s = c.stats();
        println!(
            "mmio reads {} mean wait {:.1} ns; mmio writes {} mean wait {:.1} ns",
            s.mmio_reads,
            s.mmio_read_wait.as_ns_f64() / s.mmio_reads.max(1) as f64,
            s.mmio_writes,
            s.mmio_write_wait.as_ns_f64() / s.mmio_writes.max(1) as f64
        );
    }
    for it in &r.initiator.iterations {
        println!("{} {}", it.index, (it.end - it.start).as_ns_f64());
    }
}
