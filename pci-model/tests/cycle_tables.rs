//! Bus transactions against cycle tables counted by hand from the PCI rules and the
//! configuration. Clock `n` is the PCI clock that begins at edge `n` (30 303 ps each);
//! each table is written next to its assertions. Conventions (see `pci_model::bus`):
//! a message landing at edge `e` is a signal driven in clock `e`; the arbiter samples
//! REQ# at the next edge; a master starts the clock after it sees GNT# and an idle bus;
//! DEVSEL# medium = two clocks after the address phase.

mod common;

use common::{edge, Sys, T};
use pci_model::PciParts;
use pci_model::{
    BridgeParams, BusParams, Command, DmaDirection, DmaJob, DmaParams, DmaStatus, PageTable,
    PciMsg, TargetProfile, TenureEnd, TxnStatus,
};
use sim_kernel::{ClockDomain, Cycles, Duration, Time};

const BAR: u64 = 0xE000_0000;

fn write(master: pci_model::MasterId, tag: u64, addr: u64, len: usize) -> PciMsg {
    PciMsg::Request(pci_model::BusRequest {
        master,
        tag,
        command: Command::MemoryWrite,
        addr,
        len: len as u64,
        data: (0..len).map(|i| (i as u8) ^ (tag as u8)).collect(),
    })
}

#[test]
fn cpu_posted_write_of_one_dword_to_the_card() {
    let mut s = Sys::with_bridge();
    let cpu = s.probe("cpu", true);
    let card = s.device(BAR, 4096, 0, TargetProfile::default());
    let c0 = 10;
    s.k.post(
        s.bus,
        edge(c0),
        PciMsg::CpuWrite {
            tag: 7,
            addr: BAR + 0x10,
            data: vec![1, 2, 3, 4],
            reply_to: cpu,
        },
    );
    s.run();
    // clk 0  CpuWrite reaches the bridge; it is posted: CpuWritePosted goes back to the
    //        CPU at once (next 800 MHz edge + 1 CPU cycle); the bridge asserts REQ#
    // clk 1  the arbiter samples REQ#: GNT# to the bridge (no GNT# since reset)
    // clk 2  the bridge sees GNT# and an idle bus: FRAME#, address, Memory Write
    // clk 3  IRDY# with the data; FRAME# deasserted (one data phase); no DEVSEL# yet
    // clk 4  DEVSEL# (medium) and TRDY#: the data phase completes
    // clk 5  idle (turnaround); the card receives the data at edge 5
    assert_eq!(
        s.phases(),
        vec![
            (edge(c0 + 2), "address"),
            (edge(c0 + 3), "wait"),
            (edge(c0 + 4), "data"),
            (edge(c0 + 5), "idle")
        ]
    );
    let cpu_d = ClockDomain::from_mhz("cpu", 800.0).unwrap();
    assert_eq!(
        s.received(cpu),
        &[(
            cpu_d.edge_after(edge(c0), Cycles(1)),
            PciMsg::CpuWritePosted { tag: 7 }
        )]
    );
    let dev = s.w.device(card).unwrap();
    assert_eq!(dev.writes, vec![(edge(c0 + 5), BAR + 0x10, 4)]);
    assert_eq!(&dev.bytes()[0x10..0x14], &[1, 2, 3, 4]);
    let st = s.bus().stats();
    assert_eq!(
        (
            st.transactions,
            st.data_phases,
            st.busy_cycles,
            st.wait_cycles
        ),
        (1, 1, 3, 1)
    );
    let r = &s.bus().tenure_log()[0];
    assert_eq!(
        (r.address_clock, r.first_data_clock, r.last_clock),
        (c0 + 2, Some(c0 + 4), c0 + 4)
    );
    assert_eq!(r.end, TenureEnd::Completed);
}

