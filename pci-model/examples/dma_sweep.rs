//! Prints the `dma` throughput table for 1 MB reads and writes at bursts 64..4096 bytes,
//! on 32-bit/33 MHz and 64-bit/66 MHz, and the cycle accounting of one 512-byte read
//! burst. Run with `cargo run -p pci-model --release --example dma_sweep`.

use pci_model::{dma_throughput, BenchDirection, BusParams, BusWidth, DmaBenchParams, DmaParams};

fn main() {
    let buses = [
        ("32-bit/33 MHz", BusParams::default()),
        (
            "64-bit/66 MHz",
            BusParams {
                width: BusWidth::W64,
                clock_mhz: 66.0,
                ..BusParams::default()
            },
        ),
    ];
    for (name, bus) in buses {
        println!("{name}: ceiling {:.1} MB/s", bus.ceiling_mb_s());
        println!("{:>6} {:>12} {:>12}", "burst", "read MB/s", "write MB/s");
        for burst in [64u64, 128, 256, 512, 1024, 4096] {
            let mut row = Vec::new();
            for dir in [BenchDirection::Read, BenchDirection::Write] {
                let p = DmaBenchParams {
                    bus: bus.clone(),
                    dma: DmaParams {
                        burst_bytes: burst,
                        ..DmaParams::default()
                    },
                    direction: dir,
                    ..DmaBenchParams::default()
                };
                match dma_throughput(&p) {
                    Ok(r) => row.push(format!("{:12.2}", r.throughput_mb_s)),
                    Err(e) => row.push(format!("error: {e}")),
                }
            }
            println!("{burst:>6} {}", row.join(" "));
        }
        println!();
    }
    let p = DmaBenchParams::default();
    match dma_throughput(&p) {
        Ok(r) => {
            println!(
                "1 MB read, 512-byte bursts, 32-bit/33 MHz: {:.2} MB/s, {} events",
                r.throughput_mb_s, r.events
            );
            println!("{:#?}", r.stats);
            println!("{:#?}", r.bridge);
            if let Some(a) = r.accounting {
                print!("{a}");
            }
        }
        Err(e) => println!("error: {e}"),
    }
}
