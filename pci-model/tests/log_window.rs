//! The windowed transaction log (`PciBus::set_tenure_log_window`) keeps exactly the
//! stretch of the whole log around its tags, so the cycle accounting of a burst taken
//! from it equals the one taken from the whole log, while it holds a handful of records
//! whatever the length of the run.

mod common;

use common::Sys;
use pci_model::PciParts;
use pci_model::{burst_account, DmaDirection, DmaJob, DmaParams, PageTable, PciMsg, TenureRecord};
use sim_kernel::Time;

/// Reads `len` bytes by DMA in `burst`-byte bursts; the bus log is whole, or windowed
/// around `window`. Returns the log and the bursts issued.
fn run(len: u64, burst: u64, window: Option<(u64, u64)>) -> (Vec<TenureRecord>, u32) {
    let mut s = Sys::with_bridge();
    if let Some((from, to)) = window {
        s.w.bus_mut(s.bus).unwrap().set_tenure_log_window(from, to);
    }
    let engine = s.probe("engine", false);
    let (dma, _) = s.dma(DmaParams {
        burst_bytes: burst,
        ..DmaParams::default()
    });
    let mut pt = PageTable::new();
    let va = 0x4000_0100;
    pt.map_range(va, len, &mut s.w.store).unwrap();
    let pages = pt.pages_of(va, len).unwrap();
    s.k.post(
        dma,
        Time::ZERO,
        PciMsg::DmaStart(DmaJob {
            tag: 1,
            reply_to: engine,
            direction: DmaDirection::Read { len },
            pages,
        }),
    );
    s.run();
    let PciMsg::DmaDone(done) = &s.received(engine)[0].1 else {
        panic!("no DmaDone");
    };
    (s.bus().tenure_log().to_vec(), done.bursts)
}

#[test]
fn a_window_accounts_a_burst_like_the_whole_log() {
    for burst in [32, 128, 512] {
        let (whole, bursts) = run(64 << 10, burst, None);
        let middle = u64::from(bursts / 2);
        let (window, _) = run(64 << 10, burst, Some((middle - 4, middle + 4)));
        assert!(window.len() < 40, "{} records kept", window.len());
        assert!(whole.len() > window.len());
        let a = burst_account(&whole, middle).expect("burst in the whole log");
        let b = burst_account(&window, middle).expect("burst in the window");
        assert_eq!(a, b, "burst {burst}");
        // The window is one contiguous stretch of the whole log.
        let at = whole.iter().position(|r| *r == window[0]).unwrap();
        assert_eq!(&whole[at..at + window.len()], &window[..]);
    }
}