#[test]
fn cpu_read_of_a_card_register_stalls_until_the_data_phase() {
    let mut s = Sys::with_bridge();
    let cpu = s.probe("cpu", true);
    let card = s.device(BAR, 4096, 0, TargetProfile::default());
    s.w.device_mut(card).unwrap().bytes_mut()[0x10..0x14]
        .copy_from_slice(&[0xEF, 0xBE, 0xAD, 0xDE]);
    let c0 = 10;
    s.k.post(
        s.bus,
        edge(c0),
        PciMsg::CpuRead {
            tag: 9,
            addr: BAR + 0x10,
            len: 4,
            reply_to: cpu,
        },
    );
    s.run();
    // clk 0  CpuRead reaches the bridge (the CPU is stalled); REQ#
    // clk 1  GNT# to the bridge
    // clk 2  address phase, Memory Read; the card will sample the address at edge 3
    // clk 3  turnaround of AD (read); FRAME# deasserted (one data phase), IRDY#; the card
    //        sees the read and answers at once: its data is on the bus in clock 4
    // clk 4  DEVSEL# (medium) + TRDY# with the register: the data phase completes
    // clk 5  idle; the CPU gets the data on its first edge at or after edge 5
    assert_eq!(
        s.phases(),
        vec![
            (edge(c0 + 2), "address"),
            (edge(c0 + 3), "wait"),
            (edge(c0 + 4), "data"),
            (edge(c0 + 5), "idle")
        ]
    );
    assert_eq!(
        s.w.device(card).unwrap().reads,
        vec![(edge(c0 + 3), BAR + 0x10)]
    );
    let cpu_d = ClockDomain::from_mhz("cpu", 800.0).unwrap();
    assert_eq!(
        s.received(cpu),
        &[(
            cpu_d.edge_at_or_after(edge(c0 + 5)),
            PciMsg::CpuReadData {
                tag: 9,
                data: vec![0xEF, 0xBE, 0xAD, 0xDE],
                status: TxnStatus::Ok
            }
        )]
    );
}

#[test]
fn cpu_read_of_nothing_is_a_master_abort_with_all_ones() {
    let mut s = Sys::with_bridge();
    let cpu = s.probe("cpu", true);
    s.k.post(
        s.bus,
        edge(0),
        PciMsg::CpuRead {
            tag: 1,
            addr: 0xF000_0000,
            len: 4,
            reply_to: cpu,
        },
    );
    s.run();
    // clk 0 REQ#; clk 1 GNT#; clk 2 address; clk 3..6 no DEVSEL# (FRAME# off in 3: one
    // data phase); clk 7: nobody claimed it by the fifth clock: master abort, IRDY#
    // deasserted, the bus is idle. The abort is decided at edge 7 itself, so the CPU
    // hears it one CPU cycle later (a message takes at least one receiver cycle).
    assert_eq!(
        s.phases(),
        vec![(edge(2), "address"), (edge(3), "wait"), (edge(7), "idle")]
    );
    let cpu_d = ClockDomain::from_mhz("cpu", 800.0).unwrap();
    assert_eq!(
        s.received(cpu),
        &[(
            cpu_d.edge_after(edge(7), Cycles(1)),
            PciMsg::CpuReadData {
                tag: 1,
                data: vec![0xFF; 4],
                status: TxnStatus::MasterAbort
            }
        )]
    );
    assert_eq!(s.bus().stats().master_aborts, 1);
    assert_eq!(s.bus().tenure_log()[0].last_clock, 6);
}

/// Host memory with a 512-byte buffer at a page-aligned VA; returns its page list.
fn host_buffer(s: &mut Sys, len: u64, fill: bool) -> (PageTable, Vec<u64>, Vec<u8>) {
    let mut pt = PageTable::new();
    pt.map_range(0x4000_0000, len, &mut s.w.store).unwrap();
    let data: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
    if fill {
        pt.write(&mut s.w.store, 0x4000_0000, &data).unwrap();
    }
    let pages = pt.pages_of(0x4000_0000, len).unwrap();
    (pt, pages, data)
}

