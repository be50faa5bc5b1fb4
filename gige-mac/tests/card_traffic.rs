//! Two cards under load: many frames back to back keep their order and the buffer
//! limits; RX slot exhaustion makes frames wait in the RX FIFO and its overflow is
//! counted; a slow local bus underruns the transmitter; bad engine requests are refused.

mod card;

use card::{frame_bytes, frame_seed, run_until_ready, two_cards, Setup, Sys};
use gige_mac::{BufferLayout, Dp83820Params, FlowControl, GecParams, RxState};
use proptest::prelude::*;
use sim_kernel::{Cycles, MsgId};

/// The one-way stages (see the `dp83820` module doc).
const STAGES: [&str; 12] = [
    "gec descriptor write",
    "txe write",
    "tx dma wait",
    "mac descriptor fetch",
    "mac data fetch",
    "tx fifo wait",
    "gmii tx",
    "phy+cable+phy",
    "rx fifo",
    "mac rx dma",
    "rx write-back",
    "gec notify",
];

/// Queues `lens.len()` frames on card `from` (message ids `base + i`) and runs to idle.
fn traffic(s: &Setup, plan: &[(usize, Vec<usize>)]) -> (sim_kernel::Kernel<Sys>, card::Cards) {
    let (mut k, mut w) = two_cards(s);
    let ready = run_until_ready(&mut k, &mut w);
    for (from, lens) in plan {
        for (i, &len) in lens.iter().enumerate() {
            let msg = MsgId((*from as u64) * 1000 + i as u64);
            let f = frame_bytes(len, u8::try_from(*from).unwrap(), msg.0 + 77);
            w.engine(*from).to_send.push_back((f, msg));
        }
        let e = w.ids[*from].engine;
        k.post(e, ready, Sys::Kick);
    }
    k.run_to_idle(&mut w);
    (k, w)
}

/// Checks that card `to` received exactly `lens` from card `from`, in order, byte-exact.
fn check_received(w: &mut card::Cards, from: usize, to: usize, lens: &[usize]) {
    let got = w.engine(to).rx.clone();
    assert_eq!(got.len(), lens.len(), "frames received by card {to}");
    for (i, (g, &len)) in got.iter().zip(lens).enumerate() {
        let msg = MsgId((from as u64) * 1000 + i as u64);
        assert_eq!(frame_seed(&g.bytes), Some(msg.0 + 77), "order");
        assert_eq!(g.len as usize, len);
        assert_eq!(
            g.bytes,
            frame_bytes(len, u8::try_from(from).unwrap(), msg.0 + 77)
        );
    }
    let done = w.engine(from).tx_done.clone();
    assert_eq!(done.len(), lens.len());
    assert!(done.iter().all(|d| d.2), "every frame sent ok");
    let l = BufferLayout::default();
    assert!(w.engine(from).max_tx_busy <= usize::from(l.tx_slots));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4, ..ProptestConfig::default() })]

    /// Frames of random lengths, back to back in both directions at once.
    #[test]
    fn back_to_back_both_ways(
        a in proptest::collection::vec(60usize..=1514, 10..25),
        b in proptest::collection::vec(60usize..=1514, 10..25),
        release in 1u64..400,
    ) {
        let s = Setup { release: Some(Cycles(release)), ..Setup::default() };
        let (_, mut w) = traffic(&s, &[(0, a.clone()), (1, b.clone())]);
        check_received(&mut w, 0, 1, &a);
        check_received(&mut w, 1, 0, &b);
        for c in 0..2 {
            prop_assert!(w.engine(c).max_held <= 4, "RX slots held");
            prop_assert_eq!(w.dpm(c).stats().tx_underruns, 0);
            prop_assert_eq!(w.dpm(c).stats().rx_overflows, 0);
            prop_assert_eq!(w.gec(c).stats().rx_errors, 0);
        }
    }
}

