//! `PciMsg`: every message a `pci-model` component receives, and the interface messages
//! that components of other crates receive from the bus (as masters, targets or the host
//! CPU) and send to it.
//!
//! ```text
//!  master (DmaMaster, DP83820)   --Request(BusRequest)-------------->  PciBus
//!                                <--TransactionDone------------------  (one per request)
//!  device target (card BAR, FPGA) <--TargetWrite{addr,data}----------   at the end of a write
//!                                <--TargetRead{tag,addr,len}--------   at the address phase
//!                                --TargetReadData{tag,data} / TargetAbort{tag}-->
//!                                --TargetWriteRetry{start,end,on}--->  back-pressure on writes
//!  host CPU                      --CpuWrite / CpuRead--------------->  PciBus's host bridge
//!                                <--CpuWritePosted / CpuReadData-----
//!  card engine                   --DmaStart(DmaJob)----------------->  DmaMaster
//!                                <--DmaDone-------------------------
//! ```

use sim_kernel::{ComponentId, Time};

/// A master's index on one bus (given by [`crate::PciBus::add_master`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MasterId(pub u16);

/// PCI memory commands (C/BE\[3:0\]# encodings, PCI 2.2 §3.1.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Command {
    /// 0110: Memory Read (a partial line or less).
    MemoryRead,
    /// 1110: Memory Read Line (to the end of a cache line).
    MemoryReadLine,
    /// 1100: Memory Read Multiple (more than a cache line: prefetch allowed).
    MemoryReadMultiple,
    /// 0111: Memory Write.
    MemoryWrite,
    /// 1111: Memory Write and Invalidate (whole cache lines).
    MemoryWriteInvalidate,
}

impl Command {
    /// The C/BE\[3:0\]# encoding.
    #[must_use]
    pub const fn code(self) -> u8 {
        match self {
            Command::MemoryRead => 0b0110,
            Command::MemoryReadLine => 0b1110,
            Command::MemoryReadMultiple => 0b1100,
            Command::MemoryWrite => 0b0111,
            Command::MemoryWriteInvalidate => 0b1111,
        }
    }

    /// Whether data flows from target to master.
    #[must_use]
    pub const fn is_read(self) -> bool {
        matches!(
            self,
            Command::MemoryRead | Command::MemoryReadLine | Command::MemoryReadMultiple
        )
    }

    /// Short name for traces and reports.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Command::MemoryRead => "MR",
            Command::MemoryReadLine => "MRL",
            Command::MemoryReadMultiple => "MRM",
            Command::MemoryWrite => "MW",
            Command::MemoryWriteInvalidate => "MWI",
        }
    }
}

/// One transfer a master asks the bus to do. The master's PCI interface (modelled inside
/// the bus) runs it to the end: it repeats a retried transaction, continues after a
/// disconnect or latency-timer expiry at the next address, and reports once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BusRequest {
    /// The requesting master.
    pub master: MasterId,
    /// The master's own id for this request, echoed in [`TransactionDone`].
    pub tag: u64,
    /// Bus command.
    pub command: Command,
    /// First byte [bus address].
    pub addr: u64,
    /// Bytes to read (reads); ignored for writes, whose length is `data.len()`.
    pub len: u64,
    /// Bytes to write (writes); empty for reads.
    pub data: Vec<u8>,
}

impl BusRequest {
    /// Bytes this request moves.
    #[must_use]
    pub fn bytes(&self) -> u64 {
        if self.command.is_read() {
            self.len
        } else {
            self.data.len() as u64
        }
    }

    /// Whether a bus refuses this request where it lands: no bytes, or a range past the
    /// address space.
    #[must_use]
    pub fn is_refused(&self) -> bool {
        let total = self.bytes();
        total == 0 || self.addr.checked_add(total).is_none()
    }
}

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TxnStatus {
    /// Every byte moved.
    Ok,
    /// No target claimed an address (DEVSEL# never asserted): the rest was not moved.
    MasterAbort,
    /// The target signalled target abort: the rest was not moved.
    TargetAbort,
    /// The request was malformed (zero length, unknown master, address overflow).
    BadRequest,
}

/// The bus's report to a master that its request has ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransactionDone {
    /// The request's tag.
    pub tag: u64,
    /// How it ended.
    pub status: TxnStatus,
    /// Bytes moved.
    pub bytes: u64,
    /// Data read (reads; the bytes moved), empty for writes.
    pub data: Vec<u8>,
    /// Bus transactions (address phases) it took.
    pub transactions: u32,
    /// Of those, ended by target Retry.
    pub retries: u32,
    /// Of those, ended by target Disconnect with part of the data moved.
    pub disconnects: u32,
    /// Of those, ended because the latency timer expired with GNT# taken away.
    pub latency_timer_expirations: u32,
    /// The edge at which its first address phase began.
    pub start: Time,
    /// The edge at which its last data phase completed (end of the clock).
    pub end: Time,
}

/// Which way a DMA moves data, seen from the card.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DmaDirection {
    /// Host memory (or the target) to the card: read this many bytes.
    Read {
        /// Bytes to read.
        len: u64,
    },
    /// The card to host memory (or the target): write these bytes.
    Write {
        /// Bytes to write.
        data: Vec<u8>,
    },
}

/// A DMA job for [`crate::DmaMaster`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DmaJob {
    /// The requester's id, echoed in [`DmaDone`].
    pub tag: u64,
    /// Who gets the [`DmaDone`].
    pub reply_to: ComponentId,
    /// Direction and length / data.
    pub direction: DmaDirection,
    /// Physical page list (ATT layout: entry 0 = physical start, later = page bases).
    pub pages: Vec<u64>,
}

