//! The CPU's test-message ops (`Vipl::poke_message`, `Vipl::check_message`), which the
//! ping-pong programs use to write and check every message at no simulated cost, against
//! the whole-message instrumentation they stand for (`poke` of the message's bytes,
//! `peek` and a comparison): the same bytes, the same first differing byte, the same
//! faults (a range not wholly mapped is refused before anything is written, and a fault
//! anywhere wins over a difference), no simulated time, and the same CPU counters and
//! cache state.

mod common;

use common::{done, Sys};
use host_driver::pattern::{pattern, Direction, Message};
use host_driver::CpuStats;
use sim_kernel::Time;
use std::cell::RefCell;
use std::rc::Rc;

const LIMIT: Time = Time(20_000_000_000);

/// Three pieces and a bit: the ops' pieces are 64 KiB.
const LEN: u32 = 200_000;

/// Differing bytes in the second and the third piece: the first is reported.
const BAD: [u64; 2] = [70_001, 150_001];

#[derive(Debug, Default)]
struct Seen {
    written: Vec<u8>,
    clean: Option<Option<(u64, u8, u8)>>,
    corrupted: Option<Option<(u64, u8, u8)>>,
    unmapped: bool,
    past_the_end: bool,
    poke_partly_mapped: bool,
    check_partly_mapped: bool,
    untouched: bool,
    empty: Option<Option<(u64, u8, u8)>>,
    elapsed: u64,
}

#[test]
fn message_ops_are_the_whole_message_instrumentation() {
    let mut s = Sys::new(1, false);
    let seen = Rc::new(RefCell::new(Seen::default()));
    let out = seen.clone();
    let msg = Message {
        iteration: 7,
        dir: Direction::Pong,
        len: LEN,
    };
    s.load(0, Time::ZERO, move |mut v| async move {
        let buf = v.malloc(u64::from(LEN), 4096).await.unwrap();
        let t = v.now();
        v.poke_message(buf, msg, u64::from(LEN)).await.unwrap();
        let written = v.peek(buf, u64::from(LEN)).await.unwrap();
        let clean = v.check_message(buf, msg).await.unwrap();
        for k in BAD {
            v.poke(buf + k, &[written[k as usize] ^ 0x21])
                .await
                .unwrap();
        }
        let corrupted = v.check_message(buf, msg).await.unwrap();
        let elapsed = (v.now() - t).as_ps();
        let unmapped = v.check_message(0x10, msg).await.is_err();
        let past_the_end = v.poke_message(buf, msg, u64::from(LEN) + 1).await.is_err();
        // A range whose first piece is mapped and a later one is not (the buffer's
        // mapping ends at `end`): refused before anything is written, and a check of it
        // faults although its first piece already differs.
        let end = buf + u64::from(LEN).div_ceil(4096) * 4096;
        let from = end - 70_000;
        let before = v.peek(from, 70_000).await.unwrap();
        let other = Message {
            iteration: 8,
            ..msg
        };
        let poke_partly_mapped = v.poke_message(from, other, 200_000).await.is_err();
        let untouched = v.peek(from, 70_000).await.unwrap() == before;
        let check_partly_mapped = v
            .check_message(
                from,
                Message {
                    len: 200_000,
                    ..other
                },
            )
            .await
            .is_err();
        let empty = v
            .check_message(buf, Message { len: 0, ..msg })
            .await
            .unwrap();
        *out.borrow_mut() = Seen {
            written,
            clean: Some(clean),
            corrupted: Some(corrupted),
            unmapped,
            past_the_end,
            poke_partly_mapped,
            check_partly_mapped,
            untouched,
            empty: Some(empty),
            elapsed,
        };
        done(&v, "message ops")
    });
    s.run(LIMIT);
    assert!(s.outcome(0).is_ok(), "{:?}", s.outcome(0));
    let seen = seen.borrow();
    let whole = pattern(7, Direction::Pong, LEN);
    assert_eq!(
        seen.written, whole,
        "the bytes poke of the whole message writes"
    );
    assert_eq!(seen.clean, Some(None));
    let k = BAD[0] as usize;
    assert_eq!(
        seen.corrupted,
        Some(Some((BAD[0], whole[k], whole[k] ^ 0x21))),
        "the first differing byte, by its offset in the message"
    );
    assert!(seen.unmapped, "an unmapped message is a fault");
    assert!(
        seen.past_the_end,
        "a poke past the message's end is refused"
    );
    assert!(
        seen.poke_partly_mapped,
        "a range not wholly mapped is refused"
    );
    assert!(seen.untouched, "and nothing of it is written");
    assert!(seen.check_partly_mapped, "a fault wins over a difference");
    assert_eq!(seen.empty, Some(None));
    assert_eq!(seen.elapsed, 0, "instrumentation costs no simulated time");
}

/// A message op leaves the CPU as the whole-message op it stands for: the same counters
/// (one op each), and the same cache state, which costed loads of the written lines
/// after it show (a line the write did not refresh would count as a miss).
#[test]
fn a_message_op_leaves_the_cpu_as_the_whole_message_op() {
    let stats = |by_message: bool| -> CpuStats {
        let mut s = Sys::new(1, false);
        s.load(0, Time::ZERO, move |mut v| async move {
            let buf = v.malloc(u64::from(LEN), 4096).await.unwrap();
            let msg = Message {
                iteration: 3,
                dir: Direction::Ping,
                len: LEN,
            };
            // Lines in the cache before the write, in two pieces.
            v.read_mem(buf + 1_000, 512).await.unwrap();
            v.read_mem(buf + 140_000, 512).await.unwrap();
            if by_message {
                v.poke_message(buf, msg, u64::from(LEN)).await.unwrap();
                assert_eq!(v.check_message(buf, msg).await.unwrap(), None);
            } else {
                v.poke(buf, &pattern(3, Direction::Ping, LEN))
                    .await
                    .unwrap();
                let got = v.peek(buf, u64::from(LEN)).await.unwrap();
                assert_eq!(got, pattern(3, Direction::Ping, LEN));
            }
            v.read_mem(buf + 1_000, 512).await.unwrap();
            v.read_mem(buf + 140_000, 512).await.unwrap();
            done(&v, "ops")
        });
        s.run(LIMIT);
        assert!(s.outcome(0).is_ok());
        s.cpu(0).stats().clone()
    };
    let (a, b) = (stats(true), stats(false));
    assert_eq!(a, b);
    assert!(
        a.line_hits > 0,
        "the loads after the write hit refreshed lines"
    );
}
