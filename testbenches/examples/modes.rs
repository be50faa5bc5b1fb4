//! Trace digests of a 4-byte ping-pong under each stepping combination (development aid).
use testbenches::config::{SimStepping, SystemConfig};
use testbenches::system::{run_pingpong_adjusted, Op, PingPongSpec};

fn main() {
    let op = if std::env::args().nth(1).as_deref() == Some("send-recv") {
        Op::SendRecv
    } else {
        Op::RdmaWrite
    };
    let size: u32 = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(4);
    for (bus, cpu_fast) in [
        (SimStepping::Exact, false),
        (SimStepping::Fast, false),
        (SimStepping::Exact, true),
        (SimStepping::Fast, true),
    ] {
        let mut cfg = SystemConfig::from_preset("hvia-ge").expect("preset");
        cfg.sim.stepping = bus;
        let spec = PingPongSpec {
            op,
            size,
            iterations: 2,
            warmup: 1,
            trace: true,
            recv_post: testbenches::system::RecvPost::Timed,
        };
        let r = run_pingpong_adjusted(&cfg, spec, |sys| {
            for n in 0..2 {
                if let Some(c) = sys.cpu_mut(n) {
                    c.set_fast_poll(cpu_fast);
                }
            }
        })
        .expect("run");
        println!(
            "bus {bus:?} cpu_fast {cpu_fast}: digest {:016x} one-way {} events {}",
            r.system.kernel.trace().digest(),
            r.one_way.0,
            r.stats.events
        );
    }
}
