//! Data-phase arithmetic: which bus-width words a byte range occupies.
//!
//! A data phase moves one naturally aligned word of the bus width (4 bytes, or 8 on a
//! 64-bit transfer) with byte enables; a transfer of `[addr, end)` therefore takes one
//! data phase per word it touches (PCI 2.2 §3.2.3, byte alignment).

/// `x / w`: a shift for a power-of-two width (every bus's: 4 or 8 bytes), a division
/// otherwise. The bus asks for word counts several times a clock it steps, and a 64-bit
/// division costs tens of cycles where a shift costs one.
#[inline(always)]
fn per_word(x: u64, w: u64) -> u64 {
    if w.is_power_of_two() {
        x >> w.trailing_zeros()
    } else {
        x / w
    }
}

/// Data phases needed for `[addr, end)` with `w`-byte words (0 if empty).
pub(crate) fn words(addr: u64, end: u64, w: u64) -> u64 {
    if end <= addr {
        return 0;
    }
    per_word(end - 1, w) - per_word(addr, w) + 1
}

/// Bytes of `[addr, end)` moved by its first `n` data phases.
pub(crate) fn bytes_through(addr: u64, end: u64, w: u64, n: u64) -> u64 {
    if n == 0 || end <= addr {
        return 0;
    }
    let word_end = (u128::from(per_word(addr, w)) + u128::from(n)) * u128::from(w);
    let stop = word_end.min(u128::from(end));
    u64::try_from(stop).unwrap_or(end) - addr
}

/// Data phases of `[addr, end)` that lie wholly below `limit` (a target that takes
/// nothing at or above `limit`).
pub(crate) fn words_within(addr: u64, end: u64, w: u64, limit: u64) -> u64 {
    if limit >= end {
        words(addr, end, w)
    } else {
        per_word(limit, w).saturating_sub(per_word(addr, w))
    }
}

/// `a` rounded down to a multiple of `m` (m > 0).
pub(crate) fn align_down(a: u64, m: u64) -> u64 {
    a - a % m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_counts() {
        assert_eq!(words(0, 512, 4), 128);
        assert_eq!(words(2, 6, 4), 2);
        assert_eq!(words(3, 4, 4), 1);
        assert_eq!(words(4, 4, 4), 0);
        assert_eq!(words(0, 512, 8), 64);
        assert_eq!(bytes_through(2, 14, 4, 1), 2);
        assert_eq!(bytes_through(2, 14, 4, 3), 10);
        assert_eq!(bytes_through(2, 14, 4, 4), 12);
        assert_eq!(words_within(0xF80, 0x1080, 4, 0x1000), 32);
        assert_eq!(words_within(2, 14, 4, 3), 0);
        assert_eq!(words_within(2, 14, 4, 5), 1);
        assert_eq!(words_within(2, 14, 4, 8), 2, "[2,4) and [4,8)");
        assert_eq!(words_within(2, 14, 4, 100), 4);
        assert_eq!(bytes_through(u64::MAX - 3, u64::MAX, 4, 1), 3);
    }

    /// The shift and the division agree for every width, power of two or not.
    #[test]
    fn per_word_is_the_division() {
        for w in 1..=16u64 {
            for x in (0..200u64).chain([u64::MAX - 1, u64::MAX]) {
                assert_eq!(per_word(x, w), x / w, "{x} / {w}");
            }
        }
    }
}
