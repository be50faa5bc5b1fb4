//! More bus behaviour against hand-counted tables (slow device reads and the 16-clock
//! rule, the bridge's wait-state mode, 64-bit/66 MHz, the CPU posting buffer, parking),
//! and every error path: bad page lists, DMA outside memory, malformed requests,
//! target abort.

mod common;

use common::{edge, Sys, T};
use pci_model::PciParts;
use pci_model::{
    dma_throughput, BridgeParams, BusParams, BusRequest, BusWidth, Command, DmaBenchParams,
    DmaDirection, DmaJob, DmaParams, DmaStatus, MasterId, MemError, PageTable, ParkPolicy, PciMsg,
    ReadMode, TargetProfile, TenureEnd, TxnStatus,
};
use sim_kernel::{ClockDomain, ComponentId, Cycles, Duration, Time};

const DEV: u64 = 0x9000_0000;

fn read(master: MasterId, tag: u64, command: Command, addr: u64, len: u64) -> PciMsg {
    PciMsg::Request(BusRequest {
        master,
        tag,
        command,
        addr,
        len,
        data: Vec::new(),
    })
}

#[test]
fn slow_device_read_is_retried_at_16_clocks_then_completed_from_its_delayed_data() {
    let mut s = Sys::new(BusParams::default(), None, 1 << 20, true);
    let (p, m) = s.master("m", 64);
    let dev = s.device(DEV, 64, 20, TargetProfile::default());
    s.w.device_mut(dev).unwrap().bytes_mut()[..4].copy_from_slice(&[0x44, 0x33, 0x22, 0x11]);
    s.k.post(s.bus, edge(0), read(m, 1, Command::MemoryRead, DEV, 4));
    s.run();
    // clk 0 REQ#; 1 GNT#; 2 address (MR); the device sees the read at edge 3 and answers
    //          21 clocks later: its data is on the bus from clock 24
    // clk 3    turnaround, FRAME# off (one data phase); 4..16 DEVSEL# (medium), no TRDY#
    // clk 17   the 16th clock since FRAME# (A+15) without TRDY#: STOP#, Retry
    // clk 18   idle; REQ# off in 17 and 18
    // clk 19   REQ# again (GNT# parked); idle
    // clk 20   address again: the bus keeps the device's pending read (no second TargetRead)
    // clk 21   turnaround; 22, 23 DEVSEL#, no data yet
    // clk 24   the data arrives with TRDY#: the data phase; 25 idle
    assert_eq!(
        s.ends(),
        vec![
            (2, None, 17, TenureEnd::Retry),
            (20, Some(24), 24, TenureEnd::Completed)
        ]
    );
    assert_eq!(s.w.device(dev).unwrap().reads, vec![(edge(3), DEV)]);
    let d = s.dones(p);
    assert_eq!(d[0].0, edge(25));
    assert_eq!(d[0].1.data, vec![0x44, 0x33, 0x22, 0x11]);
    assert_eq!(d[0].1.retries, 1);
}

#[test]
fn bridge_in_wait_state_mode_holds_trdy_then_retries_past_16_clocks() {
    for (latency, expect) in [
        // 5 clocks: clk 0 REQ#, 1 GNT#, 2 address, 3 turnaround, 4 DEVSEL# (the fetch
        // runs from edge 4 to edge 9), 4..8 TRDY# held, 9..24 16 data phases, 25 idle.
        (5, vec![(2, Some(9), 24, TenureEnd::Completed)]),
        // 20 clocks (data from edge 24): 4..16 TRDY# held; 17 (A+15) STOP#: Retry, the
        // fetch goes on as a delayed completion; FRAME# off in 18; 19 idle; 20 REQ# gap;
        // 21 address again; 22 turnaround; 23 DEVSEL#, no data; 24..39 data; 40 idle.
        (
            20,
            vec![
                (2, None, 18, TenureEnd::Retry),
                (21, Some(24), 39, TenureEnd::Completed),
            ],
        ),
    ] {
        let bridge = BridgeParams {
            read_mode: ReadMode::WaitStates,
            memory_read_latency: Duration(latency * T),
            ..BridgeParams::default()
        };
        let mut s = Sys::new(BusParams::default(), Some(bridge), 1 << 20, false);
        let (p, m) = s.master("m", 64);
        s.w.store.write(0x1000, &[9u8; 64]).unwrap();
        s.k.post(
            s.bus,
            edge(0),
            read(m, 1, Command::MemoryReadMultiple, 0x1000, 64),
        );
        s.run();
        assert_eq!(s.ends(), expect, "latency {latency}");
        assert_eq!(s.dones(p)[0].1.data, vec![9u8; 64]);
    }
}

