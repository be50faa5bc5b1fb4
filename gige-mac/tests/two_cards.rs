//! Two HVIA-GE cards back to back, GEC + local bus + DP83820 on each: initialization
//! through real local-bus writes, frames arriving byte-exact in the far card's RX buffers,
//! the FCS on the wire, the hand-counted local-bus timing of one minimum frame, and the
//! per-stage trace spans tiling the one-way path.

mod card;

use card::{frame_bytes, run_until_ready, two_cards, Setup, Sys};
use gige_mac::dp83820::regs;
use gige_mac::frame::check_fcs;
use gige_mac::{BufferLayout, RxState, TxState};
use proptest::prelude::*;
use sim_kernel::{Kernel, MsgId, Time};
use via_abi::dp83820::{CmdSts, Descriptor, DescriptorRepr};

/// One 33 MHz clock (core and local bus) [ps].
const CLK: u64 = 30_303;
/// One 125 MHz GMII clock [ps].
const GMII: u64 = 8_000;

/// The clock number of a 33 MHz edge.
fn clk(t: Time) -> u64 {
    assert_eq!(t.0 % CLK, 0, "{t} is not a 33 MHz edge");
    t.0 / CLK
}

/// The first edge of a `period` clock at or after `t` [ps].
fn edge(t: u64, period: u64) -> u64 {
    t.div_ceil(period) * period
}

/// The critical-path stages of one frame, in order (`tx dma wait` only when the
/// DP83820 was busy with an earlier frame).
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

/// The frame's critical-path spans, in stage order; asserts they tile the path.
fn chain(k: &Kernel<Sys>, msg: MsgId) -> Vec<(&'static str, Time, Time)> {
    let mut out = Vec::new();
    for stage in STAGES {
        let found: Vec<_> = k
            .trace()
            .spans()
            .iter()
            .filter(|s| s.msg == msg && s.stage == stage)
            .collect();
        assert!(found.len() <= 1, "{stage} recorded {} times", found.len());
        if let Some(s) = found.first() {
            out.push((stage, s.start, s.end));
        } else {
            assert_eq!(stage, "tx dma wait", "stage {stage} missing");
        }
    }
    for w in out.windows(2) {
        assert_eq!(w[0].2, w[1].1, "{} ends where {} starts", w[0].0, w[1].0);
        assert!(w[1].1 <= w[1].2, "{} has a positive length", w[1].0);
    }
    out
}

/// Sends one frame of `len` bytes from card `from`; returns the kernel, the world, the
/// frame and the edge its `GecTransmit` landed at the GEC.
fn one_frame(len: usize, from: usize, seed: u64) -> (Kernel<Sys>, card::Cards, Vec<u8>, Time) {
    let s = Setup {
        trace: true,
        ..Setup::default()
    };
    let (mut k, mut w) = two_cards(&s);
    w.bus_mut(from).set_tenure_log(true);
    w.dpm_mut(from).tx_mut().enable_capture();
    let ready = run_until_ready(&mut k, &mut w);
    let f = frame_bytes(len, u8::try_from(from).unwrap(), seed);
    w.engine(from).to_send.push_back((f.clone(), MsgId(42)));
    let kick = w.ids[from].engine;
    k.post(kick, ready, Sys::Kick);
    k.run_to_idle(&mut w);
    let t0 = w.engine(from).sent[0].0 + sim_kernel::Duration(CLK);
    (k, w, f, t0)
}