#[test]
fn dma_read_of_512_bytes_is_retried_then_streams() {
    let bridge = BridgeParams {
        memory_read_latency: Duration(5 * T),
        ..BridgeParams::default()
    };
    let mut s = Sys::new(BusParams::default(), Some(bridge), 1 << 22, true);
    let engine = s.probe("engine", false);
    let (dma, _) = s.dma(DmaParams::default());
    let (_, pages, data) = host_buffer(&mut s, 512, true);
    s.k.post(
        dma,
        edge(0),
        PciMsg::DmaStart(DmaJob {
            tag: 5,
            reply_to: engine,
            direction: DmaDirection::Read { len: 512 },
            pages,
        }),
    );
    s.run();
    // clk 0    the DMA master gets the job: one 512-byte burst, Memory Read Multiple
    // clk 1    the request reaches the bus: REQ#
    // clk 2    GNT#
    // clk 3    address phase (MRM)
    // clk 4    turnaround; no DEVSEL# yet
    // clk 5    DEVSEL# (medium): the bridge has no data: it latches a delayed read (the
    //          fetch runs from edge 5 to edge 10) and asserts STOP#: Retry
    // clk 6    the master saw STOP#: FRAME# deasserted, IRDY# asserted, no data
    // clk 7    idle; REQ# is deasserted in clocks 6 and 7 (§3.4.1)
    // clk 8    REQ# again; GNT# is still parked on the DMA master; bus idle
    // clk 9    address phase again (same address and command)
    // clk 10   turnaround
    // clk 11   DEVSEL# + TRDY#: the prefetch buffer has had data since edge 10
    // clk 11..138  128 data phases; FRAME# deasserted in clock 138
    // clk 139  idle; the master hears the end at edge 139, the engine at edge 140
    assert_eq!(
        s.phases(),
        vec![
            (edge(3), "address"),
            (edge(4), "wait"),
            (edge(5), "stop"),
            (edge(7), "idle"),
            (edge(9), "address"),
            (edge(10), "wait"),
            (edge(11), "data"),
            (edge(139), "idle"),
        ]
    );
    let log = s.bus().tenure_log();
    assert_eq!(log.len(), 2);
    assert_eq!(
        (log[0].address_clock, log[0].last_clock, log[0].end),
        (3, 6, TenureEnd::Retry)
    );
    assert_eq!(
        (
            log[1].address_clock,
            log[1].first_data_clock,
            log[1].last_clock,
            log[1].data_phases
        ),
        (9, Some(11), 138, 128)
    );
    let (t, msg) = &s.received(engine)[0];
    assert_eq!(*t, edge(140));
    let PciMsg::DmaDone(done) = msg else {
        panic!("{msg:?}")
    };
    assert_eq!(
        (done.status.clone(), done.start, done.end),
        (DmaStatus::Ok, edge(0), edge(139))
    );
    assert_eq!(done.data, data);
    let st = s.bus().stats();
    assert_eq!(
        (st.busy_cycles, st.wait_cycles, st.retries, st.data_phases),
        (4 + 130, 4, 1, 128)
    );
    assert_eq!(s.bus().bridge().unwrap().stats().delayed_reads, 1);
}

