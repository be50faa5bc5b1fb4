//! Value parsers of the `hvia pingpong` and `hvia breakdown` options. clap puts their
//! message after the option's name (`invalid value 'abc' for '--sizes <SIZES>': ...`) and
//! exits with status 2.

/// Largest message size \[bytes\]: 16 MiB. A limit of these commands (a 1 MiB round trip
/// already takes about a second of host time per iteration), not of the card.
pub const MAX_SIZE: u32 = 16 << 20;

/// Largest `--iters` and `--warmup`.
pub const MAX_ITERS: u32 = 100_000;

/// The default sweep of `--sizes`: powers of two from 4 bytes to 1 MiB.
pub const DEFAULT_SIZES: &str = "4..1048576";

/// The message sizes of a sweep: sorted, without duplicates, never empty.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SizeList(pub Vec<u32>);

/// Parses an unsigned number: decimal, or hex after `0x`; `_` may separate digits.
fn number(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (digits, radix) = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => (hex, 16),
        None => (t, 10),
    };
    let clean: String = digits.chars().filter(|&c| c != '_').collect();
    if clean.is_empty() || !clean.chars().all(|c| c.is_digit(radix)) {
        return Err(format!(
            "`{text}` is not a number (give decimal digits, or hex digits after 0x)"
        ));
    }
    u64::from_str_radix(&clean, radix).map_err(|_| format!("`{text}` is too large"))
}

/// One message size: 1 to [`MAX_SIZE`] bytes.
///
/// # Errors
/// Not a number, 0, or too large.
pub fn parse_size(text: &str) -> Result<u32, String> {
    match number(text)? {
        0 => Err("a size of 0 sends nothing: give at least 1 byte".to_owned()),
        n => u32::try_from(n)
            .ok()
            .filter(|&n| n <= MAX_SIZE)
            .ok_or_else(|| {
                format!("{n} bytes is too large: at most {MAX_SIZE} (16 MiB, a limit of hvia)")
            }),
    }
}

/// `--sizes`: comma-separated items, each a size (`1500`) or a range `A..B` of powers of
/// two (`4..1048576`: 4, 8, ..., 1048576; both ends powers of two, `A <= B`). The result
/// is sorted and free of duplicates.
///
/// # Errors
/// An empty list, a bad size, or a bad range.
pub fn parse_sizes(text: &str) -> Result<SizeList, String> {
    let mut sizes = Vec::new();
    for item in text.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(format!(
                "`{text}` has an empty item: give sizes separated by commas, e.g. 4,64,1024"
            ));
        }
        match item.split_once("..") {
            None => sizes.push(parse_size(item)?),
            Some((a, b)) => sizes.extend(range(item, a, b)?),
        }
    }
    sizes.sort_unstable();
    sizes.dedup();
    Ok(SizeList(sizes))
}

/// The powers of two from `a` to `b` inclusive.
fn range(item: &str, a: &str, b: &str) -> Result<Vec<u32>, String> {
    let (lo, hi) = (parse_size(a)?, parse_size(b)?);
    for end in [lo, hi] {
        if !end.is_power_of_two() {
            return Err(format!(
                "`{item}`: {end} is not a power of two; a range A..B runs over the powers of \
                 two from A to B (e.g. 4..1048576), other sizes are listed with commas"
            ));
        }
    }
    if lo > hi {
        return Err(format!(
            "`{item}` is empty: the range runs from the smaller size to the larger, \
             e.g. {hi}..{lo}"
        ));
    }
    Ok(std::iter::successors(Some(lo), |&s| s.checked_mul(2))
        .take_while(|&s| s <= hi)
        .collect())
}

/// `--iters`: measured round trips per size, 1 to [`MAX_ITERS`].
///
/// # Errors
/// Not a number, 0, or too many.
pub fn parse_iters(text: &str) -> Result<u32, String> {
    match number(text)? {
        0 => Err("0 round trips measure nothing: give at least 1".to_owned()),
        n => bounded(n),
    }
}

/// `--warmup`: round trips before the measured ones, 0 to [`MAX_ITERS`].
///
/// # Errors
/// Not a number, or too many.
pub fn parse_warmup(text: &str) -> Result<u32, String> {
    bounded(number(text)?)
}

fn bounded(n: u64) -> Result<u32, String> {
    u32::try_from(n)
        .ok()
        .filter(|&n| n <= MAX_ITERS)
        .ok_or_else(|| format!("{n} is too many: at most {MAX_ITERS}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_ranges() {
        assert_eq!(parse_sizes("4,64,1024"), Ok(SizeList(vec![4, 64, 1024])));
        assert_eq!(parse_sizes("1500, 4 ,4"), Ok(SizeList(vec![4, 1500])));
        assert_eq!(parse_sizes("4..32"), Ok(SizeList(vec![4, 8, 16, 32])));
        assert_eq!(parse_sizes("8..8,1500"), Ok(SizeList(vec![8, 1500])));
        let all = parse_sizes(DEFAULT_SIZES).unwrap().0;
        assert_eq!((all.len(), all[0], all[18]), (19, 4, 1 << 20));
        assert_eq!(parse_sizes("1..2"), Ok(SizeList(vec![1, 2])));
        assert_eq!(parse_sizes("0x10"), Ok(SizeList(vec![16])));
    }

    #[test]
    fn bad_sizes_say_why() {
        for (bad, why) in [
            ("0", "size of 0"),
            ("abc", "not a number"),
            ("8..4", "is empty"),
            ("4..100", "not a power of two"),
            ("3..8", "not a power of two"),
            ("4,,8", "empty item"),
            ("", "empty item"),
            ("4..", "not a number"),
            ("..8", "not a number"),
            ("16777217", "too large"),
            ("99999999999999999999999", "too large"),
            ("4..8..16", "not a number"),
            ("-4", "not a number"),
        ] {
            let err = parse_sizes(bad).unwrap_err();
            assert!(err.contains(why), "{bad}: {err}");
        }
        assert_eq!(parse_size("16777216"), Ok(MAX_SIZE));
    }

    #[test]
    fn iterations() {
        assert_eq!(parse_iters("10"), Ok(10));
        assert!(parse_iters("0").unwrap_err().contains("at least 1"));
        assert!(parse_iters("100001").unwrap_err().contains("too many"));
        assert!(parse_iters("x").is_err());
        assert_eq!(parse_warmup("0"), Ok(0));
        assert!(parse_warmup("-1").is_err());
    }
}
