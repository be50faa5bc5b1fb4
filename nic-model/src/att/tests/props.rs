//! Property test: the ATT manager (through the kernel, reading its table from SDRAM or
//! through the host-memory port) agrees with a naive reference translator that works
//! straight from the registered page list, and never yields a byte outside the
//! region's own pages.

use super::harness::Sys;
use crate::att::{AccessKind, AttParams, Piece, RegionRequest, TranslateError};
use proptest::prelude::*;
use sim_kernel::SplitMix64;
use std::collections::BTreeSet;
use via_abi::ProtectionTag;

const PAGE: u64 = 4096;

/// `n` distinct page frames of a 256 MB host, scattered by a seeded generator.
fn scattered_frames(seed: u64, n: usize) -> Vec<u64> {
    let mut rng = SplitMix64::new(seed);
    let mut used = BTreeSet::new();
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let f = rng.below((256 << 20) / PAGE);
        if used.insert(f) {
            out.push(f * PAGE);
        }
    }
    out
}

/// A region: VA, length and the physical address of each page it touches.
#[derive(Clone, Debug)]
struct Region {
    va: u64,
    len: u64,
    pages: Vec<u64>,
}

impl Region {
    fn new(va: u64, len: u64, seed: u64) -> Self {
        let n = ((va + len - 1) / PAGE - va / PAGE + 1) as usize;
        let mut pages = scattered_frames(seed, n);
        pages[0] += va % PAGE;
        Self { va, len, pages }
    }

    /// The region's bytes in page `k`, as a physical range.
    fn phys_part(&self, k: usize) -> (u64, u64) {
        let page_va = (self.va / PAGE + k as u64) * PAGE;
        let lo = page_va.max(self.va);
        let hi = (page_va + PAGE).min(self.va + self.len);
        let base = self.pages[k] - if k == 0 { self.va % PAGE } else { 0 };
        (base + lo % PAGE, base + lo % PAGE + (hi - lo))
    }
}

/// The reference: walk `va..va+len` page by page, straight from the page list.
fn naive(r: &Region, va: u64, len: u64) -> Option<Vec<Piece>> {
    if va < r.va || va.checked_add(len)? > r.va + r.len {
        return None;
    }
    let mut out = Vec::new();
    let mut a = va;
    while a < va + len {
        let k = (a / PAGE - r.va / PAGE) as usize;
        let n = ((a / PAGE + 1) * PAGE).min(va + len) - a;
        let pa = if k == 0 {
            r.pages[0] + (a - r.va)
        } else {
            r.pages[k] + a % PAGE
        };
        out.push(Piece { pa, len: n as u32 });
        a += n;
    }
    Some(out)
}

fn arb_len() -> impl Strategy<Value = u64> {
    prop_oneof![1u64..=64, 1u64..=3 * PAGE, 1u64..=6_000_000]
}

/// (start VA, length, page seed, probes as fractions of the length).
fn arb_case() -> impl Strategy<Value = (u64, u64, u64, Vec<(u64, u64)>)> {
    (
        (1u64 << 20..1 << 35),
        arb_len(),
        any::<u64>(),
        proptest::collection::vec((any::<u64>(), any::<u64>()), 1..6),
    )
}