#[test]
fn dma_write_on_a_64_bit_66_mhz_bus_moves_8_bytes_per_data_phase() {
    let bus = BusParams {
        width: BusWidth::W64,
        clock_mhz: 66.0,
        ..BusParams::default()
    };
    let e = |k: u64| Time(k * 15_152);
    let mut s = Sys::new(bus, Some(BridgeParams::default()), 1 << 20, true);
    let engine = s.probe("engine", false);
    let (dma, _) = s.dma(DmaParams::default());
    let mut pt = PageTable::new();
    pt.map_range(0x4000_0000, 512, &mut s.w.store).unwrap();
    let data: Vec<u8> = (0..512u32).map(|i| i as u8).collect();
    s.k.post(
        dma,
        e(0),
        PciMsg::DmaStart(DmaJob {
            tag: 1,
            reply_to: engine,
            direction: DmaDirection::Write { data: data.clone() },
            pages: pt.pages_of(0x4000_0000, 512).unwrap(),
        }),
    );
    s.run();
    // clk 0 job; 1 REQ#; 2 GNT#; 3 address (REQ64#); 4 IRDY#, no DEVSEL# yet;
    // 5..68 64 data phases of 8 bytes (DEVSEL# + ACK64# + TRDY# from 5); 69 idle.
    assert_eq!(
        s.phases(),
        vec![
            (e(3), "address"),
            (e(4), "wait"),
            (e(5), "data"),
            (e(69), "idle")
        ]
    );
    let PciMsg::DmaDone(d) = &s.received(engine)[0].1 else {
        panic!()
    };
    assert_eq!(d.end, e(69));
    let mut back = vec![0u8; 512];
    pt.read(&s.w.store, 0x4000_0000, &mut back).unwrap();
    assert_eq!(back, data);
}

#[test]
fn cpu_stalls_when_the_bridge_posting_buffer_is_full() {
    let bridge = BridgeParams {
        cpu_write_buffer_entries: 2,
        ..BridgeParams::default()
    };
    let mut s = Sys::new(BusParams::default(), Some(bridge), 1 << 20, false);
    let cpu = s.probe("cpu", true);
    let dev = s.device(DEV, 64, 0, TargetProfile::default());
    for tag in 0..3 {
        s.k.post(
            s.bus,
            edge(0),
            PciMsg::CpuWrite {
                tag,
                addr: DEV + 4 * tag,
                data: vec![tag as u8; 4],
                reply_to: cpu,
            },
        );
    }
    s.run();
    // Writes 0 and 1 are posted at once; write 2 waits for room.
    // write 0: clk 0 REQ#, 1 GNT#, 2 address, 3 wait, 4 data (room again), 5 idle
    // write 1: 6 address, 7 wait, 8 data, 9 idle
    // write 2: accepted in clock 4, posted to the CPU at edge 5: 10 address, 12 data
    let cpu_d = ClockDomain::from_mhz("cpu", 800.0).unwrap();
    let acks: Vec<(Time, PciMsg)> = s.received(cpu).to_vec();
    let now = cpu_d.edge_after(edge(0), Cycles(1));
    assert_eq!(
        acks,
        vec![
            (now, PciMsg::CpuWritePosted { tag: 0 }),
            (now, PciMsg::CpuWritePosted { tag: 1 }),
            (
                cpu_d.edge_at_or_after(edge(5)),
                PciMsg::CpuWritePosted { tag: 2 }
            ),
        ]
    );
    let times: Vec<Time> =
        s.w.device(dev)
            .unwrap()
            .writes
            .iter()
            .map(|w| w.0)
            .collect();
    assert_eq!(times, vec![edge(5), edge(9), edge(13)]);
    assert_eq!(s.bus().bridge().unwrap().stats().cpu_write_stalls, 1);
}