#[test]
fn initialization_programs_the_dp83820_over_the_local_bus() {
    let s = Setup::default();
    let (mut k, mut w) = two_cards(&s);
    w.bus_mut(0).set_tenure_log(true);
    run_until_ready(&mut k, &mut w);
    let l = BufferLayout::default();
    for c in 0..2 {
        let r = w.dpb(c).registers();
        assert_eq!(u64::from(r.txdp), l.tx_descriptor(0).unwrap());
        assert_eq!(u64::from(r.rxdp), l.rx_descriptor(0).unwrap());
        assert_eq!(r.txcfg, s.gec.txcfg());
        assert_eq!(r.rxcfg, s.gec.rxcfg());
        assert_eq!(w.dpb(c).tx_state(), TxState::Idle);
        assert_eq!(
            w.dpb(c).rx_state(),
            RxState::Ready,
            "RX descriptor 0 fetched"
        );
        assert!(w.gec(c).is_ready());
        // RX descriptors: a closed ring over the RX buffers, owned by the MAC, 2048 bytes.
        for slot in 0..l.rx_slots {
            let at = l.rx_descriptor(slot).unwrap();
            let bytes = w.wiring.store[c].ram.read_vec(at, 16).unwrap();
            let d = DescriptorRepr::parse(&Descriptor::new_checked(&bytes[..]).unwrap()).unwrap();
            let next = l.rx_descriptor((slot + 1) % l.rx_slots).unwrap();
            assert_eq!(u64::from(d.link), next);
            assert_eq!(u64::from(d.bufptr), l.rx_buffer(slot).unwrap());
            assert_eq!(d.cmdsts, CmdSts::empty().with_size(2048));
        }
    }
    // Hand count (local bus and core at 33 MHz, clock k starts at k x 30.303 ns):
    // the GEC writes 6 descriptors x 4 words through its 32-bit RAM port: clocks 0..24.
    // The 5 register writes are queued at edge 24 and land at 25 (REQ# in 25). After
    // reset nobody has GNT#: the arbiter grants the GEC in 26 (from REQ# of 25), its
    // address phase is clock 27; medium DEVSEL# in 29 is also the data phase (a write
    // needs no turnaround); 30 is the idle turnaround; REQ# stayed asserted (more writes
    // queued) and GNT# stays: the next address phase is 31. Four clocks per write.
    let log = w.bus(0).tenure_log().to_vec();
    let gec_writes: Vec<_> = log.iter().filter(|r| r.master == 0).collect();
    let addrs: Vec<u64> = gec_writes.iter().map(|r| r.address_clock).collect();
    assert_eq!(addrs, [27, 31, 35, 39, 43]);
    let offsets: Vec<u64> = gec_writes
        .iter()
        .map(|r| r.addr - s.gec.mac_regs_base)
        .collect();
    assert_eq!(
        offsets,
        [regs::TXDP, regs::RXDP, regs::TXCFG, regs::RXCFG, regs::CR]
    );
    assert!(gec_writes
        .iter()
        .all(|r| r.first_data_clock == Some(r.address_clock + 2)));
    // CR.RXE ends at edge 46: the GEC is ready and tells the engine one clock later.
    assert_eq!(w.engine(0).ready, Some(Time(47 * CLK)));
    // The DP83820 sees RXE at 46, requests (REQ# 47), GNT# leaves the parked GEC (48 no
    // GNT#: the bus is idle), GNT# in 49, address phase 50: RX descriptor 0 (16 bytes).
    let fetch = log.iter().find(|r| r.master == 1).unwrap();
    assert_eq!(fetch.addr, l.rx_descriptor(0).unwrap());
    assert_eq!((fetch.address_clock, fetch.bytes), (50, 16));
}

