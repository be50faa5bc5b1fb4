//! Driving the model from Rust, without the `hvia` command: what a user who wants their
//! own experiment writes. Run it with
//!
//! ```sh
//! cargo run --release -p testbenches --example library
//! ```
//!
//! It walks through the library's four entry points:
//!
//! 1. a configuration: an embedded preset ([`SystemConfig::from_preset`]) changed like
//!    `--set` ([`SystemConfig::apply_set`]), or a TOML file ([`SystemConfig::load`]);
//! 2. a whole-system ping-pong ([`run_pingpong`]): one-way latency, bandwidth, and the
//!    system after the run (its components, trace and counters);
//! 3. the per-clock breakdown of one message ([`breakdown::measure`]): the stages that
//!    tile its one-way latency, each with its component and clock domain;
//! 4. every component's counters ([`stats::of_system`]), named as `--stats` names them.
//!
//! Every run is a pure function of its configuration: the same inputs give the same
//! numbers, on any machine and with any number of threads.

use testbenches::config::SystemConfig;
use testbenches::stats;
use testbenches::system::{breakdown, run_pingpong, Op, PingPongSpec, RecvPost};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 1. The published card, and a what-if: the system bus at 64 bits / 66 MHz. A key
    //    that does not exist or a wrong type is an error value at once; ranges and
    //    values that do not fit together are checked by `validate`, as `hvia` does.
    let published = SystemConfig::from_preset("hvia-ge")?;
    let mut fast = published.clone();
    fast.apply_set("pci.system.clock_mhz=66")?;
    fast.apply_set("pci.system.width_bits=64")?;
    fast.validate()?;
    assert!(fast.apply_set("no.such.key=1").is_err());
    let mut too_fast = fast.clone();
    too_fast.apply_set("pci.system.clock_mhz=900")?;
    assert!(too_fast.validate().is_err(), "PCI stops at 66.67 MHz");

    // 2. A 4-byte RDMA-write ping-pong on each: 2 warm-up and 5 measured round trips.
    let spec = PingPongSpec {
        op: Op::RdmaWrite,
        size: 4,
        iterations: 5,
        warmup: 2,
        trace: false,
        recv_post: RecvPost::Timed,
    };
    for (name, cfg) in [("hvia-ge", &published), ("system bus 64/66", &fast)] {
        let run = run_pingpong(cfg, spec)?;
        println!(
            "{name:>17}: 4 B one-way {:>8.1} ns ({} events, {} simulated)",
            run.one_way_ns(),
            run.stats.events,
            run.stats.simulated,
        );
    }

    // 3. Where the time of one 64-byte message goes: the five longest stages.
    let bd = breakdown::measure(&published, Op::RdmaWrite, 64)?;
    println!("\n64 B one-way {:.1} ns; longest stages:", bd.one_way_ns());
    let mut stages = bd.stages.clone();
    stages.sort_by_key(|s| std::cmp::Reverse(s.end - s.start));
    for s in stages.iter().take(5) {
        println!(
            "  {:>8.1} ns  {:<28} {:<18} {}",
            (s.end - s.start).as_ns_f64(),
            s.name,
            s.component,
            s.domain
        );
    }

    // 4. The counters of a run: the system is kept in the run's result.
    let run = run_pingpong(&published, PingPongSpec { size: 4096, ..spec })?;
    let counters = stats::of_system(&run.system);
    println!(
        "\n{} counters after a 4 KiB ping-pong, e.g.:",
        counters.len()
    );
    for c in counters.iter().filter(|c| {
        [
            "n0.pci.system.retries",
            "n0.pci.system.bridge.delayed_reads",
            "n1.card.engine.rdma_bytes_placed",
            "n1.mac.side.rx_fifo_peak",
        ]
        .contains(&c.name.as_str())
    }) {
        println!(
            "  {:<36} {:>10} {:<8} {}",
            c.name, c.value, c.unit, c.description
        );
    }
    Ok(())
}
