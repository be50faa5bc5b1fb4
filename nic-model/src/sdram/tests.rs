//! Hand-counted cycle tables of the SDRAM controller with the default PC100 CL2 preset:
//! tRCD 2, CL 2, tRP 2, tRAS 5, tRRD 2, tWR 2, tRFC 7, tREFI 1562, BL 8 x 4 bytes,
//! 4 banks, 4 KiB rows, row:bank:column. One cycle is 10 ns.

use super::*;

fn ctrl() -> SdramController {
    SdramController::new(SdramParams::default()).with_command_log()
}

fn log(c: &SdramController) -> Vec<(u64, SdramCmd)> {
    c.command_log().iter().map(|r| (r.cycle, r.cmd)).collect()
}

const B0R0: SdramCmd = SdramCmd::Activate { bank: 0, row: 0 };
const RD0: SdramCmd = SdramCmd::Read { bank: 0 };

#[test]
fn l1_entry_read_from_an_idle_bank() {
    // | cycle   | command        | why                                   |
    // |---------|----------------|---------------------------------------|
    // | 100     | ACTIVATE b0 r0 | request seen, bank idle               |
    // | 102     | READ b0        | ACTIVATE + tRCD 2                     |
    // | 104-109 | data beats 0-5 | READ + CL 2; bytes 0..24 = 6 beats    |
    // | 110     | done           | edge after beat 5 (beats 6, 7 unused) |
    // => 10 cycles = 100 ns.
    let mut c = ctrl();
    let t = c.access(100, SdramOp::Read, 0, 24).expect("in range");
    assert_eq!(log(&c), vec![(100, B0R0), (102, RD0)]);
    assert_eq!((t.first_cmd, t.done, t.latency()), (100, 110, 10));
    assert_eq!(
        (t.bursts, t.row_hits, t.activates, t.precharges),
        (1, 0, 1, 0)
    );
}

#[test]
fn l1_entry_across_a_burst_boundary() {
    // Entry 1 of the L1 table: bytes 0x18..0x30, in bursts 0x00..0x20 and 0x20..0x40.
    // | 100     | ACTIVATE b0 r0 |                                          |
    // | 102     | READ b0 (0x00) | + tRCD                                   |
    // | 110     | READ b0 (0x20) | READ + BL 8 (gapless data)               |
    // | 112-115 | beats 0-3      | bytes 0x20..0x30 of the second burst     |
    // | 116     | done           | => 16 cycles = 160 ns                    |
    let mut c = ctrl();
    let t = c.access(100, SdramOp::Read, 0x18, 24).expect("in range");
    assert_eq!(log(&c), vec![(100, B0R0), (102, RD0), (110, RD0)]);
    assert_eq!((t.done, t.bursts), (116, 2));
}

#[test]
fn read_hitting_an_open_row() {
    // After the idle-bank read above (row 0 of bank 0 left open, READ on 102):
    // | 110     | READ b0 (0x40) | row hit; READ + BL: 102 + 8 = 110        |
    // | 112-117 | beats 0-5      | + CL 2                                   |
    // | 118     | done           | => 8 cycles = 80 ns                      |
    let mut c = ctrl();
    c.access(100, SdramOp::Read, 0, 24).expect("in range");
    let t = c.access(110, SdramOp::Read, 0x40, 24).expect("in range");
    assert_eq!(log(&c)[2..], [(110, RD0)]);
    assert_eq!((t.done, t.latency(), t.row_hits), (118, 8, 1));
    assert_eq!(c.open_row(0), Some(0));
}

#[test]
fn read_with_a_row_conflict() {
    // Row 0 of bank 0 open (ACTIVATE 100, READ 102); 0x4000 is bank 0, row 1:
    // | 110     | PRECHARGE b0   | tRAS: 100 + 5 = 105; READ + BL: 110       |
    // | 112     | ACTIVATE b0 r1 | + tRP 2                                   |
    // | 114     | READ b0        | + tRCD 2                                  |
    // | 116-121 | beats 0-5      |                                           |
    // | 122     | done           | => 12 cycles = 120 ns                     |
    let mut c = ctrl();
    c.access(100, SdramOp::Read, 0, 24).expect("in range");
    let t = c.access(110, SdramOp::Read, 0x4000, 24).expect("in range");
    assert_eq!(
        log(&c)[2..],
        [
            (110, SdramCmd::Precharge { bank: 0 }),
            (112, SdramCmd::Activate { bank: 0, row: 1 }),
            (114, RD0)
        ]
    );
    assert_eq!((t.done, t.precharges, t.activates), (122, 1, 1));
}

