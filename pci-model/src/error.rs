//! Error values of this crate: bad parameters, bad wiring, bad memory accesses.
//!
//! Nothing in `pci-model` panics on input: a bad request becomes one of these values, or
//! (on the bus) a master-abort / target-abort outcome the master sees.

use sim_kernel::ClockError;

/// A host-memory or page-table access that cannot be done.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MemError {
    /// The physical range lies (partly) outside the configured memory.
    #[error("physical access {addr:#x}+{len} is outside host memory of {size} bytes")]
    OutOfRange {
        /// First byte [physical address].
        addr: u64,
        /// Length \[bytes\].
        len: u64,
        /// Configured memory size \[bytes\].
        size: u64,
    },
    /// `addr + len` does not fit in 64 bits.
    #[error("address range {addr:#x}+{len} overflows 64 bits")]
    Overflow {
        /// First byte.
        addr: u64,
        /// Length \[bytes\].
        len: u64,
    },
    /// A virtual address has no page-table entry.
    #[error("virtual address {va:#x} is not mapped")]
    Unmapped {
        /// The virtual address.
        va: u64,
    },
    /// Every physical frame is allocated.
    #[error("no free physical frame left (all {frames} frames allocated)")]
    OutOfFrames {
        /// Number of frames in the memory.
        frames: u64,
    },
    /// The memory size is zero or not a multiple of the 4 KB page.
    #[error("host memory size {size} bytes is not a positive multiple of 4096")]
    BadSize {
        /// The size asked for \[bytes\].
        size: u64,
    },
    /// A physical page list is shorter than the transfer needs.
    #[error("page list has {given} entries, the transfer needs {needed}")]
    ShortPageList {
        /// Entries needed.
        needed: u64,
        /// Entries given.
        given: u64,
    },
    /// A page-list entry after the first is not a 4 KB page base.
    #[error("page list entry {index} ({addr:#x}) is not 4 KB aligned")]
    UnalignedPage {
        /// Index in the list.
        index: usize,
        /// The entry.
        addr: u64,
    },
    /// A virtual page is already mapped to another frame.
    #[error("virtual page {va:#x} is already mapped")]
    AlreadyMapped {
        /// Page base [virtual address].
        va: u64,
    },
}

/// A configuration, wiring or scenario error of the PCI model.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PciError {
    /// The bus width is neither 32 nor 64 bits.
    #[error("PCI bus width {0} bits is not 32 or 64")]
    BadWidth(u32),
    /// The PCI clock is outside what the specification allows.
    #[error("PCI clock {0} MHz is outside (0, 66.67] MHz (PCI 2.2 §4.2.3.1 / §7)")]
    BadClock(f64),
    /// The clock domain could not be built.
    #[error(transparent)]
    Clock(#[from] ClockError),
    /// A parameter is out of its range.
    #[error("bad parameter `{name}`: {why}")]
    BadParam {
        /// Parameter name, as in the parameter tables.
        name: &'static str,
        /// What is wrong with it.
        why: String,
    },
    /// Two targets claim overlapping address ranges.
    #[error("target range {start:#x}..{end:#x} overlaps an existing target")]
    Overlap {
        /// Start of the new range.
        start: u64,
        /// End (exclusive) of the new range.
        end: u64,
    },
    /// A memory or page-table error.
    #[error(transparent)]
    Mem(#[from] MemError),
    /// A scenario did not end as it must (bytes differ, transfer did not finish).
    #[error("scenario failed: {0}")]
    Scenario(String),
}
