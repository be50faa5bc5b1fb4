//! The HVIA-GE card's BAR0 register map: what the host (VIPL library and kernel agent)
//! writes and reads over the system PCI bus, and what the card's target logic decodes.
//!
//! The paper says only that VIPL parameters reach the engine directly over the system PCI
//! bus as memory-mapped registers, and that for VipRegisterMem the VA, physical pages and
//! size go to the ATT manager. The map below is a design choice; it is the one contract
//! `host-driver` and `nic-model` share (they never depend on each other). All registers
//! are 32 bits, little-endian, dword-aligned; BAR0 is 64 KB of memory space.
//!
//! | offset | name | access | meaning |
//! |---|---|---|---|
//! | 0x0000 | `CARD_ID` | R | [`CARD_ID_VALUE`] |
//! | 0x0004 | `CARD_STATUS` | R | bit 0: engine ready; bit 1 ([`CARD_RDMA_READ`]): the engine implements RDMA read |
//! | 0x0008 | `MAC_LO` | R | MAC address bytes 0..4 (byte 0 in bits 7:0) |
//! | 0x000C | `MAC_HI` | R | MAC address bytes 4..6 in bits 15:0 |
//! | 0x0100 | `ATT_VA_LO` | W | region start VA, bits 31:0 |
//! | 0x0104 | `ATT_VA_HI` | W | region start VA, bits 63:32 |
//! | 0x0108 | `ATT_LEN` | W | region length \[bytes\] |
//! | 0x010C | `ATT_ATTR` | W | bits 15:0 memory attributes, bits 31:16 protection tag |
//! | 0x0110 | `ATT_PAGE` | W | pushes the next physical page address (first: region start PA) |
//! | 0x0114 | `ATT_HANDLE` | R/W | handle to deregister (W); handle registered (R) |
//! | 0x0118 | `ATT_CMD` | W | [`AttCmd`]: starts the command |
//! | 0x011C | `ATT_RESULT` | R | [`CmdResult`] of the last ATT command |
//! | 0x0200 | `VI_SEL` | W | VI number the next VI command applies to |
//! | 0x0204 | `VI_PTAG` | W | protection tag of the VI (create) |
//! | 0x0208 | `VI_ATTR` | W | bits 1:0 reliability ([`Reliability`]), bit 8 RDMA write enable, bit 9 RDMA read enable |
//! | 0x020C | `VI_PEER_MAC_LO` | W | peer MAC bytes 0..4 (connect request) |
//! | 0x0210 | `VI_PEER_MAC_HI` | W | peer MAC bytes 4..6 (connect request) |
//! | 0x0214 | `VI_DISCRIMINATOR` | W | connection discriminator (connect request / wait) |
//! | 0x0218 | `VI_CMD` | W | [`ViCmd`]: starts the command on `VI_SEL` |
//! | 0x021C | `VI_STATE` | R | [`ViStateCode`] of `VI_SEL` |
//! | 0x0220 | `VI_RESULT` | R | [`CmdResult`] of the last VI command |
//! | 0x0224 | `VI_PEER_VI` | R | remote VI number once connected |
//! | 0x1000 + 16 n | doorbell `n` | R/W | W: 16-byte [`Doorbell`](crate::Doorbell) record for VI `n`; the write of its last dword (offset 12) rings it. R (any dword): bits 7:0 [`ViStateCode`] of VI `n`, bit 8 [`POSTS_PENDING`] (the VIPL's checks around a post; no select register) |
//!
//! Reads of unknown offsets return 0; writes to unknown or read-only offsets are ignored
//! and counted by the card (a PCI target cannot refuse a decoded write).

/// Bit of a doorbell window's read value: the card holds doorbells of this VI that it
/// has not taken yet (still in its doorbell FIFO, or a receive descriptor being checked).
pub const POSTS_PENDING: u32 = 1 << 8;

/// The VI-state byte of a doorbell window's read value.
pub const WINDOW_STATE_MASK: u32 = 0xFF;

/// Size of BAR0 \[bytes\].
pub const BAR0_SIZE: u64 = 0x1_0000;
/// Value of `CARD_ID`: "HVIA" in ASCII, little-endian.
pub const CARD_ID_VALUE: u32 = u32::from_le_bytes(*b"HVIA");

