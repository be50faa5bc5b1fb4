//! Prints the host CPU cost table (Pentium III 800 MHz, Linux 2.4): every cost the
//! VIPL library and kernel agent charge, in cycles and nanoseconds, with its source.
//!
//! `cargo run -p host-driver --example cost_table`

use host_driver::CpuCosts;

fn main() {
    println!(
        "{:<20} {:>8} {:<20} {:>9}  source",
        "cost", "value", "unit", "ns"
    );
    for row in CpuCosts::default().docs() {
        println!(
            "{:<20} {:>8} {:<20} {:>9.2}  {}",
            row.name, row.cycles, row.unit, row.ns, row.source
        );
    }
}
