//! Device transactions applied whole (`bus/whole.rs`) equal per-clock stepping: on a bus
//! without a host bridge (as the card's local bus), one master (sometimes a second one,
//! sometimes pipelining several requests) reads and writes a device target with random
//! DEVSEL# timing, write wait states, write burst limits and read latencies, at random
//! instants, sometimes with a write-retry window on part of the target for a while; fast
//! stepping (untraced, where transactions are applied whole, and traced, where they are
//! not) must give what per-clock stepping gives: every message the masters receive with
//! its instant, the bus counters, the transaction log (clocks and data) and the device's
//! bytes (what its `TargetWrite`s wrote). A transaction applied a clock late
//! (`PciBus::set_whole_skew_clocks`) must be caught, and so must a start applied at once
//! (`bus/start.rs`: the clocks up to a parked master's address phase) a clock late
//! (`PciBus::set_start_skew_clocks`). (Transactions through the host
//! bridge are covered by `fast_path.rs`, `lazy_commit.rs` and `retry_loop.rs`, folded
//! reads by `ram_fold.rs`.)

mod common;

use common::Sys;
use pci_model::PciParts;
use pci_model::{
    BusParams, BusRequest, BusStats, BusWidth, Command, DevselSpeed, PciMsg, Stepping,
    TargetProfile, TenureRecord,
};
use proptest::prelude::*;
use sim_kernel::{Cycles, SplitMix64, Time};

const DEV: u64 = 0x9000_0000;
const DEV_BYTES: u64 = 4096;

#[derive(Debug, PartialEq)]
struct Outcome {
    received: Vec<Vec<(Time, PciMsg)>>,
    stats: BusStats,
    log: Vec<TenureRecord>,
    device: Vec<u8>,
}

/// A test hook's skew: transactions applied whole end late, or starts applied at once
/// come late, by this many clocks.
#[derive(Clone, Copy, Debug, Default)]
struct Skew {
    whole: u64,
    start: u64,
}

fn scenario(seed: u64, stepping: Stepping, trace: bool, skew: Skew) -> Outcome {
    let mut r = SplitMix64::new(seed);
    let wide = r.below(2) == 1;
    let bus = BusParams {
        width: if wide { BusWidth::W64 } else { BusWidth::W32 },
        clock_mhz: if wide { 66.0 } else { 33.0 },
        stepping,
        park: if r.below(2) == 0 {
            pci_model::ParkPolicy::LastMaster
        } else {
            pci_model::ParkPolicy::None
        },
    };
    let mut s = Sys::new(bus, None, 1 << 16, trace);
    let (_, a) = s.master("a", [4, 16, 64][r.below(3) as usize]);
    let (_, b) = s.master("b", [4, 16, 64][r.below(3) as usize]);
    let profile = TargetProfile {
        devsel: [DevselSpeed::Fast, DevselSpeed::Medium, DevselSpeed::Slow][r.below(3) as usize],
        max_write_burst_bytes: [0, 0, 32, 256][r.below(4) as usize],
        write_wait_states: Cycles(r.below(4)),
        supports_64bit: r.below(2) == 0,
    };
    let device = s.device(DEV, DEV_BYTES as usize, r.below(20), profile);
    let bus = s.w.bus_mut(s.bus).unwrap();
    bus.set_whole_skew_clocks(skew.whole);
    bus.set_start_skew_clocks(skew.start);
    // Master a: a train of requests, some close enough to queue behind each other;
    // master b: now and then one of its own.
    let n = 1 + r.below(12);
    let mut at = r.below(100_000);
    for tag in 0..n {
        let second = r.below(6) == 0;
        let master = if second { b } else { a };
        let len = [4, 16, 1 + r.below(700)][r.below(3) as usize];
        let addr = DEV + r.below(DEV_BYTES + 64); // sometimes past the end
        let read = r.below(2) == 0;
        let mut data = vec![0u8; if read { 0 } else { len as usize }];
        r.fill(&mut data);
        s.k.post(
            s.bus,
            Time(at),
            PciMsg::Request(BusRequest {
                master,
                tag,
                command: if read {
                    Command::MemoryReadMultiple
                } else {
                    Command::MemoryWrite
                },
                addr,
                len,
                data,
            }),
        );
        at += [0, 30_000, 300_000, 3_000_000][r.below(4) as usize];
    }
    // Back-pressure: a write-retry window on part of the device for a while.
    if r.below(3) == 0 {
        let start = DEV + 4 * r.below(DEV_BYTES / 4);
        let end = start + 4 * (1 + r.below(64));
        let on_at = r.below(at.max(1));
        let off_at = on_at + 1 + r.below(3_000_000);
        for (t, on) in [(on_at, true), (off_at, false)] {
            s.k.post(s.bus, Time(t), PciMsg::TargetWriteRetry { start, end, on });
        }
    }
    s.run();
    let received = s.probe_messages();
    Outcome {
        received,
        stats: s.bus().stats().clone(),
        log: s.bus().tenure_log().to_vec(),
        device: s.w.device(device).unwrap().bytes().to_vec(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn whole_transactions_equal_per_clock(seed in any::<u64>()) {
        let none = Skew::default();
        let reference = scenario(seed, Stepping::PerClock, false, none);
        let fast = scenario(seed, Stepping::FastForward, false, none);
        prop_assert_eq!(&fast, &reference);
        let traced = scenario(seed, Stepping::FastForward, true, none);
        prop_assert_eq!(&traced, &reference);
    }
}

/// In how many of 16 seeds the untraced fast run with `skew` differs from per-clock
/// stepping.
fn caught_in(skew: Skew) -> usize {
    (0..16u64)
        .filter(|&seed| {
            scenario(seed, Stepping::FastForward, false, skew)
                != scenario(seed, Stepping::PerClock, false, Skew::default())
        })
        .count()
}

/// A transaction applied a clock late is caught (in some of a few seeds: not every
/// scenario applies one whole).
#[test]
fn a_whole_transaction_one_clock_late_is_caught() {
    let caught = caught_in(Skew {
        whole: 1,
        ..Skew::default()
    });
    assert!(caught >= 8, "caught in {caught} of 16 seeds");
}

/// A start applied at once a clock late is caught (in some of a few seeds: a start is
/// applied at once only with GNT# parked on its master).
#[test]
fn a_start_one_clock_late_is_caught() {
    let caught = caught_in(Skew {
        start: 1,
        ..Skew::default()
    });
    assert!(caught >= 4, "caught in {caught} of 16 seeds");
}