/// Card identification (R).
pub const CARD_ID: u64 = 0x0000;
/// Card status (R): bit 0 engine ready, bit 1 [`CARD_RDMA_READ`].
pub const CARD_STATUS: u64 = 0x0004;
/// `CARD_STATUS` bit: the engine implements RDMA read (VIA 1.0 makes it optional; the
/// published card does not, the `rdma-read` preset's does). `VipQueryNic` reports it.
pub const CARD_RDMA_READ: u32 = 1 << 1;
/// MAC address bytes 0..4 (R).
pub const MAC_LO: u64 = 0x0008;
/// MAC address bytes 4..6 (R).
pub const MAC_HI: u64 = 0x000C;

/// Region start VA, low dword (W).
pub const ATT_VA_LO: u64 = 0x0100;
/// Region start VA, high dword (W).
pub const ATT_VA_HI: u64 = 0x0104;
/// Region length in bytes (W).
pub const ATT_LEN: u64 = 0x0108;
/// Attributes (bits 15:0) and protection tag (bits 31:16) (W).
pub const ATT_ATTR: u64 = 0x010C;
/// Page FIFO: each write pushes one physical address (W).
pub const ATT_PAGE: u64 = 0x0110;
/// Handle: input of deregistration (W), result of registration (R).
pub const ATT_HANDLE: u64 = 0x0114;
/// ATT command (W), see [`AttCmd`].
pub const ATT_CMD: u64 = 0x0118;
/// Result of the last ATT command (R), see [`CmdResult`].
pub const ATT_RESULT: u64 = 0x011C;

/// VI number the next VI command applies to (W).
pub const VI_SEL: u64 = 0x0200;
/// Protection tag of the VI being created (W).
pub const VI_PTAG: u64 = 0x0204;
/// VI attributes (W): bits 1:0 reliability, bit 8 RDMA write enable, bit 9 RDMA read enable.
pub const VI_ATTR: u64 = 0x0208;
/// Peer MAC bytes 0..4 (W).
pub const VI_PEER_MAC_LO: u64 = 0x020C;
/// Peer MAC bytes 4..6 (W).
pub const VI_PEER_MAC_HI: u64 = 0x0210;
/// Connection discriminator (W).
pub const VI_DISCRIMINATOR: u64 = 0x0214;
/// VI command (W), see [`ViCmd`].
pub const VI_CMD: u64 = 0x0218;
/// State of the selected VI (R), see [`ViStateCode`].
pub const VI_STATE: u64 = 0x021C;
/// Result of the last VI command (R), see [`CmdResult`].
pub const VI_RESULT: u64 = 0x0220;
/// Remote VI number of the selected, connected VI (R).
pub const VI_PEER_VI: u64 = 0x0224;

/// First doorbell window; VI `n`'s doorbell is at `DOORBELL_BASE + DOORBELL_STRIDE * n`.
pub const DOORBELL_BASE: u64 = 0x1000;
/// Bytes between two VIs' doorbells (one 16-byte record each).
pub const DOORBELL_STRIDE: u64 = 16;
/// Number of VIs the doorbell windows can address.
pub const MAX_VIS: u64 = (BAR0_SIZE - DOORBELL_BASE) / DOORBELL_STRIDE;

/// VI_ATTR bit: RDMA write enabled on the VI.
pub const VI_ATTR_RDMA_WRITE: u32 = 1 << 8;
/// VI_ATTR bit: RDMA read enabled on the VI.
pub const VI_ATTR_RDMA_READ: u32 = 1 << 9;

/// The offset of VI `vi`'s doorbell record, if `vi` is addressable.
#[must_use]
pub fn doorbell_offset(vi: u16) -> Option<u64> {
    let vi = u64::from(vi);
    (vi < MAX_VIS).then(|| DOORBELL_BASE + DOORBELL_STRIDE * vi)
}

/// The VI whose doorbell window holds `offset`, and the offset within its record.
#[must_use]
pub fn doorbell_at(offset: u64) -> Option<(u16, u64)> {
    if !(DOORBELL_BASE..BAR0_SIZE).contains(&offset) {
        return None;
    }
    let rel = offset - DOORBELL_BASE;
    let vi = u16::try_from(rel / DOORBELL_STRIDE).ok()?;
    Some((vi, rel % DOORBELL_STRIDE))
}

/// Commands written to `ATT_CMD`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AttCmd {
    /// Register the region described by `ATT_VA_*`, `ATT_LEN`, `ATT_ATTR` and the pages
    /// pushed to `ATT_PAGE` since the last command.
    Register,
    /// Deregister the handle written to `ATT_HANDLE`.
    Deregister,
    /// Anything else (the card answers [`CmdResult::BadCommand`]).
    Unknown(u32),
}

