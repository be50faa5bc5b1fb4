//! The test messages of the host programs: `len` bytes of a pattern that differs by
//! iteration and direction, the last byte a flag ([`flag`]) the receiver polls for (see
//! the `programs` module doc, "RDMA receive convention"). A [`Message`] names one, so
//! that an instrumentation op (`Op::PokeMessage`, `Op::CheckMessage`) can write or check
//! it in host memory a piece at a time without the whole of it being made.

/// Which way a message goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Initiator to responder.
    Ping,
    /// Responder to initiator.
    Pong,
}

/// The flag byte of iteration `i` (the last byte of its messages): `i % 255 + 1`.
#[must_use]
pub fn flag(i: u32) -> u8 {
    u8::try_from(i % 255 + 1).unwrap_or(1)
}

/// The message of iteration `i` in direction `dir`: `len` pattern bytes, the last one
/// [`flag`]`(i)`.
#[must_use]
pub fn pattern(i: u32, dir: Direction, len: u32) -> Vec<u8> {
    let mut v = Vec::new();
    pattern_into(&mut v, i, dir, len);
    v
}

/// [`pattern`] into `v` (its memory reused: a program that makes a message every
/// iteration touches no fresh memory for it).
pub fn pattern_into(v: &mut Vec<u8>, i: u32, dir: Direction, len: u32) {
    pattern_chunk_into(v, i, dir, len, 0, len);
}

/// Bytes `[off, off + n)` of [`pattern`]`(i, dir, len)` into `v` (clipped to `len`):
/// a piece of the message made without the whole of it ([`Message::piece_into`]).
fn pattern_chunk_into(v: &mut Vec<u8>, i: u32, dir: Direction, len: u32, off: u32, n: u32) {
    let salt: u32 = match dir {
        Direction::Ping => 0x11,
        Direction::Pong => 0x5A,
    };
    // Byte k is (k * 131 + i * 7 + salt) mod 256 XOR (k >> 8) mod 256: the first term
    // repeats every 256 bytes and the second is constant over each 256-byte block, so
    // the message is one 256-byte row XOR its block number (a loop that vectorises).
    let base = i.wrapping_mul(7).wrapping_add(salt).to_le_bytes()[0];
    let row: [u8; 256] = core::array::from_fn(|lo| {
        u8::try_from(lo)
            .unwrap_or(0)
            .wrapping_mul(131)
            .wrapping_add(base)
    });
    let end = off.saturating_add(n).min(len);
    let (start, end) = (off as usize, end as usize);
    // Written once, not zeroed first and then overwritten.
    v.clear();
    v.reserve(end.saturating_sub(start));
    let mut k = start;
    while k < end {
        let (block, lo) = (k >> 8, k & 0xFF);
        let take = (row.len() - lo).min(end - k);
        let hi = block.to_le_bytes()[0];
        v.extend(row[lo..lo + take].iter().map(|r| r ^ hi));
        k += take;
    }
    if end == len as usize && end > start {
        if let Some(last) = v.last_mut() {
            *last = flag(i);
        }
    }
}

/// Where bytes read back (`got`) first differ from a message's (`expected`): the first
/// differing offset, or the shorter one's length when one is the start of the other;
/// `None` when they are equal (the usual case: one comparison of the whole slice). The
/// programs' whole-message check and the CPU's piecewise one both report by it.
pub(crate) fn first_difference(got: &[u8], expected: &[u8]) -> Option<usize> {
    if got == expected {
        return None;
    }
    Some(
        got.iter()
            .zip(expected)
            .position(|(g, e)| g != e)
            .unwrap_or_else(|| got.len().min(expected.len())),
    )
}

/// One test message: iteration `iteration`'s in direction `dir`, `len` bytes
/// ([`pattern`]`(iteration, dir, len)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message {
    /// The iteration.
    pub iteration: u32,
    /// Which way it goes.
    pub dir: Direction,
    /// Its length \[bytes\].
    pub len: u32,
}

