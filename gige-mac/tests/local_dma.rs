//! The DP83820's DMA over the local bus against the real GEC (`hvia dma --bus local`):
//! every byte moves, and the timing equals pci-model's device-target bench with the
//! GEC's profile and latency.

use gige_mac::testbench::{local_dma, LocalDirection, LocalDmaParams};
use pci_model::{dma_throughput, BenchDirection, BenchTarget, DmaBenchParams, DmaParams};
use sim_kernel::Cycles;

fn reference(p: &LocalDmaParams) -> pci_model::DmaBenchReport {
    let b = DmaBenchParams {
        bus: p.bus.clone(),
        dma: DmaParams {
            burst_bytes: p.gec.mxdma_bytes,
            latency_timer: p.mac.latency_timer,
            max_outstanding: p.mac.max_outstanding,
            cache_line_bytes: p.mac.cache_line_bytes,
            write_invalidate: false,
            supports_64bit: p.mac.supports_64bit,
            recovery: p.mac.recovery,
        },
        target: BenchTarget::Device {
            profile: p.gec.target.clone(),
            // A SimpleTarget answers one bus clock after its latency; the GEC drives its
            // data ram_read_latency core clocks (here = bus clocks) after the address.
            read_latency: Cycles(p.gec.ram_read_latency.0 - 1),
        },
        direction: match p.direction {
            LocalDirection::Read => BenchDirection::Read,
            LocalDirection::Write => BenchDirection::Write,
        },
        bytes: p.bytes,
        offset: 0,
        seed: 1,
        trace: false,
        accounting: false,
    };
    dma_throughput(&b).unwrap()
}

#[test]
fn local_dma_matches_the_device_target_bench() {
    for direction in [LocalDirection::Read, LocalDirection::Write] {
        for bytes in [4u64, 60, 512, 1514, 64 * 1024] {
            let p = LocalDmaParams {
                direction,
                bytes,
                ..LocalDmaParams::default()
            };
            let r = local_dma(&p).unwrap();
            let want = reference(&p);
            assert_eq!(r.cycles, want.cycles, "{direction:?} {bytes}");
            assert_eq!(r.bursts, want.bursts);
        }
    }
}

#[test]
fn local_bus_throughput() {
    // 512-byte read bursts in steady state: address phase, 2 clocks to the first data
    // (the GEC samples the address in A+1 and drives data 2 core clocks later, A+3), 128
    // data phases, the idle turnaround: 132 clocks per 512 bytes = 4.0 us, 128 MB/s.
    // Writes: data from A+2 (medium DEVSEL#): 131 clocks. The whole job adds 2 clocks:
    // the first burst waits for REQ# (1) and GNT# after reset (2), address in clock 3,
    // and the last one ends before its turnaround clock.
    let r = local_dma(&LocalDmaParams::default()).unwrap();
    assert_eq!(r.bursts, 128);
    assert!(
        (r.throughput_mb_s - 128.0).abs() < 0.5,
        "{}",
        r.throughput_mb_s
    );
    let w = local_dma(&LocalDmaParams {
        direction: LocalDirection::Write,
        ..LocalDmaParams::default()
    })
    .unwrap();
    assert_eq!(r.cycles, 128 * 132 + 2);
    assert_eq!(w.cycles, 128 * 131 + 2);
    assert!(w.throughput_mb_s > r.throughput_mb_s);
    assert!(local_dma(&LocalDmaParams {
        bytes: 0,
        ..LocalDmaParams::default()
    })
    .is_err());
}