#[test]
fn cut_through_starts_early_and_can_underrun_under_bidirectional_load() {
    // Drain threshold 1024: a 1378-byte frame starts on the wire after two bursts. In
    // this mix, card 1's 1453-byte frame arrives meanwhile: two 512-byte receive bursts
    // and a TX status write-back get the bus before the transmit engine's third burst
    // (requests are served in order), the GEC's TXE write cuts it (latency timer), and
    // byte 1024 is late: the frame goes out corrupted, the sender is told, the receiver
    // drops it; every other frame arrives, in order.
    let a = vec![
        866, 863, 923, 1275, 1378, 656, 65, 701, 1071, 1221, 97, 1094,
    ];
    let b = vec![
        951, 648, 1453, 1226, 1137, 211, 658, 389, 89, 364, 1199, 402,
    ];
    let s = Setup {
        release: Some(Cycles(66)),
        gec: GecParams {
            tx_drain_threshold: 1024,
            ..GecParams::default()
        },
        trace: true,
        ..Setup::default()
    };
    let (k, mut w) = traffic(&s, &[(0, a.clone()), (1, b.clone())]);
    check_received(&mut w, 1, 0, &b);
    let bad: Vec<_> = w
        .engine(0)
        .tx_done
        .iter()
        .filter(|d| !d.2)
        .cloned()
        .collect();
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0].3, MsgId(4));
    assert_eq!(w.dpm(0).stats().tx_underruns, 1);
    assert_eq!(w.dpm(1).rx().stats().fcs_errors, 1);
    let got: Vec<MsgId> = w.engine(1).rx.iter().map(|g| g.msg).collect();
    let want: Vec<MsgId> = (0..12).filter(|&i| i != 4).map(MsgId).collect();
    assert_eq!(got, want);
    // Cut-through: frame 4 was on the wire before its data was all read.
    let span = |stage: &str| {
        k.trace()
            .spans()
            .iter()
            .find(|x| x.msg == MsgId(4) && x.stage == stage)
            .map(|x| (x.start, x.end))
            .unwrap()
    };
    let wire = span("gmii tx");
    let fetched = span("mac data fetch");
    assert_eq!(fetched.1, wire.0, "starts when 1024 bytes are in");
    assert!(wire.1 - wire.0 > sim_kernel::Duration::from_ns(1382 * 8));
}

#[test]
fn cut_through_one_way_does_not_underrun() {
    let s = Setup {
        gec: GecParams {
            tx_drain_threshold: 512,
            ..GecParams::default()
        },
        ..Setup::default()
    };
    let lens = vec![1514usize; 8];
    let (_, mut w) = traffic(&s, &[(0, lens.clone())]);
    check_received(&mut w, 0, 1, &lens);
    assert_eq!(w.dpm(0).stats().tx_underruns, 0);
    assert_eq!(
        w.dpb(1).stats().unexpected,
        0,
        "streamed bytes always known in time"
    );
}

#[test]
fn slow_release_keeps_order_and_slot_limits() {
    // The engine holds every RX buffer for 2 000 core clocks (60 us): the four slots fill,
    // the DP83820 idles at a descriptor it does not own, frames wait in its FIFO, and
    // each release (with CR.RXE) lets one more through.
    let lens: Vec<usize> = (0..30).map(|i| 60 + (i * 97) % 1455).collect();
    let s = Setup {
        release: Some(Cycles(2_000)),
        trace: true,
        ..Setup::default()
    };
    let (k, mut w) = traffic(&s, &[(0, lens.clone())]);
    check_received(&mut w, 0, 1, &lens);
    // Every frame's stages cover its path from GecTransmit to GecRxFrame without a gap.
    for (i, g) in w.engine(1).rx.clone().iter().enumerate() {
        let mut sp: Vec<_> = k
            .trace()
            .spans()
            .iter()
            .filter(|x| x.msg == MsgId(i as u64) && STAGES.contains(&x.stage))
            .collect();
        sp.sort_by_key(|x| (x.start, x.end));
        let sent = w.engine(0).sent[i].0;
        assert_eq!(
            sp[0].start,
            sent + sim_kernel::Duration(30_303),
            "starts at GecTransmit"
        );
        let mut reach = sp[0].end;
        for x in &sp[1..] {
            assert!(x.start <= reach, "frame {i}: gap before {}", x.stage);
            reach = reach.max(x.end);
        }
        assert_eq!(reach, g.at, "frame {i}: ends when GecRxFrame lands");
    }
    assert_eq!(w.engine(1).max_held, 4);
    assert!(
        w.dpm(1).stats().rx_fifo_peak > 4 * 1518,
        "frames waited in the RX FIFO"
    );
    assert_eq!(w.dpm(1).stats().rx_overflows, 0);
    assert!(w.dpm(1).stats().rx_fifo_peak <= 32 * 1024);
}

#[test]
fn rx_slot_exhaustion_fills_the_fifo_and_counts_overflows() {
    // Card 1's engine never releases: 4 frames land in the 4 RX buffers, the next ones
    // wait in the 32 KB RX FIFO (21 frames of 1518 bytes fit: 31 878 bytes), the rest
    // overflow, counted. Flow control off (with it, see tests/flow_control.rs).
    let lens = vec![1514usize; 40];
    let s = Setup {
        release: None,
        mac: Dp83820Params {
            flow: FlowControl::off(),
            ..Dp83820Params::default()
        },
        ..Setup::default()
    };
    let (mut k, mut w) = traffic(&s, &[(0, lens)]);
    let st = w.dpm(1).stats().clone();
    assert_eq!(w.engine(1).rx.len(), 4);
    assert_eq!(
        w.dpb(1).rx_state(),
        RxState::Idle,
        "stopped at a descriptor it does not own"
    );
    assert_eq!(st.rx_good, 4 + 21);
    assert_eq!(st.rx_overflows, 40 - 25);
    assert_eq!(st.rx_fifo_peak, 21 * 1518, "21 frames waiting");
    assert_eq!(w.dpb(1).rx_fifo_frames(), 21);
    assert_eq!(
        w.engine(0).tx_done.len(),
        40,
        "the sender never waits for the receiver"
    );
    // The engine gives the buffers back: CR.RXE restarts the receiver and the 21 waiting
    // frames follow, in order.
    let e = w.ids[1].engine;
    let now = k.now();
    k.post(e, now, Sys::ReleaseAll);
    k.run_to_idle(&mut w);
    let got = w.engine(1).rx.clone();
    assert_eq!(got.len(), 25);
    for (i, g) in got.iter().enumerate() {
        assert_eq!(frame_seed(&g.bytes), Some(i as u64 + 77), "order");
        assert_eq!(g.bytes, frame_bytes(1514, 0, i as u64 + 77));
    }
    assert_eq!(w.dpm(1).rx_fifo_used(), 0);
}

