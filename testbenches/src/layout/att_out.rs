//! What `hvia layout att` prints for an [`AttRegionRepr`]: one row per L1 field (names
//! and byte ranges from via-abi's `L1_FIELDS` and `L1_PACKED_FIELDS`, values read back
//! from the 24 bytes), one row per L2 entry, and the JSON of the CLI contract.

use serde::Serialize;
use via_abi::att::{
    l1_field, l2_field, PackedFieldInfo, L1_FIELDS, L1_PACKED_FIELDS, L2_ENTRY_LEN, L2_FIELDS,
};
use via_abi::{AttRegionRepr, L1Entry, L1Repr, MemAttributes};

use super::num::{hex_compact, hex_value, le_value};
use super::rows::{table, Row};
use super::Ranges;

/// The packed-field description of L1 field `name`, if it shares a word with others.
fn packed(name: &str) -> Option<&'static PackedFieldInfo> {
    L1_PACKED_FIELDS.iter().find(|p| p.name == name)
}

/// `p`'s bits as `high:low`.
fn bits_text(p: &PackedFieldInfo) -> String {
    format!("{}:{}", p.shift + p.width.saturating_sub(1), p.shift)
}

/// The value of L1 field `name` in `l1` as text, or `None` for a name this command does
/// not know (then the raw bits are shown).
fn known_value(l1: &L1Repr, name: &str, width: usize) -> Option<String> {
    Some(match name {
        "start_va" => hex_value(l1.start_va, width),
        "l2_pointer" => hex_value(l1.l2_pointer.into(), width),
        "page_count" => l1.page_count.to_string(),
        "last_page_len" => l1.last_page_len.to_string(),
        "first_page_size" => l1.first_page_size.to_string(),
        "attributes" => hex_value(l1.attributes.bits().into(), width),
        "ptag" => hex_value(l1.ptag.raw().into(), width),
        "generation" => l1.generation.to_string(),
        _ => return None,
    })
}

/// Names of the attribute flags that are set.
fn attributes_note(a: MemAttributes) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for (flag, name) in [
        (MemAttributes::VALID, "valid"),
        (MemAttributes::ENABLE_RDMA_WRITE, "rdma-write"),
        (MemAttributes::ENABLE_RDMA_READ, "rdma-read"),
    ] {
        if a.contains(flag) {
            parts.push(name);
        }
    }
    if a.bits() & MemAttributes::RESERVED_MASK != 0 {
        parts.push("reserved bits");
    }
    parts.join(", ")
}

/// One row per L1 field (in `L1_FIELDS` order), then one per L2 entry field.
#[must_use]
pub fn rows(region: &AttRegionRepr) -> Vec<Row> {
    let l1_bytes = region.l1_bytes();
    // Values shown are read back from the bytes, so they are what SDRAM holds.
    let l1 = L1Repr::parse(&L1Entry::new_unchecked(&l1_bytes[..])).unwrap_or(region.l1);
    let mut rows: Vec<Row> = L1_FIELDS
        .iter()
        .map(|f| {
            let raw = le_value(&l1_bytes, f.range.clone()).unwrap_or(0);
            let p = packed(f.name);
            let stored = p.map(|p| (raw >> p.shift.min(63)) & ((1u64 << p.width.min(63)) - 1));
            let value = known_value(&l1, f.name, f.range.len()).unwrap_or_else(|| match stored {
                Some(bits) => format!("{bits:#x}"),
                None => hex_value(raw, f.range.len()),
            });
            let note = match (p, f.name) {
                (Some(p), _) => format!(
                    "bits {} of the word, stored {:#x}",
                    bits_text(p),
                    stored.unwrap_or(0)
                ),
                (None, "attributes") => attributes_note(l1.attributes),
                (None, "first_page_size") => "bytes from start_va to the end of its page".into(),
                _ => String::new(),
            };
            Row {
                field: f.name.to_owned(),
                range: f.range.clone(),
                value,
                bytes: l1_bytes.get(f.range.clone()).unwrap_or_default().to_vec(),
                note,
            }
        })
        .collect();
    let l2_bytes = region.l2_bytes();
    let mut va = l1.start_va;
    for (i, _) in region.l2.iter().enumerate() {
        let index = u32::try_from(i).unwrap_or(u32::MAX);
        let base = i.saturating_mul(L2_ENTRY_LEN);
        let piece = l1.page_len(index).unwrap_or(0);
        let sdram = l1
            .l2_entry_addr(index)
            .map_or_else(|| "?".to_owned(), |a| hex_value(a.into(), 4));
        for f in L2_FIELDS {
            let range = base.saturating_add(f.range.start)..base.saturating_add(f.range.end);
            let raw = le_value(&l2_bytes, range.clone()).unwrap_or(0);
            rows.push(Row {
                field: format!("l2[{i}].{}", f.name),
                range: range.clone(),
                value: hex_value(raw, f.range.len()),
                bytes: l2_bytes.get(range).unwrap_or_default().to_vec(),
                note: format!(
                    "at SDRAM {sdram}: VA {} holds {piece} bytes",
                    hex_value(va, 8)
                ),
            });
        }
        va = va.saturating_add(u64::from(piece));
    }
    rows
}

