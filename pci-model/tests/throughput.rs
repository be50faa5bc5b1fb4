//! The `dma` scenario: 1 MB reads and writes at bursts of 64..4096 bytes. Throughput
//! rises with the burst size and stays under width x clock (132 MB/s at 32-bit/33 MHz,
//! 528 MB/s at 64-bit/66 MHz); the cycle accounting of a 512-byte read burst is the one
//! counted by hand.

use pci_model::{
    dma_throughput, BenchDirection, BenchTarget, BusParams, BusWidth, DmaBenchParams, DmaParams,
    TargetProfile,
};
use sim_kernel::Cycles;

const BURSTS: [u64; 6] = [64, 128, 256, 512, 1024, 4096];

fn sweep(bus: &BusParams, dir: BenchDirection) -> Vec<f64> {
    BURSTS
        .iter()
        .map(|&burst| {
            let r = dma_throughput(&DmaBenchParams {
                bus: bus.clone(),
                dma: DmaParams {
                    burst_bytes: burst,
                    ..DmaParams::default()
                },
                direction: dir,
                accounting: false,
                ..DmaBenchParams::default()
            })
            .unwrap();
            assert_eq!(r.bytes, 1 << 20);
            assert_eq!(u64::from(r.bursts), (1 << 20) / burst);
            r.throughput_mb_s
        })
        .collect()
}

fn check(bus: &BusParams, ceiling: f64) -> Vec<(f64, f64)> {
    assert!((bus.ceiling_mb_s() - ceiling).abs() < 0.1);
    let reads = sweep(bus, BenchDirection::Read);
    let writes = sweep(bus, BenchDirection::Write);
    for series in [&reads, &writes] {
        for w in series.windows(2) {
            assert!(
                w[1] > w[0],
                "throughput must rise with burst size: {series:?}"
            );
        }
        assert!(
            series.iter().all(|&t| t > 0.0 && t < ceiling),
            "{series:?} vs {ceiling}"
        );
    }
    reads.into_iter().zip(writes).collect()
}

#[test]
fn throughput_rises_with_burst_size_under_the_ceiling() {
    let slow = check(&BusParams::default(), 132.0);
    let fast_bus = BusParams {
        width: BusWidth::W64,
        clock_mhz: 66.0,
        ..BusParams::default()
    };
    let fast = check(&fast_bus, 528.0);
    for (s, f) in slow.iter().zip(&fast) {
        assert!(
            f.0 > s.0 && f.1 > s.1,
            "64-bit/66 MHz is faster: {s:?} {f:?}"
        );
    }
    // 4 KB bursts beat the 32-bit/33 MHz ceiling on the 64-bit/66 MHz bus.
    assert!(fast[5].0 > 132.0 && fast[5].1 > 132.0);
}

#[test]
fn cycle_accounting_of_one_512_byte_read_burst() {
    let r = dma_throughput(&DmaBenchParams {
        bytes: 64 << 10,
        ..DmaBenchParams::default()
    })
    .unwrap();
    let a = r.accounting.unwrap();
    // Default bridge: 180 ns memory latency = 5.94 clocks from DEVSEL#.
    // clk 0      idle (turnaround after the previous burst)
    // clk 1      address phase, Memory Read Multiple
    // clk 2..4   turnaround, DEVSEL# + STOP# (retry; the fetch starts), FRAME# released
    // clk 5..6   idle: turnaround, REQ# gap (§3.4.1)
    // clk 7      address phase again
    // clk 8      turnaround (DEVSEL# medium in 9, data ready since edge 2 + 5.94)
    // clk 9..136 128 data phases
    let rows: Vec<u64> = a.rows.iter().map(|r| r.clocks).collect();
    assert_eq!(rows, vec![1, 1, 3, 2, 1, 1, 128], "{a}");
    assert_eq!(a.clocks, 137);
    assert_eq!(a.bytes, 512);
    // 512 bytes every 137 clocks of 30.303 ns.
    assert!(
        (r.throughput_mb_s - 512.0 / (137.0 * 0.030_303)).abs() < 0.2,
        "{}",
        r.throughput_mb_s
    );
}

#[test]
fn local_bus_device_target_works_both_ways() {
    for dir in [BenchDirection::Read, BenchDirection::Write] {
        let r = dma_throughput(&DmaBenchParams {
            target: BenchTarget::Device {
                profile: TargetProfile::default(),
                read_latency: Cycles(2),
            },
            direction: dir,
            bytes: 100_000,
            offset: 123,
            ..DmaBenchParams::default()
        })
        .unwrap();
        assert!(
            r.throughput_mb_s > 50.0 && r.throughput_mb_s < 132.0,
            "{dir:?} {}",
            r.throughput_mb_s
        );
        assert!(r.bridge.is_none());
    }
}

#[test]
fn bad_bench_parameters_are_errors() {
    let zero = DmaBenchParams {
        bytes: 0,
        ..DmaBenchParams::default()
    };
    assert!(dma_throughput(&zero).is_err());
    let burst = DmaBenchParams {
        dma: DmaParams {
            burst_bytes: 0,
            ..DmaParams::default()
        },
        ..DmaBenchParams::default()
    };
    assert!(dma_throughput(&burst).is_err());
    let clock = DmaBenchParams {
        bus: BusParams {
            clock_mhz: 133.0,
            ..BusParams::default()
        },
        ..DmaBenchParams::default()
    };
    assert!(dma_throughput(&clock).is_err());
    let too_big = DmaBenchParams {
        bytes: 300 << 20,
        ..DmaBenchParams::default()
    };
    assert!(dma_throughput(&too_big).is_err(), "more than host memory");
}
