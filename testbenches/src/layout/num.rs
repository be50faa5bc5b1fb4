//! Text <-> numbers and bytes for `hvia layout` (and the number parser of `hvia dma`):
//! option values in decimal or `0x` hex (with optional `_` separators), hex byte strings
//! for `--decode`, and the hex forms the output uses.
//!
//! The `parse_*` functions are clap value parsers: clap puts their message after the
//! option's name (`invalid value 'x' for '--va <VA>': ...`) and exits with status 2.

use std::fmt::Write as _;
use std::ops::Range;

/// Parses `text` as an unsigned number: decimal, or hex after `0x`/`0X`; `_` may separate
/// digits (`0x0804_A100`, `10_000`). Surrounding whitespace is ignored.
///
/// # Errors
/// A message saying why `text` is not a number or does not fit 64 bits.
pub fn parse_u64(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (digits, radix) = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => (hex, 16),
        None => (t, 10),
    };
    let clean: String = digits.chars().filter(|&c| c != '_').collect();
    if clean.is_empty() {
        return Err(format!(
            "`{text}` is not a number (give decimal digits, or hex digits after 0x)"
        ));
    }
    if let Some(bad) = clean.chars().find(|c| !c.is_digit(radix)) {
        let kind = if radix == 16 { "hex" } else { "decimal" };
        return Err(format!(
            "`{text}` is not a number: `{bad}` is not a {kind} digit (give decimal, or hex after 0x)"
        ));
    }
    u64::from_str_radix(&clean, radix).map_err(|_| format!("`{text}` does not fit in 64 bits"))
}

/// [`parse_u64`], then checked to fit `T`.
///
/// # Errors
/// As [`parse_u64`], or a message giving the largest value `T` holds.
pub fn parse_narrow<T: TryFrom<u64> + Into<u64> + Copy>(text: &str, max: T) -> Result<T, String> {
    let v = parse_u64(text)?;
    T::try_from(v).map_err(|_| {
        let max: u64 = max.into();
        format!("`{text}` is too large: at most {max:#x} ({max})")
    })
}

/// [`parse_u64`] for a 32-bit field.
///
/// # Errors
/// As [`parse_narrow`].
pub fn parse_u32(text: &str) -> Result<u32, String> {
    parse_narrow(text, u32::MAX)
}

/// [`parse_u64`] for a 16-bit field.
///
/// # Errors
/// As [`parse_narrow`].
pub fn parse_u16(text: &str) -> Result<u16, String> {
    parse_narrow(text, u16::MAX)
}

/// `n` and `unit`, with an `s` unless `n` is 1 (`plural(1u8, "byte") == "1 byte"`).
#[must_use]
pub fn plural(n: impl Into<u64>, unit: &str) -> String {
    match n.into() {
        1 => format!("1 {unit}"),
        n => format!("{n} {unit}s"),
    }
}

/// A hex string that is not a whole number of bytes, with where it goes wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HexError {
    /// What is wrong.
    pub message: String,
    /// Byte range of the input that is wrong.
    pub span: Range<usize>,
}

/// Decodes hex bytes: an optional leading `0x`, then pairs of hex digits; whitespace and
/// `_` anywhere between digits are ignored (`"0x05 00 _ ff"`).
///
/// # Errors
/// A [`HexError`] for a character that is not a hex digit, an odd number of digits, or
/// no digits at all.
pub fn decode_hex(text: &str) -> Result<Vec<u8>, HexError> {
    let trimmed = text.trim_start();
    let mut start = text.len() - trimmed.len();
    if trimmed.starts_with("0x") || trimmed.starts_with("0X") {
        start += 2;
    }
    let mut digits: Vec<(usize, u8)> = Vec::with_capacity(text.len());
    for (pos, c) in text.get(start..).unwrap_or_default().char_indices() {
        let at = start + pos;
        if c.is_whitespace() || c == '_' {
            continue;
        }
        match c.to_digit(16).and_then(|d| u8::try_from(d).ok()) {
            Some(d) => digits.push((at, d)),
            None => {
                return Err(HexError {
                    message: format!(
                        "`{c}` at position {} is not a hex digit (expected 0-9, a-f; spaces and _ may separate bytes)",
                        at + 1
                    ),
                    span: at..at + c.len_utf8(),
                })
            }
        }
    }
    if digits.is_empty() {
        return Err(HexError {
            message: "no hex digits: give the descriptor's bytes, e.g. 0x0000...".to_owned(),
            span: 0..text.len(),
        });
    }
    if digits.len() % 2 != 0 {
        let last = digits.last().map_or(0, |&(at, _)| at);
        return Err(HexError {
            message: format!(
                "odd number of hex digits ({}): every byte needs two",
                digits.len()
            ),
            span: last..last + 1,
        });
    }
    Ok(digits
        .chunks_exact(2)
        .map(|pair| (pair[0].1 << 4) | pair[1].1)
        .collect())
}