/// The `--format json` object (keys of the CLI contract first; more may be added).
#[derive(Debug, Serialize)]
pub struct AttJson {
    /// The level-1 entry's fields.
    pub l1: L1Json,
    /// The level-2 entries: physical addresses, in page order.
    pub l2: Vec<String>,
    /// The 24 bytes of the L1 entry, lowercase hex.
    pub l1_hex: String,
    /// The L2 entries as written from `l2_pointer`, lowercase hex.
    pub l2_hex: String,
    /// Byte ranges `[start, end)` of the L1 fields (packed fields give their word).
    pub ranges: Ranges,
    /// Bit ranges `[low, high)` of the fields packed into one little-endian word.
    pub bits: Ranges,
    /// Exact length of the region the entry bounds \[bytes\].
    pub region_len: u64,
}

/// The L1 entry's fields (`l1` in the contract).
#[derive(Debug, Serialize)]
pub struct L1Json {
    start_va: String,
    page_count: u32,
    first_page_size: u16,
    attributes: String,
    l2_pointer: String,
    last_page_len: u16,
    ptag: String,
    generation: u16,
}

/// The JSON object of `region`.
#[must_use]
pub fn json(region: &AttRegionRepr) -> AttJson {
    let l1 = &region.l1;
    AttJson {
        l1: L1Json {
            start_va: hex_value(l1.start_va, l1_field::START_VA.len()),
            page_count: l1.page_count,
            first_page_size: l1.first_page_size,
            attributes: hex_value(l1.attributes.bits().into(), l1_field::ATTRIBUTES.len()),
            l2_pointer: hex_value(l1.l2_pointer.into(), l1_field::L2_POINTER.len()),
            last_page_len: l1.last_page_len,
            ptag: hex_value(l1.ptag.raw().into(), l1_field::PTAG.len()),
            generation: l1.generation,
        },
        l2: region
            .l2
            .iter()
            .map(|e| hex_value(e.phys_addr.into(), l2_field::PHYS_ADDR.len()))
            .collect(),
        l1_hex: hex_compact(&region.l1_bytes()),
        l2_hex: hex_compact(&region.l2_bytes()),
        ranges: Ranges::from_fields(L1_FIELDS),
        bits: Ranges(
            L1_PACKED_FIELDS
                .iter()
                .map(|p| {
                    let low = p.shift as usize;
                    (p.name.to_owned(), low..low + p.width as usize)
                })
                .collect(),
        ),
        region_len: l1.region_len(),
    }
}

/// The table form: a title, the field table and the bytes of both levels.
#[must_use]
pub fn text(region: &AttRegionRepr) -> String {
    let l1 = &region.l1;
    let mut out = format!(
        "ATT entries for {} bytes at VA {}: L1 entry (24 bytes) + {} L2 entries ({} bytes each, from SDRAM {})\n",
        l1.region_len(),
        hex_value(l1.start_va, 8),
        region.l2.len(),
        L2_ENTRY_LEN,
        hex_value(l1.l2_pointer.into(), 4)
    );
    out.push_str(&table(&rows(region)));
    out.push_str(&format!("l1_hex: {}\n", hex_compact(&region.l1_bytes())));
    out.push_str(&format!("l2_hex: {}\n", hex_compact(&region.l2_bytes())));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use via_abi::{ProtectionTag, RegionSpec};

    fn region() -> AttRegionRepr {
        AttRegionRepr::build(&RegionSpec {
            va: 0x4000_0F00,
            len: 6000,
            pages: &[0x0012_3F00, 0x0045_6000, 0x0078_9000],
            attributes: MemAttributes::VALID | MemAttributes::ENABLE_RDMA_WRITE,
            ptag: ProtectionTag(0x22),
            generation: 5,
            l2_pointer: 0x40,
        })
        .expect("valid region")
    }

    #[test]
    fn one_row_per_l1_field_then_per_l2_entry() {
        let r = region();
        let rows = rows(&r);
        assert_eq!(rows.len(), L1_FIELDS.len() + 3 * L2_FIELDS.len());
        for (row, f) in rows.iter().zip(L1_FIELDS) {
            assert_eq!((row.field.as_str(), &row.range), (f.name, &f.range));
            assert_eq!(row.bytes, r.l1_bytes()[f.range.clone()]);
        }
        let by_name = |n: &str| rows.iter().find(|r| r.field == n).expect(n).clone();
        assert_eq!(by_name("attributes").note, "valid, rdma-write");
        assert_eq!(by_name("first_page_size").value, "256");
        assert_eq!(by_name("l2[1].phys_addr").range, 4..8);
        assert_eq!(
            by_name("l2[2].phys_addr").note,
            "at SDRAM 0x00000048: VA 0x0000000040002000 holds 1648 bytes"
        );
    }

    #[test]
    fn json_and_text_agree_with_the_bytes() {
        let r = region();
        let j = json(&r);
        assert_eq!(j.l1_hex, hex_compact(&r.l1_bytes()));
        assert_eq!(j.l2, ["0x00123f00", "0x00456000", "0x00789000"]);
        assert_eq!(j.region_len, 6000);
        let t = text(&r);
        assert!(t.starts_with("ATT entries for 6000 bytes at VA 0x0000000040000f00"));
        assert!(t.ends_with(&format!("l2_hex: {}\n", j.l2_hex)));
    }
}
