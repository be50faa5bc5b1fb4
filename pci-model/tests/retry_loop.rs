//! The untraced look-ahead over a delayed read's retry loop (`bus/retry.rs`) equals
//! per-clock stepping: one master (with or without a recovery time, any latency timer)
//! reads host memory through the bridge, right after writes it posted there (so the
//! fetch waits for their commit), in both bridge read modes, every DEVSEL# speed and
//! park policy, with its requests queued ahead or landing during the loop; and a DMA
//! master's bursts. Same messages at the same instants, statistics (the bridge's delayed
//! reads, read Retries and partial prefetches among them), transaction log and memory;
//! a bound one clock late is caught, and so are Retry attempts applied as a whole
//! (`bus/retry_run.rs`) one clock too long; a burst costs the bus one wake-up.

mod common;

use common::Sys;
use pci_model::{
    BridgeParams, BridgeStats, BusParams, BusRequest, BusStats, BusWidth, Command, DevselSpeed,
    DmaDirection, DmaJob, DmaParams, MasterConfig, PageTable, ParkPolicy, PciMsg, PciParts,
    ReadMode, Stepping, TenureRecord,
};
use proptest::prelude::*;
use sim_kernel::{Cycles, Duration, SplitMix64, Time};

#[derive(Debug, PartialEq)]
struct Outcome {
    received: Vec<(Time, PciMsg)>,
    stats: BusStats,
    bridge: BridgeStats,
    log: Vec<TenureRecord>,
    memory: Vec<u8>,
    events: u64,
}

/// Host memory the requests touch.
const BASE: u64 = 0x4_0000;
const SPAN: u64 = 0x3000;

/// Deliberate errors for the tests that show they are caught: in the look-ahead's wake-up
/// (clocks late), and in each Retry attempt applied as a whole (clocks longer).
#[derive(Clone, Copy, Debug, Default)]
struct Skew {
    bound: u64,
    run: u64,
}

/// One master's writes and reads of host memory, drawn from `seed`; `skew`: the test
/// hooks' errors.
fn scenario(seed: u64, stepping: Stepping, trace: bool, skew: Skew) -> Outcome {
    let mut r = SplitMix64::new(seed);
    let wide = r.below(2) == 1;
    let bus = BusParams {
        width: if wide { BusWidth::W64 } else { BusWidth::W32 },
        clock_mhz: [33.0, 66.0][r.below(2) as usize],
        park: [ParkPolicy::LastMaster, ParkPolicy::None][r.below(2) as usize],
        stepping,
    };
    let bridge = BridgeParams {
        devsel: [DevselSpeed::Fast, DevselSpeed::Medium, DevselSpeed::Slow][r.below(3) as usize],
        read_mode: [ReadMode::Delayed, ReadMode::WaitStates][r.below(2) as usize],
        memory_read_latency: Duration::from_ns(30 * r.below(34)),
        memory_stream_mb_s: [800, 200, 100][r.below(3) as usize],
        posted_write_latency: Duration::from_ns(30 * r.below(40)),
        mrm_prefetch_bytes: [4096, 128][r.below(2) as usize],
        ..BridgeParams::default()
    };
    let mut s = Sys::new(bus, Some(bridge), 1 << 20, trace);
    let id = s.probe("master", false);
    let lt = [2, 8, 64][r.below(3) as usize];
    let recovery = [0, 1, 10][r.below(3) as usize];
    let bus_id = s.bus;
    let m =
        s.w.bus_mut(bus_id)
            .map(|b| {
                b.set_untraced_read_skew_clocks(skew.bound);
                b.set_retry_run_skew_clocks(skew.run);
                b.add_master(MasterConfig {
                    name: "master".into(),
                    component: id,
                    latency_timer: Cycles(lt),
                    supports_64bit: true,
                    recovery: Cycles(recovery),
                })
                .unwrap()
            })
            .unwrap();
    let mut at = r.below(100_000);
    let n = 1 + r.below(6);
    for tag in 0..n {
        let addr = BASE + r.below(SPAN - 1024);
        let len = 1 + r.below(1024);
        // Writes first more often: a read after a write waits for its commit.
        let read = tag > 0 && r.below(3) > 0;
        let (command, data) = if read {
            let c = [
                Command::MemoryRead,
                Command::MemoryReadLine,
                Command::MemoryReadMultiple,
            ][r.below(3) as usize];
            (c, Vec::new())
        } else {
            let mut d = vec![0u8; len as usize];
            r.fill(&mut d);
            (Command::MemoryWrite, d)
        };
        // Back to back, or landing while the one before is being retried or moves data.
        at += [0, 30_000, 200_000, 2_000_000][r.below(4) as usize];
        s.k.post(
            s.bus,
            Time(at),
            PciMsg::Request(BusRequest {
                master: m,
                tag,
                command,
                addr,
                len,
                data,
            }),
        );
    }
    s.run();
    Outcome {
        received: s.received(id).to_vec(),
        stats: s.bus().stats().clone(),
        bridge: s.bus().bridge().unwrap().stats().clone(),
        log: s.bus().tenure_log().to_vec(),
        memory: s.w.store.read_vec(BASE, SPAN as usize).unwrap(),
        events: s.k.stats().events,
    }
}

