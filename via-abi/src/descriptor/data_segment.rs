//! The 16-byte data segment of a VI descriptor (VIA 1.0), little-endian: one local buffer.
//!
//! | bytes | field | name |
//! |---|---|---|
//! | 0..8 | local buffer virtual address | `local_va` |
//! | 8..12 | local memory handle | `local_handle` |
//! | 12..16 | segment length \[bytes\] | `length` |

use crate::endian::{set_u32_le, set_u64_le, u32_le, u64_le};
use crate::handle::MemHandle;
use crate::{Error, FieldInfo};

/// Byte ranges of the data segment fields (VIA 1.0).
pub mod field {
    use crate::Field;

    /// Local buffer virtual address (8 bytes).
    pub const LOCAL_VA: Field = 0..8;
    /// Local memory handle (4 bytes).
    pub const LOCAL_HANDLE: Field = 8..12;
    /// Segment length \[bytes\] (4 bytes).
    pub const LENGTH: Field = 12..16;
}

/// Length of a data segment \[bytes\].
pub const DATA_SEGMENT_LEN: usize = field::LENGTH.end;

/// Field table of the data segment, in byte order.
pub const FIELDS: &[FieldInfo] = &[
    FieldInfo {
        name: "local_va",
        range: field::LOCAL_VA,
    },
    FieldInfo {
        name: "local_handle",
        range: field::LOCAL_HANDLE,
    },
    FieldInfo {
        name: "length",
        range: field::LENGTH,
    },
];

const LAYOUT: &str = "VI descriptor data segment";

/// A view of a VI descriptor data segment over a byte buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataSegment<T: AsRef<[u8]>> {
    buffer: T,
}

view_basics!(DataSegment, fixed DATA_SEGMENT_LEN, LAYOUT);

impl<T: AsRef<[u8]>> DataSegment<T> {
    /// Local buffer virtual address.
    pub fn local_va(&self) -> u64 {
        u64_le(self.buffer.as_ref(), field::LOCAL_VA)
    }

    /// Local memory handle.
    pub fn local_handle(&self) -> MemHandle {
        MemHandle(u32_le(self.buffer.as_ref(), field::LOCAL_HANDLE))
    }

    /// Segment length \[bytes\].
    pub fn length(&self) -> u32 {
        u32_le(self.buffer.as_ref(), field::LENGTH)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> DataSegment<T> {
    /// Sets the local buffer virtual address.
    pub fn set_local_va(&mut self, v: u64) {
        set_u64_le(self.buffer.as_mut(), field::LOCAL_VA, v);
    }

    /// Sets the local memory handle.
    pub fn set_local_handle(&mut self, v: MemHandle) {
        set_u32_le(self.buffer.as_mut(), field::LOCAL_HANDLE, v.raw());
    }

    /// Sets the segment length \[bytes\].
    pub fn set_length(&mut self, v: u32) {
        set_u32_le(self.buffer.as_mut(), field::LENGTH, v);
    }
}

/// The fields of a data segment as plain values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DataSegmentRepr {
    /// Local buffer virtual address.
    pub local_va: u64,
    /// Local memory handle.
    pub local_handle: MemHandle,
    /// Segment length \[bytes\].
    pub length: u32,
}

impl DataSegmentRepr {
    /// Reads every field; fails only if the buffer is shorter than 16 bytes.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(seg: &DataSegment<&T>) -> Result<Self, Error> {
        seg.check_len()?;
        Ok(DataSegmentRepr {
            local_va: seg.local_va(),
            local_handle: seg.local_handle(),
            length: seg.length(),
        })
    }

    /// Bytes [`DataSegmentRepr::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        DATA_SEGMENT_LEN
    }

    /// Writes every field.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, seg: &mut DataSegment<T>) {
        seg.set_local_va(self.local_va);
        seg.set_local_handle(self.local_handle);
        seg.set_length(self.length);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const BYTES: [u8; 16] = [
        0x34, 0x12, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00, // local VA 0x4000_1234
        0x01, 0x00, 0x10, 0x00, // handle 0x0010_0001
        0x04, 0x00, 0x00, 0x00, // length 4
    ];

    #[test]
    fn field_table_covers_16_bytes() {
        crate::assert_field_table(FIELDS, 16);
    }

    #[test]
    fn both_ways() {
        let r = DataSegmentRepr::parse(&DataSegment::new_unchecked(&BYTES[..])).expect("16 bytes");
        assert_eq!(r.local_va, 0x4000_1234);
        assert_eq!(r.local_handle, MemHandle(0x0010_0001));
        assert_eq!(r.length, 4);
        let mut buf = [0x55u8; 16];
        r.emit(&mut DataSegment::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn short_buffer_is_an_error() {
        assert!(matches!(
            DataSegment::new_checked(&BYTES[..0]),
            Err(Error::Truncated {
                need: 16,
                got: 0,
                ..
            })
        ));
    }

    proptest! {
        #[test]
        fn round_trip(va in any::<u64>(), h in any::<u32>(), len in any::<u32>()) {
            let r = DataSegmentRepr { local_va: va, local_handle: MemHandle(h), length: len };
            let mut buf = [0u8; 16];
            r.emit(&mut DataSegment::new_unchecked(&mut buf[..]));
            prop_assert_eq!(DataSegmentRepr::parse(&DataSegment::new_unchecked(&buf[..])), Ok(r));
        }
    }
}
