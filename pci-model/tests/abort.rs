//! Aborts injected at the host bridge (`BridgeParams::abort`, `pci_model::abort`): a DMA
//! job over three scattered pages whose second frame is in the range ends at the first
//! byte of that frame with `DmaStatus::TargetAbort` (the bridge claims, then STOP#
//! without data) or `MasterAbort` (nobody claims); the bytes before it moved, the range
//! and what follows are untouched; the bus counts the aborts; per-clock stepping,
//! fast-forward traced and untraced give the same messages at the same instants.

mod common;

use common::Sys;
use pci_model::{
    AbortKind, AbortRange, BridgeParams, BusParams, BusStats, DmaDirection, DmaDone, DmaJob,
    DmaParams, DmaStatus, PageTable, PciMsg, Stepping, PAGE_SIZE,
};
use sim_kernel::Time;

const VA: u64 = 0x2000_0F00;
/// 256 bytes in the first page, a whole second page, 100 bytes in the third.
const LEN: u64 = 256 + 4096 + 100;

/// The frames a fresh system maps the buffer to (host memory is seeded, so every build
/// maps it alike).
fn frames() -> Vec<u64> {
    let mut s = Sys::new(
        BusParams::default(),
        Some(BridgeParams::default()),
        1 << 22,
        false,
    );
    let mut pt = PageTable::new();
    pt.map_range(VA, LEN, &mut s.w.store).unwrap();
    pt.pages_of(VA, LEN).unwrap()
}

#[derive(Debug, PartialEq)]
struct Outcome {
    done: Vec<(Time, PciMsg)>,
    stats: BusStats,
    memory: Vec<u8>,
}

fn run(kind: Option<AbortKind>, write: bool, stepping: Stepping, trace: bool) -> Outcome {
    let pages = frames();
    let frame = pages[1] & !(PAGE_SIZE - 1);
    let bridge = BridgeParams {
        abort: kind.map(|k| AbortRange::new(frame, PAGE_SIZE, k).unwrap()),
        ..BridgeParams::default()
    };
    let bus = BusParams {
        stepping,
        ..BusParams::default()
    };
    let mut s = Sys::new(bus, Some(bridge), 1 << 22, trace);
    let mut pt = PageTable::new();
    pt.map_range(VA, LEN, &mut s.w.store).unwrap();
    assert_eq!(pt.pages_of(VA, LEN).unwrap(), pages);
    let data: Vec<u8> = (0..LEN).map(|i| (i * 7 + 1) as u8).collect();
    pt.write(&mut s.w.store, VA, &vec![0xEE; LEN as usize])
        .unwrap();
    let engine = s.probe("engine", false);
    let (dma, _) = s.dma(DmaParams::default());
    s.k.post(
        dma,
        Time(1_000_000),
        PciMsg::DmaStart(DmaJob {
            tag: 1,
            reply_to: engine,
            direction: if write {
                DmaDirection::Write { data }
            } else {
                DmaDirection::Read { len: LEN }
            },
            pages,
        }),
    );
    s.run();
    let mut memory = vec![0u8; LEN as usize];
    pt.read(&s.w.store, VA, &mut memory).unwrap();
    Outcome {
        done: s.received(engine).to_vec(),
        stats: s.bus().stats().clone(),
        memory,
    }
}

fn dma_done(o: &Outcome) -> &DmaDone {
    match o.done.as_slice() {
        [(_, PciMsg::DmaDone(d))] => d,
        other => panic!("one DmaDone expected, got {other:?}"),
    }
}

#[test]
fn a_dma_into_the_range_ends_there_with_the_abort() {
    let frame = frames()[1] & !(PAGE_SIZE - 1);
    for kind in [AbortKind::Target, AbortKind::Master] {
        for write in [false, true] {
            let o = run(Some(kind), write, Stepping::PerClock, true);
            let d = dma_done(&o);
            let want = match kind {
                AbortKind::Target => DmaStatus::TargetAbort { addr: frame },
                AbortKind::Master => DmaStatus::MasterAbort { addr: frame },
            };
            assert_eq!(d.status, want, "{kind:?} write {write}");
            assert_eq!(d.bytes, 256, "the first page's bytes moved");
            let aborts = match kind {
                AbortKind::Target => (o.stats.target_aborts, o.stats.master_aborts),
                AbortKind::Master => (o.stats.master_aborts, o.stats.target_aborts),
            };
            // At least the first transaction into the range; one more per burst the
            // master had queued behind it (it keeps `max_outstanding` in flight).
            assert!(
                aborts.0 >= 1 && aborts.1 == 0,
                "{kind:?} write {write}: {:?}",
                o.stats
            );
            if write {
                let sent: Vec<u8> = (0..256u64).map(|i| (i * 7 + 1) as u8).collect();
                assert_eq!(o.memory[..256], sent[..], "first page written");
                assert!(
                    o.memory[256..].iter().all(|&b| b == 0xEE),
                    "nothing written in or after the range"
                );
            }
            // The same without the fault moves everything.
            let clean = run(None, write, Stepping::PerClock, true);
            assert_eq!(dma_done(&clean).status, DmaStatus::Ok);
            assert_eq!(dma_done(&clean).bytes, LEN);
            assert_eq!(clean.stats.target_aborts + clean.stats.master_aborts, 0);
        }
    }
}

#[test]
fn fast_forward_equals_per_clock_with_aborts() {
    for kind in [AbortKind::Target, AbortKind::Master] {
        for write in [false, true] {
            let slow = run(Some(kind), write, Stepping::PerClock, true);
            let fast = run(Some(kind), write, Stepping::FastForward, true);
            let untraced = run(Some(kind), write, Stepping::FastForward, false);
            assert_eq!(slow.done, fast.done, "{kind:?} write {write}");
            assert_eq!(slow.done, untraced.done, "{kind:?} write {write}");
            assert_eq!(slow.memory, untraced.memory);
            assert_eq!(slow.stats.target_aborts, untraced.stats.target_aborts);
            assert_eq!(slow.stats.master_aborts, untraced.stats.master_aborts);
        }
    }
}
