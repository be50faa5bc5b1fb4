//! The CPU's parameters, states and counters.

use crate::cache::CacheParams;
use crate::costs::CpuCosts;
use sim_kernel::{Duration, StateName};

/// Parameters of a host CPU and its process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostCpuParams {
    /// What each action costs \[cycles of the CPU domain\].
    pub costs: CpuCosts,
    /// Cache geometry (Pentium III Coppermine L2).
    pub cache: CacheParams,
    /// Bus address of the card's BAR0 \[bus address\]. Source: assigned by the system
    /// (PCI BIOS); the testbench must use the address it gave the card's target.
    pub bar0: u64,
    /// Device name `VipOpenNic` accepts. Setting: `/dev/hvia0`.
    pub nic_name: String,
    /// First virtual address the process's allocator hands out \[VA\]. Source: Linux 2.4
    /// on IA-32 starts the mmap area at 0x4000_0000.
    pub heap_base: u64,
    /// First VI number the kernel agent hands out (one process per node: 0).
    pub first_vi: u16,
    /// Largest transfer a VI may ask for in `VipCreateVi` \[bytes\]. Assumption: 1 MiB
    /// (not published; the card fragments messages into MTU-sized frames).
    pub max_transfer_bytes: u32,
}

impl Default for HostCpuParams {
    fn default() -> Self {
        Self {
            costs: CpuCosts::default(),
            cache: CacheParams::default(),
            bar0: 0xE000_0000,
            nic_name: "/dev/hvia0".into(),
            heap_base: 0x4000_0000,
            first_vi: 0,
            max_transfer_bytes: 1 << 20,
        }
    }
}

/// What the CPU is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CpuState {
    /// No program running (not started, or none loaded).
    Idle,
    /// Executing instructions (an op's cost).
    Compute,
    /// Sleeping (idle time the program asked for).
    Sleep,
    /// Waiting for the host bridge to post a memory-mapped write.
    MmioWrite,
    /// Stalled on a memory-mapped read.
    MmioRead,
    /// In a polling loop.
    Poll,
    /// The program has returned.
    Finished,
    /// The program awaited something that is not a CPU op: it can never resume.
    Stuck,
}

impl StateName for CpuState {
    fn name(self) -> &'static str {
        match self {
            CpuState::Idle => "idle",
            CpuState::Compute => "compute",
            CpuState::Sleep => "sleep",
            CpuState::MmioWrite => "mmio-write",
            CpuState::MmioRead => "mmio-read",
            CpuState::Poll => "poll",
            CpuState::Finished => "finished",
            CpuState::Stuck => "stuck",
        }
    }
}

/// Counters of one CPU.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuStats {
    /// Ops executed.
    pub ops: u64,
    /// Cycles spent working (compute, memory accesses, poll iterations) \[cycles\].
    pub busy_cycles: u64,
    /// Cycles spent sleeping \[cycles\].
    pub idle_cycles: u64,
    /// Memory-mapped writes.
    pub mmio_writes: u64,
    /// Memory-mapped reads.
    pub mmio_reads: u64,
    /// Time stalled until the bridge posted the writes \[ps\].
    pub mmio_write_wait: Duration,
    /// Time stalled on PCI reads \[ps\].
    pub mmio_read_wait: Duration,
    /// Poll loop iterations.
    pub poll_iterations: u64,
    /// Cache line accesses that hit.
    pub line_hits: u64,
    /// Cache line accesses that missed (cold or evicted).
    pub line_misses: u64,
    /// Cache line loads that missed because a DMA write changed the line.
    pub dma_misses: u64,
}