#[test]
fn dma_write_of_512_bytes_is_posted_then_committed() {
    let bridge = BridgeParams {
        posted_write_latency: Duration(4 * T),
        ..BridgeParams::default()
    };
    let mut s = Sys::new(BusParams::default(), Some(bridge), 1 << 22, true);
    let engine = s.probe("engine", false);
    let (dma, _) = s.dma(DmaParams::default());
    let (pt, pages, data) = host_buffer(&mut s, 512, false);
    s.k.post(
        dma,
        edge(0),
        PciMsg::DmaStart(DmaJob {
            tag: 6,
            reply_to: engine,
            direction: DmaDirection::Write { data: data.clone() },
            pages,
        }),
    );
    // clk 0    the DMA master gets the job (one 512-byte Memory Write burst)
    // clk 1    REQ#
    // clk 2    GNT#
    // clk 3    address phase (MW)
    // clk 4    IRDY# with the first word; no DEVSEL# yet
    // clk 5    DEVSEL# (medium) + TRDY#: the posted-write buffer has room
    // clk 5..132  128 data phases; FRAME# deasserted in clock 132
    // clk 133  idle; the transaction ended at edge 133
    // clk 137  the bridge commits the write (133 + 4 clocks): the CPU sees it from now on
    let mut back = vec![0u8; 512];
    s.k.run_until(&mut s.w, edge(136));
    pt.read(&s.w.store, 0x4000_0000, &mut back).unwrap();
    assert!(
        back.iter().all(|&b| b == 0),
        "not visible before the commit"
    );
    s.k.run_until(&mut s.w, edge(137));
    pt.read(&s.w.store, 0x4000_0000, &mut back).unwrap();
    assert_eq!(back, data, "visible from the commit on");
    s.run();
    assert_eq!(
        s.phases(),
        vec![
            (edge(3), "address"),
            (edge(4), "wait"),
            (edge(5), "data"),
            (edge(133), "idle")
        ]
    );
    let PciMsg::DmaDone(done) = &s.received(engine)[0].1 else {
        panic!()
    };
    assert_eq!(
        (done.start, done.end, done.bytes),
        (edge(0), edge(133), 512)
    );
    let st = s.bus().stats();
    assert_eq!(
        (st.busy_cycles, st.data_phases, st.bytes_written),
        (130, 128, 512)
    );
}

