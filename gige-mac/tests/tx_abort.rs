//! A transmit data read that fails on the local bus (a master or target abort) aborts
//! its frame at the DP83820's MAC side: a frame that has not started is never sent and
//! is reported `Aborted` (the bus side writes cmdsts TXA back); no byte is made up. The
//! world: the MAC side and a probe that is its bus side and the far end of its link.

mod mac_probe;

use gige_mac::dp83820::TxOutcome;
use gige_mac::frame::{build, check_fcs};
use gige_mac::{
    Dp83820Mac, Dp83820Params, GecParams, GigeParams, Link, MacMsg, PortIndex, TxChunk,
    GMII_CLOCK_MHZ,
};
use mac_probe::{MacAndProbe, W};
use sim_kernel::{ClockDomain, ComponentId, Kernel, MsgId, Time};
use via_abi::{EtherType, MacAddr};

const T: u64 = 1_000_000;
const ME: MacAddr = MacAddr([2, 0, 0, 0, 0, 0xA]);
const PEER: MacAddr = MacAddr([2, 0, 0, 0, 0, 0xB]);

fn setup() -> (Kernel<MacMsg>, W, ComponentId) {
    let mut k: Kernel<MacMsg> = Kernel::new(false);
    let gmii = k.add_domain(ClockDomain::from_mhz("gmii", GMII_CLOCK_MHZ).unwrap());
    let mac_id = k.add_component("mac", gmii);
    let probe = k.add_component("probe", gmii);
    let params = Dp83820Params::default();
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
    let w = mac_probe::world(mac);
    (k, w, mac_id)
}

/// Frame `seq` (1514 bytes) handed over in three bursts of 512, 512 and 490 bytes at T;
/// burst `fail` (if any) comes back failed with only half its bytes.
fn post_frame(k: &mut Kernel<MacMsg>, mac: ComponentId, seq: u64, fail: Option<usize>) {
    let mut data = build(PEER, ME, EtherType::Via, &[seq as u8 + 1; 1500]).unwrap();
    data.truncate(1514);
    for (i, (off, len)) in [(0usize, 512usize), (512, 512), (1024, 490)]
        .into_iter()
        .enumerate()
    {
        let failed = fail == Some(i);
        let got = if failed { len / 2 } else { len };
        let chunk = TxChunk {
            frame: seq,
            offset: u32::try_from(off).unwrap(),
            data: data[off..off + got].to_vec(),
            len: 1514,
            msg: MsgId(seq),
            since: Time(T),
            burst: u32::try_from(len).unwrap(),
            failed,
        };
        k.post(mac, Time(T + 100_000 * i as u64), MacMsg::MacTxData(chunk));
    }
}

fn outcomes(w: &W) -> Vec<(u64, TxOutcome)> {
    w.got()
        .iter()
        .filter_map(|(_, m)| match m {
            MacMsg::MacTxStatus { frame, outcome, .. } => Some((*frame, *outcome)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_frame_whose_read_failed_before_it_started_is_not_sent() {
    let (mut k, mut w, mac) = setup();
    post_frame(&mut k, mac, 0, Some(0));
    post_frame(&mut k, mac, 1, None);
    k.run_to_idle(&mut w);
    assert_eq!(
        outcomes(&w),
        vec![(0, TxOutcome::Aborted), (1, TxOutcome::Sent)]
    );
    let cap = w.mac_mut().tx_mut().take_capture();
    assert_eq!(cap.len(), 1, "only the good frame went out");
    assert!(check_fcs(cap[0].frame.bytes()).is_ok());
    assert_eq!(cap[0].frame.bytes()[14], 2, "frame 1's payload, whole");
    assert_eq!(w.mac().stats().tx_aborted, 1);
}
