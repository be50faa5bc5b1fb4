//! The table port: how the ATT manager reads and writes its table when the table is not
//! in its own SDRAM ([`AttLocation::HostMemory`](super::AttLocation::HostMemory)).
//!
//! The manager sends [`NicMsg::AttTableRead`](crate::NicMsg::AttTableRead) /
//! [`NicMsg::AttTableWrite`](crate::NicMsg::AttTableWrite) to its table port and resumes
//! when [`NicMsg::AttTableReadDone`](crate::NicMsg::AttTableReadDone) /
//! [`NicMsg::AttTableWriteDone`](crate::NicMsg::AttTableWriteDone) with the same `tag`
//! comes back. Addresses are host physical addresses.
//!
//! Who answers (integration): table *reads* are DMA reads by the card over the system
//! PCI bus, so the port is an adapter in front of the card's DMA master (pci-model). Table
//! *writes* happen at registration; with a host-memory ATT the host (kernel agent) writes
//! them with the CPU, so the adapter writes host memory and answers after the CPU cost.

/// Why a table read or write through the port failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum TableIoError {
    /// The range lies outside the memory that holds the table.
    #[error("table access of {len} bytes at {addr:#x} is outside the table memory")]
    OutOfRange {
        /// First byte address.
        addr: u64,
        /// Length \[bytes\].
        len: u64,
    },
    /// The bus transfer failed (e.g. a PCI master abort on a DMA read).
    #[error("table access at {addr:#x} failed on the bus")]
    Bus {
        /// First byte address.
        addr: u64,
    },
}