#[test]
fn two_masters_contending_take_turns() {
    let mut s = Sys::new(BusParams::default(), None, 1 << 20, true);
    let (p0, m0) = s.master("m0", 64);
    let (p1, m1) = s.master("m1", 64);
    let dev = 0x9000_0000;
    s.device(dev, 4096, 0, TargetProfile::default());
    s.k.post(s.bus, edge(0), write(m0, 1, dev, 64));
    s.k.post(s.bus, edge(0), write(m0, 2, dev + 0x100, 64));
    s.k.post(s.bus, edge(0), write(m1, 11, dev + 0x200, 64));
    s.k.post(s.bus, edge(0), write(m1, 12, dev + 0x300, 64));
    s.run();
    // clk 0   REQ#0 and REQ#1
    // clk 1   GNT# to m0 (round robin starts at master 0)
    // clk 2   m0 address (tag 1); m0 has used its grant and m1 requests: GNT# moves to
    //         m1 in the same clock (the bus is busy)
    // clk 3   wait (DEVSEL# medium comes in clock 4)
    // clk 4..19   16 data phases of m0; FRAME# off in 19 (m0's LT of 64 never expires)
    // clk 20  idle
    // clk 21  m1 address (tag 11); GNT# back to m0, which still requests (tag 2)
    // clk 22  wait; clk 23..38 data; clk 39 idle
    // clk 40  m0 address (tag 2); GNT# to m1; 41 wait; 42..57 data; 58 idle
    // clk 59  m1 address (tag 12); 60 wait; 61..76 data; 77 idle
    let log = s.bus().tenure_log();
    let seen: Vec<(u16, u64, u64, Option<u64>, u64)> = log
        .iter()
        .map(|r| {
            (
                r.master,
                r.tag,
                r.address_clock,
                r.first_data_clock,
                r.last_clock,
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            (0, 1, 2, Some(4), 19),
            (1, 11, 21, Some(23), 38),
            (0, 2, 40, Some(42), 57),
            (1, 12, 59, Some(61), 76)
        ]
    );
    let t0: Vec<(Time, u64)> = s.dones(p0).iter().map(|(t, d)| (*t, d.tag)).collect();
    let t1: Vec<(Time, u64)> = s.dones(p1).iter().map(|(t, d)| (*t, d.tag)).collect();
    assert_eq!(t0, vec![(edge(20), 1), (edge(58), 2)]);
    assert_eq!(t1, vec![(edge(39), 11), (edge(77), 12)]);
    let st = s.bus().stats();
    assert_eq!((st.busy_cycles, st.idle_cycles), (4 * 18, 78 - 4 * 18));
    // m1 waits with REQ# asserted in clocks 0..19 and 38..57, seen one clock later.
    assert_eq!(st.per_master[1].wait_for_grant_cycles, 40);
    assert_eq!(st.per_master[0].wait_for_grant_cycles, 21);
}

#[test]
fn latency_timer_cuts_a_burst_when_another_master_wants_the_bus() {
    let mut s = Sys::new(BusParams::default(), None, 1 << 20, true);
    let (p0, m0) = s.master("m0", 16);
    let (p1, m1) = s.master("m1", 16);
    let dev = 0x9000_0000;
    let card = s.device(dev, 4096, 0, TargetProfile::default());
    s.k.post(s.bus, edge(0), write(m0, 1, dev, 512));
    s.k.post(s.bus, edge(10), write(m1, 2, dev + 0x400, 16));
    s.run();
    // clk 0    REQ#0
    // clk 1    GNT# to m0
    // clk 2    m0 address (512 bytes = 128 data phases); its LT (16) starts counting
    // clk 3    wait; clk 4.. data phases
    // clk 10   m1's request: REQ#1
    // clk 11   the arbiter samples REQ#1; m0 has used its grant: GNT# moves to m1
    // clk 18   18 - 2 = 16 clocks: m0's LT has expired and m0 sees GNT# gone: FRAME#
    //          deasserted, this is its last data phase (4..18 = 15 phases = 60 bytes)
    // clk 19   idle
    // clk 20   m1 address (GNT# since 11); GNT# back to m0, whose REQ# stayed asserted
    //          (no REQ# gap after a latency-timer end)
    // clk 21   wait; 22..25 four data phases; 26 idle
    // clk 27   m0 address at dev + 60 (452 bytes = 113 phases); 28 wait; 29..141 data
    // clk 142  idle
    let seen: Vec<(u16, u64, Option<u64>, u64, u64, TenureEnd)> = s
        .bus()
        .tenure_log()
        .iter()
        .map(|r| {
            (
                r.master,
                r.address_clock,
                r.first_data_clock,
                r.last_clock,
                r.bytes,
                r.end,
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            (0, 2, Some(4), 18, 60, TenureEnd::LatencyTimer),
            (1, 20, Some(22), 25, 16, TenureEnd::Completed),
            (0, 27, Some(29), 141, 452, TenureEnd::Completed),
        ]
    );
    let d0 = s.dones(p0);
    assert_eq!(d0.len(), 1);
    assert_eq!(d0[0].0, edge(142));
    assert_eq!(
        (d0[0].1.transactions, d0[0].1.latency_timer_expirations),
        (2, 1)
    );
    assert_eq!(s.dones(p1)[0].0, edge(26));
    assert_eq!(
        s.w.device(card).unwrap().writes,
        vec![
            (edge(19), dev, 60),
            (edge(26), dev + 0x400, 16),
            (edge(142), dev + 60, 452)
        ]
    );
    assert_eq!(s.bus().stats().latency_timer_expirations, 1);
}

#[test]
fn bridge_disconnects_a_write_burst_at_a_4k_boundary() {
    let mut s = Sys::with_bridge();
    let (p0, m0) = s.master("m0", 64);
    s.k.post(s.bus, edge(0), write(m0, 3, 0x1F80, 256));
    s.run();
    // clk 0    REQ#; clk 1 GNT#; clk 2 address 0x1F80 (256 bytes)
    // clk 3    IRDY# with data; no DEVSEL# yet
    // clk 4..35  32 data phases up to 0x2000; in 35 the bridge asserts STOP# with TRDY#
    //          (it takes nothing across the 4 KB boundary) while FRAME# is asserted:
    //          disconnect with data
    // clk 36   the master saw STOP#: FRAME# deasserted, IRDY# asserted, no data
    // clk 37   idle; REQ# deasserted in 36 and 37
    // clk 38   REQ# again, GNT# parked on m0; idle
    // clk 39   address 0x2000 (the remaining 128 bytes); 40 wait; 41..72 data
    // clk 73   idle
    assert_eq!(
        s.phases(),
        vec![
            (edge(2), "address"),
            (edge(3), "wait"),
            (edge(4), "data"),
            (edge(36), "stop"),
            (edge(37), "idle"),
            (edge(39), "address"),
            (edge(40), "wait"),
            (edge(41), "data"),
            (edge(73), "idle"),
        ]
    );
    let d = s.dones(p0);
    assert_eq!(d[0].0, edge(73));
    assert_eq!((d[0].1.transactions, d[0].1.disconnects), (2, 1));
    let expect: Vec<u8> = (0..256).map(|i| (i as u8) ^ 3).collect();
    assert_eq!(s.w.store.read_vec(0x1F80, 256).unwrap(), expect);
}

#[test]
fn bridge_prefetch_ends_at_a_4k_boundary_on_reads() {
    let bridge = BridgeParams {
        memory_read_latency: Duration(5 * T),
        ..BridgeParams::default()
    };
    let mut s = Sys::new(BusParams::default(), Some(bridge), 1 << 20, true);
    let (p0, m0) = s.master("m0", 64);
    let src: Vec<u8> = (0..256u32).map(|i| (i * 3) as u8).collect();
    s.w.store.write(0x1F80, &src).unwrap();
    s.k.post(
        s.bus,
        edge(0),
        PciMsg::Request(pci_model::BusRequest {
            master: m0,
            tag: 4,
            command: Command::MemoryReadMultiple,
            addr: 0x1F80,
            len: 256,
            data: Vec::new(),
        }),
    );
    s.run();
    // clk 0 REQ#; 1 GNT#; 2 address 0x1F80 MRM; 3 turnaround
    // clk 4    DEVSEL# + STOP#: Retry; the fetch runs from edge 4, data from edge 9
    // clk 5    FRAME# released; 6 idle; 7 idle (REQ# gap)
    // clk 8    address again; 9 turnaround
    // clk 10..41  32 data phases; the prefetch stops at the 4 KB boundary: STOP# with
    //          the last TRDY# in 41
    // clk 42   FRAME# released; 43 idle; 44 idle (REQ# gap)
    // clk 45   address 0x2000: a new delayed read; 46 turnaround
    // clk 47   DEVSEL# + STOP#: Retry (fetch from edge 47, data from edge 52)
    // clk 48   FRAME# released; 49 idle; 50 idle (REQ# gap)
    // clk 51   address again; 52 turnaround; 53..84 data; 85 idle
    assert_eq!(
        s.phases(),
        vec![
            (edge(2), "address"),
            (edge(3), "wait"),
            (edge(4), "stop"),
            (edge(6), "idle"),
            (edge(8), "address"),
            (edge(9), "wait"),
            (edge(10), "data"),
            (edge(42), "stop"),
            (edge(43), "idle"),
            (edge(45), "address"),
            (edge(46), "wait"),
            (edge(47), "stop"),
            (edge(49), "idle"),
            (edge(51), "address"),
            (edge(52), "wait"),
            (edge(53), "data"),
            (edge(85), "idle"),
        ]
    );
    let d = s.dones(p0);
    assert_eq!(d[0].0, edge(85));
    assert_eq!(d[0].1.data, src);
    assert_eq!(
        (d[0].1.transactions, d[0].1.retries, d[0].1.disconnects),
        (4, 2, 1)
    );
}