#[test]
fn switching_the_parked_grant_on_an_idle_bus_costs_one_clock() {
    let mut s = Sys::with_bridge();
    let cpu = s.probe("cpu", true);
    let (p, m) = s.master("m", 64);
    s.device(DEV, 64, 0, TargetProfile::default());
    // m writes first: GNT# stays parked on m afterwards.
    s.k.post(
        s.bus,
        edge(0),
        PciMsg::Request(BusRequest {
            master: m,
            tag: 1,
            command: Command::MemoryWrite,
            addr: DEV,
            len: 4,
            data: vec![1; 4],
        }),
    );
    let c0 = 20;
    s.k.post(
        s.bus,
        edge(c0),
        PciMsg::CpuWrite {
            tag: 2,
            addr: DEV + 4,
            data: vec![2; 4],
            reply_to: cpu,
        },
    );
    s.run();
    assert_eq!(s.dones(p).len(), 1);
    // clk 0 REQ# (bridge); clk 1 GNT# taken from the parked master m (idle bus: a clock
    // with no GNT#, §3.4.1); clk 2 GNT# to the bridge; clk 3 address.
    assert_eq!(s.bus().tenure_log()[1].address_clock, c0 + 3);
}

#[test]
fn no_parking_costs_arbitration_after_every_retry() {
    let run = |park| {
        let p = DmaBenchParams {
            bus: BusParams {
                park,
                ..BusParams::default()
            },
            bytes: 8192,
            ..DmaBenchParams::default()
        };
        dma_throughput(&p).unwrap()
    };
    let parked = run(ParkPolicy::LastMaster);
    let unparked = run(ParkPolicy::None);
    assert!(unparked.elapsed > parked.elapsed);
}

#[test]
fn write_and_invalidate_for_whole_aligned_lines() {
    for (offset, cmd) in [
        (0, Command::MemoryWriteInvalidate),
        (4, Command::MemoryWrite),
    ] {
        let mut s = Sys::new(
            BusParams::default(),
            Some(BridgeParams::default()),
            1 << 20,
            false,
        );
        let engine = s.probe("engine", false);
        let (dma, _) = s.dma(DmaParams {
            write_invalidate: true,
            ..DmaParams::default()
        });
        let mut pt = PageTable::new();
        pt.map_range(0x4000_0000 + offset, 256, &mut s.w.store)
            .unwrap();
        s.k.post(
            dma,
            edge(0),
            PciMsg::DmaStart(DmaJob {
                tag: 1,
                reply_to: engine,
                direction: DmaDirection::Write { data: vec![7; 256] },
                pages: pt.pages_of(0x4000_0000 + offset, 256).unwrap(),
            }),
        );
        s.run();
        assert_eq!(s.bus().tenure_log()[0].command, cmd);
    }
}