impl Message {
    /// Bytes `[off, off + n)` of the message into `v` (clipped to its length).
    pub fn piece_into(&self, v: &mut Vec<u8>, off: u32, n: u32) {
        pattern_chunk_into(v, self.iteration, self.dir, self.len, off, n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_never_zero_and_change_every_iteration() {
        for i in 0..1000 {
            assert_ne!(flag(i), 0);
            assert_ne!(flag(i), flag(i + 1));
        }
        assert_eq!(flag(0), 1);
        assert_eq!(flag(254), 255);
        assert_eq!(flag(255), 1);
    }

    #[test]
    fn pattern_is_the_byte_formula() {
        for (i, dir, len) in [
            (0, Direction::Ping, 1000),
            (7, Direction::Pong, 70_000),
            (u32::MAX, Direction::Ping, 257),
        ] {
            let salt: u32 = if dir == Direction::Ping { 0x11 } else { 0x5A };
            let mut want: Vec<u8> = (0..len)
                .map(|k: u32| {
                    let x = k
                        .wrapping_mul(131)
                        .wrapping_add(i.wrapping_mul(7))
                        .wrapping_add(salt);
                    x.to_le_bytes()[0] ^ (k >> 8).to_le_bytes()[0]
                })
                .collect();
            if let Some(last) = want.last_mut() {
                *last = flag(i);
            }
            assert_eq!(pattern(i, dir, len), want);
        }
    }

    #[test]
    fn pattern_into_a_used_buffer_is_the_pattern() {
        // A buffer that held a longer, different message: every byte is rewritten and
        // the length is the new one; its memory is kept.
        let mut v = vec![0xEE; 5000];
        let cap = v.capacity();
        for (i, dir, len) in [
            (3, Direction::Ping, 1000),
            (4, Direction::Pong, 257),
            (9, Direction::Ping, 0),
        ] {
            pattern_into(&mut v, i, dir, len);
            assert_eq!(v, pattern(i, dir, len));
            assert_eq!(v.capacity(), cap);
        }
    }

    /// Every piece of a message is that slice of the whole message, the flag included
    /// only in the piece that ends the message, whatever its bounds.
    #[test]
    fn a_pattern_chunk_is_that_slice_of_the_pattern() {
        let mut v = vec![0xEE; 10];
        for (i, dir, len) in [
            (3, Direction::Ping, 1000),
            (300, Direction::Pong, 70_001),
            (9, Direction::Ping, 1),
        ] {
            let whole = pattern(i, dir, len);
            for (off, n) in [
                (0, len),
                (0, 1),
                (255, 2),
                (256, 256),
                (1, 700),
                (len - 1, 1),
                (len - 1, 9),
                (17, 40_000),
            ] {
                pattern_chunk_into(&mut v, i, dir, len, off, n);
                let (a, b) = (
                    off.min(len) as usize,
                    off.saturating_add(n).min(len) as usize,
                );
                assert_eq!(v, whole[a..b], "({i}, {dir:?}, {len}) [{off}, +{n})");
            }
        }
    }

    #[test]
    fn empty_and_overflowing_pieces_are_clipped() {
        let mut v = vec![1, 2, 3];
        pattern_chunk_into(&mut v, 2, Direction::Ping, 100, 40, 0);
        assert!(v.is_empty(), "n = 0");
        pattern_chunk_into(&mut v, 2, Direction::Ping, 100, 100, 5);
        assert!(v.is_empty(), "off = len");
        pattern_chunk_into(&mut v, 2, Direction::Ping, 100, 5, u32::MAX);
        assert_eq!(
            v,
            pattern(2, Direction::Ping, 100)[5..],
            "off + n overflows"
        );
        let m = Message {
            iteration: 2,
            dir: Direction::Ping,
            len: 100,
        };
        m.piece_into(&mut v, 90, 10);
        assert_eq!(v, pattern(2, Direction::Ping, 100)[90..]);
        assert_eq!(v.last(), Some(&flag(2)));
    }

    #[test]
    fn patterns_differ_by_iteration_and_direction() {
        let a = pattern(3, Direction::Ping, 64);
        assert_eq!(a.len(), 64);
        assert_eq!(*a.last().unwrap(), flag(3));
        assert_ne!(a, pattern(4, Direction::Ping, 64));
        assert_ne!(a, pattern(3, Direction::Pong, 64));
        assert_eq!(pattern(0, Direction::Ping, 1), vec![1]);
        assert!(pattern(0, Direction::Ping, 0).is_empty());
    }
}