/// One minimum frame (60 bytes + FCS), hand-counted local-bus clocks. `t0`: the edge
/// the `GecTransmit` lands at the GEC.
#[test]
fn minimum_frame_hand_counted() {
    let (k, mut w, f, t0) = one_frame(60, 0, 5);
    let t0 = clk(t0);
    let log: Vec<_> = w
        .bus(0)
        .tenure_log()
        .iter()
        .filter(|r| r.address_clock > t0)
        .cloned()
        .collect();
    let txe = &log[0];
    let desc = &log[1];
    let data = &log[2];
    let next_desc = &log[3];
    let wb = &log[4];
    // Descriptor into the RAM: 16 bytes through the 32-bit port, 4 core clocks: t0..t0+4.
    // TXE write: REQ# in t0+5; GNT# is parked on the DP83820 (its RX descriptor fetch
    // was the last transaction), so on the idle bus one clock without GNT# (t0+6), GNT#
    // to the GEC in t0+7, address phase t0+8, medium DEVSEL# and the data phase in
    // t0+10, end of transaction at edge t0+11: 7 clocks.
    assert_eq!(txe.addr - 0x2000_0000, regs::CR);
    assert_eq!(
        (txe.address_clock, txe.first_data_clock, txe.last_clock),
        (t0 + 8, Some(t0 + 10), t0 + 10)
    );
    // Descriptor fetch: the DP83820 sees TXE at edge t0+11, REQ# t0+12, t0+13 without
    // GNT#, GNT# t0+14, address phase t0+15 (Memory Read Line, 16 bytes); the GEC samples
    // the address at t0+16 and drives data 2 core clocks later, t0+18 (medium DEVSEL#
    // and the read turnaround would allow t0+17: one wait state); 4 data phases
    // t0+18..t0+21; end at edge t0+22: 11 clocks.
    assert_eq!(desc.addr, BufferLayout::default().tx_descriptor(0).unwrap());
    assert_eq!(
        (
            desc.address_clock,
            desc.first_data_clock,
            desc.last_data_clock
        ),
        (t0 + 15, Some(t0 + 18), Some(t0 + 21))
    );
    // Data fetch: REQ# t0+23; GNT# still on the DP83820 and the bus idle in t0+23, so
    // the address phase is t0+24; data from t0+27 (sampled t0+25, +2), 15 data phases
    // for 60 bytes, t0+27..t0+41; end at edge t0+42: 20 clocks.
    assert_eq!((data.bytes, data.data_phases), (60, 15));
    assert_eq!(
        (
            data.address_clock,
            data.first_data_clock,
            data.last_data_clock
        ),
        (t0 + 24, Some(t0 + 27), Some(t0 + 41))
    );
    // The DP83820 follows the link at once: descriptor 1 (not owned) at t0+44: idle.
    assert_eq!(next_desc.address_clock, t0 + 44);
    assert_eq!(
        next_desc.addr,
        BufferLayout::default().tx_descriptor(1).unwrap()
    );
    // MAC side: the data crosses into the GMII domain on the first 8 ns edge after the
    // edge t0+42, plus one GMII clock: the preamble starts there; 72 bytes later the FCS
    // is out; the status crosses back on the next local-bus edge plus one clock.
    let start = edge((t0 + 42) * CLK, GMII) + GMII;
    let end = start + 72 * GMII;
    let sent = &w.dpm(0).tx().stats().clone();
    assert_eq!(sent.frames, 1);
    let status = edge(end, CLK) / CLK + 1;
    // Write-back: REQ# status+1, GNT# parked on the DP83820: address status+2, data
    // status+4 (medium DEVSEL#), end at edge status+5: 5 clocks from the status.
    assert_eq!(
        wb.addr,
        BufferLayout::default().tx_descriptor(0).unwrap() + 8
    );
    assert_eq!(
        (wb.address_clock, wb.first_data_clock, wb.last_clock),
        (status + 2, Some(status + 4), status + 4)
    );
    // The GEC sees the write-back at status+5 and the engine gets GecTxDone at status+6.
    let done = w.engine(0).tx_done[0];
    assert_eq!(
        (done.0, done.1, done.2, done.3),
        (Time((status + 6) * CLK), 0, true, MsgId(42))
    );
    // The stages, contiguous.
    let ch = chain(&k, MsgId(42));
    let at = |name: &str| ch.iter().find(|c| c.0 == name).map(|c| (c.1, c.2)).unwrap();
    assert_eq!(
        at("gec descriptor write"),
        (Time(t0 * CLK), Time((t0 + 4) * CLK))
    );
    assert_eq!(at("txe write").1, Time((t0 + 11) * CLK));
    assert_eq!(at("mac descriptor fetch").1, Time((t0 + 22) * CLK));
    assert_eq!(at("mac data fetch").1, Time(start));
    assert_eq!(at("gmii tx"), (Time(start), Time(end)));
    // Far side: the last byte on the far RXD 594 ns later (next 8 ns edge), the verdict
    // crosses to the bus side (next local-bus edge + 1), the 60 data bytes go in one
    // write burst (REQ#, address at +2, 15 data phases from +4, end +19), the write-back
    // (+5), GecRxFrame one core clock after the GEC saw it.
    let last = edge(end + 594_000, GMII);
    assert_eq!(at("phy+cable+phy").1, Time(last));
    let seen = edge(last, CLK) / CLK + 1;
    assert_eq!(at("rx fifo"), (Time(last), Time(seen * CLK)));
    assert_eq!(at("mac rx dma").1, Time((seen + 19) * CLK));
    assert_eq!(at("rx write-back").1, Time((seen + 24) * CLK));
    let got = &w.engine(1).rx[0];
    assert_eq!(got.at, Time((seen + 25) * CLK));
    assert_eq!((got.len, got.msg, &got.bytes), (60, MsgId(42), &f));
    // Wire bytes: the frame and its FCS.
    let cap = w.dpm_mut(0).tx_mut().take_capture();
    assert_eq!(&cap[0].frame.bytes()[..60], &f[..]);
    assert!(check_fcs(cap[0].frame.bytes()).is_ok());
}

