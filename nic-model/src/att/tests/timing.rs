//! Hand-counted timing of registration and translation through the component, card ATT,
//! default PC100 CL2 SDRAM (tRCD 2, CL 2, tRP 2, tRAS 5, tRRD 2, tRFC 7, tREFI 1562,
//! BL 8 x 4 B, 10 ns cycles). L1 entry 0 is at SDRAM 0 (bank 0, row 0), the first L2
//! entries at 0x0018_1000 (bank 1, row 96). Replies reach the client one cycle after the
//! manager sends them.

use super::harness::Sys;
use crate::att::{AccessKind, AttParams, RegionRequest};
use via_abi::ProtectionTag;

const TAG: ProtectionTag = ProtectionTag(1);
const VA: u64 = 0x0804_A100;

fn example() -> RegionRequest {
    RegionRequest::with_defaults(VA, 10_000, vec![0x053A_7100, 0x0123_4000, 0x0777_0000])
}

#[test]
fn registration_then_warm_then_refresh_collision() {
    let mut s = Sys::new(AttParams::default());
    // Registration seen on cycle 0:
    // | 0      | ACTIVATE b1 r96  | L2 write, 12 bytes                        |
    // | 2      | WRITE b1         | + tRCD; beats 2..4                        |
    // | 5      | L2 write done    | -> L1 write                               |
    // | 5      | ACTIVATE b0 r0   | tRRD since 0 passed                       |
    // | 10     | WRITE b0         | + tRCD = 7, but WRITE + BL = 2 + 8 = 10   |
    // | 16     | L1 write done    | beats 10..15; reply, at the client on 17  |
    let reg_id = s.next_req_id();
    let h = s.register_at(0, example()).expect("ok");
    assert_eq!(s.now(), 17);
    assert_eq!(s.spans(reg_id, "att L2 write"), vec![(0, 5)]);
    assert_eq!(s.spans(reg_id, "att L1 write"), vec![(5, 16)]);

    // Warm translation (both rows open) seen on cycle 1000, 4 bytes in page 0:
    // | 1000      | READ b0 (L1)  | row hit                                   |
    // | 1002-1007 | beats 0-5     | 24 bytes                                  |
    // | 1008      | L1 back       | checks; L2 entry 0 at 0x0018_1000         |
    // | 1008      | READ b1 (L2)  | row hit; READ + BL = 1008                 |
    // | 1010      | beat 0        | 4 bytes                                   |
    // | 1011      | L2 back       | reply; at the client on 1012              |
    // => 11 cycles = 110 ns.
    let id = s.next_req_id();
    let (r, at) = s.translate_at(1000, h, VA, 4, AccessKind::RdmaWrite, TAG);
    assert_eq!(r.expect("ok")[0].pa, 0x053A_7100);
    assert_eq!(at, 1012);
    assert_eq!(s.spans(id, "att L1 read"), vec![(1000, 1008)]);
    assert_eq!(s.spans(id, "att L2 read"), vec![(1008, 1011)]);

    // Whole region (3 L2 entries = 3 beats): L1 1100..1108, L2 READ 1108, beats
    // 1110..1112, back on 1113 => 13 cycles.
    let id = s.next_req_id();
    let (r, at) = s.translate_at(1100, h, VA, 10_000, AccessKind::LocalRead, TAG);
    assert_eq!(r.expect("ok").len(), 3);
    assert_eq!(at, 1114);
    assert_eq!(s.spans(id, "att L2 read"), vec![(1108, 1113)]);

    // Seen on 1561, one cycle before the refresh due on 1562:
    // | 1561      | READ b0 (L1)   | row hit, before the refresh is due         |
    // | 1569      | L1 back        | next command could go on 1569 >= 1562:     |
    // | 1569      | PRECHARGE ALL  | refresh first; READ(b0) + BL = 1569        |
    // | 1571      | AUTO REFRESH   | + tRP                                      |
    // | 1578      | ACTIVATE b1    | + tRFC 7                                   |
    // | 1580      | READ b1 (L2)   | + tRCD                                     |
    // | 1583      | L2 back        | reply; at the client on 1584 => 22 cycles  |
    let id = s.next_req_id();
    let (r, at) = s.translate_at(1561, h, VA, 4, AccessKind::RdmaWrite, TAG);
    assert!(r.is_ok());
    assert_eq!(at, 1584);
    assert_eq!(s.spans(id, "att L1 read"), vec![(1561, 1569)]);
    assert_eq!(s.spans(id, "att L2 read"), vec![(1569, 1583)]);
    assert_eq!(s.att().sdram_controller().map(|c| c.refreshes()), Some(1));
}