#[test]
fn read_colliding_with_refresh() {
    // | 1550      | ACTIVATE b0 r0 | first access, idle bank                  |
    // | 1552      | READ b0        |                                          |
    // | 1560      | done (1st)     | beats 1554..1559                         |
    // | 1562      | PRECHARGE ALL  | 2nd access seen on 1562 = refresh due:   |
    // |           |                | refresh first (READ + BL = 1560 passed)  |
    // | 1564      | AUTO REFRESH   | + tRP 2                                  |
    // | 1571      | ACTIVATE b0 r0 | + tRFC 7 (the row was closed)            |
    // | 1573      | READ b0        | + tRCD 2                                 |
    // | 1575-1580 | beats 0-5      | + CL 2                                   |
    // | 1581      | done (2nd)     | => 19 cycles instead of 8 for a row hit  |
    let mut c = ctrl();
    let first = c.access(1550, SdramOp::Read, 0, 24).expect("in range");
    assert_eq!(first.done, 1560);
    let t = c.access(1562, SdramOp::Read, 0x40, 24).expect("in range");
    assert_eq!(
        log(&c)[2..],
        [
            (1562, SdramCmd::PrechargeAll),
            (1564, SdramCmd::Refresh),
            (1571, B0R0),
            (1573, RD0)
        ]
    );
    assert_eq!(
        (t.done, t.latency(), t.refreshes, t.row_hits),
        (1581, 19, 1, 0)
    );
    assert_eq!(c.next_refresh(), 2 * 1562);
}

#[test]
fn refresh_while_idle_delays_an_access_that_arrives_during_trfc() {
    // Nothing open; the refresh due on 1562 is issued on 1562 while idle.
    // | 1562 | AUTO REFRESH   |                             |
    // | 1569 | ACTIVATE b0 r0 | request seen 1565; + tRFC 7 |
    // | 1571 | READ b0        |                             |
    // | 1579 | done           | => 14 cycles                |
    let mut c = ctrl();
    let t = c.access(1565, SdramOp::Read, 0, 24).expect("in range");
    assert_eq!(
        log(&c),
        vec![(1562, SdramCmd::Refresh), (1569, B0R0), (1571, RD0)]
    );
    assert_eq!((t.done, t.latency(), t.refreshes), (1579, 14, 1));
}

#[test]
fn long_idle_refreshes_are_counted_not_stepped() {
    // 10^7 cycles (100 ms) idle: refreshes on 1562 k for k = 1..=6402, the last on
    // 9 999 924, so the ACTIVATE on 10^7 is not delayed.
    let mut c = SdramController::new(SdramParams::default());
    let t = c
        .access(10_000_000, SdramOp::Read, 0, 24)
        .expect("in range");
    assert_eq!((t.refreshes, t.latency()), (6402, 10));
    assert_eq!(c.refreshes(), 6402);
    assert_eq!(c.next_refresh(), 6403 * 1562);
}

#[test]
fn write_from_an_idle_bank() {
    // | 100     | ACTIVATE b0 r0 |                                  |
    // | 102     | WRITE b0       | + tRCD                           |
    // | 102-107 | beats 0-5      | write data with the command      |
    // | 108     | done           | => 8 cycles                      |
    let mut c = ctrl();
    let t = c.access(100, SdramOp::Write, 0, 24).expect("in range");
    assert_eq!(
        log(&c),
        vec![(100, B0R0), (102, SdramCmd::Write { bank: 0 })]
    );
    assert_eq!(t.done, 108);
    // Read after write, same row: READ >= WRITE + BL = 110; beats 112..; done 118.
    let r = c.access(108, SdramOp::Read, 0x40, 24).expect("in range");
    assert_eq!(r.done, 118);
}

#[test]
fn out_of_range_and_empty_accesses() {
    let mut c = ctrl();
    let end = 64 << 20;
    assert!(c.access(0, SdramOp::Read, end - 4, 4).is_ok());
    assert_eq!(
        c.access(0, SdramOp::Read, end - 3, 4),
        Err(SdramError {
            addr: end - 3,
            len: 4,
            size: end
        })
    );
    assert!(c.access(0, SdramOp::Read, u64::MAX, 2).is_err());
    let t = c.access(500, SdramOp::Read, 0, 0).expect("empty");
    assert_eq!((t.done, t.bursts), (500, 0));
}

#[test]
fn warm_l1_read_cost_by_entry_index() {
    // Rows open, data bus free: READ on T. 24-byte entry k at 24 k:
    // k % 4 = 0: bytes 0..24, one burst, last beat 5      -> T + 2 + 5 + 1 = T + 8
    // k % 4 = 1: bytes 24..48, bursts 0 and 1, last beat 3 -> T + 8 + 2 + 3 + 1 = T + 14
    // k % 4 = 2: bytes 48..72, bursts 1 and 2, last beat 1 -> T + 8 + 2 + 1 + 1 = T + 12
    // k % 4 = 3: bytes 72..96, one burst, last beat 7      -> T + 2 + 7 + 1 = T + 10
    let mut c = ctrl();
    c.access(0, SdramOp::Read, 0, 4)
        .expect("open row 0 of bank 0");
    let mut t = 100;
    for (k, cost) in [(0u64, 8u64), (1, 14), (2, 12), (3, 10), (4, 8)] {
        let a = c.access(t, SdramOp::Read, 24 * k, 24).expect("in range");
        assert_eq!((a.first_cmd, a.latency()), (t, cost), "entry {k}");
        t += 100;
    }
}