impl AttCmd {
    /// The command a register value stands for.
    #[must_use]
    pub fn from_raw(raw: u32) -> Self {
        match raw {
            1 => AttCmd::Register,
            2 => AttCmd::Deregister,
            other => AttCmd::Unknown(other),
        }
    }

    /// The register value of this command.
    #[must_use]
    pub fn raw(self) -> u32 {
        match self {
            AttCmd::Register => 1,
            AttCmd::Deregister => 2,
            AttCmd::Unknown(v) => v,
        }
    }
}

/// Commands written to `VI_CMD` (VIPL calls that reach the card).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ViCmd {
    /// VipCreateVi: set up VI `VI_SEL` with `VI_PTAG` and `VI_ATTR`.
    Create,
    /// VipDestroyVi.
    Destroy,
    /// VipConnectRequest: send a connect request to `VI_PEER_MAC_*` with `VI_DISCRIMINATOR`.
    ConnectRequest,
    /// VipConnectWait: listen for a connect request with `VI_DISCRIMINATOR`; the card
    /// accepts it onto VI `VI_SEL` (VipConnectAccept is folded in: the host sees the VI
    /// become connected).
    ConnectWait,
    /// VipConnectReject of a pending request on `VI_SEL`.
    ConnectReject,
    /// VipDisconnect.
    Disconnect,
    /// Anything else (the card answers [`CmdResult::BadCommand`]).
    Unknown(u32),
}

impl ViCmd {
    /// The command a register value stands for.
    #[must_use]
    pub fn from_raw(raw: u32) -> Self {
        match raw {
            1 => ViCmd::Create,
            2 => ViCmd::Destroy,
            3 => ViCmd::ConnectRequest,
            4 => ViCmd::ConnectWait,
            5 => ViCmd::ConnectReject,
            6 => ViCmd::Disconnect,
            other => ViCmd::Unknown(other),
        }
    }

    /// The register value of this command.
    #[must_use]
    pub fn raw(self) -> u32 {
        match self {
            ViCmd::Create => 1,
            ViCmd::Destroy => 2,
            ViCmd::ConnectRequest => 3,
            ViCmd::ConnectWait => 4,
            ViCmd::ConnectReject => 5,
            ViCmd::Disconnect => 6,
            ViCmd::Unknown(v) => v,
        }
    }
}

/// Values of `ATT_RESULT` / `VI_RESULT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmdResult {
    /// The command is still running: read again.
    Busy,
    /// Done, success.
    Ok,
    /// A parameter was out of range (zero length, page list not matching the length, VI
    /// number out of range).
    InvalidParameter,
    /// No table space left (ATT entries, SDRAM, VI contexts).
    NoResources,
    /// Bad or stale handle / VI not in a state that allows the command.
    InvalidState,
    /// The protection tag is not valid.
    InvalidPtag,
    /// The peer rejected the connection.
    Rejected,
    /// The command register held an unknown command.
    BadCommand,
    /// The peer never answered (a connect request resent `retx_limit` times).
    TimedOut,
    /// Anything else.
    Unknown(u32),
}

impl CmdResult {
    /// The result a register value stands for.
    #[must_use]
    pub fn from_raw(raw: u32) -> Self {
        match raw {
            0 => CmdResult::Busy,
            1 => CmdResult::Ok,
            2 => CmdResult::InvalidParameter,
            3 => CmdResult::NoResources,
            4 => CmdResult::InvalidState,
            5 => CmdResult::InvalidPtag,
            6 => CmdResult::Rejected,
            7 => CmdResult::BadCommand,
            8 => CmdResult::TimedOut,
            other => CmdResult::Unknown(other),
        }
    }

    /// The register value of this result.
    #[must_use]
    pub fn raw(self) -> u32 {
        match self {
            CmdResult::Busy => 0,
            CmdResult::Ok => 1,
            CmdResult::InvalidParameter => 2,
            CmdResult::NoResources => 3,
            CmdResult::InvalidState => 4,
            CmdResult::InvalidPtag => 5,
            CmdResult::Rejected => 6,
            CmdResult::BadCommand => 7,
            CmdResult::TimedOut => 8,
            CmdResult::Unknown(v) => v,
        }
    }
}

