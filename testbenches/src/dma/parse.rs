//! Value parsers of the `hvia dma` options. clap puts their message after the option's
//! name (`invalid value 'abc' for '--bytes <N>': ...`) and exits with status 2.

use crate::layout::num::parse_u64;

/// Largest `--bytes` \[bytes\]: 256 MiB. A limit of the simulator, which holds the data
/// (source, destination and the copy it checks) in memory.
pub const MAX_BYTES: u64 = 256 << 20;

/// `--bytes`: at least 1, at most [`MAX_BYTES`].
///
/// # Errors
/// Not a number, 0, or too large.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    match parse_u64(text)? {
        0 => Err("a size of 0 moves nothing: give at least 1 byte".to_owned()),
        n if n > MAX_BYTES => Err(format!(
            "{n} bytes is too large: at most {MAX_BYTES} (256 MiB, a limit of the simulator)"
        )),
        n => Ok(n),
    }
}

/// `--burst`: a power of two from 4 to 4096 bytes.
///
/// # Errors
/// Not a number, or not such a power of two.
pub fn parse_burst(text: &str) -> Result<u32, String> {
    let n = parse_u64(text)?;
    match u32::try_from(n) {
        Ok(b) if b.is_power_of_two() && (4..=4096).contains(&b) => Ok(b),
        _ => Err(format!(
            "{n} bytes is not allowed: a burst must be a power of two from 4 to 4096 bytes"
        )),
    }
}

/// `--offset`: 0 to 4095, a position within a 4 KB page.
///
/// # Errors
/// Not a number, or 4096 or more.
pub fn parse_offset(text: &str) -> Result<u64, String> {
    match parse_u64(text)? {
        n if n < 4096 => Ok(n),
        n => Err(format!(
            "{n} is not within a 4 KB page: the offset must be 0 to 4095"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_positive_and_bounded() {
        assert_eq!(parse_bytes("1048576"), Ok(1 << 20));
        assert_eq!(parse_bytes("0x10_0000"), Ok(1 << 20));
        assert_eq!(parse_bytes(" 4 "), Ok(4));
        for bad in ["0", "abc", "", "-1", "1.5", "0x", "99999999999999999999"] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
        assert!(parse_bytes(&(MAX_BYTES + 1).to_string()).is_err());
        assert_eq!(parse_bytes(&MAX_BYTES.to_string()), Ok(MAX_BYTES));
    }

    #[test]
    fn bursts_are_powers_of_two_from_4_to_4096() {
        for ok in [4, 8, 64, 512, 4096] {
            assert_eq!(parse_burst(&ok.to_string()), Ok(ok));
        }
        for bad in ["0", "2", "3", "500", "8192", "4294967296", "x"] {
            let err = parse_burst(bad).unwrap_err();
            assert!(!err.is_empty(), "{bad}");
        }
        assert!(parse_burst("3").unwrap_err().contains("power of two"));
    }

    #[test]
    fn offsets_stay_in_the_page() {
        assert_eq!(parse_offset("0"), Ok(0));
        assert_eq!(parse_offset("4095"), Ok(4095));
        assert!(parse_offset("4096").unwrap_err().contains("0 to 4095"));
        assert!(parse_offset("z").is_err());
    }
}