/// The per-clock reference and the untraced fast run of `seed` agree.
fn agree(seed: u64, skew: Skew) -> Result<(), TestCaseError> {
    let slow = scenario(seed, Stepping::PerClock, true, Skew::default());
    let fast = scenario(seed, Stepping::FastForward, false, skew);
    prop_assert!(slow.events >= fast.events);
    prop_assert_eq!(&slow.received, &fast.received);
    prop_assert_eq!(&slow.stats, &fast.stats);
    prop_assert_eq!(&slow.bridge, &fast.bridge);
    prop_assert_eq!(&slow.log, &fast.log);
    prop_assert_eq!(&slow.memory, &fast.memory);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn retry_loop_look_ahead_equals_per_clock(seed in any::<u64>()) {
        agree(seed, Skew::default())?;
    }
}

/// The scenarios reach what the look-ahead steps: Retries of delayed reads in both
/// modes, reads whose fetch waited for a posted write.
#[test]
fn scenarios_retry_reads_after_writes() {
    let mut total = BridgeStats::default();
    for seed in 0..64 {
        let o = scenario(seed, Stepping::FastForward, false, Skew::default());
        total.delayed_reads += o.bridge.delayed_reads;
        total.read_retries += o.bridge.read_retries;
        total.posted_writes += o.bridge.posted_writes;
        total.partial_prefetches += o.bridge.partial_prefetches;
    }
    assert!(total.delayed_reads > 50, "{total:?}");
    assert!(total.read_retries > 100, "{total:?}");
    assert!(total.posted_writes > 50, "{total:?}");
    assert!(total.partial_prefetches > 10, "{total:?}");
}

/// A look-ahead that wakes the bus one clock after the attempt that moves data is
/// caught: in a debug build by the assertion that no output is emitted late, in a
/// release build by the comparison.
#[test]
fn a_retry_loop_bound_one_clock_late_is_caught() {
    let skew = Skew {
        bound: 1,
        ..Skew::default()
    };
    let caught = caught_seeds(skew);
    assert!(
        caught.len() > 8,
        "a bus woken one clock late went unnoticed: {caught:?}"
    );
}

/// Retry attempts applied as a whole (`bus/retry_run.rs`) that each hold the master's
/// REQ# off one clock too long are caught: the untraced fast run applies them in the
/// scenarios, and the comparison finds the later attempts.
#[test]
fn a_retry_attempt_applied_one_clock_long_is_caught() {
    let skew = Skew {
        run: 1,
        ..Skew::default()
    };
    let caught = caught_seeds(skew);
    assert!(
        caught.len() > 8,
        "Retry attempts applied one clock long went unnoticed: {caught:?}"
    );
}

/// The seeds of 0..64 whose fast run with `skew` disagrees with the reference (or
/// fires a debug assertion); each agrees without the skew.
fn caught_seeds(skew: Skew) -> Vec<u64> {
    let caught: Vec<u64> = (0..64)
        .filter(|&seed| {
            let outcome = std::panic::catch_unwind(|| agree(seed, skew));
            !matches!(outcome, Ok(Ok(())))
        })
        .collect();
    for &seed in &caught {
        assert!(
            agree(seed, Skew::default()).is_ok(),
            "seed {seed} fails without the skew"
        );
    }
    caught
}

/// A DMA master's 512-byte bursts of host memory with the default preset's bridge
/// timing (medium DEVSEL#, 455 ns to the first data: three Retries a burst): the bus
/// is woken once a burst, for its end, and both ways give the same transactions.
#[test]
fn a_dma_read_burst_costs_one_wake_up() {
    let run = |stepping, trace| {
        let bus = BusParams {
            stepping,
            ..BusParams::default()
        };
        let bridge = BridgeParams {
            memory_read_latency: Duration::from_ns(455),
            ..BridgeParams::default()
        };
        let mut s = Sys::new(bus, Some(bridge), 1 << 22, trace);
        let engine = s.probe("engine", false);
        let (dma, _) = s.dma(DmaParams {
            burst_bytes: 512,
            ..DmaParams::default()
        });
        let (va, len) = (0x2000_0000, 1460);
        let mut pt = PageTable::new();
        pt.map_range(va, len, &mut s.w.store).unwrap();
        s.k.post(
            dma,
            Time(0),
            PciMsg::DmaStart(DmaJob {
                tag: 1,
                reply_to: engine,
                direction: DmaDirection::Read { len },
                pages: pt.pages_of(va, len).unwrap(),
            }),
        );
        s.run();
        let log = s.bus().tenure_log().to_vec();
        (
            s.k.stats().events,
            log,
            s.bus().bridge().unwrap().stats().clone(),
        )
    };
    let (slow_events, slow_log, slow_bridge) = run(Stepping::PerClock, true);
    let (events, log, bridge) = run(Stepping::FastForward, false);
    assert_eq!(slow_log, log);
    assert_eq!(slow_bridge, bridge);
    assert_eq!(bridge.delayed_reads, 3);
    assert_eq!(bridge.read_retries, 9, "three Retries a burst");
    // DmaStart, DmaDone, and per burst a Request, one Tick and a TransactionDone.
    assert_eq!(events, 2 + 3 * 3, "{slow_events} per clock");
}
