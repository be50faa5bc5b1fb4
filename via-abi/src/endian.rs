//! Panic-free fixed-width integer access to byte ranges, little-endian and network order.
//!
//! Every view in this crate reads and writes its fields through these helpers. A range
//! that does not fit inside the buffer reads as zero and a write to it is dropped, so a
//! view built with `new_unchecked` over a short buffer can never panic (design choice,
//! see the crate docs); `new_checked` is how callers learn that a buffer is short.

use crate::Field;

/// Copies `N` bytes at `range` out of `buf`, or returns zeros if the range is out of bounds
/// or not `N` bytes wide.
fn get<const N: usize>(buf: &[u8], range: Field) -> [u8; N] {
    let mut out = [0u8; N];
    if let Some(src) = buf.get(range) {
        if src.len() == N {
            out.copy_from_slice(src);
        }
    }
    out
}

/// Copies `bytes` into `buf` at `range`; does nothing if the range is out of bounds or not
/// `N` bytes wide.
fn put<const N: usize>(buf: &mut [u8], range: Field, bytes: [u8; N]) {
    if let Some(dst) = buf.get_mut(range) {
        if dst.len() == N {
            dst.copy_from_slice(&bytes);
        }
    }
}

/// Reads one byte.
pub(crate) fn u8_at(buf: &[u8], range: Field) -> u8 {
    get::<1>(buf, range)[0]
}

/// Writes one byte.
pub(crate) fn set_u8(buf: &mut [u8], range: Field, v: u8) {
    put(buf, range, [v]);
}

/// Reads a little-endian `u16`.
pub(crate) fn u16_le(buf: &[u8], range: Field) -> u16 {
    u16::from_le_bytes(get(buf, range))
}

/// Writes a little-endian `u16`.
pub(crate) fn set_u16_le(buf: &mut [u8], range: Field, v: u16) {
    put(buf, range, v.to_le_bytes());
}

/// Reads a little-endian `u32`.
pub(crate) fn u32_le(buf: &[u8], range: Field) -> u32 {
    u32::from_le_bytes(get(buf, range))
}

/// Writes a little-endian `u32`.
pub(crate) fn set_u32_le(buf: &mut [u8], range: Field, v: u32) {
    put(buf, range, v.to_le_bytes());
}

/// Reads a little-endian `u64`.
pub(crate) fn u64_le(buf: &[u8], range: Field) -> u64 {
    u64::from_le_bytes(get(buf, range))
}

/// Writes a little-endian `u64`.
pub(crate) fn set_u64_le(buf: &mut [u8], range: Field, v: u64) {
    put(buf, range, v.to_le_bytes());
}

/// Reads a network-order (big-endian) `u16`.
pub(crate) fn u16_be(buf: &[u8], range: Field) -> u16 {
    u16::from_be_bytes(get(buf, range))
}

/// Writes a network-order (big-endian) `u16`.
pub(crate) fn set_u16_be(buf: &mut [u8], range: Field, v: u16) {
    put(buf, range, v.to_be_bytes());
}

/// Reads a network-order (big-endian) `u32`.
pub(crate) fn u32_be(buf: &[u8], range: Field) -> u32 {
    u32::from_be_bytes(get(buf, range))
}

/// Writes a network-order (big-endian) `u32`.
pub(crate) fn set_u32_be(buf: &mut [u8], range: Field, v: u32) {
    put(buf, range, v.to_be_bytes());
}

/// Reads a network-order (big-endian) `u64`.
pub(crate) fn u64_be(buf: &[u8], range: Field) -> u64 {
    u64::from_be_bytes(get(buf, range))
}

/// Writes a network-order (big-endian) `u64`.
pub(crate) fn set_u64_be(buf: &mut [u8], range: Field, v: u64) {
    put(buf, range, v.to_be_bytes());
}

/// Reads six bytes (a MAC address).
pub(crate) fn bytes6(buf: &[u8], range: Field) -> [u8; 6] {
    get(buf, range)
}

/// Writes six bytes (a MAC address).
pub(crate) fn set_bytes6(buf: &mut [u8], range: Field, v: [u8; 6]) {
    put(buf, range, v);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endianness_both_ways() {
        let mut b = [0u8; 8];
        set_u32_le(&mut b, 0..4, 0x1122_3344);
        set_u32_be(&mut b, 4..8, 0x1122_3344);
        assert_eq!(b, [0x44, 0x33, 0x22, 0x11, 0x11, 0x22, 0x33, 0x44]);
        assert_eq!(u32_le(&b, 0..4), 0x1122_3344);
        assert_eq!(u32_be(&b, 4..8), 0x1122_3344);
        assert_eq!(u16_le(&b, 0..2), 0x3344);
        assert_eq!(u16_be(&b, 0..2), 0x4433);
        assert_eq!(u64_le(&b, 0..8), 0x4433_2211_1122_3344);
        let mut w = [0u8; 16];
        set_u64_le(&mut w, 0..8, 0x0102_0304_0506_0708);
        set_u64_be(&mut w, 8..16, 0x0102_0304_0506_0708);
        assert_eq!(w[..8], [8, 7, 6, 5, 4, 3, 2, 1]);
        assert_eq!(w[8..], [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(u64_be(&w, 8..16), 0x0102_0304_0506_0708);
        set_u16_be(&mut w, 0..2, 0xABCD);
        set_u16_le(&mut w, 2..4, 0xABCD);
        assert_eq!(w[..4], [0xAB, 0xCD, 0xCD, 0xAB]);
    }

    #[test]
    fn out_of_range_reads_zero_and_drops_writes() {
        let mut b = [0xAAu8; 3];
        assert_eq!(u32_le(&b, 0..4), 0);
        assert_eq!(u8_at(&b, 5..6), 0);
        set_u32_le(&mut b, 0..4, 0xFFFF_FFFF);
        set_u64_be(&mut b, 2..10, 1);
        assert_eq!(b, [0xAA; 3]);
        // A mis-sized range must not panic either.
        assert_eq!(u16_le(&b, 0..3), 0);
    }
}
