//! Refusals through the component, with their VIA status bits, and the bytes a
//! registration leaves in SDRAM.

use super::harness::Sys;
use crate::att::{
    layout_att, AccessKind, AttParams, DeregisterError, RegionRequest, RegisterError,
    TranslateError,
};
use via_abi::att::{L1Entry, L1Repr, L2Repr};
use via_abi::{AttError, MemHandle, ProtectionTag, Status};

/// The 10 000-byte example region: VA 0x0804_A100, three scattered pages.
fn example(rdma_write: bool) -> RegionRequest {
    RegionRequest {
        va: 0x0804_A100,
        len: 10_000,
        pages: vec![0x053A_7100, 0x0123_4000, 0x0777_0000],
        ptag: ProtectionTag(1),
        enable_rdma_write: rdma_write,
        enable_rdma_read: false,
    }
}

const TAG: ProtectionTag = ProtectionTag(1);
const LOCAL: AccessKind = AccessKind::LocalRead;
const RDMA_W: AccessKind = AccessKind::RdmaWrite;

#[test]
fn out_of_bounds_including_one_byte_past_the_end_in_the_last_page() {
    let mut s = Sys::new(AttParams::default());
    let h = s.register(example(true)).expect("ok");
    let end = 0x0804_A100 + 10_000; // 0x0804_C810, inside the last page (ends 0x0804_D000)
    let last = s.translate(h, end - 1, 1, RDMA_W, TAG).expect("last byte");
    assert_eq!(last[0].pa, 0x0777_080F);
    for (va, len) in [
        (end, 1),
        (end - 4, 5),
        (0x0804_A0FF, 1),
        (0x0804_A100, 10_001),
    ] {
        for access in [LOCAL, RDMA_W] {
            let e = s
                .translate(h, va, len, access, TAG)
                .expect_err("out of bounds");
            assert!(matches!(e, TranslateError::OutOfBounds { .. }), "{e:?}");
            let want = if access == LOCAL {
                Status::PROTECTION_ERROR
            } else {
                Status::RDMA_PROTECTION_ERROR
            };
            assert_eq!(e.status(access), want);
        }
    }
}

#[test]
fn wrong_tag_and_rdma_disabled() {
    let mut s = Sys::new(AttParams::default());
    let h = s.register(example(false)).expect("ok");
    let e = s
        .translate(h, 0x0804_A100, 4, LOCAL, ProtectionTag(2))
        .expect_err("tag");
    assert_eq!(
        e,
        TranslateError::TagMismatch {
            requested: ProtectionTag(2)
        }
    );
    assert_eq!(e.status(LOCAL), Status::PROTECTION_ERROR);
    let e = s
        .translate(h, 0x0804_A100, 4, RDMA_W, TAG)
        .expect_err("rdma");
    assert_eq!(e, TranslateError::RdmaWriteDisabled);
    assert_eq!(e.status(RDMA_W), Status::RDMA_PROTECTION_ERROR);
    let e = s
        .translate(h, 0x0804_A100, 4, AccessKind::RdmaRead, TAG)
        .expect_err("rdma read");
    assert_eq!(e, TranslateError::RdmaReadDisabled);
    // Local access needs no RDMA enable.
    assert!(s
        .translate(h, 0x0804_A100, 4, AccessKind::LocalWrite, TAG)
        .is_ok());
}