/// `bytes` as lowercase hex without separators (`"0500ff"`).
#[must_use]
pub fn hex_compact(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// `bytes` as lowercase hex, one space between bytes (`"05 00 ff"`).
#[must_use]
pub fn hex_spaced(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `value` as `0x` hex padded to `width` bytes (`hex_value(5, 2) == "0x0005"`).
#[must_use]
pub fn hex_value(value: u64, width: usize) -> String {
    format!("{value:#0w$x}", w = 2 + 2 * width)
}

/// The little-endian unsigned value of `bytes[range]`, or `None` if the range is outside
/// `bytes` or wider than 8 bytes.
#[must_use]
pub fn le_value(bytes: &[u8], range: Range<usize>) -> Option<u64> {
    let field = bytes.get(range)?;
    if field.len() > 8 {
        return None;
    }
    Some(
        field
            .iter()
            .rev()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn numbers_in_decimal_and_hex() {
        assert_eq!(parse_u64("10_000"), Ok(10_000));
        assert_eq!(parse_u64(" 0x0804_A100 "), Ok(0x0804_A100));
        assert_eq!(parse_u64("0XfF"), Ok(255));
        assert_eq!(parse_u64("0xffffffffffffffff"), Ok(u64::MAX));
        assert!(parse_u64("0x1_0000_0000_0000_0000")
            .unwrap_err()
            .contains("64 bits"));
        assert!(parse_u64("").unwrap_err().contains("not a number"));
        assert!(parse_u64("0x").unwrap_err().contains("not a number"));
        assert!(parse_u64("-1").unwrap_err().contains("`-`"));
        assert!(parse_u64("12ab").unwrap_err().contains("decimal digit"));
        assert!(parse_u64("0xg").unwrap_err().contains("hex digit"));
        assert_eq!(parse_u16("0xffff"), Ok(0xffff));
        assert!(parse_u16("65536").unwrap_err().contains("at most 0xffff"));
        assert!(parse_u32("0x1_0000_0000")
            .unwrap_err()
            .contains("at most 0xffffffff"));
    }

    #[test]
    fn hex_bytes() {
        assert_eq!(decode_hex("0x05 00_ff"), Ok(vec![5, 0, 0xff]));
        assert_eq!(decode_hex("  0X0A0b\n"), Ok(vec![0x0a, 0x0b]));
        assert_eq!(decode_hex("ABcd"), Ok(vec![0xab, 0xcd]));
        let e = decode_hex("0x05zz").unwrap_err();
        assert_eq!(e.span, 4..5);
        assert!(e.message.contains("`z` at position 5"), "{}", e.message);
        let e = decode_hex("050").unwrap_err();
        assert!(e.message.contains("odd number of hex digits (3)"));
        assert_eq!(e.span, 2..3);
        assert!(decode_hex("0x").unwrap_err().message.contains("no hex"));
        assert!(decode_hex("").unwrap_err().message.contains("no hex"));
        let e = decode_hex("0é").unwrap_err();
        assert_eq!(e.span, 1..3);
    }

    #[test]
    fn hex_output() {
        assert_eq!(hex_compact(&[0, 0xab, 5]), "00ab05");
        assert_eq!(hex_spaced(&[0, 0xab, 5]), "00 ab 05");
        assert_eq!(hex_spaced(&[]), "");
        assert_eq!(hex_value(5, 2), "0x0005");
        assert_eq!(plural(1u8, "byte"), "1 byte");
        assert_eq!(plural(0u8, "page"), "0 pages");
        assert_eq!(hex_value(0x0804_a100, 8), "0x000000000804a100");
        assert_eq!(le_value(&[0x00, 0xa1, 0x04, 0x08], 0..4), Some(0x0804_a100));
        assert_eq!(le_value(&[1, 2], 1..3), None);
        assert_eq!(le_value(&[0; 9], 0..9), None);
    }

    proptest! {
        #[test]
        fn hex_round_trips(bytes in proptest::collection::vec(any::<u8>(), 1..64)) {
            prop_assert_eq!(decode_hex(&hex_compact(&bytes)), Ok(bytes.clone()));
            prop_assert_eq!(decode_hex(&hex_spaced(&bytes)), Ok(bytes));
        }

        #[test]
        fn nothing_panics(text in ".{0,40}") {
            let _ = decode_hex(&text);
            let _ = parse_u64(&text);
            let _ = parse_u16(&text);
        }
    }
}
