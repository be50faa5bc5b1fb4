//! The 32-byte control segment that opens every VI descriptor (VIA 1.0), little-endian.
//!
//! | bytes | field | name |
//! |---|---|---|
//! | 0..8 | next descriptor virtual address | `next_va` |
//! | 8..12 | next descriptor memory handle | `next_handle` |
//! | 12..14 | segment count (address + data segments that follow) | `seg_count` |
//! | 14..16 | control ([`Control`]) | `control` |
//! | 16..20 | reserved | `reserved` |
//! | 20..24 | immediate data | `immediate` |
//! | 24..28 | total length \[bytes\] | `length` |
//! | 28..32 | status ([`Status`]) | `status` |

use super::bits::{Control, Status};
use crate::endian::{set_u16_le, set_u32_le, set_u64_le, u16_le, u32_le, u64_le};
use crate::handle::MemHandle;
use crate::{Error, FieldInfo};

/// Byte ranges of the control segment fields (VIA 1.0).
pub mod field {
    use crate::Field;

    /// Next descriptor virtual address (8 bytes).
    pub const NEXT_VA: Field = 0..8;
    /// Next descriptor memory handle (4 bytes).
    pub const NEXT_HANDLE: Field = 8..12;
    /// Segment count: address + data segments that follow (2 bytes).
    pub const SEG_COUNT: Field = 12..14;
    /// Control word (2 bytes).
    pub const CONTROL: Field = 14..16;
    /// Reserved (4 bytes).
    pub const RESERVED: Field = 16..20;
    /// Immediate data (4 bytes).
    pub const IMMEDIATE: Field = 20..24;
    /// Total length \[bytes\] (4 bytes).
    pub const LENGTH: Field = 24..28;
    /// Status word (4 bytes).
    pub const STATUS: Field = 28..32;
}

/// Length of the control segment \[bytes\].
pub const CONTROL_SEGMENT_LEN: usize = field::STATUS.end;

/// Field table of the control segment, in byte order.
pub const FIELDS: &[FieldInfo] = &[
    FieldInfo {
        name: "next_va",
        range: field::NEXT_VA,
    },
    FieldInfo {
        name: "next_handle",
        range: field::NEXT_HANDLE,
    },
    FieldInfo {
        name: "seg_count",
        range: field::SEG_COUNT,
    },
    FieldInfo {
        name: "control",
        range: field::CONTROL,
    },
    FieldInfo {
        name: "reserved",
        range: field::RESERVED,
    },
    FieldInfo {
        name: "immediate",
        range: field::IMMEDIATE,
    },
    FieldInfo {
        name: "length",
        range: field::LENGTH,
    },
    FieldInfo {
        name: "status",
        range: field::STATUS,
    },
];

const LAYOUT: &str = "VI descriptor control segment";

/// A view of a VI descriptor control segment over a byte buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlSegment<T: AsRef<[u8]>> {
    buffer: T,
}

view_basics!(ControlSegment, fixed CONTROL_SEGMENT_LEN, LAYOUT);

impl<T: AsRef<[u8]>> ControlSegment<T> {
    /// Next descriptor virtual address (0 ends the chain).
    pub fn next_va(&self) -> u64 {
        u64_le(self.buffer.as_ref(), field::NEXT_VA)
    }

    /// Memory handle of the next descriptor.
    pub fn next_handle(&self) -> MemHandle {
        MemHandle(u32_le(self.buffer.as_ref(), field::NEXT_HANDLE))
    }

    /// Number of address + data segments that follow.
    pub fn seg_count(&self) -> u16 {
        u16_le(self.buffer.as_ref(), field::SEG_COUNT)
    }

    /// Control word.
    pub fn control(&self) -> Control {
        Control::from_bits_retain(u16_le(self.buffer.as_ref(), field::CONTROL))
    }

    /// Reserved word (VIA 1.0 gives it no meaning; kept for lossless decoding).
    pub fn reserved(&self) -> u32 {
        u32_le(self.buffer.as_ref(), field::RESERVED)
    }

    /// Immediate data.
    pub fn immediate(&self) -> u32 {
        u32_le(self.buffer.as_ref(), field::IMMEDIATE)
    }

    /// Total length \[bytes\]: the sum of the data segment lengths on a send queue, the
    /// bytes received once a receive descriptor completes.
    pub fn length(&self) -> u32 {
        u32_le(self.buffer.as_ref(), field::LENGTH)
    }

