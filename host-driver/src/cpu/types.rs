//! The CPU's parameters, states and counters.

use crate::cache::CacheParams;
use crate::costs::CpuCosts;
use crate::ops::PollCond;
use sim_kernel::{Duration, StateName, Time};
use std::fmt;

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
    /// Largest transfer a VI may ask for in `VipCreateVi` \[bytes\]. Assumption: 16 MiB
    /// (not published; the card fragments messages into MTU-sized frames and its
    /// descriptors carry a 32-bit length; 16 MiB is the largest size `hvia` documents).
    pub max_transfer_bytes: u32,
    /// A post reads the VI's state from its doorbell window on the card before ringing
    /// (one uncached PCI read). Assumption: true (see the config's `[host.vipl]`).
    pub post_reads_vi_state: bool,
    /// A post reads the doorbell window back after ringing, flushing the posted
    /// doorbell writes to the card. Assumption: true.
    pub post_flushes_doorbell: bool,
    /// After ringing, a post reads the doorbell window until the card has taken it
    /// (`POSTS_PENDING` clear); the first read doubles as the flush. Assumption: true.
    pub post_waits_for_card: bool,
    /// Every doorbell names its descriptor (`HEAD` set on every post), so the card need
    /// not read the previous descriptor's Next link: the what-if of a doorbell that
    /// carries the descriptor's address. Assumption: false (the paper's doorbell only
    /// tells the engine a new transaction exists; see via-abi's doorbell module).
    pub doorbell_names_descriptor: bool,
    /// Fast stepping of busy polls (`sim.stepping = "fast"`): once an iteration has
    /// loaded the polled line, the CPU stops stepping its iterations and watches the
    /// line in host memory; a write into it wakes the CPU at the first iteration that
    /// sees it, with every skipped iteration accounted as the cache hit it would have
    /// been. Such single-word polls with a deadline are always stepped; a poll over
    /// several words (`VipCQWait`) parks the same way on all its lines, deadline or not
    /// (a wake-up at the scan that gives up). false: every iteration (every load of a
    /// scan) is an event (`"exact"`, the reference the lockstep tests compare against).
    pub fast_poll: bool,
    /// Test hook: moves the iteration a watched write wakes by this many cycles, i.e.
    /// deliberately breaks the fast path (the lockstep harness must notice). 0 in every
    /// real run.
    #[doc(hidden)]
    pub fast_poll_skew_cycles: u64,
    /// Test hook: moves the scan a watched write wakes a parked poll over several words
    /// (`VipCQWait`) by this many scans, i.e. deliberately breaks that fast path (the
    /// lockstep harness must notice). 0 in every real run.
    #[doc(hidden)]
    pub fast_scan_skew_iterations: u64,
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
            max_transfer_bytes: 16 << 20,
            post_reads_vi_state: true,
            post_flushes_doorbell: true,
            post_waits_for_card: true,
            doorbell_names_descriptor: false,
            fast_poll: true,
            fast_poll_skew_cycles: 0,
            fast_scan_skew_iterations: 0,
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
    /// Messages of a kind this component does not take (a wiring bug): counted and
    /// traced as errors; any of them fails a system run.
    pub wrong_inputs: u64,
    /// Host messages it had no use for: a start with no program loaded or after it
    /// started, an own wake-up while waiting for the bus (ignored, traced).
    pub unexpected: u64,
    /// `VipOpenNic` calls that found no HVIA-GE card at BAR0 (the call fails with
    /// `VIP_ERROR_RESOURCE`, traced).
    pub open_no_card: u64,
}