#[test]
fn cold_translation_after_a_refresh_closed_the_rows() {
    let mut s = Sys::new(AttParams::default());
    let h = s.register_at(0, example()).expect("ok");
    // The refresh on 1562 (PRECHARGE ALL 1562, REFRESH 1564) closed both rows.
    // | 2000 | ACTIVATE b0 r0 | L1                                           |
    // | 2002 | READ b0        | beats 2004..2009                             |
    // | 2010 | L1 back        |                                              |
    // | 2010 | ACTIVATE b1    | L2                                           |
    // | 2012 | READ b1        | L2 entry 0: beat 0 on 2014                   |
    // | 2015 | L2 back        | at the client on 2016 => 15 cycles = 150 ns  |
    let id = s.next_req_id();
    let (r, at) = s.translate_at(2000, h, VA, 4, AccessKind::LocalRead, TAG);
    assert_eq!(r.expect("ok")[0].pa, 0x053A_7100);
    assert_eq!(at, 2016);
    assert_eq!(s.spans(id, "att L1 read"), vec![(2000, 2010)]);
    assert_eq!(s.spans(id, "att L2 read"), vec![(2010, 2015)]);
}

#[test]
fn requests_queue_in_arrival_order() {
    let mut s = Sys::new(AttParams::default());
    let h = s.register_at(0, example()).expect("ok");
    // Two translations seen on 1000: the first as above (back on 1011); the second starts
    // on 1011: its L1 READ waits for READ + BL = 1016, back 1024; L2 READ 1024, back 1027.
    for _ in 0..2 {
        s.k.post(
            super::harness::ATT,
            sim_kernel::Time(1000 * super::harness::CYCLE_PS),
            crate::NicMsg::AttTranslate {
                req: crate::ReqId(77),
                msg: sim_kernel::MsgId(77),
                handle: h,
                va: VA,
                len: 4,
                access: AccessKind::LocalRead,
                ptag: TAG,
                reply_to: super::harness::CLIENT,
            },
        );
    }
    s.k.run_to_idle(&mut s.b);
    let times: Vec<u64> = s
        .replies()
        .iter()
        .map(|(t, _)| t.0 / super::harness::CYCLE_PS)
        .collect();
    assert_eq!(times, vec![1012, 1028]);
    assert_eq!(s.att().stats().translations, 2);
    assert_eq!(s.att().state(), crate::att::AttState::Idle);
}

#[test]
fn stray_messages_are_dropped_without_panic() {
    let mut s = Sys::new(AttParams::default());
    for m in [
        crate::NicMsg::AttSdramDone { tag: 99 },
        crate::NicMsg::AttTableReadDone {
            tag: 0,
            result: Ok(vec![]),
        },
        crate::NicMsg::AttTranslated {
            req: crate::ReqId(1),
            result: Ok(vec![]),
        },
    ] {
        s.k.post(super::harness::ATT, sim_kernel::Time(0), m);
    }
    s.k.run_to_idle(&mut s.b);
    assert!(s.replies().is_empty());
    // The SDRAM and table-port completions matched no access in progress.
    assert_eq!(s.att().stats().unexpected_completions, 2);
}