fn dma_job(s: &mut Sys, pages: Vec<u64>, direction: DmaDirection) -> pci_model::DmaDone {
    let engine = s.probe("engine", false);
    let (dma, _) = s.dma(DmaParams::default());
    s.k.post(
        dma,
        edge(0),
        PciMsg::DmaStart(DmaJob {
            tag: 9,
            reply_to: engine,
            direction,
            pages,
        }),
    );
    s.run();
    match &s.received(engine)[0].1 {
        PciMsg::DmaDone(d) => d.clone(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn dma_errors_are_values_not_panics() {
    // A page list too short for the length: nothing moves.
    let mut s = Sys::new(
        BusParams::default(),
        Some(BridgeParams::default()),
        1 << 20,
        false,
    );
    let d = dma_job(&mut s, vec![0x1F00], DmaDirection::Read { len: 0x200 });
    assert_eq!(
        d.status,
        DmaStatus::BadPageList(MemError::ShortPageList {
            needed: 2,
            given: 1
        })
    );
    assert_eq!(s.bus().stats().transactions, 0);

    // Beyond host memory: nobody claims the address.
    let mut s = Sys::new(
        BusParams::default(),
        Some(BridgeParams::default()),
        1 << 20,
        false,
    );
    let d = dma_job(
        &mut s,
        vec![0x4000_0000],
        DmaDirection::Write { data: vec![1; 64] },
    );
    assert_eq!(d.status, DmaStatus::MasterAbort { addr: 0x4000_0000 });
    assert_eq!(d.bytes, 0);

    // The second page is beyond memory: the first page's part moves, then master abort.
    let mut s = Sys::new(
        BusParams::default(),
        Some(BridgeParams::default()),
        1 << 20,
        false,
    );
    s.w.store.write(0xFFF00, &[5; 256]).unwrap();
    let d = dma_job(
        &mut s,
        vec![0xFFF00, 0x100000],
        DmaDirection::Read { len: 512 },
    );
    assert_eq!(d.status, DmaStatus::MasterAbort { addr: 0x100000 });
    assert_eq!((d.bytes, d.data.clone()), (256, vec![5; 256]));

    // Malformed requests: zero length; an unknown master (dropped).
    let mut s = Sys::new(BusParams::default(), None, 1 << 20, false);
    let (p, m) = s.master("m", 64);
    s.k.post(s.bus, edge(0), read(m, 1, Command::MemoryRead, DEV, 0));
    s.k.post(
        s.bus,
        edge(0),
        read(MasterId(77), 2, Command::MemoryRead, DEV, 4),
    );
    s.k.post(
        s.bus,
        edge(0),
        read(m, 3, Command::MemoryRead, u64::MAX - 1, 8),
    );
    s.run();
    let d = s.dones(p);
    assert_eq!(d.len(), 2);
    assert!(d.iter().all(|(_, x)| x.status == TxnStatus::BadRequest));
    assert_eq!(s.bus().stats().transactions, 0);
}

#[test]
fn target_abort_ends_the_request() {
    let mut s = Sys::new(BusParams::default(), None, 1 << 20, false);
    let (p, m) = s.master("m", 64);
    let target = s.probe("target", false);
    s.w.bus_mut(s.bus)
        .unwrap()
        .add_device_target(DEV, 64, target, TargetProfile::default())
        .unwrap();
    s.k.post(s.bus, edge(0), read(m, 1, Command::MemoryReadLine, DEV, 16));
    s.k.run_until(&mut s.w, edge(3));
    let tag = match &s.received(target)[0].1 {
        PciMsg::TargetRead { tag, .. } => *tag,
        other => panic!("{other:?}"),
    };
    s.k.post(s.bus, edge(6), PciMsg::TargetAbort { tag });
    s.run();
    let d = s.dones(p);
    assert_eq!(d[0].1.status, TxnStatus::TargetAbort);
    assert_eq!(s.bus().stats().target_aborts, 1);
    // The abort lands at edge 6: STOP# in 6 with FRAME# asserted, FRAME# released in 7.
    assert_eq!(s.ends(), vec![(2, None, 7, TenureEnd::TargetAbort)]);

    // Data that does not cover the first data phase is a target abort too.
    s.k.post(
        s.bus,
        edge(20),
        read(m, 2, Command::MemoryReadLine, DEV + 2, 8),
    );
    s.k.run_until(&mut s.w, edge(23));
    let tag = match &s.received(target)[1].1 {
        PciMsg::TargetRead { tag, .. } => *tag,
        other => panic!("{other:?}"),
    };
    s.k.post(
        s.bus,
        edge(24),
        PciMsg::TargetReadData { tag, data: vec![1] },
    );
    s.run();
    assert_eq!(s.dones(p)[1].1.status, TxnStatus::TargetAbort);
}

#[test]
fn bad_wiring_is_an_error() {
    let mut bus = pci_model::PciBus::new(BusParams::default()).unwrap();
    let c = ComponentId(1);
    let slow = TargetProfile {
        write_wait_states: Cycles(15),
        ..TargetProfile::default()
    };
    assert!(bus.add_device_target(DEV, 64, c, slow).is_err());
    bus.add_device_target(DEV, 64, c, TargetProfile::default())
        .unwrap();
    assert!(
        bus.add_device_target(DEV + 32, 64, c, TargetProfile::default())
            .is_err(),
        "overlap"
    );
    assert!(
        bus.add_device_target(DEV + 64, 0, c, TargetProfile::default())
            .is_err(),
        "empty"
    );
    assert!(
        bus.add_device_target(u64::MAX, 2, c, TargetProfile::default())
            .is_err(),
        "overflow"
    );
    bus.attach_host_bridge(BridgeParams::default(), 1 << 20)
        .unwrap();
    assert!(
        bus.attach_host_bridge(BridgeParams::default(), 1 << 20)
            .is_err(),
        "one bridge"
    );
    assert!(pci_model::PciBus::new(BusParams {
        clock_mhz: 0.0,
        ..BusParams::default()
    })
    .is_err());
}

#[test]
fn the_same_seed_gives_the_same_run() {
    let p = DmaBenchParams {
        bytes: 20_000,
        offset: 100,
        trace: true,
        ..DmaBenchParams::default()
    };
    let a = dma_throughput(&p).unwrap();
    let b = dma_throughput(&p).unwrap();
    assert_eq!(a, b);
    assert_ne!(a.trace_digest, 0);
}

/// A master with a recovery time keeps REQ# off for that many clocks after each of its
/// transactions, so consecutive write bursts start exactly `recovery` clocks later than
/// without it (the next burst is queued and REQ# would otherwise stay asserted).
#[test]
fn master_recovery_delays_each_next_burst_by_its_clocks() {
    let starts = |recovery: u64| -> Vec<u64> {
        let mut s = Sys::new(
            BusParams::default(),
            Some(BridgeParams::default()),
            1 << 20,
            false,
        );
        let engine = s.probe("engine", false);
        let (dma, _) = s.dma(DmaParams {
            burst_bytes: 64,
            recovery: Cycles(recovery),
            ..DmaParams::default()
        });
        let mut pt = PageTable::new();
        pt.map_range(0x4000_0000, 256, &mut s.w.store).unwrap();
        s.k.post(
            dma,
            edge(0),
            PciMsg::DmaStart(DmaJob {
                tag: 1,
                reply_to: engine,
                direction: DmaDirection::Write { data: vec![3; 256] },
                pages: pt.pages_of(0x4000_0000, 256).unwrap(),
            }),
        );
        s.run();
        let log = s.bus().tenure_log();
        assert_eq!(log.len(), 4, "four 64-byte write bursts");
        log.windows(2)
            .map(|w| w[1].address_clock - w[0].last_clock)
            .collect()
    };
    // Without recovery: one idle (turnaround) clock, then the next address phase.
    assert_eq!(starts(0), vec![2, 2, 2]);
    assert_eq!(starts(5), vec![7, 7, 7]);
}

#[test]
fn inputs_the_bus_cannot_act_on_are_dropped_and_counted() {
    let mut s = Sys::new(BusParams::default(), None, 1 << 20, false);
    let (p, m) = s.master("m", 64);
    // A request from a master that was never registered.
    let stranger = MasterId(m.0 + 7);
    s.k.post(s.bus, edge(0), read(stranger, 1, Command::MemoryRead, 0, 4));
    // An answer to a read nobody asked for.
    s.k.post(
        s.bus,
        edge(2),
        PciMsg::TargetReadData {
            tag: 999,
            data: vec![1, 2, 3, 4],
        },
    );
    // An empty write-retry window.
    s.k.post(
        s.bus,
        edge(4),
        PciMsg::TargetWriteRetry {
            start: DEV,
            end: DEV,
            on: true,
        },
    );
    s.run();
    assert_eq!(s.bus().stats().dropped_inputs, 3);
    assert_eq!(s.bus().stats().transactions, 0, "nothing reached the bus");
    assert!(s.dones(p).is_empty());
    assert_eq!(
        s.bus().stats().wrong_inputs,
        0,
        "right kinds, wrong contents"
    );
}