/// What a CPU's program waits for right now: what a run loop needs to tell a stalled
/// system from a busy one, and what its diagnosis says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CpuWait {
    /// No program has been started.
    NotStarted,
    /// The program has returned (or is stuck for good: see [`HostCpu::outcome`](super::HostCpu::outcome)).
    Finished,
    /// Executing an op: a wake-up at the end of its cost is queued.
    Busy,
    /// Waiting for the host bridge to post a memory-mapped write (sent at `since`).
    MmioWrite {
        /// When the write was issued.
        since: Time,
    },
    /// Stalled on a memory-mapped read (sent at `since`).
    MmioRead {
        /// When the read was issued.
        since: Time,
    },
    /// In a library loop that reads card registers until the card reports a change
    /// (e.g. a VI connecting).
    RegisterPoll {
        /// What it waits for.
        what: &'static str,
        /// When it gives up (`None`: never).
        deadline: Option<Time>,
        /// When it started.
        since: Time,
    },
    /// In a polling loop on process memory: only a DMA write into the polled bytes (or
    /// the deadline) can end it.
    Poll {
        /// The polled address \[process VA\].
        va: u64,
        /// What ends the poll.
        cond: PollCond,
        /// When the poll gives up (`None`: never).
        deadline: Option<Time>,
        /// When the poll started.
        since: Time,
        /// Iterations so far.
        iterations: u64,
    },
    /// In a polling loop over several words of process memory (`VipCQWait`: the head
    /// status of every work queue tied to the completion queue) for a done bit in any.
    PollAny {
        /// The polled addresses, in scan order \[process VA\].
        vas: Vec<u64>,
        /// When the poll gives up (`None`: never).
        deadline: Option<Time>,
        /// When the poll started.
        since: Time,
        /// Scans so far.
        iterations: u64,
    },
}

impl CpuWait {
    /// Whether only a change made by another component can end this wait: a poll with
    /// no deadline. If every queued event is such a poll's next iteration, nothing can
    /// ever change the polled bytes and the run is stalled.
    #[must_use]
    pub fn needs_outside_change(&self) -> bool {
        matches!(
            self,
            CpuWait::Poll { deadline: None, .. } | CpuWait::PollAny { deadline: None, .. }
        )
    }

    /// Whether the program waits, with no deadline, for something only the card or the
    /// network can do: a memory poll, or a library loop reading card registers.
    #[must_use]
    pub fn waits_for_card(&self) -> bool {
        self.needs_outside_change() || matches!(self, CpuWait::RegisterPoll { deadline: None, .. })
    }
}

impl fmt::Display for CpuWait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CpuWait::NotStarted => write!(f, "no program started"),
            CpuWait::Finished => write!(f, "program finished"),
            CpuWait::Busy => write!(f, "executing"),
            CpuWait::MmioWrite { since } => {
                write!(
                    f,
                    "waits since {since} for the host bridge to post a memory-mapped write"
                )
            }
            CpuWait::MmioRead { since } => {
                write!(
                    f,
                    "waits since {since} for the data of a memory-mapped read"
                )
            }
            CpuWait::RegisterPoll {
                what,
                deadline,
                since,
            } => {
                write!(f, "reads card registers since {since} waiting for {what}")?;
                match deadline {
                    Some(d) => write!(f, ", until {d}"),
                    None => write!(f, ", with no deadline"),
                }
            }
            CpuWait::Poll {
                va,
                cond,
                deadline,
                since,
                iterations,
            } => {
                let what = match cond {
                    PollCond::AnyBits32(m) => {
                        format!("the 32-bit word to have a bit of {m:#x} set")
                    }
                    PollCond::ByteEquals(v) => format!("the byte to become {v:#04x}"),
                };
                write!(
                    f,
                    "polls VA {va:#x} since {since} ({iterations} iterations) for {what}"
                )?;
                match deadline {
                    Some(d) => write!(f, ", until {d}"),
                    None => write!(f, ", with no deadline"),
                }
            }
            CpuWait::PollAny {
                vas,
                deadline,
                since,
                iterations,
            } => {
                write!(f, "polls {} words (VA", vas.len())?;
                for va in vas {
                    write!(f, " {va:#x}")?;
                }
                write!(
                    f,
                    ") since {since} ({iterations} scans) for a done bit in any"
                )?;
                match deadline {
                    Some(d) => write!(f, ", until {d}"),
                    None => write!(f, ", with no deadline"),
                }
            }
        }
    }
}
