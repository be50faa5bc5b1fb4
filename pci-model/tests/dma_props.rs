//! Property: any DMA of any length at any alignment, any burst size, either direction,
//! on a 32- or 64-bit bus, moves exactly the bytes asked for, to the right physical
//! frames, and no others.

mod common;

use common::Sys;
use pci_model::{
    page_base, BridgeParams, BusParams, BusWidth, DmaDirection, DmaJob, DmaParams, DmaStatus,
    PageTable, PciMsg, PAGE_SIZE,
};
use proptest::prelude::*;
use sim_kernel::{SplitMix64, Time};

fn background(frame: u64, i: usize) -> u8 {
    (frame >> 12) as u8 ^ (i as u8).wrapping_mul(31) ^ 0x5A
}

fn run(
    len: u64,
    offset: u64,
    burst: u64,
    write: bool,
    wide: bool,
    seed: u64,
) -> Result<(), TestCaseError> {
    let bus = if wide {
        BusParams {
            width: BusWidth::W64,
            clock_mhz: 66.0,
            ..BusParams::default()
        }
    } else {
        BusParams::default()
    };
    let mut s = Sys::new(bus, Some(BridgeParams::default()), 1 << 22, false);
    let engine = s.probe("engine", false);
    let (dma, _) = s.dma(DmaParams {
        burst_bytes: burst,
        ..DmaParams::default()
    });
    let va = 0x1000_0000 + offset;
    let mut pt = PageTable::new();
    pt.map_range(va, len, &mut s.w.store).unwrap();
    let pages = pt.pages_of(va, len).unwrap();
    // Every frame of the buffer, whole, holds a known background first.
    let frames: Vec<u64> = pages.iter().map(|&p| page_base(p)).collect();
    for &f in &frames {
        let bg: Vec<u8> = (0..PAGE_SIZE as usize).map(|i| background(f, i)).collect();
        s.w.store.write(f, &bg).unwrap();
    }
    let touched = s.w.store.touched_frames();
    let mut payload = vec![0u8; len as usize];
    SplitMix64::new(seed).fill(&mut payload);
    let direction = if write {
        DmaDirection::Write {
            data: payload.clone(),
        }
    } else {
        let mut src = payload.clone();
        // Reads: the buffer holds the payload (over the background).
        pt.write(&mut s.w.store, va, &src).unwrap();
        src.clear();
        DmaDirection::Read { len }
    };
    s.k.post(
        dma,
        Time::ZERO,
        PciMsg::DmaStart(DmaJob {
            tag: 1,
            reply_to: engine,
            direction,
            pages: pages.clone(),
        }),
    );
    s.run();
    let PciMsg::DmaDone(done) = &s.received(engine)[0].1 else {
        return Err(TestCaseError::fail("no DmaDone"));
    };
    prop_assert_eq!(&done.status, &DmaStatus::Ok);
    prop_assert_eq!(done.bytes, len);
    if !write {
        prop_assert!(done.data == payload, "read data differs");
    }
    // Frame by frame: buffer bytes hold the payload, the rest of each frame its
    // background, and no other frame was written.
    prop_assert_eq!(s.w.store.touched_frames(), touched);
    let mut at = 0u64;
    for (i, &f) in frames.iter().enumerate() {
        let got = s.w.store.read_vec(f, PAGE_SIZE as usize).unwrap();
        let start = if i == 0 { offset } else { 0 };
        let n = (PAGE_SIZE - start).min(len - at);
        for (j, &b) in got.iter().enumerate() {
            let j64 = j as u64;
            let want = if j64 >= start && j64 < start + n {
                payload[(at + j64 - start) as usize]
            } else {
                background(f, j)
            };
            prop_assert_eq!(b, want, "frame {:#x} byte {}", f, j);
        }
        at += n;
    }
    prop_assert_eq!(at, len);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn any_dma_moves_exactly_its_bytes_to_the_right_frames(
        len in 1u64..12_000,
        offset in 0u64..4096,
        burst in prop_oneof![Just(3u64), Just(64), Just(100), Just(512), Just(4096)],
        write in any::<bool>(),
        wide in any::<bool>(),
        seed in any::<u64>(),
    ) {
        run(len, offset, burst, write, wide, seed)?;
    }
}

#[test]
fn edge_cases_of_length_and_alignment() {
    for (len, offset) in [
        (1, 0),
        (1, 4095),
        (3, 4094),
        (4096, 0),
        (4097, 4095),
        (8192, 1),
    ] {
        for write in [false, true] {
            run(len, offset, 512, write, false, len ^ offset).unwrap();
            run(len, offset, 512, write, true, len ^ offset).unwrap();
        }
    }
}
