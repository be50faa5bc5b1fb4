//! IEEE 802.3x PAUSE at one DP83820 MAC side, hand-counted to the GMII clock: the frame
//! in progress completes and the next data frame starts exactly `pause_time` x 512 ns
//! after the PAUSE's last byte is on RXD; resume, extension and shortening; a PAUSE
//! landing on the edge a gap ends; its own PAUSE frames go out ahead of queued data
//! frames, are re-sent and resumed; MAC Control frames never reach the bus side.
//!
//! The world: the MAC side and a probe that is both its bus side (sends `MacTxData`,
//! receives `MacTxStatus` / `MacRxFrame` / `MacRxEnd`) and the far end of its link. The
//! test posts the PAUSE's `RxStart`/`RxEnd` itself, so the PAUSE's end of frame at this
//! MAC is an exact edge `R` (in a two-card system it is the far transmitter's last FCS
//! byte + 594 ns, rounded up to the next 8 ns edge: tests/flow_control.rs).
//!
//! Timeline of the data frames (1514 bytes + FCS = 1518 on the wire; T = 1 us):
//! frame k occupies 8 + 1518 + 12 = 1538 clocks = 12 304 ns: frame 0 starts at T, its
//! FCS ends at T + 12 208 ns, frame 1 starts at T + 12 304 ns, ends T + 24 512, its gap
//! ends T + 24 608 ns.

mod mac_probe;

use gige_mac::frame::{build, check_fcs};
use gige_mac::pause::{build_pause, parse, MacControl};
use gige_mac::{
    Captured, Dp83820Mac, Dp83820Params, FlowControl, Frame, FrameId, GecParams, GigeParams, Link,
    MacMsg, PortIndex, RxFrame, TxChunk, GMII_CLOCK_MHZ,
};
use mac_probe::{MacAndProbe, W};
use sim_kernel::{ClockDomain, ComponentId, Duration, Kernel, MsgId, Time};
use via_abi::{EtherType, MacAddr};

const NS: u64 = 1_000;
const T: u64 = 1_000 * NS;
const FRAME: u64 = 12_304 * NS;
const ME: MacAddr = MacAddr([2, 0, 0, 0, 0, 0xA]);
const PEER: MacAddr = MacAddr([2, 0, 0, 0, 0, 0xB]);

/// The MAC side with `flow`, three 1514-byte frames handed over at T, capture on.
fn setup(flow: FlowControl) -> (Kernel<MacMsg>, W) {
    let mut k: Kernel<MacMsg> = Kernel::new(false);
    let gmii = k.add_domain(ClockDomain::from_mhz("gmii", GMII_CLOCK_MHZ).unwrap());
    let mac_id = k.add_component("mac", gmii);
    let probe = k.add_component("probe", gmii);
    let params = Dp83820Params {
        flow,
        ..Dp83820Params::default()
    };
    let link = Link::new(GigeParams::default().link).attachment(probe, PortIndex(0));
    let mut mac = Dp83820Mac::new(&params, &GigeParams::default().wire, probe, link, 0);
    mac.tx_mut().enable_capture();
    let gec = GecParams::default();
    k.post(
        mac_id,
        Time::ZERO,
        MacMsg::MacConfig {
            txcfg: gec.txcfg(),
            rxcfg: gec.rxcfg(),
        },
    );
    for seq in 0..3u64 {
        let mut data = build(PEER, ME, EtherType::Via, &[seq as u8; 1500]).unwrap();
        data.truncate(1514);
        let chunk = TxChunk {
            frame: seq,
            offset: 0,
            data,
            len: 1514,
            msg: MsgId(seq),
            since: Time(T),
            burst: 1514,
            failed: false,
        };
        k.post(mac_id, Time(T), MacMsg::MacTxData(chunk));
    }
    (k, mac_probe::world(mac))
}

/// Posts a frame arriving at the MAC whose last byte is on RXD at `last` [ps].
fn arrive(k: &mut Kernel<MacMsg>, id: u64, bytes: Vec<u8>, last: u64) {
    let n = bytes.len() as u64;
    let first = last - (n - 1) * 8 * NS;
    let rx = RxFrame::new(
        Frame::new(FrameId(1_000 + id), MsgId(0), bytes),
        Time(first),
        Time(last),
        Duration::from_ns(8),
    );
    let port = PortIndex(0);
    k.post(
        ComponentId(0),
        Time(first),
        MacMsg::RxStart {
            port,
            frame: rx.clone(),
        },
    );
    k.post(
        ComponentId(0),
        Time(last),
        MacMsg::RxEnd { port, frame: rx },
    );
}

