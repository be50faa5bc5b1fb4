//! Write back-pressure from a device target ([`PciMsg::TargetWriteRetry`]) against cycle
//! tables counted by hand. Conventions as in `cycle_tables.rs`: clock `n` begins at edge
//! `n`; a message landing at edge `e` counts from clock `e`; DEVSEL# medium (two clocks
//! after the address phase); the arbiter parks GNT# on the last master.

mod common;

use common::{edge, Sys};
use pci_model::PciParts;
use pci_model::{PciMsg, TargetProfile, TenureEnd};

const BAR: u64 = 0xE000_0000;
const WINDOW: (u64, u64) = (BAR + 0x1000, BAR + 0x2000);

fn retry(on: bool) -> PciMsg {
    PciMsg::TargetWriteRetry {
        start: WINDOW.0,
        end: WINDOW.1,
        on,
    }
}

#[test]
fn a_posted_write_into_a_retry_window_is_repeated_until_the_window_closes() {
    let mut s = Sys::with_bridge();
    let cpu = s.probe("cpu", true);
    let card = s.device(BAR, 0x2000, 0, TargetProfile::default());
    let c0 = 10;
    s.k.post(s.bus, edge(0), retry(true));
    s.k.post(
        s.bus,
        edge(c0),
        PciMsg::CpuWrite {
            tag: 1,
            addr: BAR + 0x1010,
            data: vec![1, 2, 3, 4],
            reply_to: cpu,
        },
    );
    s.k.post(s.bus, edge(c0 + 14), retry(false));
    s.run();
    // clk 0      the card turns the window on
    // clk c0     CpuWrite posted in the bridge: REQ#
    // clk c0+1   GNT# to the bridge
    // clk c0+2   address phase (Memory Write into the window)
    // clk c0+3   IRDY#, FRAME# off (one data phase); DEVSEL# not yet
    // clk c0+4   DEVSEL# (medium) with STOP#, no TRDY#: Retry; the transaction ends
    // clk c0+5   idle; REQ# off in c0+4 and c0+5 (PCI 2.2 §3.4.1)
    // clk c0+6   REQ# again, sampled at c0+7; GNT# still parked on the bridge
    // clk c0+7   address phase of the repeat ... Retry at c0+9, idle c0+10
    // clk c0+12  third address phase; the window goes off at edge c0+14, which counts
    //            for clock c0+14: DEVSEL# and TRDY#, the data phase completes
    // clk c0+15  idle; the card receives the data at edge c0+15
    assert_eq!(
        s.ends(),
        vec![
            (c0 + 2, None, c0 + 4, TenureEnd::Retry),
            (c0 + 7, None, c0 + 9, TenureEnd::Retry),
            (c0 + 12, Some(c0 + 14), c0 + 14, TenureEnd::Completed),
        ]
    );
    let phases: Vec<_> = s.phases().into_iter().skip(4).take(4).collect();
    assert_eq!(
        phases,
        vec![
            (edge(c0 + 7), "address"),
            (edge(c0 + 8), "wait"),
            (edge(c0 + 9), "stop"),
            (edge(c0 + 10), "idle"),
        ]
    );
    let dev = s.w.device(card).unwrap();
    assert_eq!(dev.writes, vec![(edge(c0 + 15), BAR + 0x1010, 4)]);
    assert_eq!(&dev.bytes()[0x1010..0x1014], &[1, 2, 3, 4]);
    let st = s.bus().stats();
    assert_eq!((st.retries, st.write_retry_refusals), (2, 2));
    assert!(s.bus().write_retry_windows().is_empty());
}

#[test]
fn a_write_that_runs_into_a_window_is_disconnected_at_its_start() {
    let mut s = Sys::with_bridge();
    let cpu = s.probe("cpu", true);
    let card = s.device(BAR, 0x2000, 0, TargetProfile::default());
    let c0 = 10;
    s.k.post(s.bus, edge(0), retry(true));
    s.k.post(
        s.bus,
        edge(c0),
        PciMsg::CpuWrite {
            tag: 1,
            addr: BAR + 0xFF8,
            data: (1..=16).collect(),
            reply_to: cpu,
        },
    );
    s.k.post(s.bus, edge(c0 + 30), retry(false));
    s.run();
    // clk c0+2   address phase at 0xFF8; c0+3 IRDY#; c0+4 DEVSEL#, TRDY# (0xFF8)
    // clk c0+5   TRDY# + STOP# with the word at 0xFFC: disconnect with data (the next
    //            word is in the window)
    // clk c0+6   FRAME# released, no data (the clock after STOP#); c0+7 idle
    // clk c0+9   the continuation at 0x1000 (REQ# off in c0+6, c0+7; two words, so
    //            FRAME# stays asserted): STOP# without TRDY# at c0+11 (Retry), FRAME#
    //            released at c0+12; repeated until the window goes off at edge c0+30
    let log = s.ends();
    assert_eq!(
        log[0],
        (c0 + 2, Some(c0 + 4), c0 + 6, TenureEnd::Disconnect)
    );
    assert_eq!(log[1], (c0 + 9, None, c0 + 12, TenureEnd::Retry));
    let last = *log.last().unwrap();
    assert_eq!(last.3, TenureEnd::Completed);
    assert!(last.1.unwrap() >= c0 + 30);
    let retries = log.iter().filter(|r| r.3 == TenureEnd::Retry).count() as u64;
    assert_eq!(s.bus().stats().write_retry_refusals, retries);
    let dev = s.w.device(card).unwrap();
    assert_eq!(dev.writes[0], (edge(c0 + 7), BAR + 0xFF8, 8));
    assert_eq!(dev.writes.len(), 2);
    let expect: Vec<u8> = (1..=16).collect();
    assert_eq!(&dev.bytes()[0xFF8..0x1008], &expect[..]);
}
