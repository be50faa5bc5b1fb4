//! Debug aid: runs one ping-pong by hand and dumps component state when it stalls.
use host_driver::programs::{rdma_pingpong_initiator, rdma_pingpong_responder, PingPongParams};
use testbenches::config::SystemConfig;
use testbenches::system::{Comp, System};

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let size: u32 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(262144);
    let preset = std::env::args()
        .nth(2)
        .unwrap_or_else(|| "att-in-host".into());
    let cfg = SystemConfig::from_preset(&preset).expect("preset");
    let mut sys = System::build(&cfg, false).expect("build");
    let mut p = PingPongParams::new(size, 2, sys.macs[1]);
    p.wait_timeout = host_driver::Timeout::After(sim_kernel::Duration::from_ns(200_000_000));
    let q = PingPongParams {
        peer: sys.macs[0],
        ..p
    };
    sys.cpu_mut(0)
        .unwrap()
        .load(move |v| rdma_pingpong_initiator(v, p));
    sys.cpu_mut(1)
        .unwrap()
        .load(move |v| rdma_pingpong_responder(v, q));
    sys.start();
    let out = sys
        .kernel
        .run_until(&mut sys.world, sim_kernel::Time(400_000_000_000));
    println!(
        "outcome {out:?} at {} events {}",
        sys.kernel.now(),
        sys.kernel.stats().events
    );
    for n in 0..2 {
        println!(
            "cpu{n} finished {} {:?}",
            sys.cpu(n).unwrap().is_finished(),
            sys.cpu(n)
                .unwrap()
                .outcome()
                .map(|o| o.as_ref().err().map(ToString::to_string))
        );
    }
    for (id, c) in sys.world.iter() {
        let name = sys.kernel.component_name(id).to_string();
        match c {
            Comp::Engine(_, e) => println!(
                "{name}: {:?} idle {} vi0 {:?}",
                e.stats(),
                e.is_idle(),
                e.vi(0)
            ),
            Comp::Att(_, a) => println!("{name}: {:?} state {:?}", a.stats(), a.state()),
            Comp::AttPort(_, p) => println!("{name}: jobs {} unexpected {}", p.jobs, p.unexpected),
            Comp::Dma(n, _) | Comp::FoldedDma(n) => {
                if let Some(d) = sys.dma(*n) {
                    println!("{name}: busy {} {:?}", d.busy(), d.stats());
                }
            }
            Comp::Gec(n) => {
                if let Some(g) = sys.gec(*n) {
                    println!("{name}: {:?}", g.stats());
                }
            }
            Comp::MacBus(n, _) | Comp::FoldedMacBus(n) => {
                if let Some(m) = sys.mac_bus(*n) {
                    println!("{name}: {:?}", m.stats());
                }
            }
            Comp::MacSide(_, m) => println!("{name}: {:?}", m.stats()),
            _ => {}
        }
    }
}