/// How a DMA job ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DmaStatus {
    /// Every byte moved.
    Ok,
    /// A burst ended with master abort (no target at `addr`).
    MasterAbort {
        /// Physical address of the failed burst.
        addr: u64,
    },
    /// A burst ended with target abort.
    TargetAbort {
        /// Physical address of the failed burst.
        addr: u64,
    },
    /// The page list does not describe the transfer (nothing moved).
    BadPageList(crate::error::MemError),
}

/// The DMA master's report that a job has ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DmaDone {
    /// The job's tag.
    pub tag: u64,
    /// How it ended.
    pub status: DmaStatus,
    /// Bytes moved (in order from the start; up to the first failed burst).
    pub bytes: u64,
    /// Data read (reads), empty for writes.
    pub data: Vec<u8>,
    /// Bursts issued.
    pub bursts: u32,
    /// When the DMA master received the job.
    pub start: Time,
    /// End of the last data phase of the job.
    pub end: Time,
}

/// Everything `pci-model` components receive, and the bus interface of other crates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PciMsg {
    /// The bus's own clock wake-up (stale generations are ignored).
    Tick {
        /// Generation of the wake-up.
        generation: u64,
    },
    /// To a component watching host memory ([`crate::HostMemory::watch`]): the bridge
    /// committed a write into its range at `at` (in a bus event of priority LATE, after
    /// every earlier-priority event of that instant).
    WatchedWrite {
        /// When the write became visible in host memory.
        at: Time,
    },
    /// master -> bus: queue a request; REQ# is asserted in the clock it arrives.
    Request(BusRequest),
    /// bus -> master: a request has ended.
    TransactionDone(TransactionDone),
    /// bus -> device target: data of a write transaction to it, at the end of the
    /// transaction (the device's posted-write buffer).
    TargetWrite {
        /// First byte [bus address].
        addr: u64,
        /// Bytes written.
        data: Vec<u8>,
    },
    /// bus -> device target: a read transaction to it has started (sent at the address
    /// phase; the target sees it when it samples the address). Answer with
    /// `TargetReadData` (the bus holds TRDY# until it arrives, up to the 16-clock
    /// initial-latency limit, then retries the master) or `TargetAbort`.
    TargetRead {
        /// The bus's id of this read, to echo.
        tag: u64,
        /// First byte [bus address].
        addr: u64,
        /// Bytes the master wants (a hint: a real target does not know it; supply at
        /// least one data phase, at most this; fewer makes the bus disconnect).
        len: u64,
        /// The command.
        command: Command,
    },
    /// device target -> bus: data for a `TargetRead`, starting at its `addr`; whole data
    /// phases (bus-width words) are moved; the bus disconnects after the last. Data that
    /// does not cover even the first data phase is a target abort.
    TargetReadData {
        /// The `TargetRead`'s tag.
        tag: u64,
        /// The bytes.
        data: Vec<u8>,
    },
    /// device target -> bus: signal target abort for this read.
    TargetAbort {
        /// The `TargetRead`'s tag.
        tag: u64,
    },
    /// device target -> bus: start (`on`) or stop Retrying write transactions to the
    /// window `[start, end)` of its range (back-pressure: a posted write cannot be refused
    /// after its data phase, so a target whose write buffer is full makes the master
    /// repeat the write, PCI 2.2 §3.3.3.2.2). While a window is on, a write transaction
    /// whose first data phase would land in it gets STOP# without TRDY# (Retry) in its
    /// DEVSEL# clock, and one that starts below it is disconnected at its start. The
    /// decision is taken at each transaction's first data phase with the windows of that
    /// clock (a message landing at edge `e` counts from clock `e`); a transaction already
    /// moving data is not cut. `on` adds the window (once), `off` removes exactly that
    /// window. Retries counted in [`crate::BusStats::write_retry_refusals`].
    TargetWriteRetry {
        /// First byte of the window [bus address].
        start: u64,
        /// One past the last byte of the window [bus address].
        end: u64,
        /// Retry writes to it (`true`) or accept them again (`false`).
        on: bool,
    },
    /// host CPU -> host bridge: a memory-mapped write to a PCI device (posted).
    CpuWrite {
        /// The CPU's id, echoed in `CpuWritePosted`.
        tag: u64,
        /// Bus address.
        addr: u64,
        /// Bytes (usually 4).
        data: Vec<u8>,
        /// Who gets `CpuWritePosted`.
        reply_to: ComponentId,
    },
    /// host bridge -> CPU: the write is in the bridge's posting buffer; the CPU may go on
    /// (sent at once unless the buffer is full).
    CpuWritePosted {
        /// The write's tag.
        tag: u64,
    },
    /// host CPU -> host bridge: a memory-mapped read of a PCI device; the CPU stalls until
    /// `CpuReadData`.
    CpuRead {
        /// The CPU's id, echoed in `CpuReadData`.
        tag: u64,
        /// Bus address.
        addr: u64,
        /// Bytes (usually 4).
        len: u64,
        /// Who gets `CpuReadData`.
        reply_to: ComponentId,
    },
    /// host bridge -> CPU: read data (all ones after a master abort, as PC bridges return).
    CpuReadData {
        /// The read's tag.
        tag: u64,
        /// The bytes.
        data: Vec<u8>,
        /// How the PCI read ended.
        status: TxnStatus,
    },
    /// card engine -> DMA master: start a job.
    DmaStart(DmaJob),
    /// DMA master -> card engine: a job has ended.
    DmaDone(DmaDone),
}