fn pause_at(k: &mut Kernel<MacMsg>, id: u64, quanta: u16, last: u64) {
    arrive(k, id, build_pause(PEER, quanta).unwrap(), last);
}

/// Start edges [ps] of the frames it sent, and whether each was a PAUSE (its quanta).
fn sent(w: &mut W) -> Vec<(u64, Option<u16>)> {
    sent_of(&w.mac_mut().tx_mut().take_capture())
}

fn sent_of(cap: &[Captured]) -> Vec<(u64, Option<u16>)> {
    cap.iter()
        .map(|c| {
            assert!(check_fcs(c.frame.bytes()).is_ok());
            let q = match parse(c.frame.bytes()) {
                Some(MacControl::Pause { quanta }) => Some(quanta),
                _ => None,
            };
            (c.at.0, q)
        })
        .collect()
}

fn starts(w: &mut W) -> Vec<u64> {
    sent(w).iter().map(|s| s.0 - T).collect()
}

/// Frames the bus side was shown (MacRxFrame / MacRxEnd).
fn shown_to_bus(w: &W) -> usize {
    w.got()
        .iter()
        .filter(|(_, m)| matches!(m, MacMsg::MacRxFrame { .. } | MacMsg::MacRxEnd { .. }))
        .count()
}

#[test]
fn one_pause_hand_counted() {
    let (mut k, mut w) = setup(FlowControl::default());
    // The PAUSE (100 quanta = 51.2 us) ends on RXD 800 ns into frame 1.
    let r = T + FRAME + 800 * NS;
    pause_at(&mut k, 0, 100, r);
    k.run_to_idle(&mut w);
    // Frame 1 completes (gap ends T + 24 608 ns); frame 2 waits for R + 100 x 512 ns.
    let f2 = r + 100 * 512 * NS;
    assert_eq!(starts(&mut w), [0, FRAME, f2 - T]);
    let st = w.mac().stats().clone();
    assert_eq!((st.tx_frames, st.tx_underruns), (3, 0));
    assert_eq!((st.pause_received, st.rx_good, st.rx_bad), (1, 0, 0));
    // Held from the end of frame 1's gap to the gate's edge: 39 696 ns = 4 962 clocks.
    assert_eq!(st.paused_cycles, (f2 - (T + 2 * FRAME)) / (8 * NS));
    assert_eq!(st.paused_cycles, 4_962);
    // Consumed by the MAC: the bus side never saw the PAUSE.
    assert_eq!(shown_to_bus(&w), 0);
    let ok = w
        .got()
        .iter()
        .filter(|(_, m)| {
            matches!(
                m,
                MacMsg::MacTxStatus {
                    outcome: gige_mac::dp83820::TxOutcome::Sent,
                    ..
                }
            )
        })
        .count();
    assert_eq!(ok, 3, "the frame in progress completed");
}

#[test]
fn resume_extend_shorten_and_ties() {
    let gap_end = T + 2 * FRAME; // frame 1's gap ends: frame 2 would start here
    let r = T + FRAME + 800 * NS;
    // (PAUSEs as (quanta, end of frame on RXD), start of frame 2).
    let cases: [(&[(u16, u64)], u64); 5] = [
        // 0xFFFF then resume (pause_time 0) at X: frame 2 starts on X.
        (&[(0xFFFF, r), (0, T + 30_000 * NS)], T + 30_000 * NS),
        // A second PAUSE replaces the timer: longer ...
        (
            &[(100, r), (50, r + 40_000 * NS)],
            r + 40_000 * NS + 50 * 512 * NS,
        ),
        // ... or shorter (the first one's wake-up at R + 51.2 us is stale).
        (
            &[(100, r), (10, r + 40_000 * NS)],
            r + 40_000 * NS + 10 * 512 * NS,
        ),
        // Landing on the very edge frame 1's gap ends: frame 2 is held.
        (&[(1, gap_end)], gap_end + 512 * NS),
        // Expired before the gap ends: no delay at all.
        (&[(2, T + 20_000 * NS)], gap_end),
    ];
    for (i, (pauses, want)) in cases.iter().enumerate() {
        let (mut k, mut w) = setup(FlowControl::default());
        for (j, &(q, at)) in pauses.iter().enumerate() {
            pause_at(&mut k, j as u64, q, at);
        }
        k.run_to_idle(&mut w);
        assert_eq!(starts(&mut w), [0, FRAME, want - T], "case {i}");
        assert_eq!(w.mac().stats().pause_received, pauses.len() as u64);
    }
}