#[test]
fn stale_and_forged_handles() {
    let mut s = Sys::new(AttParams::default());
    let a = s.register(example(true)).expect("ok");
    assert_eq!(a, MemHandle::new(0, 1).expect("ok"));
    // Forged: right index, wrong generation.
    let forged = MemHandle::new(0, 2).expect("ok");
    let e = s
        .translate(forged, 0x0804_A100, 4, RDMA_W, TAG)
        .expect_err("forged");
    assert_eq!(e, TranslateError::StaleHandle(forged));
    assert_eq!(e.status(RDMA_W), Status::RDMA_PROTECTION_ERROR);
    // Never issued: generation 0, or an index beyond the table.
    for h in [
        MemHandle::NULL,
        MemHandle::from_raw(0x0000_0005),
        MemHandle::new(70_000, 1).expect("ok"),
    ] {
        let e = s
            .translate(h, 0x0804_A100, 4, LOCAL, TAG)
            .expect_err("invalid");
        assert_eq!(e, TranslateError::InvalidHandle(h));
        assert_eq!(e.status(LOCAL), Status::PROTECTION_ERROR);
    }
    // Deregistered: the old handle stops working.
    assert_eq!(s.deregister(a), Ok(()));
    let e = s
        .translate(a, 0x0804_A100, 4, LOCAL, TAG)
        .expect_err("stale");
    assert_eq!(e, TranslateError::StaleHandle(a));
    assert_eq!(s.deregister(a), Err(DeregisterError::InvalidHandle(a)));
    let (l1, _) = s.att().read_entry(0).expect("card");
    assert_eq!(
        (l1.page_count, l1.generation, l1.attributes.bits()),
        (0, 0, 0),
        "L1 zeroed"
    );
    // Index 0 is reused only after every fresh index (here: the table has 1 entry).
    let params = AttParams {
        table: crate::att::TableGeometry {
            l1_entries: 1,
            ..AttParams::default().table
        },
        ..AttParams::default()
    };
    let mut s = Sys::new(params);
    let a = s.register(example(true)).expect("ok");
    assert_eq!(s.register(example(true)), Err(RegisterError::NoFreeEntry));
    s.deregister(a).expect("ok");
    let other = RegionRequest {
        va: 0x1000,
        len: 8,
        pages: vec![0x9000],
        ..example(true)
    };
    let b = s.register(other).expect("ok");
    assert_eq!((b.index(), b.generation()), (0, 2));
    // The old handle names the same index but not the new region.
    assert_eq!(
        s.translate(a, 0x1000, 8, LOCAL, TAG),
        Err(TranslateError::StaleHandle(a))
    );
    assert_eq!(
        s.translate(b, 0x1000, 8, LOCAL, TAG).expect("ok")[0].pa,
        0x9000
    );
}

#[test]
fn bad_registrations_are_refused() {
    let mut s = Sys::new(AttParams::default());
    let zero = RegionRequest {
        len: 0,
        pages: vec![],
        ..example(true)
    };
    assert_eq!(
        s.register(zero),
        Err(RegisterError::Layout(AttError::ZeroLength))
    );
    let short = RegionRequest {
        pages: vec![0x053A_7100],
        ..example(true)
    };
    assert!(matches!(
        s.register(short),
        Err(RegisterError::Layout(AttError::PageListLength {
            expected: 3,
            got: 1
        }))
    ));
    let no_tag = RegionRequest {
        ptag: ProtectionTag::NONE,
        ..example(true)
    };
    assert_eq!(s.register(no_tag), Err(RegisterError::InvalidPtag));
    assert_eq!(s.att().table().live(), 0, "nothing taken");
}

#[test]
fn registration_writes_what_the_cli_shows_and_via_abi_parses_it() {
    let mut s = Sys::new(AttParams::default());
    let r = example(true);
    let cli = layout_att(r.va, r.len, &r.pages).expect("valid");
    let h = s.register(r).expect("ok");
    assert_eq!(h, cli.handle);
    let store = s.att().sdram().expect("card");
    let l1 = store
        .read_vec(u64::from(cli.l1_addr), 24)
        .expect("in range");
    assert_eq!(l1, cli.l1_bytes);
    let l2 = store
        .read_vec(u64::from(cli.l2_addr), 12)
        .expect("in range");
    assert_eq!(l2, cli.l2_bytes);
    let parsed = L1Repr::parse(&L1Entry::new_unchecked(&l1[..])).expect("24 bytes");
    assert_eq!(parsed.start_va, 0x0804_A100);
    assert_eq!(parsed.region_len(), 10_000);
    assert_eq!(parsed.generation, h.generation());
    assert_eq!(
        L2Repr::parse_table(&l2).expect("12 bytes"),
        vec![
            L2Repr {
                phys_addr: 0x053A_7100
            },
            L2Repr {
                phys_addr: 0x0123_4000
            },
            L2Repr {
                phys_addr: 0x0777_0000
            }
        ]
    );
    assert_eq!(s.att().read_entry(0), Some((parsed, cli.l2().to_vec())));
}

#[test]
fn zero_length_translation_checks_but_reads_no_l2() {
    let mut s = Sys::new(AttParams::default());
    let h = s.register(example(true)).expect("ok");
    let before = s.att().stats();
    assert_eq!(s.translate(h, 0x0804_C810, 0, RDMA_W, TAG), Ok(vec![]));
    assert_eq!(s.att().stats().l2_reads, before.l2_reads);
    assert!(matches!(
        s.translate(h, 0x0804_C811, 0, RDMA_W, TAG),
        Err(TranslateError::OutOfBounds { .. })
    ));
}
