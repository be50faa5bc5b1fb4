//! Dumps the raw spans of a traced 4-byte ping-pong's measured iteration (development aid).
use testbenches::config::SystemConfig;
use testbenches::system::{run_pingpong, Op, PingPongSpec};

fn main() {
    let cfg = SystemConfig::from_preset("hvia-ge").expect("preset");
    let op = if std::env::args().nth(1).as_deref() == Some("send-recv") {
        Op::SendRecv
    } else {
        Op::RdmaWrite
    };
    let spec = PingPongSpec {
        op,
        size: 4,
        iterations: 1,
        warmup: 2,
        trace: true,
        recv_post: testbenches::system::RecvPost::Timed,
    };
    let r = run_pingpong(&cfg, spec).expect("run");
    let it = r.initiator.iterations.last().expect("it");
    let k = &r.system.kernel;
    for s in k.trace().spans() {
        let lo = it.start.as_ns_f64()
            - std::env::var("SPAN_BEFORE_NS")
                .ok()
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0);
        if s.end.as_ns_f64() > lo && s.start < it.end {
            println!(
                "{:>9.1} {:>9.1} msg {:>16x} {:<26} {}",
                s.start.as_ns_f64() - it.start.as_ns_f64(),
                s.end.as_ns_f64() - it.start.as_ns_f64(),
                s.msg.0,
                s.stage,
                k.component_name(s.component)
            );
        }
    }
}
