//! Both directions at once between nodes 0 and 1 through the switch (the `bidirectional`
//! traffic pattern's programs), printing what the switch counted per port: PAUSE frames
//! received from the nodes and sent to them, buffer drops, the most bytes buffered, and
//! the DP83820s' own PAUSE frames. Extra arguments are `--set`s, e.g.
//! `cargo run --release --example switch_flow -- topology.switch=store-and-forward
//! topology.switch_flow_control=false`.
use host_driver::programs::{stream_duplex, PingPongParams, StreamParams};
use testbenches::config::SystemConfig;
use testbenches::system::{RunEnd, System};

fn main() {
    let mut cfg = SystemConfig::from_preset("hvia-ge").expect("preset");
    let mut messages = 100;
    for a in std::env::args().skip(1) {
        if let Some(m) = a.strip_prefix("messages=") {
            messages = m.parse().expect("messages=N");
        } else {
            cfg.apply_set(&a).expect("--set");
        }
    }
    cfg.validate().expect("valid config");
    let s = StreamParams {
        size: 65_536,
        messages,
        window: 8,
    };
    let mut sys = System::build(&cfg, false).expect("system");
    let mut p = PingPongParams::new(s.size, 1, sys.macs[1]);
    p.wait_timeout = host_driver::Timeout::Infinite;
    p.reliability = cfg.via.reliability.level();
    let q = PingPongParams {
        peer: sys.macs[0],
        ..p
    };
    if let Some(c) = sys.cpu_mut(0) {
        c.load(move |v| stream_duplex(v, p, s, true));
    }
    if let Some(c) = sys.cpu_mut(1) {
        c.load(move |v| stream_duplex(v, q, s, false));
    }
    sys.start();
    let end = sys.run_programs();
    let stalled = matches!(end, RunEnd::Stalled(_));
    println!(
        "finished: {} simulated {} ps",
        !stalled,
        sys.kernel.stats().simulated.0
    );
    for n in 0..2 {
        if let Some(m) = sys.mac_side(n) {
            let st = m.stats();
            println!(
                "node {n} DP83820: pause_sent {} resume_sent {} pause_received {} paused_cycles {}",
                st.pause_sent, st.resume_sent, st.pause_received, st.paused_cycles
            );
        }
    }
    if let Some(sw) = sys.switch() {
        for port in 0..sw.port_count() {
            let i = gige_mac::PortIndex(u16::try_from(port).unwrap_or(0));
            let (Some(st), Some(tx)) = (sw.port_stats(i), sw.tx(i)) else {
                continue;
            };
            println!(
                "switch port {port}: pause_received {} pause_sent {} resume_sent {} buffer_drops {} queue_drops {} max_buffered {} cut_through {} paused_clocks {}",
                st.pause_received,
                st.pause_sent,
                st.resume_sent,
                st.buffer_drops,
                st.queue_drops,
                st.max_buffered_bytes,
                st.cut_through,
                tx.stats().paused.0
            );
        }
    }
}
