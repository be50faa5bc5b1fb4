//! Property test of the latency breakdown on the whole system: for any message size and
//! both operations, the stages are contiguous, start at the message's post, end at its
//! detection, add up to the one-way latency exactly, and leave no instant unattributed.

use proptest::prelude::*;
use testbenches::config::SystemConfig;
use testbenches::system::breakdown::{measure, UNATTRIBUTED};
use testbenches::system::Op;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(8))]
    #[test]
    fn breakdown_tiles_every_message(size in 1u32..6000, send_recv in any::<bool>()) {
        let op = if send_recv { Op::SendRecv } else { Op::RdmaWrite };
        let cfg = SystemConfig::from_preset("hvia-ge").expect("preset");
        let b = measure(&cfg, op, size).expect("breakdown");
        prop_assert!(!b.stages.is_empty());
        prop_assert_eq!(b.stages.first().map(|s| s.start), Some(b.start));
        prop_assert_eq!(b.stages.last().map(|s| s.end), Some(b.end));
        let mut total = 0u64;
        for w in b.stages.windows(2) {
            prop_assert_eq!(w[0].end, w[1].start, "gap or overlap between {} and {}", &w[0].name, &w[1].name);
        }
        for s in &b.stages {
            prop_assert!(s.end > s.start, "empty stage {}", &s.name);
            prop_assert!(s.name != UNATTRIBUTED, "{} B {}: unattributed {}..{}", size, op.name(), s.start, s.end);
            total += (s.end - s.start).as_ps();
        }
        prop_assert_eq!(total, (b.end - b.start).as_ps());
    }
}