#[test]
fn a_slow_local_bus_underruns_the_transmitter() {
    // 64-byte bursts (MXDMA 64) move 64 bytes in about 21 local-bus clocks (636 ns) while
    // the wire sends them in 512 ns; with the drain threshold at 64 bytes a 1514-byte
    // frame runs dry: it goes out with a bad FCS, the sender gets GecTxDone { ok: false },
    // the receiver drops it. A short frame (all in one burst) still goes through.
    let s = Setup {
        gec: GecParams {
            mxdma_bytes: 64,
            tx_fill_threshold: 64,
            tx_drain_threshold: 64,
            ..GecParams::default()
        },
        ..Setup::default()
    };
    let (_, mut w) = traffic(&s, &[(0, vec![1514, 60])]);
    let done = w.engine(0).tx_done.clone();
    assert_eq!(done.len(), 2);
    assert!(!done[0].2, "underrun reported");
    assert!(done[1].2);
    assert_eq!(w.dpm(0).stats().tx_underruns, 1);
    assert_eq!(w.dpm(0).tx().stats().underruns, 1);
    assert_eq!(w.dpm(1).stats().rx_bad, 1);
    assert_eq!(w.dpm(1).rx().stats().fcs_errors, 1);
    assert_eq!(w.gec(0).stats().tx_failed, 1);
    let got = w.engine(1).rx.clone();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].bytes, frame_bytes(60, 0, 1 + 77), "the short frame");
}

#[test]
fn bad_engine_requests_are_refused_and_counted() {
    let s = Setup::default();
    let (mut k, mut w) = two_cards(&s);
    let ready = run_until_ready(&mut k, &mut w);
    let gec = w.ids[0].gec;
    let bad = [
        gige_mac::MacMsg::GecTransmit {
            slot: 9,
            len: 100,
            msg: MsgId(1),
        },
        gige_mac::MacMsg::GecTransmit {
            slot: 0,
            len: 0,
            msg: MsgId(2),
        },
        gige_mac::MacMsg::GecTransmit {
            slot: 1,
            len: 4000,
            msg: MsgId(3),
        },
        gige_mac::MacMsg::GecRxRelease { slot: 2 },
        gige_mac::MacMsg::GecRxRelease { slot: 77 },
        gige_mac::MacMsg::GecInit,
        gige_mac::MacMsg::GecReady,
    ];
    for m in bad {
        k.post(gec, ready, Sys::Mac(m));
    }
    k.run_to_idle(&mut w);
    let st = w.gec(0).stats().clone();
    // GecInit again is an unexpected request; GecReady is not a GEC input at all.
    assert_eq!(
        (
            st.tx_refused,
            st.bad_releases,
            st.unexpected,
            st.wrong_inputs
        ),
        (3, 2, 1, 1)
    );
    let done = w.engine(0).tx_done.clone();
    assert_eq!(done.len(), 3);
    assert!(done.iter().all(|d| !d.2));
    // Still working afterwards.
    let (_, mut w2) = traffic(&s, &[(0, vec![100])]);
    check_received(&mut w2, 0, 1, &[100]);
}

#[test]
fn transmits_before_ready_wait_for_initialization() {
    let s = Setup::default();
    let (mut k, mut w) = two_cards(&s);
    let f = frame_bytes(200, 0, 1);
    // Straight into the GEC at time 0, before the DP83820 is programmed.
    w.wiring.store[0]
        .ram
        .write(BufferLayout::default().tx_buffer(1).unwrap(), &f)
        .unwrap();
    let gec = w.ids[0].gec;
    k.post(
        gec,
        sim_kernel::Time::ZERO,
        Sys::Mac(gige_mac::MacMsg::GecTransmit {
            slot: 1,
            len: 200,
            msg: MsgId(5),
        }),
    );
    w.engine(0).ready = Some(sim_kernel::Time::ZERO);
    k.run_to_idle(&mut w);
    let got = w.engine(1).rx.clone();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].bytes, f);
    let ready = w.engine(1).ready.unwrap();
    assert!(w.engine(0).tx_done[0].0 > ready);
}
