//! Bit flips in an L1 entry in card SDRAM (`AttManager::schedule_bit_flip`): applied at
//! their time, counted once, and with the consequence the module table of
//! `att::manager::flip` gives for the field they hit: most flips make the translation
//! refuse (with the protection status bit), a flip in the geometry or the L2 pointer
//! makes it go wrong, exactly as shown here.

use super::harness::Sys;
use crate::att::{
    AccessKind, AttBitFlip, AttFlipError, AttParams, Piece, RegionRequest, TranslateError,
};
use sim_kernel::Time;
use via_abi::{MemHandle, ProtectionTag, Status};

const TAG: ProtectionTag = ProtectionTag(1);
const RDMA_W: AccessKind = AccessKind::RdmaWrite;
/// Region A: VA 0x0804_A100, 10 000 bytes over three scattered pages.
const VA: u64 = 0x0804_A100;
const LEN: u64 = 10_000;
const A_PAGES: [u64; 3] = [0x053A_7100, 0x0123_4000, 0x0777_0000];
/// Region B, registered after A: its L2 entries follow A's in the pool.
const B_PAGES: [u64; 2] = [0x0666_6000, 0x0555_5000];

fn region(va: u64, len: u64, pages: &[u64]) -> RegionRequest {
    RegionRequest {
        va,
        len,
        pages: pages.to_vec(),
        ptag: TAG,
        enable_rdma_write: true,
        enable_rdma_read: false,
    }
}

/// A and B registered; `bit` of A's L1 entry flips one cycle later.
fn flipped(bit: u16) -> (Sys, MemHandle) {
    let mut s = Sys::new(AttParams::default());
    let a = s.register(region(VA, LEN, &A_PAGES)).expect("A");
    s.register(region(0x1000_0000, 8192, &B_PAGES)).expect("B");
    let at = Time((s.now() + 1) * super::harness::CYCLE_PS);
    s.att_mut()
        .schedule_bit_flip(AttBitFlip {
            at,
            entry: a.index(),
            bit,
        })
        .expect("schedules");
    (s, a)
}

fn write(s: &mut Sys, h: MemHandle, va: u64, len: u64) -> Result<Vec<Piece>, TranslateError> {
    let now = s.now() + 10;
    s.translate_at(now, h, va, len, RDMA_W, TAG).0
}

/// Whether every byte of `pieces` lies in one of `pages` (4 KB each).
fn inside(pieces: &[Piece], pages: &[u64]) -> bool {
    pieces.iter().all(|p| {
        pages.iter().any(|&pg| {
            let base = pg & !0xFFF;
            p.pa >= base && p.pa + u64::from(p.len) <= base + 4096
        })
    })
}

#[test]
fn a_flip_applies_at_its_time_once_and_is_counted() {
    let mut s = Sys::new(AttParams::default());
    let h = s.register(region(VA, LEN, &A_PAGES)).expect("A");
    let at_cycle = s.now() + 1_000;
    s.att_mut()
        .schedule_bit_flip(AttBitFlip {
            at: Time(at_cycle * super::harness::CYCLE_PS),
            entry: h.index(),
            bit: 176, // generation bit 0
        })
        .expect("schedules");
    // Before its time the entry translates.
    let (r, _) = s.translate_at(s.now() + 10, h, VA, 4, RDMA_W, TAG);
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(s.att().stats().bit_flips, 0);
    assert!(s.att().pending_bit_flip().is_some());
    // After it, the generation no longer matches: refused, RDMA protection error.
    let (r, _) = s.translate_at(at_cycle + 10, h, VA, 4, RDMA_W, TAG);
    let e = r.expect_err("stale");
    assert_eq!(e, TranslateError::StaleHandle(h));
    assert_eq!(e.status(RDMA_W), Status::RDMA_PROTECTION_ERROR);
    assert_eq!(s.att().stats().bit_flips, 1);
    assert!(s.att().pending_bit_flip().is_none());
    // Once: the next translation sees the same flipped entry, nothing flips back.
    assert!(write(&mut s, h, VA, 4).is_err());
    assert_eq!(s.att().stats().bit_flips, 1);
}

