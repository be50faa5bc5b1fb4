//! Typed views of every layout the HVIA-GE simulator shares between host, card and wire.
//!
//! This crate owns bytes-in-memory formats only: no timing, no model state, no dependency
//! on the simulator kernel. Each layout follows the smoltcp `wire` style:
//!
//! * a view `Xxx<T: AsRef<[u8]>> { buffer: T }` with `new_unchecked`, `new_checked`
//!   (rejects short buffers with [`Error::Truncated`]), `check_len`, `into_inner`,
//!   getters, and `set_*` setters when `T: AsMut<[u8]>`;
//! * a `pub mod field` declaring each field's byte range exactly once;
//! * a static `FIELDS: &[FieldInfo]` table (name + byte range) for tools that print layouts;
//! * a plain `XxxRepr` with `parse`, `emit` and `buffer_len`.
//!
//! Multi-byte fields are little-endian for everything that lives in host memory, card SDRAM
//! or on the PCI bus (VIA 1.0 descriptors, ATT entries, the doorbell record, DP83820
//! descriptors) and network byte order (big-endian) for what travels on the Ethernet wire.
//!
//! No input makes this crate panic: `new_checked` and the `parse` functions return errors
//! for short or malformed buffers, and unknown encodings parse to values (`Unknown(raw)`,
//! flag types that keep unknown bits). Accessors on a view built with `new_unchecked` over a
//! buffer that is too short read missing bytes as zero and drop writes to them (design
//! choice: total functions instead of smoltcp's panics, so that no byte string can crash
//! the simulator).
//!
//! | module | layout | source |
//! |---|---|---|
//! | [`descriptor`] | VI descriptor: control, address and data segments | VIA 1.0 |
//! | [`handle`] | memory handle, protection tag, memory attributes | VIA 1.0 + design choice |
//! | [`att`] | ATT level-1 (24 B) and level-2 (4 B) entries in card SDRAM | HVIA-GE paper + design choice |
//! | [`bar`] | the card's BAR0 register map (registration, VI commands, doorbells) | design choice |
//! | [`doorbell`] | 16-byte doorbell record written by the host | design choice |
//! | [`ethernet`] | Ethernet II header, frame-size constants | IEEE 802.3 |
//! | [`wire_header`] | VIA header after the Ethernet header (40 B) | design choice |
//! | [`dp83820`] | DP83820 MAC buffer descriptor (16 B, 32-bit addressing) | DP83820 datasheet |
#![forbid(unsafe_code)]

#[macro_use]
mod view;
pub mod att;
pub mod bar;
pub mod descriptor;
pub mod doorbell;
pub mod dp83820;
mod endian;
pub mod ethernet;
pub mod handle;
pub mod wire_header;

pub use att::{AttError, AttRegionRepr, L1Entry, L1Repr, L2Entry, L2Repr, RegionSpec};
pub use descriptor::{
    AddressSegment, AddressSegmentRepr, CompletedOp, Control, ControlSegment, ControlSegmentRepr,
    DataSegment, DataSegmentRepr, DescriptorFault, DescriptorRepr, FieldSpan, Op, Status,
    WorkQueue, DESCRIPTOR_ALIGN,
};
pub use doorbell::{Doorbell, DoorbellRepr, Queue};
pub use ethernet::{EtherType, EthernetFrame, EthernetRepr, MacAddr};
pub use handle::{MemAttributes, MemHandle, ProtectionTag};
pub use wire_header::{WireFlags, WireHeader, WireHeaderRepr, WireOp};

/// A field's position inside a layout: a half-open byte range `start..end`.
pub type Field = core::ops::Range<usize>;

/// A field that runs from its start to the end of the buffer (e.g. a frame payload).
pub type Rest = core::ops::RangeFrom<usize>;

/// One row of a layout's field table: the field's stable name and its byte range.
///
/// Names match the JSON keys of the `hvia layout` command (see the CLI contract) where
/// that command shows the field, e.g. `next_va`, `seg_count`, `start_va`, `l2_pointer`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldInfo {
    /// Stable, snake_case field name.
    pub name: &'static str,
    /// Byte range of the field, relative to the start of the layout.
    pub range: Field,
}

/// Errors from checking or parsing a layout.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The buffer is shorter than the layout (or than a length field inside it) requires.
    #[error("{layout}: buffer too short: need {need} bytes, got {got}")]
    Truncated {
        /// Human-readable name of the layout.
        layout: &'static str,
        /// Bytes needed \[bytes\].
        need: usize,
        /// Bytes available \[bytes\].
        got: usize,
    },
    /// A field holds a value this crate cannot represent or that contradicts another field.
    #[error("{layout}: malformed: {reason}")]
    Malformed {
        /// Human-readable name of the layout.
        layout: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
    /// A field holds a value that selects a format this crate does not implement
    /// (e.g. a wire-header version other than 1).
    #[error("{layout}: unsupported {field} {value:#x}")]
    Unsupported {
        /// Human-readable name of the layout.
        layout: &'static str,
        /// Name of the field.
        field: &'static str,
        /// The raw value found.
        value: u64,
    },
}

/// Returns `Err(Error::Truncated)` unless `got >= need`.
pub(crate) fn require_len(layout: &'static str, need: usize, got: usize) -> Result<(), Error> {
    if got < need {
        Err(Error::Truncated { layout, need, got })
    } else {
        Ok(())
    }
}

/// Checks that a field table is sorted, non-overlapping and ends at `len` (test helper).
#[cfg(test)]
pub(crate) fn assert_field_table(fields: &[FieldInfo], len: usize) {
    let mut next = 0;
    for f in fields {
        assert_eq!(f.range.start, next, "gap or overlap before {}", f.name);
        assert!(f.range.end > f.range.start, "empty field {}", f.name);
        next = f.range.end;
    }
    assert_eq!(next, len, "table does not cover the layout");
}
