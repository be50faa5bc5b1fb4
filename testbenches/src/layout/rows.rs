//! One printed row per field of a layout, and the table and CSV forms of a list of rows.
//!
//! Table: `FIELD  BYTES  VALUE  HEX  NOTE` columns, aligned. CSV (the contract):
//! `field,range,value,hex`, one row per field, `hex` without separators.

use std::ops::Range;

use super::num::{hex_compact, hex_spaced};
use crate::report::{aligned, csv};

/// One field of a layout as printed: name, byte range, value and the bytes it occupies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Field name, e.g. `next_va` or `segments[1].length`.
    pub field: String,
    /// Byte range from the start of the layout.
    pub range: Range<usize>,
    /// The value as text: `0x` hex for addresses, handles and bit-fields, decimal for
    /// sizes and counts.
    pub value: String,
    /// The bytes of `range`, as stored.
    pub bytes: Vec<u8>,
    /// What the value means (flags, handle parts); table form only.
    pub note: String,
}

/// `range` as `start..end`.
#[must_use]
pub fn range_text(range: &Range<usize>) -> String {
    format!("{}..{}", range.start, range.end)
}

/// The rows as an aligned text table with a header.
#[must_use]
pub fn table(rows: &[Row]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.field.clone(),
                range_text(&r.range),
                r.value.clone(),
                hex_spaced(&r.bytes),
                r.note.clone(),
            ]
        })
        .collect();
    aligned(&["FIELD", "BYTES", "VALUE", "HEX", "NOTE"], &cells)
}

/// The rows as CSV: `field,range,value,hex`.
#[must_use]
pub fn csv_rows(rows: &[Row]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.field.clone(),
                range_text(&r.range),
                r.value.clone(),
                hex_compact(&r.bytes),
            ]
        })
        .collect();
    csv(&["field", "range", "value", "hex"], &cells)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> Row {
        Row {
            field: "control".into(),
            range: 14..16,
            value: "0x0005".into(),
            bytes: vec![5, 0],
            note: "rdma-write, immediate".into(),
        }
    }

    #[test]
    fn table_and_csv() {
        assert_eq!(
            table(&[row()]),
            "FIELD    BYTES   VALUE   HEX    NOTE\n\
             control  14..16  0x0005  05 00  rdma-write, immediate\n"
        );
        assert_eq!(
            csv_rows(&[row()]),
            "field,range,value,hex\ncontrol,14..16,0x0005,0500\n"
        );
    }
}