#[test]
fn pause_while_idle_holds_frames_queued_later() {
    let (mut k, mut w) = setup(FlowControl::default());
    // All three frames sent by T + 36 912 ns; a PAUSE at 40 us while idle, then a frame.
    k.run_to_idle(&mut w);
    let r = T + 40_000 * NS;
    pause_at(&mut k, 0, 20, r);
    let mut data = build(PEER, ME, EtherType::Via, &[9; 100]).unwrap();
    data.truncate(114);
    let chunk = TxChunk {
        frame: 3,
        offset: 0,
        data,
        len: 114,
        msg: MsgId(3),
        since: Time(r),
        burst: 114,
        failed: false,
    };
    k.post(
        ComponentId(0),
        Time(r + 1_000 * NS),
        MacMsg::MacTxData(chunk),
    );
    k.run_to_idle(&mut w);
    let s = starts(&mut w);
    assert_eq!(s[3] + T, r + 20 * 512 * NS);
}

#[test]
fn flow_control_off_consumes_but_ignores_pause() {
    let (mut k, mut w) = setup(FlowControl::off());
    pause_at(&mut k, 0, 100, T + FRAME + 800 * NS);
    // A PAUSE with a bad FCS is a bad frame, with flow control on or off.
    let mut bad = build_pause(PEER, 100).unwrap();
    bad[20] ^= 1;
    arrive(&mut k, 1, bad, T + 20_000 * NS);
    k.run_to_idle(&mut w);
    assert_eq!(starts(&mut w), [0, FRAME, 2 * FRAME]);
    let st = w.mac().stats().clone();
    assert_eq!(
        (st.pause_received, st.control_ignored, st.rx_bad),
        (0, 1, 1)
    );
    assert_eq!(shown_to_bus(&w), 0);
}

#[test]
fn own_pause_goes_ahead_of_queued_frames_then_refresh_and_resume() {
    let flow = FlowControl {
        enabled: true,
        high_water: 100,
        low_water: 50,
        pause_quanta: 7,
    };
    let (mut k, mut w) = setup(flow);
    // Two 222-byte frames land in the RX FIFO during frame 0 (the first one crosses the
    // high-water mark: PAUSE(7) queued ahead of frames 1 and 2).
    for (i, last) in [(0u64, T + 4_000 * NS), (1, T + 7_000 * NS)] {
        let f = build(ME, PEER, EtherType::Via, &[i as u8; 204]).unwrap();
        arrive(&mut k, i, f, last);
    }
    // The bus side drains one frame at T + 15 us (still above low water: the re-send,
    // due since half of 7 quanta after the PAUSE left, goes out), the other at T + 20 us
    // (below low water: resume).
    for at in [T + 15_000 * NS, T + 20_000 * NS] {
        k.post(
            ComponentId(0),
            Time(at),
            MacMsg::MacRxDrained { bytes: 222 },
        );
    }
    k.run_to_idle(&mut w);
    // PAUSE: 8 + 64 + 12 = 84 clocks = 672 ns on the wire with its gap.
    let f1 = FRAME + 672 * NS;
    let f1_gap_end = f1 + FRAME;
    let cap = w.mac_mut().tx_mut().take_capture();
    let got: Vec<(u64, Option<u16>)> = sent_of(&cap).iter().map(|s| (s.0 - T, s.1)).collect();
    assert_eq!(
        got,
        [
            (0, None),
            (FRAME, Some(7)),
            (f1, None),
            (f1_gap_end, Some(7)),
            (f1_gap_end + 672 * NS, Some(0)),
            (f1_gap_end + 1_344 * NS, None),
        ]
    );
    let st = w.mac().stats().clone();
    assert_eq!(
        (st.pause_sent, st.pause_refreshes, st.resume_sent),
        (2, 1, 1)
    );
    assert_eq!((st.rx_good, st.tx_frames), (2, 3));
    assert!(!w.mac().pausing_peer());
    // Its PAUSE frames: the reserved address, its own address (learned from the source
    // address of its first frame), 0x8808, opcode 1, 7 quanta.
    let p = cap[1].frame.bytes();
    assert_eq!(p.len(), 64);
    assert_eq!(&p[..12], &[1, 0x80, 0xC2, 0, 0, 1, 2, 0, 0, 0, 0, 0xA]);
    assert_eq!(&p[12..18], &[0x88, 0x08, 0, 1, 0, 7]);
    // The far end received every frame; the bus side got status only for data frames.
    let statuses = w
        .got()
        .iter()
        .filter(|(_, m)| matches!(m, MacMsg::MacTxStatus { .. }))
        .count();
    assert_eq!(statuses, 3);
    let at_far = w
        .got()
        .iter()
        .filter(|(_, m)| matches!(m, MacMsg::RxEnd { .. }))
        .count();
    assert_eq!(at_far, 6);
}