#[test]
fn flips_in_checked_fields_are_refused() {
    let refused = [
        (3, "start_va low bit: first_page_size no longer matches"),
        (128, "first_page_size"),
        (144, "VALID"),
        (145, "ENABLE_RDMA_WRITE"),
        (160, "ptag"),
        (176, "generation"),
        (190, "generation high bit"),
        (97, "page_count 3 -> 1: the region is 2064 bytes"),
    ];
    for (bit, what) in refused {
        let (mut s, h) = flipped(bit);
        let e = write(&mut s, h, VA + LEN - 4, 4).expect_err(what);
        assert_eq!(e.status(RDMA_W), Status::RDMA_PROTECTION_ERROR, "{what}");
        assert_eq!(s.att().stats().bit_flips, 1, "{what}");
    }
}

#[test]
fn a_moved_start_reaches_only_the_regions_own_pages() {
    // Bit 12 of start_va: the region now starts one page later in VA space.
    let (mut s, h) = flipped(12);
    let e = write(&mut s, h, VA, 4).expect_err("the old start is outside");
    assert!(matches!(e, TranslateError::OutOfBounds { .. }), "{e:?}");
    let p = write(&mut s, h, VA + 4096, LEN).expect("the moved region");
    assert!(inside(&p, &A_PAGES), "{p:?}");
}

#[test]
fn a_longer_region_takes_the_next_regions_pages() {
    // page_count 3 -> 7: the bounds check passes past the true end. A's third page is
    // now a whole middle page, so 4096 bytes from the true end land in the unregistered
    // rest of A's last frame (from offset 0x810), then in the frame of A's fourth L2
    // entry, which is B's first (no ECC, no check against the pool).
    let (mut s, h) = flipped(98);
    let p = write(&mut s, h, VA + LEN, 4096).expect("past the true end");
    assert_eq!(
        p,
        vec![
            Piece {
                pa: A_PAGES[2] + 0x810,
                len: 4096 - 0x810
            },
            Piece {
                pa: B_PAGES[0],
                len: 0x810
            },
        ]
    );
}

#[test]
fn a_flipped_l2_pointer_translates_to_other_pages() {
    // l2_pointer + 4 (bit 66): every page of A maps one L2 entry further on.
    let (mut s, h) = flipped(66);
    let p = write(&mut s, h, VA + 3840, 4096).expect("A's second page");
    // A's second page now maps to A's third page's frame.
    assert_eq!(p[0].pa, A_PAGES[2]);
    // A's last page maps to B's first frame: outside A.
    let p = write(&mut s, h, VA + LEN - 4, 4).expect("A's last bytes");
    assert!(inside(&p, &B_PAGES), "{p:?}");
}

#[test]
fn only_card_sdram_entries_and_bits_can_flip() {
    let mut s = Sys::new(AttParams::default());
    let flip = AttBitFlip {
        at: Time::ZERO,
        entry: 0,
        bit: 192,
    };
    assert_eq!(
        s.att_mut().schedule_bit_flip(flip),
        Err(AttFlipError::NoSuchBit(192))
    );
    let entries = s.att().params().table.l1_entries;
    let far = AttBitFlip {
        entry: entries,
        bit: 0,
        ..flip
    };
    assert!(matches!(
        s.att_mut().schedule_bit_flip(far),
        Err(AttFlipError::NoSuchEntry { .. })
    ));
    let mut host = Sys::host(AttParams::host_memory(), 4);
    assert_eq!(
        host.att_mut()
            .schedule_bit_flip(AttBitFlip { bit: 0, ..flip }),
        Err(AttFlipError::HostTable)
    );
}

#[test]
fn a_reserved_attribute_bit_changes_nothing() {
    let (mut s, h) = flipped(150);
    let p = write(&mut s, h, VA, LEN).expect("translates as before");
    assert!(inside(&p, &A_PAGES), "{p:?}");
    assert_eq!(s.att().stats().bit_flips, 1);
}