#[test]
fn stage_breakdown_of_a_minimum_and_a_maximum_frame() {
    for (len, clocks) in [(60usize, 108u64), (1514, 912)] {
        let (k, mut w, f, t0) = one_frame(len, 0, 9);
        let ch = chain(&k, MsgId(42));
        let got = w.engine(1).rx[0].clone();
        assert_eq!(got.bytes, f);
        assert_eq!(ch.first().unwrap().1, t0);
        assert_eq!(
            ch.last().unwrap().2,
            got.at,
            "the chain ends when GecRxFrame lands"
        );
        println!(
            "{len}-byte frame, GecTransmit to GecRxFrame {}:",
            got.at - t0
        );
        for (stage, a, b) in &ch {
            println!("  {stage:>22} {:>12}", b.saturating_since(*a));
        }
        assert_eq!(
            (got.at - t0).as_ps(),
            clocks * CLK,
            "one-way time in 33 MHz clocks"
        );
        assert_eq!(w.dpm(0).stats().tx_underruns, 0);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    /// A frame of any length arrives in the far card's RX buffer byte-exact, with its
    /// length and message id; the sender gets GecTxDone; the FCS on the wire is right.
    #[test]
    fn any_frame_arrives_exact(len in 60usize..=1514, from in 0usize..2, seed in any::<u64>()) {
        let (k, mut w, f, _) = one_frame(len, from, seed);
        let to = 1 - from;
        let got = w.engine(to).rx.clone();
        prop_assert_eq!(got.len(), 1);
        prop_assert_eq!(got[0].len as usize, len);
        prop_assert_eq!(got[0].msg, MsgId(42));
        prop_assert_eq!(&got[0].bytes, &f);
        let done = w.engine(from).tx_done.clone();
        prop_assert_eq!(done.len(), 1);
        prop_assert!(done[0].2);
        let cap = w.dpm_mut(from).tx_mut().take_capture();
        prop_assert_eq!(cap.len(), 1);
        prop_assert_eq!(&cap[0].frame.bytes()[..len], &f[..]);
        prop_assert_eq!(cap[0].frame.len(), len + 4);
        prop_assert!(check_fcs(cap[0].frame.bytes()).is_ok());
        chain(&k, MsgId(42));
    }
}

#[test]
fn runs_are_deterministic() {
    let digest = || {
        let (k, _, _, _) = one_frame(700, 1, 3);
        k.trace().digest()
    };
    assert_eq!(digest(), digest());
}
