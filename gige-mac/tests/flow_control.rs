//! IEEE 802.3x flow control between two cards: a receiving engine that gives RX buffers
//! back slowly makes card 1's RX FIFO fill; with flow control its DP83820 pauses card 0
//! and a long burst arrives complete, in order and byte-exact; without, the FIFO
//! overflows and frames are lost (counted). The PAUSE and resume frames on the wire are
//! checked against the sender's gate, clock by clock.

mod card;

use card::{frame_bytes, frame_seed, run_until_ready, two_cards, Cards, Setup, Sys};
use gige_mac::frame::check_fcs;
use gige_mac::pause::{parse, MacControl};
use gige_mac::{Captured, Dp83820Params, FlowControl};
use sim_kernel::{Cycles, Kernel, MsgId};

/// One 125 MHz GMII clock [ps].
const GMII: u64 = 8_000;
/// Frames card 0 sends.
const FRAMES: usize = 80;
/// Preamble + SFD + 1518 bytes [GMII clocks].
const ON_WIRE: u64 = 8 + 1518;

/// `FRAMES` maximum frames from card 0; card 1's engine holds each RX buffer 4 000 core
/// clocks (121 us): it takes about 30 us per frame, the wire brings one every 12.3 us.
fn burst(flow: FlowControl) -> (Kernel<Sys>, Cards) {
    let s = Setup {
        release: Some(Cycles(4_000)),
        mac: Dp83820Params {
            flow,
            ..Dp83820Params::default()
        },
        ..Setup::default()
    };
    let (mut k, mut w) = two_cards(&s);
    for c in 0..2 {
        w.dpm_mut(c).tx_mut().enable_capture();
    }
    let ready = run_until_ready(&mut k, &mut w);
    for i in 0..FRAMES {
        let f = frame_bytes(1514, 0, i as u64 + 77);
        w.engine(0).to_send.push_back((f, MsgId(i as u64)));
    }
    let e = w.ids[0].engine;
    k.post(e, ready, Sys::Kick);
    k.run_to_idle(&mut w);
    (k, w)
}

/// The PAUSE frames in a capture: (start edge [ps], pause_time).
fn pauses(cap: &[Captured]) -> Vec<(u64, u16)> {
    cap.iter()
        .filter_map(|c| match parse(c.frame.bytes()) {
            Some(MacControl::Pause { quanta }) => Some((c.at.0, quanta)),
            _ => None,
        })
        .collect()
}

#[test]
fn flow_control_keeps_a_long_burst_without_overflow() {
    let (_, mut w) = burst(FlowControl::default());
    let rx = w.dpm(1).stats().clone();
    let tx = w.dpm(0).stats().clone();
    assert_eq!(rx.rx_overflows, 0);
    assert_eq!(rx.rx_good, FRAMES as u64);
    let flow = FlowControl::default();
    assert!(rx.rx_fifo_peak > flow.high_water && rx.rx_fifo_peak <= 32 * 1024);
    assert!(rx.pause_sent >= 1 && rx.resume_sent >= 1);
    assert_eq!(tx.pause_received, rx.pause_sent + rx.resume_sent);
    assert!(tx.paused_cycles > 0);
    println!("receiver {rx:?}\nsender {tx:?}");
    // Every frame, in order, byte-exact; PAUSE frames reached no engine.
    let got = w.engine(1).rx.clone();
    assert_eq!(got.len(), FRAMES);
    for (i, g) in got.iter().enumerate() {
        assert_eq!(frame_seed(&g.bytes), Some(i as u64 + 77), "order");
        assert_eq!(g.bytes, frame_bytes(1514, 0, i as u64 + 77));
    }
    assert!(w.engine(0).rx.is_empty());
    assert!(w.engine(0).tx_done.iter().all(|d| d.2));
    assert_eq!(w.dpb(1).stats().unexpected, 0);
    assert_eq!(w.gec(1).stats().rx_errors, 0);

    // The wire. Card 1's PAUSE frames: FCS good, its own address as source (learned
    // from the frames it receives), pause_time 0xFFFE then 0 (resume), alternating.
    let cap1 = w.dpm_mut(1).tx_mut().take_capture();
    assert!(cap1.iter().all(|c| check_fcs(c.frame.bytes()).is_ok()));
    assert!(cap1
        .iter()
        .all(|c| c.frame.src() == Some(via_abi::MacAddr([2, 0, 0, 0, 0, 1]))));
    let p = pauses(&cap1);
    assert_eq!(p.len(), cap1.len(), "card 1 sent nothing but PAUSE frames");
    for (j, &(_, q)) in p.iter().enumerate() {
        assert_eq!(q, if j % 2 == 0 { 0xFFFE } else { 0 });
    }
    // Each PAUSE ends on card 0's RXD 594 ns after its last byte left card 1 (next 8 ns
    // edge): R = start + (8 + 64) clocks + 594 ns, rounded up. Card 0 then starts no
    // frame until the resume's R, and starts the next one exactly on that edge (its
    // queue is never empty: the TX FIFO fills while it is paused).
    let end_at_card0 = |start: u64| (start + 72 * GMII + 594_000).div_ceil(GMII) * GMII;
    let cap0 = w.dpm_mut(0).tx_mut().take_capture();
    let starts: Vec<u64> = cap0.iter().map(|c| c.at.0).collect();
    assert_eq!(starts.len(), FRAMES);
    for pair in p.chunks(2) {
        let (stop, go) = (end_at_card0(pair[0].0), end_at_card0(pair[1].0));
        // The frame in progress at `stop` (started before it) completed.
        let before = starts.iter().rev().find(|&&s| s < stop).copied().unwrap();
        let i = starts.iter().position(|&s| s == before).unwrap();
        assert!(w.engine(0).tx_done[i].2, "frame in progress completed");
        let after: Vec<u64> = starts.iter().copied().filter(|&s| s >= stop).collect();
        assert_eq!(after.first(), Some(&go), "next frame starts on the resume");
        assert!(
            before + (ON_WIRE + 12) * GMII < go,
            "the gap had ended: the resume decided"
        );
    }
}