fn check(sys: &mut Sys, r: &Region, probes: &[(u64, u64)]) -> Result<(), TestCaseError> {
    let tag = ProtectionTag(3);
    let req = RegionRequest {
        va: r.va,
        len: r.len,
        pages: r.pages.clone(),
        ptag: tag,
        enable_rdma_write: true,
        enable_rdma_read: false,
    };
    let h = sys.register(req).expect("registered");
    let mut ranges = vec![(r.va, r.len), (r.va + r.len - 1, 1), (r.va, 1)];
    for &(a, b) in probes {
        let off = a % r.len;
        let len = 1 + b % (r.len - off);
        ranges.push((r.va + off, len));
    }
    for (va, len) in ranges {
        let access = if len % 2 == 0 {
            AccessKind::RdmaWrite
        } else {
            AccessKind::LocalRead
        };
        let got = sys
            .translate(h, va, len, access, tag)
            .expect("inside the region");
        let want = naive(r, va, len);
        prop_assert_eq!(Some(&got), want.as_ref());
        // Every piece lies inside the region's own bytes of one of its pages.
        let mut sum = 0u64;
        for p in &got {
            let inside = (0..r.pages.len()).any(|k| {
                let (lo, hi) = r.phys_part(k);
                p.pa >= lo && p.pa + u64::from(p.len) <= hi
            });
            prop_assert!(inside, "piece {:?} outside the region's pages", p);
            prop_assert!(p.len >= 1 && p.len <= 4096);
            sum += u64::from(p.len);
        }
        prop_assert_eq!(sum, len);
    }
    // One byte past the end (often inside the last page) and one before the start.
    for (va, len) in [(r.va + r.len, 1), (r.va, r.len + 1), (r.va - 1, 1)] {
        let got = sys.translate(h, va, len, AccessKind::RdmaWrite, tag);
        prop_assert!(
            matches!(got, Err(TranslateError::OutOfBounds { .. })),
            "{:#x}+{} gave {:?}",
            va,
            len,
            got
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// Card ATT: translation == naive reference for random regions (start offsets within
    /// a page, 1 byte .. 6 MB, scattered pages), never outside the region.
    #[test]
    fn card_translation_matches_reference((va, len, seed, probes) in arb_case()) {
        let r = Region::new(va, len, seed);
        let mut sys = Sys::new(AttParams::default());
        check(&mut sys, &r, &probes)?;
    }

    /// The same for the host-memory what-if, through a fake table port.
    #[test]
    fn host_translation_matches_reference((va, len, seed, probes) in arb_case()) {
        let r = Region::new(va, len, seed);
        let mut sys = Sys::host(AttParams::host_memory(), 7);
        check(&mut sys, &r, &probes)?;
    }

    /// Several live regions at once: each handle translates to its own pages only.
    #[test]
    fn regions_do_not_mix(cases in proptest::collection::vec((1u64 << 20..1 << 35, 1u64..=40_000, any::<u64>()), 2..6)) {
        let mut sys = Sys::new(AttParams::default());
        let tag = ProtectionTag(9);
        let mut live = Vec::new();
        for (va, len, seed) in cases {
            let r = Region::new(va, len, seed);
            let req = RegionRequest {
                va, len, pages: r.pages.clone(), ptag: tag,
                enable_rdma_write: true, enable_rdma_read: true,
            };
            live.push((sys.register(req).expect("registered"), r));
        }
        for (h, r) in &live {
            let got = sys.translate(*h, r.va, r.len, AccessKind::RdmaRead, tag).expect("ok");
            prop_assert_eq!(Some(got), naive(r, r.va, r.len));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Arbitrary requests (any handle bits, VA, length, tag, access) against a table with
    /// a few regions never panic, and whatever they are granted lies inside the bytes of
    /// the region their handle names, with the region's tag and RDMA rights.
    #[test]
    fn arbitrary_requests_never_escape(
        seeds in proptest::collection::vec((1u64 << 20..1 << 32, 1u64..=20_000, any::<u64>(), any::<bool>()), 1..4),
        reqs in proptest::collection::vec((any::<u32>(), any::<u64>(), any::<u64>(), 0u16..4, 0u8..4, any::<bool>()), 1..30),
    ) {
        let mut sys = Sys::new(AttParams::default());
        let mut live = Vec::new();
        for (i, (va, len, seed, rdma)) in seeds.into_iter().enumerate() {
            let r = Region::new(va, len, seed);
            let req = RegionRequest {
                va, len, pages: r.pages.clone(), ptag: ProtectionTag(i as u16 + 1),
                enable_rdma_write: rdma, enable_rdma_read: false,
            };
            live.push((sys.register(req).expect("registered"), r, rdma));
        }
        for (raw, va, len, tag, access, near) in reqs {
            // Half the requests use a live handle, mostly its own tag, a VA near or in
            // its region and a length around the region's; the others are arbitrary.
            let access = [
                AccessKind::LocalRead,
                AccessKind::LocalWrite,
                AccessKind::RdmaWrite,
                AccessKind::RdmaRead,
            ][access as usize];
            let pick = live.get(raw as usize % (live.len() + 1));
            let (handle, va, len, ptag) = match pick {
                Some((h, r, _)) if near => {
                    let i = live.iter().position(|(x, _, _)| x == h).unwrap_or(0);
                    let ptag = if tag == 0 { ProtectionTag(9) } else { ProtectionTag(i as u16 + 1) };
                    let start = (r.va - 64).wrapping_add(va % (r.len + 128));
                    (*h, start, len % (r.len + 2), ptag)
                }
                _ => (via_abi::MemHandle::from_raw(raw), va, len, ProtectionTag(tag)),
            };
            if let Ok(pieces) = sys.translate(handle, va, len, access, ptag) {
                let (i, (_, r, rdma)) = live.iter().enumerate().find(|(_, (h, _, _))| *h == handle)
                    .expect("only live handles translate");
                prop_assert_eq!(ptag, ProtectionTag(i as u16 + 1));
                prop_assert!(access != AccessKind::RdmaRead);
                prop_assert!(access != AccessKind::RdmaWrite || *rdma);
                let want = naive(r, va, len);
                prop_assert_eq!(Some(pieces), want);
            }
        }
    }
}
