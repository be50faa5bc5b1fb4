//! The 16-byte address segment of an RDMA descriptor (VIA 1.0), little-endian. It follows
//! the control segment directly and names the remote buffer.
//!
//! | bytes | field | name |
//! |---|---|---|
//! | 0..8 | remote buffer virtual address | `remote_va` |
//! | 8..12 | remote memory handle | `remote_handle` |
//! | 12..16 | reserved | `reserved` |

use crate::endian::{set_u32_le, set_u64_le, u32_le, u64_le};
use crate::handle::MemHandle;
use crate::{Error, FieldInfo};

/// Byte ranges of the address segment fields (VIA 1.0).
pub mod field {
    use crate::Field;

    /// Remote buffer virtual address (8 bytes).
    pub const REMOTE_VA: Field = 0..8;
    /// Remote memory handle (4 bytes).
    pub const REMOTE_HANDLE: Field = 8..12;
    /// Reserved (4 bytes).
    pub const RESERVED: Field = 12..16;
}

/// Length of an address segment \[bytes\].
pub const ADDRESS_SEGMENT_LEN: usize = field::RESERVED.end;

/// Field table of the address segment, in byte order.
pub const FIELDS: &[FieldInfo] = &[
    FieldInfo {
        name: "remote_va",
        range: field::REMOTE_VA,
    },
    FieldInfo {
        name: "remote_handle",
        range: field::REMOTE_HANDLE,
    },
    FieldInfo {
        name: "reserved",
        range: field::RESERVED,
    },
];

const LAYOUT: &str = "VI descriptor address segment";

/// A view of a VI descriptor address segment over a byte buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddressSegment<T: AsRef<[u8]>> {
    buffer: T,
}

view_basics!(AddressSegment, fixed ADDRESS_SEGMENT_LEN, LAYOUT);

impl<T: AsRef<[u8]>> AddressSegment<T> {
    /// Remote buffer virtual address.
    pub fn remote_va(&self) -> u64 {
        u64_le(self.buffer.as_ref(), field::REMOTE_VA)
    }

    /// Remote memory handle.
    pub fn remote_handle(&self) -> MemHandle {
        MemHandle(u32_le(self.buffer.as_ref(), field::REMOTE_HANDLE))
    }

    /// Reserved word.
    pub fn reserved(&self) -> u32 {
        u32_le(self.buffer.as_ref(), field::RESERVED)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> AddressSegment<T> {
    /// Sets the remote buffer virtual address.
    pub fn set_remote_va(&mut self, v: u64) {
        set_u64_le(self.buffer.as_mut(), field::REMOTE_VA, v);
    }

    /// Sets the remote memory handle.
    pub fn set_remote_handle(&mut self, v: MemHandle) {
        set_u32_le(self.buffer.as_mut(), field::REMOTE_HANDLE, v.raw());
    }

    /// Sets the reserved word.
    pub fn set_reserved(&mut self, v: u32) {
        set_u32_le(self.buffer.as_mut(), field::RESERVED, v);
    }
}

/// The fields of an address segment as plain values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct AddressSegmentRepr {
    /// Remote buffer virtual address.
    pub remote_va: u64,
    /// Remote memory handle.
    pub remote_handle: MemHandle,
    /// Reserved word (kept for lossless decoding).
    pub reserved: u32,
}

impl AddressSegmentRepr {
    /// Reads every field; fails only if the buffer is shorter than 16 bytes.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(seg: &AddressSegment<&T>) -> Result<Self, Error> {
        seg.check_len()?;
        Ok(AddressSegmentRepr {
            remote_va: seg.remote_va(),
            remote_handle: seg.remote_handle(),
            reserved: seg.reserved(),
        })
    }

    /// Bytes [`AddressSegmentRepr::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        ADDRESS_SEGMENT_LEN
    }

    /// Writes every field.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, seg: &mut AddressSegment<T>) {
        seg.set_remote_va(self.remote_va);
        seg.set_remote_handle(self.remote_handle);
        seg.set_reserved(self.reserved);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const BYTES: [u8; 16] = [
        0x00, 0x20, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, // remote VA 0x8000_2000
        0x07, 0x00, 0x20, 0x00, // remote handle 0x0020_0007
        0x00, 0x00, 0x00, 0x00, // reserved
    ];

    #[test]
    fn field_table_covers_16_bytes() {
        crate::assert_field_table(FIELDS, 16);
    }

    #[test]
    fn both_ways() {
        let r = AddressSegmentRepr::parse(&AddressSegment::new_unchecked(&BYTES[..]))
            .expect("16 bytes");
        assert_eq!(r.remote_va, 0x8000_2000);
        assert_eq!(r.remote_handle, MemHandle(0x0020_0007));
        assert_eq!(r.reserved, 0);
        let mut buf = [0xAAu8; 16];
        r.emit(&mut AddressSegment::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn short_buffer_is_an_error() {
        assert!(matches!(
            AddressSegment::new_checked(&BYTES[..15]),
            Err(Error::Truncated {
                need: 16,
                got: 15,
                ..
            })
        ));
    }

    proptest! {
        #[test]
        fn round_trip(va in any::<u64>(), h in any::<u32>(), rsv in any::<u32>()) {
            let r = AddressSegmentRepr { remote_va: va, remote_handle: MemHandle(h), reserved: rsv };
            let mut buf = [0u8; 16];
            r.emit(&mut AddressSegment::new_unchecked(&mut buf[..]));
            prop_assert_eq!(AddressSegmentRepr::parse(&AddressSegment::new_unchecked(&buf[..])), Ok(r));
        }
    }
}
