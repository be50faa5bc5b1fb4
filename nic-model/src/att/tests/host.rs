//! The host-memory what-if through a fake table port that answers after a fixed delay.

use super::harness::{Sys, CYCLE_PS, PORT};
use crate::att::{
    AccessKind, AttConfigError, AttManager, AttParams, RegionRequest, TableIoError, TranslateError,
};
use sim_kernel::Time;
use via_abi::{ProtectionTag, Status};

const TAG: ProtectionTag = ProtectionTag(1);
const VA: u64 = 0x0804_A100;

fn example() -> RegionRequest {
    RegionRequest::with_defaults(VA, 10_000, vec![0x053A_7100, 0x0123_4000, 0x0777_0000])
}

#[test]
fn table_accesses_go_through_the_port_with_its_delay() {
    // Port answers 20 cycles after it sees a request; every message takes one cycle.
    // Registration on 0: L2 write to the port on 1, done back on 21, L1 write on 22,
    // back on 42, reply at the client on 43.
    let mut s = Sys::host(AttParams::host_memory(), 20);
    let h = s.register_at(0, example()).expect("ok");
    assert_eq!(s.now(), 43);
    // Translation on 1000: L1 read at the port on 1001, back 1021; L2 read at the port
    // on 1022, back 1042; reply at the client on 1043.
    let id = s.next_req_id();
    let (r, at) = s.translate_at(1000, h, VA + 0xF00, 8, AccessKind::RdmaWrite, TAG);
    assert_eq!(r.expect("ok")[0].pa, 0x0123_4000);
    assert_eq!(at, 1043);
    let seen = &s.port().seen;
    let t = |c: u64| Time(c * CYCLE_PS);
    assert_eq!(
        seen[..],
        [
            (t(1), true, 0x0118_0000, 12),  // L2 entries, start of the L2 pool
            (t(22), true, 0x0100_0000, 24), // L1 entry 0
            (t(1001), false, 0x0100_0000, 24),
            (t(1022), false, 0x0118_0004, 4), // L2 entry 1 (second page)
        ]
    );
    // The bytes in host memory are the ones the card would have in SDRAM.
    let cli =
        crate::att::preview_registration(&AttParams::host_memory(), &example()).expect("valid");
    let mem = &s.port().mem;
    assert_eq!(
        mem.read_vec(0x0100_0000, 24).expect("in range"),
        cli.l1_bytes
    );
    assert_eq!(
        mem.read_vec(0x0118_0000, 12).expect("in range"),
        cli.l2_bytes
    );
    assert_eq!(s.spans(id, "att L1 read"), vec![(1000, 1021)]);
    assert_eq!(s.spans(id, "att L2 read"), vec![(1021, 1042)]);
}

#[test]
fn dma_failure_refuses_the_translation() {
    let mut s = Sys::host(AttParams::host_memory(), 5);
    let h = s.register(example()).expect("ok");
    s.port().fail_reads = true;
    let e = s
        .translate(h, VA, 4, AccessKind::RdmaWrite, TAG)
        .expect_err("bus error");
    assert_eq!(
        e,
        TranslateError::TableRead(TableIoError::Bus { addr: 0x0100_0000 })
    );
    assert_eq!(
        e.status(AccessKind::RdmaWrite),
        Status::RDMA_PROTECTION_ERROR
    );
    // Deregistration still works (writes only) and the handle then fails as stale.
    s.port().fail_reads = false;
    s.deregister(h).expect("ok");
    assert_eq!(
        s.translate(h, VA, 4, AccessKind::LocalRead, TAG),
        Err(TranslateError::StaleHandle(h))
    );
}

#[test]
fn host_memory_needs_a_port() {
    assert!(matches!(
        AttManager::new(AttParams::host_memory(), None),
        Err(AttConfigError::NoTablePort)
    ));
    assert!(AttManager::new(AttParams::host_memory(), Some(PORT)).is_ok());
    let m = AttManager::new(AttParams::host_memory(), Some(PORT)).expect("ok");
    assert!(m.sdram().is_none() && m.read_entry(0).is_none());
}
