//! The doorbell record: what the host writes to the card to announce a newly posted
//! descriptor (VipPostSend / VipPostRecv). Little-endian, 16 bytes.
//!
//! VIA 1.0 leaves the doorbell mechanism to the VI provider and the HVIA-GE paper only
//! says a doorbell tells the protocol engine a new transaction exists, so this layout is a
//! design choice:
//!
//! | bytes | field | name | why |
//! |---|---|---|---|
//! | 0..8 | descriptor virtual address | `desc_va` | with `HEAD`: the descriptor, translated through the ATT and fetched by DMA; without: informational, the engine does not use it |
//! | 8..12 | descriptor memory handle | `desc_handle` | descriptors live in registered memory; the handle selects the L1 entry for that translation |
//! | 12..14 | VI number | `vi` | selects the VI context (work queues, connection) |
//! | 14 | queue: 0 send, 1 receive | `queue` | one doorbell window serves both work queues |
//! | 15 | flags: bit 0 `HEAD`, others written as 0 | `flags` | `HEAD`: the card knows no earlier descriptor of this queue (the VI's first post on it), so the record names the descriptor |
//!
//! **How the engine finds a descriptor.** As the paper puts it, a doorbell only tells the
//! engine that a new transaction exists: the descriptor itself is on the VI's work queue,
//! the VIA 1.0 linked list whose links are each descriptor's Next address and Next
//! handle (control segment bytes 0..12). The provider links a new descriptor into the
//! previous one's Next fields before it rings; the engine remembers the last descriptor
//! it took from each queue and, on a doorbell without `HEAD`, reads that descriptor's
//! Next fields by DMA to find the new one. Only a queue's first post, which has no
//! predecessor, names its descriptor in the record (`HEAD`).
//!
//! The host writes the record as one 16-byte burst (four 32-bit data phases on the system
//! PCI bus) to the card's doorbell window; the model treats the four dwords as one
//! doorbell event.

use crate::descriptor::WorkQueue;
use crate::endian::{set_u16_le, set_u32_le, set_u64_le, set_u8, u16_le, u32_le, u64_le, u8_at};
use crate::handle::MemHandle;
use crate::{Error, FieldInfo};

/// Byte ranges of the doorbell record fields (design choice).
pub mod field {
    use crate::Field;

    /// Virtual address of the posted descriptor (8 bytes).
    pub const DESC_VA: Field = 0..8;
    /// Memory handle of the posted descriptor (4 bytes).
    pub const DESC_HANDLE: Field = 8..12;
    /// VI number (2 bytes).
    pub const VI: Field = 12..14;
    /// Work queue (1 byte).
    pub const QUEUE: Field = 14..15;
    /// Flags (1 byte).
    pub const FLAGS: Field = 15..16;
}

/// Flag bit: the record names the descriptor (the queue's first post; see the module doc).
pub const HEAD: u8 = 0x01;

/// Length of a doorbell record \[bytes\].
pub const DOORBELL_LEN: usize = field::FLAGS.end;

/// Field table of the doorbell record, in byte order.
pub const FIELDS: &[FieldInfo] = &[
    FieldInfo {
        name: "desc_va",
        range: field::DESC_VA,
    },
    FieldInfo {
        name: "desc_handle",
        range: field::DESC_HANDLE,
    },
    FieldInfo {
        name: "vi",
        range: field::VI,
    },
    FieldInfo {
        name: "queue",
        range: field::QUEUE,
    },
    FieldInfo {
        name: "flags",
        range: field::FLAGS,
    },
];

const LAYOUT: &str = "doorbell record";

/// The work queue a doorbell names. Values other than 0 and 1 decode to `Unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Queue {
    /// 0: the send queue.
    Send,
    /// 1: the receive queue.
    Receive,
    /// Any other value (raw byte).
    Unknown(u8),
}

impl Queue {
    /// Decodes the queue byte.
    pub const fn from_raw(raw: u8) -> Queue {
        match raw {
            0 => Queue::Send,
            1 => Queue::Receive,
            other => Queue::Unknown(other),
        }
    }

    /// The queue byte.
    pub const fn raw(self) -> u8 {
        match self {
            Queue::Send => 0,
            Queue::Receive => 1,
            Queue::Unknown(raw) => raw,
        }
    }

    /// The work queue, or `None` for an unknown value.
    pub const fn work_queue(self) -> Option<WorkQueue> {
        match self {
            Queue::Send => Some(WorkQueue::Send),
            Queue::Receive => Some(WorkQueue::Receive),
            Queue::Unknown(_) => None,
        }
    }
}

impl From<WorkQueue> for Queue {
    fn from(q: WorkQueue) -> Queue {
        match q {
            WorkQueue::Send => Queue::Send,
            WorkQueue::Receive => Queue::Receive,
        }
    }
}

/// A view of a doorbell record over a byte buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Doorbell<T: AsRef<[u8]>> {
    buffer: T,
}

view_basics!(Doorbell, fixed DOORBELL_LEN, LAYOUT);

impl<T: AsRef<[u8]>> Doorbell<T> {
    /// Virtual address of the posted descriptor.
    pub fn desc_va(&self) -> u64 {
        u64_le(self.buffer.as_ref(), field::DESC_VA)
    }

    /// Memory handle of the posted descriptor.
    pub fn desc_handle(&self) -> MemHandle {
        MemHandle(u32_le(self.buffer.as_ref(), field::DESC_HANDLE))
    }

