//! The host bridge: the PCI target for host memory, and the PCI master for the CPU's
//! memory-mapped accesses to devices.
//!
//! It is attached to the system [`crate::PciBus`] and clocked with it (its PCI interface
//! works in lock-step with the bus); host memory reaches it `&mut` through the bus's
//! handler. Its behaviour:
//!
//! - **DMA reads** (target): delayed transactions (PCI 2.2 §3.3.3.3). The first attempt
//!   is latched into a delayed-read slot and retried; the memory fetch runs for
//!   `memory_read_latency`; the master's repeat of the same (address, command) then
//!   streams from the prefetch buffer, one data phase per clock while memory keeps up
//!   (`memory_stream_mb_s`). The bridge disconnects at the end of what it prefetched:
//!   the end of the cache line for Memory Read / Read Line, `mrm_prefetch_bytes` for Read
//!   Multiple, and never past a 4 KB boundary. Leftover prefetched data is discarded when
//!   the master stops early. A fetch never passes a posted write (PCI ordering, §3.2.5).
//! - **DMA writes** (target): posted into a buffer of `posted_write_buffer_bytes`
//!   (disconnect when it fills, Retry when full, disconnect at a 4 KB boundary) and
//!   committed to host memory `posted_write_latency` after the transaction ends: the CPU
//!   sees the data from that instant on, not before.
//! - **CPU writes** to a device (master): posted: the CPU gets `CpuWritePosted` at once
//!   while the bridge has room for `cpu_write_buffer_entries`, later otherwise.
//! - **CPU reads** of a device (master): non-posted: the CPU gets `CpuReadData` when the
//!   PCI read has completed (all ones after a master abort).
//! - **Faults** (`BridgeParams::abort`, [`crate::abort`]): DMA into a chosen range of
//!   pages is ended with Target-Abort, or not claimed (Master-Abort).

use crate::bus::words::align_down;
use crate::memory::{page_base, HostMemory, PAGE_SIZE};
use crate::msg::Command;
use crate::params::BridgeParams;
use sim_kernel::{ComponentId, Duration, Time};
use std::collections::VecDeque;

/// Counters of the host bridge.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BridgeStats {
    /// Delayed read requests latched (memory fetches started).
    pub delayed_reads: u64,
    /// Read transactions the bridge ended with Retry.
    pub read_retries: u64,
    /// Write transactions retried because the posted-write buffer was full.
    pub write_retries: u64,
    /// Prefetched completions used only in part (the rest discarded).
    pub partial_prefetches: u64,
    /// DMA writes posted.
    pub posted_writes: u64,
    /// Bytes committed to host memory.
    pub committed_bytes: u64,
    /// CPU writes to devices.
    pub cpu_writes: u64,
    /// CPU reads of devices.
    pub cpu_reads: u64,
    /// CPU writes that found the posting buffer full (the CPU stalls).
    pub cpu_write_stalls: u64,
}

/// A latched delayed read and, once fetched, its prefetch buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DelayedRead {
    pub id: u64,
    pub addr: u64,
    pub command: Command,
    /// When the first byte is in the prefetch buffer.
    pub first_data: Time,
    /// One past the last byte prefetched.
    pub limit: u64,
}

/// A posted write committed lazily: its data waits in host memory (see
/// [`HostMemory::post_commit`]) and becomes visible at the first edge of the bus clock
/// (`phase_ps`, `period_ps`) at or after its commit, where the bus steps it (plus
/// `skew_ps`, a test hook's error, 0 in every real run). A lazy commit into a watched
/// range still needs its clock stepped on time: its watcher is told then.
pub(crate) struct LazyCommit<'a> {
    pub mem: &'a mut HostMemory,
    pub phase_ps: u64,
    pub period_ps: u64,
    pub skew_ps: u64,
}

/// What the bridge does with a read attempt (see [`HostBridge::read_claim`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReadClaim<'a> {
    /// The read is latched already (its data may not be there yet).
    Latched(&'a DelayedRead),
    /// The attempt latches it now: its first byte is in the prefetch buffer at
    /// `first_data`, and the fetch ends at `limit`.
    New { first_data: Time, limit: u64 },
    /// No slot is free: Retry without latching.
    Full,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct PostedWrite {
    addr: u64,
    /// The data, or none when it waits in host memory (a lazy commit, `len` bytes).
    data: Vec<u8>,
    len: u64,
    commit_at: Time,
    /// The data waits in host memory (a lazy commit, see [`HostMemory::post_commit`]).
    queued: bool,
    /// Queued in host memory and no watch covers it: the bus needs no wake-up at its
    /// commit clock.
    lazy: bool,
}

/// A CPU write waiting for room in the bridge's posting buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct WaitingCpuWrite {
    pub tag: u64,
    pub addr: u64,
    pub data: Vec<u8>,
    pub reply_to: ComponentId,
}