#[test]
fn without_flow_control_the_fifo_overflows() {
    let (_, mut w) = burst(FlowControl::off());
    let rx = w.dpm(1).stats().clone();
    assert!(rx.rx_overflows > 0);
    assert_eq!(rx.rx_good + rx.rx_overflows, FRAMES as u64);
    assert_eq!((rx.pause_sent, rx.resume_sent), (0, 0));
    assert_eq!(w.dpm(0).stats().paused_cycles, 0);
    assert_eq!(w.engine(1).rx.len() as u64, rx.rx_good);
    assert!(w.dpm_mut(1).tx_mut().take_capture().is_empty());
    // The sender never waited for the receiver: every frame went out, none held.
    assert_eq!(w.dpm_mut(0).tx_mut().take_capture().len(), FRAMES);
    assert_eq!(w.dpm(0).tx().stats().paused.0, 0);
}

#[test]
fn a_receiver_that_stops_stops_the_re_sends() {
    // Card 1's engine never gives a buffer back: the FIFO passes the high-water mark and
    // never drains. Half a pause_time after the PAUSE left, the re-send finds no
    // progress and waits; card 0 resumes when the pause expires (33.6 ms), its next
    // frames above the mark bring the re-send (and overflow once the FIFO is full), and
    // the run ends when card 0 has nothing left to send: no endless PAUSE exchange.
    let s = Setup {
        release: None,
        ..Setup::default()
    };
    let (mut k, mut w) = two_cards(&s);
    let ready = run_until_ready(&mut k, &mut w);
    for i in 0..40u64 {
        w.engine(0)
            .to_send
            .push_back((frame_bytes(1514, 0, i + 77), MsgId(i)));
    }
    let e = w.ids[0].engine;
    k.post(e, ready, Sys::Kick);
    k.run_to_idle(&mut w);
    let rx = w.dpm(1).stats().clone();
    assert_eq!(rx.rx_good + rx.rx_overflows, 40);
    assert!(rx.rx_overflows > 0);
    assert!(rx.pause_refreshes >= 1 && rx.resume_sent == 0);
    assert!(w.dpm(1).pausing_peer());
    let pause = sim_kernel::Duration::from_ns(0xFFFE * 512);
    assert!(
        k.now() > ready + pause,
        "card 0 waited for the pause to expire"
    );
    // The engine gives the buffers back: the FIFO drains, card 1 resumes card 0.
    let e1 = w.ids[1].engine;
    let now = k.now();
    k.post(e1, now, Sys::ReleaseAll);
    k.run_to_idle(&mut w);
    assert_eq!(w.engine(1).rx.len() as u64, rx.rx_good);
    assert_eq!(w.dpm(1).stats().resume_sent, 1);
    assert!(!w.dpm(1).pausing_peer());
}