    /// VI number.
    pub fn vi(&self) -> u16 {
        u16_le(self.buffer.as_ref(), field::VI)
    }

    /// Work queue.
    pub fn queue(&self) -> Queue {
        Queue::from_raw(u8_at(self.buffer.as_ref(), field::QUEUE))
    }

    /// Flags byte.
    pub fn flags(&self) -> u8 {
        u8_at(self.buffer.as_ref(), field::FLAGS)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Doorbell<T> {
    /// Sets the descriptor virtual address.
    pub fn set_desc_va(&mut self, v: u64) {
        set_u64_le(self.buffer.as_mut(), field::DESC_VA, v);
    }

    /// Sets the descriptor memory handle.
    pub fn set_desc_handle(&mut self, v: MemHandle) {
        set_u32_le(self.buffer.as_mut(), field::DESC_HANDLE, v.raw());
    }

    /// Sets the VI number.
    pub fn set_vi(&mut self, v: u16) {
        set_u16_le(self.buffer.as_mut(), field::VI, v);
    }

    /// Sets the work queue.
    pub fn set_queue(&mut self, v: Queue) {
        set_u8(self.buffer.as_mut(), field::QUEUE, v.raw());
    }

    /// Sets the flags byte.
    pub fn set_flags(&mut self, v: u8) {
        set_u8(self.buffer.as_mut(), field::FLAGS, v);
    }
}

/// A doorbell record as plain values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DoorbellRepr {
    /// Virtual address of the posted descriptor.
    pub desc_va: u64,
    /// Memory handle of the posted descriptor.
    pub desc_handle: MemHandle,
    /// VI number.
    pub vi: u16,
    /// Work queue.
    pub queue: Queue,
    /// Flags: [`HEAD`], other bits 0 when written by the host driver.
    pub flags: u8,
}

impl DoorbellRepr {
    /// Reads every field; fails only if the buffer is shorter than 16 bytes.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(db: &Doorbell<&T>) -> Result<Self, Error> {
        db.check_len()?;
        Ok(DoorbellRepr {
            desc_va: db.desc_va(),
            desc_handle: db.desc_handle(),
            vi: db.vi(),
            queue: db.queue(),
            flags: db.flags(),
        })
    }

    /// Bytes [`DoorbellRepr::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        DOORBELL_LEN
    }

    /// Writes every field.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, db: &mut Doorbell<T>) {
        db.set_desc_va(self.desc_va);
        db.set_desc_handle(self.desc_handle);
        db.set_vi(self.vi);
        db.set_queue(self.queue);
        db.set_flags(self.flags);
    }

    /// Whether the record names its descriptor ([`HEAD`]).
    pub const fn is_head(&self) -> bool {
        self.flags & HEAD != 0
    }

    /// The 16 bytes of this record.
    pub fn to_bytes(&self) -> [u8; DOORBELL_LEN] {
        let mut buf = [0u8; DOORBELL_LEN];
        self.emit(&mut Doorbell::new_unchecked(&mut buf[..]));
        buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const BYTES: [u8; 16] = [
        0x40, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, // descriptor VA 0x0800_0040
        0x02, 0x00, 0x10, 0x00, // handle 0x0010_0002
        0x03, 0x00, // VI 3
        0x01, // receive queue
        0x00, // flags
    ];

    #[test]
    fn field_table_covers_16_bytes() {
        crate::assert_field_table(FIELDS, 16);
    }

    #[test]
    fn both_ways() {
        let r = DoorbellRepr::parse(&Doorbell::new_checked(&BYTES[..]).expect("16")).expect("ok");
        assert_eq!(
            r,
            DoorbellRepr {
                desc_va: 0x0800_0040,
                desc_handle: MemHandle(0x0010_0002),
                vi: 3,
                queue: Queue::Receive,
                flags: 0,
            }
        );
        assert_eq!(r.queue.work_queue(), Some(WorkQueue::Receive));
        assert_eq!(r.to_bytes(), BYTES);
    }

    #[test]
    fn unknown_queue_is_a_value() {
        let mut bytes = BYTES;
        bytes[14] = 7;
        let r = DoorbellRepr::parse(&Doorbell::new_unchecked(&bytes[..])).expect("16 bytes");
        assert_eq!(r.queue, Queue::Unknown(7));
        assert_eq!(r.queue.work_queue(), None);
        assert_eq!(r.to_bytes(), bytes);
        assert_eq!(Queue::from(WorkQueue::Send), Queue::Send);
    }

    #[test]
    fn short_buffer_is_an_error() {
        assert!(matches!(
            Doorbell::new_checked(&BYTES[..12]),
            Err(Error::Truncated {
                need: 16,
                got: 12,
                ..
            })
        ));
    }

    proptest! {
        #[test]
        fn round_trip(va in any::<u64>(), h in any::<u32>(), vi in any::<u16>(),
                      q in any::<u8>(), flags in any::<u8>()) {
            let r = DoorbellRepr { desc_va: va, desc_handle: MemHandle(h), vi,
                                   queue: Queue::from_raw(q), flags };
            let bytes = r.to_bytes();
            prop_assert_eq!(DoorbellRepr::parse(&Doorbell::new_unchecked(&bytes[..])), Ok(r));
        }

        #[test]
        fn any_bytes_parse_or_error(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            let parsed = DoorbellRepr::parse(&Doorbell::new_unchecked(&bytes[..]));
            prop_assert_eq!(parsed.is_ok(), bytes.len() >= DOORBELL_LEN);
        }
    }
}
