//! The CPU's test-message ops (`Vipl::poke_message`, `Vipl::check_message`), which the
//! ping-pong programs use to write and check every message at no simulated cost, against
//! the whole-message instrumentation they stand for (`poke` of the message's bytes,
//! `peek` and a comparison): the same bytes, the same first differing byte, the same
//! faults, no simulated time, one op each.

mod common;

use common::{done, Sys};
use host_driver::pattern::{pattern, Direction, Message};
use sim_kernel::Time;
use std::cell::RefCell;
use std::rc::Rc;

const LIMIT: Time = Time(20_000_000_000);

/// Three pieces and a bit: the ops' pieces are 64 KiB.
const LEN: u32 = 200_000;

#[derive(Debug, Default)]
struct Seen {
    written: Vec<u8>,
    clean: Option<Option<(u64, u8, u8)>>,
    corrupted: Option<Option<(u64, u8, u8)>>,
    unmapped: bool,
    partly_mapped: bool,
    untouched: Vec<u8>,
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
        // One byte in the third piece changed.
        let k = 150_001u64;
        v.poke(buf + k, &[written[k as usize] ^ 0x21])
            .await
            .unwrap();
        let corrupted = v.check_message(buf, msg).await.unwrap();
        let elapsed = (v.now() - t).as_ps();
        let unmapped = v.check_message(0x10, msg).await.is_err();
        // A range running past the buffer's mapping: refused before anything is written.
        let end = buf + u64::from(LEN).div_ceil(4096) * 4096;
        let before = v.peek(end - 64, 64).await.unwrap();
        let other = Message {
            iteration: 8,
            ..msg
        };
        let partly_mapped = v.poke_message(end - 64, other, 0x100000).await.is_err();
        let untouched = v.peek(end - 64, 64).await.unwrap();
        assert_eq!(untouched, before);
        let empty = v
            .check_message(buf, Message { len: 0, ..msg })
            .await
            .unwrap();
        *out.borrow_mut() = Seen {
            written,
            clean: Some(clean),
            corrupted: Some(corrupted),
            unmapped,
            partly_mapped,
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
    assert_eq!(
        seen.corrupted,
        Some(Some((150_001, whole[150_001], whole[150_001] ^ 0x21))),
        "the first differing byte, by its offset in the message"
    );
    assert!(seen.unmapped, "an unmapped message is a fault");
    assert!(seen.partly_mapped, "a range not wholly mapped is refused");
    assert_eq!(seen.untouched.len(), 64);
    assert_eq!(seen.empty, Some(None));
    assert_eq!(seen.elapsed, 0, "instrumentation costs no simulated time");
}

/// The CPU's op counter (`--stats`) counts a message op as the one whole-message op it
/// stands for.
#[test]
fn a_message_op_counts_as_the_whole_message_op() {
    let ops = |by_message: bool| {
        let mut s = Sys::new(1, false);
        s.load(0, Time::ZERO, move |mut v| async move {
            let buf = v.malloc(u64::from(LEN), 4096).await.unwrap();
            let msg = Message {
                iteration: 3,
                dir: Direction::Ping,
                len: LEN,
            };
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
            done(&v, "ops")
        });
        s.run(LIMIT);
        assert!(s.outcome(0).is_ok());
        s.cpu(0).stats().ops
    };
    assert_eq!(ops(true), ops(false));
}
