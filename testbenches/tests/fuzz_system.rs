//! The fuzz entry point of the whole system: random wire faults (loss, bit errors, an
//! outage), random reliability levels, operations and sizes through the two-node
//! ping-pong. Whatever happens, the run ends (never a hang or a panic); a reliable
//! level delivers every message once with its bytes intact, or breaks its VI with the
//! VIA transport error; an unreliable one delivers every message or reports the loss;
//! no run ever delivers corrupted bytes. The case count comes from `HVIA_FUZZ_CASES`
//! (6 by default; see the README for a long run).

use proptest::prelude::*;
use sim_kernel::SplitMix64;
use testbenches::config::{ConfigSource, SystemConfig, DEFAULT_PRESET};
use testbenches::system::{run_pingpong, Op, PingPongSpec, RecvPost, RunError};

fn cases() -> u32 {
    std::env::var("HVIA_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .map_or(6, |n| n.max(1))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn random_faults_and_levels_end_cleanly(seed in any::<u64>()) {
        let mut r = SplitMix64::new(seed);
        let level = ["unreliable", "reliable-delivery", "reliable-reception"][r.below(3) as usize];
        let mut sets = vec![format!("via.reliability={level}"), format!("sim.seed={}", r.next_u64() % 1000)];
        if r.below(2) == 0 {
            sets.push(format!("faults.frame_loss={}", r.below(50) as f64 / 1000.0));
        }
        if r.below(3) == 0 {
            sets.push(format!("faults.bit_error_rate={}e-6", 1 + r.below(20)));
        }
        if r.below(3) == 0 {
            sets.push(format!("faults.link_down_at_us={}", 50 + r.below(500)));
            let longest = if r.below(4) == 0 { 20_000 } else { 300 };
            sets.push(format!("faults.link_down_for_us={}", 1 + r.below(longest)));
        }
        let direction = ["both", "0-to-1", "1-to-0"][r.below(3) as usize];
        sets.push(format!("faults.direction={direction}"));
        let sets_ref: Vec<&str> = sets.iter().map(String::as_str).collect();
        let cfg = SystemConfig::load(&ConfigSource::Preset(DEFAULT_PRESET.into()), &sets_ref)
            .expect("valid config");
        let op = if r.below(2) == 0 { Op::RdmaWrite } else { Op::SendRecv };
        let size = [4, 100, 1460, 1461, 3000, 9000][r.below(6) as usize];
        let spec = PingPongSpec { op, size, iterations: 1 + r.below(8) as u32, warmup: 1, trace: false, recv_post: RecvPost::Timed };
        match run_pingpong(&cfg, spec) {
            Ok(run) => {
                let d = &run.delivery;
                prop_assert_eq!((d.lost, d.duplicated, d.corrupted), (0, 0, 0), "{:?} {:?}", sets, d);
                prop_assert_eq!(d.delivered, d.messages, "{:?}", sets);
                for rep in [&run.initiator, &run.responder] {
                    prop_assert!(rep.iterations.iter().all(|i| i.verified_bytes == u64::from(size)), "{:?}", sets);
                }
                for n in 0..2 {
                    prop_assert_eq!(run.system.engine(n).unwrap().stats().bookkeeping_misses, 0);
                }
            }
            Err(RunError::Lost { delivery, unreliable, .. }) => {
                prop_assert!(delivery.lost >= 1 && delivery.corrupted == 0, "{:?} {:?}", sets, delivery);
                prop_assert!(unreliable || delivery.messages > 0, "{:?}", sets);
            }
            Err(RunError::Corrupted { .. }) => prop_assert!(false, "corrupted bytes delivered: {:?}", sets),
            // A reliable connection broken by the retry limit, or a connect that got no
            // answer: the VIA error reaches the program.
            Err(RunError::Program { reason, .. }) => prop_assert!(
                reason.contains("TRANSPORT_ERROR") || reason.contains("VIP_TIMEOUT") || reason.contains("FLUSHED"),
                "{:?}: {}", sets, reason
            ),
            Err(e) => prop_assert!(false, "{:?}: {}", sets, e),
        }
    }
}