/// The host bridge's state (see the module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct HostBridge {
    params: BridgeParams,
    mem_size: u64,
    slots: Vec<DelayedRead>,
    next_slot: u64,
    posted: VecDeque<PostedWrite>,
    posted_bytes: u64,
    last_commit: Time,
    pub(crate) cpu_waiting: VecDeque<WaitingCpuWrite>,
    pub(crate) cpu_writes_queued: usize,
    pub(crate) stats: BridgeStats,
}

impl HostBridge {
    pub(crate) fn new(params: BridgeParams, mem_size: u64) -> Self {
        Self {
            params,
            mem_size,
            slots: Vec::new(),
            next_slot: 0,
            posted: VecDeque::new(),
            posted_bytes: 0,
            last_commit: Time::ZERO,
            cpu_waiting: VecDeque::new(),
            cpu_writes_queued: 0,
            stats: BridgeStats::default(),
        }
    }

    /// The bridge's parameters.
    #[must_use]
    pub fn params(&self) -> &BridgeParams {
        &self.params
    }

    /// Its counters.
    #[must_use]
    pub fn stats(&self) -> &BridgeStats {
        &self.stats
    }

    /// DMA writes posted but not yet committed to host memory.
    #[must_use]
    pub fn pending_writes(&self) -> usize {
        self.posted.len()
    }

    /// When the last posted write becomes visible in host memory (the past if none).
    #[must_use]
    pub fn last_commit(&self) -> Time {
        self.last_commit
    }

    /// Commits every posted write due at or before `t` (checked in line: most clocks
    /// have none due).
    #[inline]
    pub(crate) fn commit_due(&mut self, t: Time, mem: &mut Option<&mut HostMemory>) {
        if self.posted.front().is_some_and(|p| p.commit_at <= t) {
            self.commit_posted(t, mem);
        }
    }

    /// The loop of [`HostBridge::commit_due`].
    fn commit_posted(&mut self, t: Time, mem: &mut Option<&mut HostMemory>) {
        while self.posted.front().is_some_and(|p| p.commit_at <= t) {
            let Some(p) = self.posted.pop_front() else {
                break;
            };
            self.posted_bytes -= p.len;
            if p.queued {
                // Queued in host memory (a lazy commit), maybe applied already for a
                // reader: it is applied there, in order, by now.
                if let Some(m) = mem.as_deref_mut() {
                    m.settle_through(t);
                }
                self.stats.committed_bytes += p.len;
                continue;
            }
            match mem.as_deref_mut() {
                Some(m) => match m.write(p.addr, &p.data) {
                    Ok(()) => self.stats.committed_bytes += p.data.len() as u64,
                    Err(e) => tracing::error!(target: "pci::bridge", %e, "posted write lost"),
                },
                None => {
                    tracing::error!(target: "pci::bridge", addr = p.addr, "no host memory wired: posted write lost")
                }
            }
            tracing::trace!(target: "pci::bridge", addr = p.addr, len = p.data.len(), "committed");
            sim_kernel::spare::give_bytes(p.data);
        }
    }

    /// Whether every posted write that commits at or before `t` is a lazy one (queued
    /// in host memory with no watch over it: its commit tells nobody, see
    /// [`HostBridge::post`]).
    pub(crate) fn commits_lazy_through(&self, t: Time) -> bool {
        self.posted
            .iter()
            .take_while(|p| p.commit_at <= t)
            .all(|p| p.lazy)
    }

    /// When the next posted write commits.
    pub(crate) fn next_commit(&self) -> Option<Time> {
        self.posted.front().map(|p| p.commit_at)
    }

    /// When the next posted write commits whose commit the bus must step at its own
    /// clock (not a lazy one, see [`HostBridge::post`]).
    pub(crate) fn next_eager_commit(&self) -> Option<Time> {
        self.posted.iter().find(|p| !p.lazy).map(|p| p.commit_at)
    }

