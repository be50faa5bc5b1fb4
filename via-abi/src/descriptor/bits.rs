//! The packed words of the VI descriptor control segment: `Control` (16 bits) and
//! `Status` (32 bits), with their operation codes, bit-exact to VIA 1.0.

use bitflags::bitflags;

/// Operation requested by a descriptor: `Control` bits 1:0 (VIA 1.0 `VIP_CONTROL_OP_*`).
///
/// Every 2-bit value decodes; 3 is the reserved encoding (a format error when posted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// 0: send (on a send queue) or receive (on a receive queue).
    SendRecv,
    /// 1: RDMA write; one address segment follows the control segment.
    RdmaWrite,
    /// 2: RDMA read; one address segment follows the control segment.
    RdmaRead,
    /// 3: reserved encoding.
    Reserved,
}

impl Op {
    /// Decodes bits 1:0 of `raw` (higher bits are ignored).
    pub const fn from_bits(raw: u16) -> Op {
        match raw & Control::OP_MASK {
            0 => Op::SendRecv,
            1 => Op::RdmaWrite,
            2 => Op::RdmaRead,
            _ => Op::Reserved,
        }
    }

    /// The 2-bit encoding.
    pub const fn bits(self) -> u16 {
        match self {
            Op::SendRecv => 0,
            Op::RdmaWrite => 1,
            Op::RdmaRead => 2,
            Op::Reserved => 3,
        }
    }

    /// Whether an address segment follows the control segment (VIA 1.0: RDMA write and
    /// RDMA read descriptors carry the remote buffer in one address segment).
    pub const fn is_rdma(self) -> bool {
        matches!(self, Op::RdmaWrite | Op::RdmaRead)
    }
}

bitflags! {
    /// The control word of a descriptor (control segment bytes 14..16, VIA 1.0).
    ///
    /// Bits 1:0 hold the [`Op`] (read it with [`Control::op`]); bits 15:4 are reserved and
    /// must be zero, else the descriptor completes with a format error. Unknown bits are
    /// kept (`from_bits_retain`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct Control: u16 {
        /// Immediate data is present (VIA 1.0 `VIP_CONTROL_IMMEDIATE`, 0x4).
        const IMMEDIATE = 0x0004;
        /// Queue fence: wait for earlier RDMA reads to finish (VIA 1.0 `VIP_CONTROL_QFENCE`, 0x8).
        const QUEUE_FENCE = 0x0008;
    }
}

impl Control {
    /// Mask of the operation field, bits 1:0 (VIA 1.0 `VIP_CONTROL_OP_MASK`).
    pub const OP_MASK: u16 = 0x0003;
    /// Reserved bits 15:4 (VIA 1.0 `VIP_CONTROL_RESERVED`, 0xFFF0).
    pub const RESERVED_MASK: u16 = 0xFFF0;

    /// A control word with the given operation and no flags.
    pub const fn from_op(op: Op) -> Control {
        Control::from_bits_retain(op.bits())
    }

    /// The operation in bits 1:0.
    pub const fn op(self) -> Op {
        Op::from_bits(self.bits())
    }

    /// The same word with bits 1:0 replaced by `op`.
    pub const fn with_op(self, op: Op) -> Control {
        Control::from_bits_retain((self.bits() & !Self::OP_MASK) | op.bits())
    }

    /// The reserved bits that are set (0 for a well-formed descriptor).
    pub const fn reserved_bits(self) -> u16 {
        self.bits() & Self::RESERVED_MASK
    }
}

/// Operation reported by a completed descriptor: `Status` bits 18:16 (VIA 1.0
/// `VIP_STATUS_OP_*`). Values 5..=7 are not defined and decode to `Unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompletedOp {
    /// 0: a send completed.
    Send,
    /// 1: a receive completed.
    Receive,
    /// 2: a local RDMA write completed.
    RdmaWrite,
    /// 3: a remote RDMA write with immediate data consumed this receive descriptor.
    RemoteRdmaWrite,
    /// 4: an RDMA read completed.
    RdmaRead,
    /// 5..=7: undefined encoding (raw 3-bit value).
    Unknown(u8),
}

impl CompletedOp {
    /// Decodes a 3-bit value (bits above 2 are ignored).
    pub const fn from_bits(raw: u8) -> CompletedOp {
        match raw & 0x7 {
            0 => CompletedOp::Send,
            1 => CompletedOp::Receive,
            2 => CompletedOp::RdmaWrite,
            3 => CompletedOp::RemoteRdmaWrite,
            4 => CompletedOp::RdmaRead,
            other => CompletedOp::Unknown(other),
        }
    }

    /// The 3-bit encoding (an `Unknown` value is truncated to 3 bits).
    pub const fn bits(self) -> u8 {
        match self {
            CompletedOp::Send => 0,
            CompletedOp::Receive => 1,
            CompletedOp::RdmaWrite => 2,
            CompletedOp::RemoteRdmaWrite => 3,
            CompletedOp::RdmaRead => 4,
            CompletedOp::Unknown(raw) => raw & 0x7,
        }
    }
}