    /// Status word.
    pub fn status(&self) -> Status {
        Status::from_bits_retain(u32_le(self.buffer.as_ref(), field::STATUS))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ControlSegment<T> {
    /// Sets the next descriptor virtual address.
    pub fn set_next_va(&mut self, v: u64) {
        set_u64_le(self.buffer.as_mut(), field::NEXT_VA, v);
    }

    /// Sets the next descriptor memory handle.
    pub fn set_next_handle(&mut self, v: MemHandle) {
        set_u32_le(self.buffer.as_mut(), field::NEXT_HANDLE, v.raw());
    }

    /// Sets the segment count.
    pub fn set_seg_count(&mut self, v: u16) {
        set_u16_le(self.buffer.as_mut(), field::SEG_COUNT, v);
    }

    /// Sets the control word.
    pub fn set_control(&mut self, v: Control) {
        set_u16_le(self.buffer.as_mut(), field::CONTROL, v.bits());
    }

    /// Sets the reserved word.
    pub fn set_reserved(&mut self, v: u32) {
        set_u32_le(self.buffer.as_mut(), field::RESERVED, v);
    }

    /// Sets the immediate data.
    pub fn set_immediate(&mut self, v: u32) {
        set_u32_le(self.buffer.as_mut(), field::IMMEDIATE, v);
    }

    /// Sets the total length \[bytes\].
    pub fn set_length(&mut self, v: u32) {
        set_u32_le(self.buffer.as_mut(), field::LENGTH, v);
    }

    /// Sets the status word.
    pub fn set_status(&mut self, v: Status) {
        set_u32_le(self.buffer.as_mut(), field::STATUS, v.bits());
    }
}

/// The fields of a control segment as plain values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ControlSegmentRepr {
    /// Next descriptor virtual address.
    pub next_va: u64,
    /// Next descriptor memory handle.
    pub next_handle: MemHandle,
    /// Address + data segments that follow.
    pub seg_count: u16,
    /// Control word.
    pub control: Control,
    /// Reserved word.
    pub reserved: u32,
    /// Immediate data.
    pub immediate: u32,
    /// Total length \[bytes\].
    pub length: u32,
    /// Status word.
    pub status: Status,
}

impl ControlSegmentRepr {
    /// Reads every field; fails only if the buffer is shorter than 32 bytes.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(seg: &ControlSegment<&T>) -> Result<Self, Error> {
        seg.check_len()?;
        Ok(ControlSegmentRepr {
            next_va: seg.next_va(),
            next_handle: seg.next_handle(),
            seg_count: seg.seg_count(),
            control: seg.control(),
            reserved: seg.reserved(),
            immediate: seg.immediate(),
            length: seg.length(),
            status: seg.status(),
        })
    }

    /// Bytes [`ControlSegmentRepr::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        CONTROL_SEGMENT_LEN
    }

    /// Writes every field.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, seg: &mut ControlSegment<T>) {
        seg.set_next_va(self.next_va);
        seg.set_next_handle(self.next_handle);
        seg.set_seg_count(self.seg_count);
        seg.set_control(self.control);
        seg.set_reserved(self.reserved);
        seg.set_immediate(self.immediate);
        seg.set_length(self.length);
        seg.set_status(self.status);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A control segment written by hand from the VIA 1.0 table.
    const BYTES: [u8; 32] = [
        0x40, 0x30, 0x20, 0x10, 0x00, 0x00, 0x00, 0x00, // next VA 0x1020_3040
        0x05, 0x00, 0x10, 0x00, // next handle 0x0010_0005
        0x02, 0x00, // seg count 2
        0x05, 0x00, // control: RDMA write | immediate
        0x00, 0x00, 0x00, 0x00, // reserved
        0xEF, 0xBE, 0xAD, 0xDE, // immediate 0xDEADBEEF
        0x00, 0x10, 0x00, 0x00, // length 4096
        0x01, 0x00, 0x02, 0x00, // status: done, op RDMA write
    ];

    #[test]
    fn field_table_covers_32_bytes() {
        crate::assert_field_table(FIELDS, 32);
    }

    #[test]
    fn decode_spec_bytes() {
        let seg = ControlSegment::new_checked(&BYTES[..]).expect("32 bytes");
        let r = ControlSegmentRepr::parse(&seg).expect("parse");
        assert_eq!(r.next_va, 0x1020_3040);
        assert_eq!(r.next_handle, MemHandle(0x0010_0005));
        assert_eq!(r.seg_count, 2);
        assert_eq!(r.control.bits(), 0x5);
        assert_eq!(r.reserved, 0);
        assert_eq!(r.immediate, 0xDEAD_BEEF);
        assert_eq!(r.length, 4096);
        assert_eq!(r.status.bits(), 0x0002_0001);
    }

    #[test]
    fn encode_spec_bytes() {
        let r = ControlSegmentRepr {
            next_va: 0x1020_3040,
            next_handle: MemHandle(0x0010_0005),
            seg_count: 2,
            control: Control::from_bits_retain(5),
            reserved: 0,
            immediate: 0xDEAD_BEEF,
            length: 4096,
            status: Status::from_bits_retain(0x0002_0001),
        };
        let mut buf = [0xFFu8; 32];
        r.emit(&mut ControlSegment::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn short_buffer_is_an_error() {
        let err = ControlSegment::new_checked(&BYTES[..31]).expect_err("short");
        assert_eq!(
            err,
            Error::Truncated {
                layout: LAYOUT,
                need: 32,
                got: 31
            }
        );
        let view = ControlSegment::new_unchecked(&BYTES[..31]);
        assert!(ControlSegmentRepr::parse(&view).is_err());
        assert_eq!(view.status().bits(), 0, "missing bytes read as zero");
    }

    proptest! {
        #[test]
        fn round_trip(next_va in any::<u64>(), h in any::<u32>(), n in any::<u16>(),
                      c in any::<u16>(), rsv in any::<u32>(), imm in any::<u32>(),
                      len in any::<u32>(), st in any::<u32>()) {
            let r = ControlSegmentRepr {
                next_va, next_handle: MemHandle(h), seg_count: n,
                control: Control::from_bits_retain(c), reserved: rsv, immediate: imm,
                length: len, status: Status::from_bits_retain(st),
            };
            let mut buf = vec![0u8; r.buffer_len()];
            r.emit(&mut ControlSegment::new_unchecked(&mut buf[..]));
            let back = ControlSegmentRepr::parse(&ControlSegment::new_unchecked(&buf[..]));
            prop_assert_eq!(back, Ok(r));
        }
    }
}