    /// One past the last byte the bridge prefetches for a read at `addr`.
    pub(crate) fn fetch_limit(&self, addr: u64, command: Command) -> u64 {
        let line = self.params.cache_line_bytes;
        let line_start = align_down(addr, line);
        let line_end = line_start.saturating_add(line);
        let want = match command {
            Command::MemoryReadMultiple => line_start
                .saturating_add(self.params.mrm_prefetch_bytes)
                .max(line_end),
            Command::MemoryRead
            | Command::MemoryReadLine
            | Command::MemoryWrite
            | Command::MemoryWriteInvalidate => line_end,
        };
        if self.target_aborts(addr) {
            return addr; // no data: the access ends with Target-Abort (`abort`)
        }
        want.min(page_base(addr).saturating_add(PAGE_SIZE))
            .min(self.mem_size)
    }

    /// What [`HostBridge::claim_read`] does for a read of (`addr`, `command`) at `t`,
    /// without doing it: a pure function of the bridge, so that the bus's look-ahead
    /// predicts the latch of a delayed read (see `bus/retry.rs`) with the very rule
    /// that latches it.
    pub(crate) fn read_claim(&self, addr: u64, command: Command, t: Time) -> ReadClaim<'_> {
        if let Some(s) = self.slot_for(addr, command) {
            return ReadClaim::Latched(s);
        }
        if self.slots.len() >= self.params.delayed_read_slots {
            return ReadClaim::Full;
        }
        ReadClaim::New {
            first_data: t.max(self.last_commit) + self.params.memory_read_latency,
            limit: self.fetch_limit(addr, command),
        }
    }

    /// The delayed-read slot for (`addr`, `command`): the matching one, or a newly
    /// latched one whose fetch starts at `t` (after every posted write has committed).
    /// `None` when no slot is free (the bridge retries without latching).
    pub(crate) fn claim_read(&mut self, addr: u64, command: Command, t: Time) -> Option<u64> {
        let (first_data, limit) = match self.read_claim(addr, command, t) {
            ReadClaim::Latched(s) => return Some(s.id),
            ReadClaim::Full => return None,
            ReadClaim::New { first_data, limit } => (first_data, limit),
        };
        let id = self.next_slot;
        self.next_slot += 1;
        self.slots.push(DelayedRead {
            id,
            addr,
            command,
            first_data,
            limit,
        });
        self.stats.delayed_reads += 1;
        tracing::debug!(target: "pci::bridge", addr, cmd = command.name(), "delayed read latched");
        Some(id)
    }

    /// The slot `id`.
    /// The delayed read latched for (`addr`, `command`), if any.
    pub(crate) fn slot_for(&self, addr: u64, command: Command) -> Option<&DelayedRead> {
        self.slots
            .iter()
            .find(|s| s.addr == addr && s.command == command)
    }

    pub(crate) fn slot(&self, id: u64) -> Option<&DelayedRead> {
        self.slots.iter().find(|s| s.id == id)
    }

    /// When the byte `offset` bytes after the slot's start is in the prefetch buffer.
    pub(crate) fn available_at(&self, slot: &DelayedRead, offset: u64) -> Time {
        let ps = u128::from(offset) * 1_000_000 / u128::from(self.params.memory_stream_mb_s.max(1));
        slot.first_data + Duration(u64::try_from(ps).unwrap_or(u64::MAX))
    }

    /// Whether memory streams a `w`-byte word at least every `period_ps`.
    pub(crate) fn stream_keeps_up(&self, w: u64, period_ps: u64) -> bool {
        u128::from(w) * 1_000_000
            <= u128::from(period_ps) * u128::from(self.params.memory_stream_mb_s)
    }

    /// Ends the delayed read `id` after a transaction took data from it (leftover
    /// prefetched data is discarded).
    pub(crate) fn consume(&mut self, id: u64, used_all: bool) {
        self.slots.retain(|s| s.id != id);
        if !used_all {
            self.stats.partial_prefetches += 1;
        }
    }

    /// One past the last byte a write starting at `addr` can post now.
    pub(crate) fn write_limit(&self, addr: u64) -> u64 {
        let free = self
            .params
            .posted_write_buffer_bytes
            .saturating_sub(self.posted_bytes);
        if self.target_aborts(addr) {
            return addr; // no data: the access ends with Target-Abort (`abort`)
        }
        addr.saturating_add(free)
            .min(page_base(addr).saturating_add(PAGE_SIZE))
            .min(self.mem_size)
    }

    /// Posts a DMA write that ended at `t_end`; it commits `posted_write_latency` later,
    /// after every earlier write. `lazy`: commit it lazily (see [`LazyCommit`]); `None`:
    /// the bridge keeps the data and writes it when its bus steps the commit's clock.
    pub(crate) fn post(
        &mut self,
        addr: u64,
        data: Vec<u8>,
        t_end: Time,
        lazy: Option<LazyCommit<'_>>,
    ) {
        let commit_at = (t_end + self.params.posted_write_latency).max(self.last_commit);
        self.last_commit = commit_at;
        let len = data.len() as u64;
        self.posted_bytes += len;
        self.stats.posted_writes += 1;
        let mut write = PostedWrite {
            addr,
            data,
            len,
            commit_at,
            queued: false,
            lazy: false,
        };
        // An empty or out-of-range write keeps the eager path (its error is logged when
        // it commits).
        if let Some(l) = lazy.filter(|l| len > 0 && l.mem.contains(addr, len)) {
            let since = commit_at.as_ps().saturating_sub(l.phase_ps);
            let period = l.period_ps.max(1);
            let edge = l.phase_ps + since.div_ceil(period) * period + l.skew_ps;
            let data = std::mem::take(&mut write.data);
            write.lazy = !l.mem.watched(addr, len);
            write.queued = l.mem.post_commit(Time(edge), addr, data).is_ok();
        }
        self.posted.push_back(write);
    }

    /// Size of the host memory it serves \[bytes\].
    #[must_use]
    pub fn memory_bytes(&self) -> u64 {
        self.mem_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim_kernel::Bytes;

    #[test]
    fn prefetch_limits_follow_command_and_4k() {
        let b = HostBridge::new(BridgeParams::default(), 1 << 20);
        assert_eq!(b.fetch_limit(0x1004, Command::MemoryRead), 0x1020);
        assert_eq!(b.fetch_limit(0x1004, Command::MemoryReadLine), 0x1020);
        assert_eq!(b.fetch_limit(0x1F84, Command::MemoryReadMultiple), 0x2000);
        assert_eq!(
            b.fetch_limit(0xFFFF0, Command::MemoryReadMultiple),
            0x100000
        );
        let small = HostBridge::new(
            BridgeParams {
                mrm_prefetch_bytes: 256,
                ..BridgeParams::default()
            },
            1 << 20,
        );
        assert_eq!(
            small.fetch_limit(0x1010, Command::MemoryReadMultiple),
            0x1100
        );
    }

    #[test]
    fn posted_writes_commit_in_order_after_latency() {
        let mut b = HostBridge::new(BridgeParams::default(), 1 << 20);
        let mut mem = HostMemory::new(Bytes(1 << 20), 0).unwrap();
        b.post(0x100, vec![1, 2], Time(1_000), None);
        b.post(0x200, vec![3], Time(2_000), None);
        assert_eq!(b.next_commit(), Some(Time(121_000)));
        let mut m = Some(&mut mem);
        b.commit_due(Time(121_999), &mut m);
        assert_eq!(b.pending_writes(), 1);
        b.commit_due(Time(122_000), &mut m);
        assert_eq!(b.pending_writes(), 0);
        assert_eq!(mem.read_vec(0x100, 2).unwrap(), vec![1, 2]);
        assert_eq!(b.stats().committed_bytes, 3);
        // A delayed read latched now may not start before the writes committed; the
        // pure `read_claim` says so before `claim_read` does it.
        let first = Time(122_000) + Duration::from_ns(180);
        assert_eq!(
            b.read_claim(0x100, Command::MemoryReadLine, Time(5_000)),
            ReadClaim::New {
                first_data: first,
                limit: 0x120
            }
        );
        let id = b
            .claim_read(0x100, Command::MemoryReadLine, Time(5_000))
            .unwrap();
        let s = b.slot(id).unwrap().clone();
        assert_eq!(s.first_data, Time(122_000) + Duration::from_ns(180));
        assert_eq!(
            b.read_claim(0x100, Command::MemoryReadLine, Time(9_000)),
            ReadClaim::Latched(&s)
        );
        assert_eq!(
            b.read_claim(0x300, Command::MemoryReadLine, Time(5_000)),
            ReadClaim::Full
        );
        assert_eq!(
            b.claim_read(0x300, Command::MemoryReadLine, Time(5_000)),
            None,
            "one slot"
        );
        assert_eq!(b.available_at(&s, 8), s.first_data + Duration(10_000));
    }
}
