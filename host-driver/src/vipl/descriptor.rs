//! Building descriptors the way a VIPL program fills a `VIP_DESCRIPTOR`: constructors
//! for the common shapes (send, receive, RDMA write, RDMA read) as via-abi [`DescriptorRepr`]s, and
//! [`Vipl::build_descriptor`], which stores one into registered memory at its cost.
//!
//! The status and Next fields are written as zero; the post call owns them afterwards.

use super::{VipError, VipResult, Vipl};
use via_abi::{AddressSegmentRepr, Control, DataSegmentRepr, DescriptorRepr, MemHandle, Op};

/// A data segment: `len` bytes of the local buffer at `va`, registered under `handle`.
#[must_use]
pub fn data_segment(va: u64, handle: MemHandle, len: u32) -> DataSegmentRepr {
    DataSegmentRepr {
        local_va: va,
        local_handle: handle,
        length: len,
    }
}

fn total(segments: &[DataSegmentRepr]) -> u32 {
    segments
        .iter()
        .fold(0u32, |t, s| t.saturating_add(s.length))
}

fn control(op: Op, immediate: Option<u32>) -> Control {
    let c = Control::from_op(op);
    if immediate.is_some() {
        c | Control::IMMEDIATE
    } else {
        c
    }
}

/// A send descriptor gathering `segments` (total length = their sum).
#[must_use]
pub fn send_descriptor(segments: Vec<DataSegmentRepr>, immediate: Option<u32>) -> DescriptorRepr {
    DescriptorRepr {
        control: control(Op::SendRecv, immediate),
        immediate: immediate.unwrap_or(0),
        length: total(&segments),
        data: segments,
        ..DescriptorRepr::default()
    }
}

/// A receive descriptor scattering into `segments` (the card writes the length).
#[must_use]
pub fn recv_descriptor(segments: Vec<DataSegmentRepr>) -> DescriptorRepr {
    DescriptorRepr {
        control: Control::from_op(Op::SendRecv),
        data: segments,
        ..DescriptorRepr::default()
    }
}

/// An RDMA write of `local` segments to the peer's buffer at `remote_va`, registered
/// there under `remote_handle`.
#[must_use]
pub fn rdma_write_descriptor(
    local: Vec<DataSegmentRepr>,
    remote_va: u64,
    remote_handle: MemHandle,
    immediate: Option<u32>,
) -> DescriptorRepr {
    DescriptorRepr {
        control: control(Op::RdmaWrite, immediate),
        immediate: immediate.unwrap_or(0),
        length: total(&local),
        address: Some(AddressSegmentRepr {
            remote_va,
            remote_handle,
            reserved: 0,
        }),
        data: local,
        ..DescriptorRepr::default()
    }
}

/// An RDMA read of `length` bytes from the peer's buffer at `remote_va` (registered
/// there under `remote_handle` with RDMA read enabled) into the `local` segments (their
/// lengths add up to the total read).
#[must_use]
pub fn rdma_read_descriptor(
    local: Vec<DataSegmentRepr>,
    remote_va: u64,
    remote_handle: MemHandle,
) -> DescriptorRepr {
    DescriptorRepr {
        control: Control::from_op(Op::RdmaRead),
        ..rdma_write_descriptor(local, remote_va, remote_handle, None)
    }
}

impl Vipl {
    /// Stores `desc` at `va` (registered memory, 64-byte aligned for posting):
    /// `descriptor_build` cycles plus the stores of its bytes.
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: a descriptor via-abi cannot encode, or an unmapped `va`.
    pub async fn build_descriptor(&self, va: u64, desc: &DescriptorRepr) -> VipResult<()> {
        let bytes = desc.to_bytes().map_err(|_| VipError::InvalidParameter)?;
        self.compute(self.cfg.costs.descriptor_build).await;
        self.write_mem(va, &bytes).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_follow_via_1_0() {
        let h = MemHandle(0x0010_0001);
        let s = send_descriptor(
            vec![data_segment(0x1000, h, 4), data_segment(0x2000, h, 6)],
            Some(9),
        );
        assert_eq!(s.seg_count(), Some(2));
        assert_eq!(s.length, 10);
        assert!(s.control.contains(Control::IMMEDIATE));
        assert!(s.validate(via_abi::WorkQueue::Send).is_ok());
        let r = rdma_write_descriptor(
            vec![data_segment(0x1000, h, 4)],
            0xBF00_3000,
            MemHandle(7),
            None,
        );
        assert_eq!(r.buffer_len(), 64);
        assert_eq!(r.control.op(), Op::RdmaWrite);
        assert!(r.validate(via_abi::WorkQueue::Send).is_ok());
        let rd = rdma_read_descriptor(vec![data_segment(0x1000, h, 9)], 0xBF00_3000, MemHandle(7));
        assert_eq!(rd.control.op(), Op::RdmaRead);
        assert_eq!((rd.length, rd.buffer_len()), (9, 64));
        assert!(rd.validate(via_abi::WorkQueue::Send).is_ok());
        let v = recv_descriptor(vec![data_segment(0x1000, h, 64)]);
        assert!(v.validate(via_abi::WorkQueue::Receive).is_ok());
    }
}
