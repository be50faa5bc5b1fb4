//! Development aid: runs a ping-pong on a configuration that validation would refuse
//! (`key=value` overrides applied without validation) until it ends (see
//! `System::run_programs`), then prints what each CPU waits for and which components still have events queued.
use host_driver::programs::{rdma_pingpong_initiator, rdma_pingpong_responder, PingPongParams};
use testbenches::config::SystemConfig;
use testbenches::system::System;

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let mut cfg = SystemConfig::from_preset("hvia-ge").expect("preset");
    for a in std::env::args().skip(1) {
        if let Err(e) = cfg.apply_set(&a) {
            println!("{a}: {e}");
            return;
        }
    }
    let mut sys = System::build(&cfg, false).expect("build");
    let mut p = PingPongParams::new(4, 1, sys.macs[1]);
    p.wait_timeout = host_driver::Timeout::Infinite;
    let q = PingPongParams {
        peer: sys.macs[0],
        ..p
    };
    if let Some(c) = sys.cpu_mut(0) {
        c.load(move |v| rdma_pingpong_initiator(v, p));
    }
    if let Some(c) = sys.cpu_mut(1) {
        c.load(move |v| rdma_pingpong_responder(v, q));
    }
    sys.start();
    let t = std::time::Instant::now();
    let out = sys.run_programs();
    println!(
        "outcome {out:?} at {} after {:?}",
        sys.kernel.now(),
        t.elapsed()
    );
    for n in 0..2 {
        if let Some(c) = sys.cpu(n) {
            println!(
                "cpu{n}: {} last {:?} outcome {:?}",
                c.wait(),
                c.last_call(),
                c.outcome()
                    .map(|o| o.as_ref().err().map(ToString::to_string))
            );
        }
    }
    let mut targets: Vec<String> = sys
        .kernel
        .pending_targets()
        .map(|t| sys.kernel.component_name(t).to_owned())
        .collect();
    targets.sort();
    println!("pending: {targets:?}");
}
