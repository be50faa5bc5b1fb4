//! The 4-byte ATT level-2 entry (one per physical page of a region), little-endian: the
//! 32-bit physical address where the region's piece in that page starts (HVIA-GE paper).
//!
//! | bytes | field | name |
//! |---|---|---|
//! | 0..4 | physical address | `phys_addr` |

use crate::endian::{set_u32_le, u32_le};
use crate::{Error, FieldInfo};

/// Byte ranges of the L2 entry fields.
pub mod field {
    use crate::Field;

    /// Physical address where the region's piece in this page starts (4 bytes).
    pub const PHYS_ADDR: Field = 0..4;
}

/// Length of an L2 entry \[bytes\].
pub const L2_ENTRY_LEN: usize = field::PHYS_ADDR.end;

/// Field table of the L2 entry.
pub const FIELDS: &[FieldInfo] = &[FieldInfo {
    name: "phys_addr",
    range: field::PHYS_ADDR,
}];

const LAYOUT: &str = "ATT level-2 entry";

/// A view of an ATT level-2 entry over a byte buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct L2Entry<T: AsRef<[u8]>> {
    buffer: T,
}

view_basics!(L2Entry, fixed L2_ENTRY_LEN, LAYOUT);

impl<T: AsRef<[u8]>> L2Entry<T> {
    /// Physical address where the region's piece in this page starts.
    pub fn phys_addr(&self) -> u32 {
        u32_le(self.buffer.as_ref(), field::PHYS_ADDR)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> L2Entry<T> {
    /// Sets the physical address.
    pub fn set_phys_addr(&mut self, v: u32) {
        set_u32_le(self.buffer.as_mut(), field::PHYS_ADDR, v);
    }
}

/// An ATT level-2 entry as a plain value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct L2Repr {
    /// Physical address where the region's piece in this page starts.
    pub phys_addr: u32,
}

impl L2Repr {
    /// Reads the entry; fails only if the buffer is shorter than 4 bytes.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(entry: &L2Entry<&T>) -> Result<Self, Error> {
        entry.check_len()?;
        Ok(L2Repr {
            phys_addr: entry.phys_addr(),
        })
    }

    /// Bytes [`L2Repr::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        L2_ENTRY_LEN
    }

    /// Writes the entry.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, entry: &mut L2Entry<T>) {
        entry.set_phys_addr(self.phys_addr);
    }

    /// Parses a run of consecutive L2 entries; fails if `bytes` is not a whole number of
    /// entries.
    pub fn parse_table(bytes: &[u8]) -> Result<Vec<L2Repr>, Error> {
        if bytes.len() % L2_ENTRY_LEN != 0 {
            return Err(Error::Malformed {
                layout: LAYOUT,
                reason: "table length is not a multiple of 4 bytes",
            });
        }
        bytes
            .chunks_exact(L2_ENTRY_LEN)
            .map(|chunk| L2Repr::parse(&L2Entry::new_unchecked(chunk)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn field_table_covers_4_bytes() {
        crate::assert_field_table(FIELDS, 4);
    }

    #[test]
    fn both_ways() {
        let bytes = [0x00, 0x71, 0x3A, 0x05];
        let r = L2Repr::parse(&L2Entry::new_checked(&bytes[..]).expect("4")).expect("parse");
        assert_eq!(r.phys_addr, 0x053A_7100);
        let mut out = [0u8; 4];
        r.emit(&mut L2Entry::new_unchecked(&mut out[..]));
        assert_eq!(out, bytes);
    }

    #[test]
    fn tables() {
        let bytes = [0x10, 0, 0, 0, 0, 0x20, 0, 0];
        assert_eq!(
            L2Repr::parse_table(&bytes),
            Ok(vec![
                L2Repr { phys_addr: 0x10 },
                L2Repr { phys_addr: 0x2000 }
            ])
        );
        assert_eq!(L2Repr::parse_table(&[]), Ok(vec![]));
        assert!(L2Repr::parse_table(&bytes[..7]).is_err());
        assert!(L2Entry::new_checked(&bytes[..3]).is_err());
    }

    proptest! {
        #[test]
        fn round_trip(pa in any::<u32>()) {
            let r = L2Repr { phys_addr: pa };
            let mut out = [0u8; 4];
            r.emit(&mut L2Entry::new_unchecked(&mut out[..]));
            prop_assert_eq!(L2Repr::parse(&L2Entry::new_unchecked(&out[..])), Ok(r));
        }
    }
}
