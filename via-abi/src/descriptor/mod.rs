//! VI descriptors, bit-exact to VIA 1.0 (little-endian host, 64-byte aligned in host memory).
//!
//! A descriptor is a 32-byte control segment followed by `seg_count` 16-byte segments:
//! for RDMA write and RDMA read the first of them is an address segment (the remote
//! buffer), the rest are data segments (local buffers); for send/receive all are data
//! segments. An RDMA write with one local buffer is 32 + 16 + 16 = 64 bytes:
//!
//! | bytes | layout |
//! |---|---|
//! | 0..32 | [`ControlSegment`] |
//! | 32..48 | [`AddressSegment`] (RDMA only) |
//! | 48..64 | [`DataSegment`] |
//!
//! Files: `bits` ([`Control`], [`Status`] and their operation codes), [`control_segment`],
//! [`address_segment`], [`data_segment`] (the three segment views), `repr` (the whole
//! descriptor as [`DescriptorRepr`] and its format-error check, [`DescriptorFault`]).

pub mod address_segment;
mod bits;
pub mod control_segment;
pub mod data_segment;
mod repr;

pub use address_segment::{AddressSegment, AddressSegmentRepr, ADDRESS_SEGMENT_LEN};
pub use bits::{CompletedOp, Control, Op, Status};
pub use control_segment::{ControlSegment, ControlSegmentRepr, CONTROL_SEGMENT_LEN};
pub use data_segment::{DataSegment, DataSegmentRepr, DATA_SEGMENT_LEN};
pub use repr::{DescriptorFault, DescriptorRepr, FieldSpan, WorkQueue};

/// Alignment of a descriptor in host memory \[bytes\] (VIA 1.0: descriptors are 64-byte
/// aligned).
pub const DESCRIPTOR_ALIGN: usize = 64;

/// Length of one address or data segment \[bytes\] (VIA 1.0).
pub const SEGMENT_LEN: usize = 16;

/// Total length of a descriptor with `seg_count` address + data segments \[bytes\]:
/// `32 + 16 * seg_count` (at most 1 048 592, so it cannot overflow).
pub const fn descriptor_len(seg_count: u16) -> usize {
    // The descriptor ends where segment number `seg_count` would start.
    segment_offset(seg_count)
}

/// Byte offset of segment number `index` (0 = the first segment after the control
/// segment) from the start of the descriptor.
pub const fn segment_offset(index: u16) -> usize {
    CONTROL_SEGMENT_LEN + SEGMENT_LEN * index as usize
}

/// Whether `va` satisfies the descriptor alignment of [`DESCRIPTOR_ALIGN`].
pub const fn is_descriptor_aligned(va: u64) -> bool {
    va % DESCRIPTOR_ALIGN as u64 == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_and_offsets() {
        assert_eq!(descriptor_len(0), 32);
        assert_eq!(descriptor_len(2), 64, "RDMA write with one buffer");
        assert_eq!(descriptor_len(u16::MAX), 32 + 16 * 65_535);
        assert_eq!(segment_offset(0), 32);
        assert_eq!(segment_offset(1), 48);
        assert!(is_descriptor_aligned(0x1000_0040));
        assert!(!is_descriptor_aligned(0x1000_0020));
    }
}