bitflags! {
    /// The status word of a descriptor (control segment bytes 28..32, VIA 1.0), written by
    /// the VI provider when the descriptor completes.
    ///
    /// Bits 18:16 hold the [`CompletedOp`] (read it with [`Status::completed_op`]);
    /// everything not named here is reserved. Unknown bits are kept.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct Status: u32 {
        /// The descriptor has completed (`VIP_STATUS_DONE`).
        const DONE = 0x0000_0001;
        /// Local format error: malformed descriptor (`VIP_STATUS_FORMAT_ERROR`).
        const FORMAT_ERROR = 0x0000_0002;
        /// Local protection error: a handle or tag check failed (`VIP_STATUS_PROTECTION_ERROR`).
        const PROTECTION_ERROR = 0x0000_0004;
        /// Local length error: data does not fit (`VIP_STATUS_LENGTH_ERROR`).
        const LENGTH_ERROR = 0x0000_0008;
        /// Partial descriptor (`VIP_STATUS_PARTIAL_ERROR`).
        const PARTIAL_ERROR = 0x0000_0010;
        /// Descriptor flushed from a queue in the error state (`VIP_STATUS_DESC_FLUSHED_ERROR`).
        const FLUSHED = 0x0000_0020;
        /// Transport error (`VIP_STATUS_TRANSPORT_ERROR`).
        const TRANSPORT_ERROR = 0x0000_0040;
        /// RDMA protection error at the remote end (`VIP_STATUS_RDMA_PROT_ERROR`).
        const RDMA_PROTECTION_ERROR = 0x0000_0080;
        /// Remote descriptor error (`VIP_STATUS_REMOTE_DESC_ERROR`).
        const REMOTE_DESCRIPTOR_ERROR = 0x0000_0100;
        /// Immediate data is present in the control segment (`VIP_STATUS_IMMEDIATE`).
        const IMMEDIATE = 0x0008_0000;
    }
}

impl Status {
    /// All error bits, 0x1FE (VIA 1.0 `VIP_STATUS_ERROR_MASK`).
    pub const ERROR_MASK: u32 = 0x0000_01FE;
    /// The completed-operation field, bits 18:16 (VIA 1.0 `VIP_STATUS_OP_MASK`).
    pub const OP_MASK: u32 = 0x0007_0000;
    /// Shift of the completed-operation field.
    pub const OP_SHIFT: u32 = 16;
    /// Bits with no meaning in VIA 1.0 (everything but done, errors, op and immediate).
    pub const RESERVED_MASK: u32 = !(0x0000_01FF | Self::OP_MASK | 0x0008_0000);

    /// The completed operation in bits 18:16.
    pub const fn completed_op(self) -> CompletedOp {
        CompletedOp::from_bits(((self.bits() & Self::OP_MASK) >> Self::OP_SHIFT) as u8)
    }

    /// The same word with bits 18:16 replaced by `op`.
    pub const fn with_completed_op(self, op: CompletedOp) -> Status {
        Status::from_bits_retain(
            (self.bits() & !Self::OP_MASK) | ((op.bits() as u32) << Self::OP_SHIFT),
        )
    }

    /// Only the error bits (those in [`Status::ERROR_MASK`]).
    pub const fn errors(self) -> Status {
        Status::from_bits_retain(self.bits() & Self::ERROR_MASK)
    }

    /// Whether any error bit is set.
    pub const fn is_error(self) -> bool {
        self.bits() & Self::ERROR_MASK != 0
    }

    /// Whether the done bit is set.
    pub const fn is_done(self) -> bool {
        self.bits() & Status::DONE.bits() != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn control_bits_from_spec() {
        let c = Control::from_bits_retain(0x000D); // RDMA write | immediate | fence
        assert_eq!(c.op(), Op::RdmaWrite);
        assert!(c.contains(Control::IMMEDIATE));
        assert!(c.contains(Control::QUEUE_FENCE));
        assert_eq!(c.reserved_bits(), 0);
        assert_eq!(Control::from_bits_retain(0x8012).reserved_bits(), 0x8010);
        assert_eq!(Control::from_bits_retain(0x8012).op(), Op::RdmaRead);
        assert_eq!(Control::from_bits_retain(0x0003).op(), Op::Reserved);
        assert_eq!(Control::from_op(Op::RdmaRead).bits(), 2);
        assert_eq!(Control::IMMEDIATE.with_op(Op::RdmaWrite).bits(), 0x5);
        assert_eq!(
            Control::from_bits_retain(0xFFFF)
                .with_op(Op::SendRecv)
                .bits(),
            0xFFFC
        );
    }

    #[test]
    fn status_bits_from_spec() {
        let s = Status::from_bits_retain(0x0002_0001);
        assert!(s.is_done());
        assert!(!s.is_error());
        assert_eq!(s.completed_op(), CompletedOp::RdmaWrite);
        let e = Status::from_bits_retain(0x0009_0085); // done|prot|rdma-prot, receive, imm
        assert_eq!(e.errors().bits(), 0x84);
        assert!(e.contains(Status::IMMEDIATE));
        assert_eq!(e.completed_op(), CompletedOp::Receive);
        assert_eq!(Status::ERROR_MASK, 0x1FE);
        assert_eq!(Status::RESERVED_MASK, 0xFFF0_FE00);
        assert_eq!(
            Status::from_bits_retain(0x0005_0000).completed_op(),
            CompletedOp::Unknown(5)
        );
        assert_eq!(
            Status::from_bits_retain(0x0007_0000).completed_op(),
            CompletedOp::Unknown(7)
        );
        assert_eq!(
            Status::DONE.with_completed_op(CompletedOp::RdmaRead).bits(),
            0x0004_0001
        );
    }

    proptest! {
        #[test]
        fn control_op_round_trip(raw in any::<u16>()) {
            let c = Control::from_bits_retain(raw);
            prop_assert_eq!(c.with_op(c.op()), c);
            prop_assert_eq!(Op::from_bits(c.op().bits()), c.op());
        }

        #[test]
        fn status_op_round_trip(raw in any::<u32>()) {
            let s = Status::from_bits_retain(raw);
            prop_assert_eq!(s.with_completed_op(s.completed_op()), s);
            prop_assert_eq!(CompletedOp::from_bits(s.completed_op().bits()), s.completed_op());
        }
    }
}