/// VIA 1.0 reliability levels (VI attribute).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reliability {
    /// Unreliable delivery.
    Unreliable,
    /// Reliable delivery.
    ReliableDelivery,
    /// Reliable reception.
    ReliableReception,
    /// The reserved encoding 3.
    Unknown(u8),
}

impl Reliability {
    /// The level encoded in `VI_ATTR` bits 1:0.
    #[must_use]
    pub fn from_raw(raw: u8) -> Self {
        match raw & 0x3 {
            0 => Reliability::Unreliable,
            1 => Reliability::ReliableDelivery,
            2 => Reliability::ReliableReception,
            other => Reliability::Unknown(other),
        }
    }

    /// The encoding in `VI_ATTR` bits 1:0.
    #[must_use]
    pub fn raw(self) -> u8 {
        match self {
            Reliability::Unreliable => 0,
            Reliability::ReliableDelivery => 1,
            Reliability::ReliableReception => 2,
            Reliability::Unknown(v) => v & 0x3,
        }
    }
}

/// Values of `VI_STATE` (VIA 1.0 VI states, plus "no such VI").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ViStateCode {
    /// The VI does not exist.
    Absent,
    /// Created, not connected.
    Idle,
    /// A connect request or wait is outstanding.
    ConnectPending,
    /// Connected.
    Connected,
    /// Error state (after a transport or protection error on a reliable VI).
    Error,
    /// Anything else.
    Unknown(u32),
}

impl ViStateCode {
    /// The state a register value stands for.
    #[must_use]
    pub fn from_raw(raw: u32) -> Self {
        match raw {
            0 => ViStateCode::Absent,
            1 => ViStateCode::Idle,
            2 => ViStateCode::ConnectPending,
            3 => ViStateCode::Connected,
            4 => ViStateCode::Error,
            other => ViStateCode::Unknown(other),
        }
    }

    /// The register value of this state.
    #[must_use]
    pub fn raw(self) -> u32 {
        match self {
            ViStateCode::Absent => 0,
            ViStateCode::Idle => 1,
            ViStateCode::ConnectPending => 2,
            ViStateCode::Connected => 3,
            ViStateCode::Error => 4,
            ViStateCode::Unknown(v) => v,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doorbell_windows_round_trip() {
        assert_eq!(doorbell_offset(0), Some(0x1000));
        assert_eq!(doorbell_offset(3), Some(0x1030));
        assert_eq!(doorbell_at(0x103C), Some((3, 12)));
        assert_eq!(doorbell_at(0x0FFC), None);
        assert_eq!(doorbell_at(BAR0_SIZE), None);
        assert_eq!(MAX_VIS, 3840);
        assert_eq!(doorbell_offset(3840), None);
        assert_eq!(doorbell_at(BAR0_SIZE - 4), Some((3839, 12)));
    }

    #[test]
    fn encodings_round_trip_and_keep_unknowns() {
        for raw in 0..10 {
            assert_eq!(AttCmd::from_raw(raw).raw(), raw);
            assert_eq!(ViCmd::from_raw(raw).raw(), raw);
            assert_eq!(CmdResult::from_raw(raw).raw(), raw);
            assert_eq!(ViStateCode::from_raw(raw).raw(), raw);
        }
        for raw in 0..4 {
            assert_eq!(Reliability::from_raw(raw).raw(), raw);
        }
        assert_eq!(AttCmd::from_raw(9), AttCmd::Unknown(9));
        assert_eq!(CARD_ID_VALUE.to_le_bytes(), *b"HVIA");
    }

    #[test]
    fn registers_do_not_overlap() {
        let mut regs = [
            CARD_ID,
            CARD_STATUS,
            MAC_LO,
            MAC_HI,
            ATT_VA_LO,
            ATT_VA_HI,
            ATT_LEN,
            ATT_ATTR,
            ATT_PAGE,
            ATT_HANDLE,
            ATT_CMD,
            ATT_RESULT,
            VI_SEL,
            VI_PTAG,
            VI_ATTR,
            VI_PEER_MAC_LO,
            VI_PEER_MAC_HI,
            VI_DISCRIMINATOR,
            VI_CMD,
            VI_STATE,
            VI_RESULT,
            VI_PEER_VI,
        ];
        regs.sort_unstable();
        for w in regs.windows(2) {
            assert!(w[1] >= w[0] + 4, "{:#x} overlaps {:#x}", w[0], w[1]);
        }
        assert!(regs.iter().all(|r| r % 4 == 0 && *r < DOORBELL_BASE));
    }
}
