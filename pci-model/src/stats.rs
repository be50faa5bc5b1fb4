//! Statistics of a bus and its masters, and the optional per-transaction log from which
//! cycle accountings are built.

use crate::msg::Command;

/// Per-master counters on one bus.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MasterStats {
    /// The master's name (as registered).
    pub name: String,
    /// Requests completed (any status).
    pub requests: u64,
    /// Bus transactions (address phases).
    pub transactions: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Transactions ended by target Retry.
    pub retries: u64,
    /// Transactions ended by target Disconnect with the request unfinished.
    pub disconnects: u64,
    /// Transactions ended by latency-timer expiry.
    pub latency_timer_expirations: u64,
    /// Master aborts.
    pub master_aborts: u64,
    /// Target aborts.
    pub target_aborts: u64,
    /// Clocks with REQ# asserted while another master owned the bus or GNT# [PCI clocks].
    pub wait_for_grant_cycles: u64,
}

/// Counters of one bus.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BusStats {
    /// Clocks simulated so far [PCI clocks].
    pub cycles: u64,
    /// Clocks with FRAME# or IRDY# asserted (a transaction owns the bus).
    pub busy_cycles: u64,
    /// Clocks with FRAME# and IRDY# deasserted (idle, including turnaround clocks).
    pub idle_cycles: u64,
    /// Clocks in which data moved (IRDY# and TRDY#).
    pub data_phases: u64,
    /// Busy clocks after the address phase in which no data moved (turnaround, DEVSEL#
    /// decode, wait states, STOP# clocks).
    pub wait_cycles: u64,
    /// Bytes moved (both directions).
    pub bytes: u64,
    /// Bytes read by masters.
    pub bytes_read: u64,
    /// Bytes written by masters.
    pub bytes_written: u64,
    /// Bus transactions (address phases).
    pub transactions: u64,
    /// Requests completed.
    pub requests: u64,
    /// Transactions ended by target Retry.
    pub retries: u64,
    /// Transactions ended by target Disconnect (with or without data) before the master
    /// was done.
    pub disconnects: u64,
    /// Transactions ended by latency-timer expiry.
    pub latency_timer_expirations: u64,
    /// Master aborts.
    pub master_aborts: u64,
    /// Target aborts.
    pub target_aborts: u64,
    /// Write transactions a device target Retried because their first data phase fell in
    /// one of its write-retry windows (back-pressure, [`crate::PciMsg::TargetWriteRetry`]);
    /// included in `retries`.
    pub write_retry_refusals: u64,
    /// Per-master counters, indexed by [`crate::MasterId`].
    pub per_master: Vec<MasterStats>,
    /// Messages of a kind this component does not take (a wiring bug): counted and
    /// traced as errors; any of them fails a system run.
    pub wrong_inputs: u64,
    /// Inputs of the right kind that cannot be acted on and are dropped (warned and
    /// counted): an answer to a read the bus does not know, a request from an unknown
    /// master, an empty write-retry window, a CPU access on a bus without a host bridge,
    /// a CPU write past the end of the address space.
    pub dropped_inputs: u64,
}

impl BusStats {
    /// Fraction of simulated clocks the bus was busy (0 when nothing was simulated).
    #[must_use]
    #[allow(clippy::cast_precision_loss)]
    pub fn utilisation(&self) -> f64 {
        if self.cycles == 0 {
            0.0
        } else {
            self.busy_cycles as f64 / self.cycles as f64
        }
    }
}

/// How one bus transaction ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TenureEnd {
    /// The master moved what it wanted.
    Completed,
    /// Target Retry (no data).
    Retry,
    /// Target Disconnect before the master was done.
    Disconnect,
    /// The master's latency timer expired with GNT# removed.
    LatencyTimer,
    /// No DEVSEL#.
    MasterAbort,
    /// Target abort.
    TargetAbort,
}

impl TenureEnd {
    /// Short name for reports.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            TenureEnd::Completed => "completed",
            TenureEnd::Retry => "retry",
            TenureEnd::Disconnect => "disconnect",
            TenureEnd::LatencyTimer => "latency-timer",
            TenureEnd::MasterAbort => "master-abort",
            TenureEnd::TargetAbort => "target-abort",
        }
    }
}

/// One bus transaction (from its address phase to its last busy clock), in bus clocks
/// (clock `k` begins at edge `k` of the bus's domain).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TenureRecord {
    /// The master.
    pub master: u16,
    /// The request's tag.
    pub tag: u64,
    /// The command.
    pub command: Command,
    /// First byte of this transaction.
    pub addr: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Data phases.
    pub data_phases: u64,
    /// Clock of the address phase.
    pub address_clock: u64,
    /// Clock of the first data phase, if any data moved.
    pub first_data_clock: Option<u64>,
    /// Clock of the last data phase, if any data moved.
    pub last_data_clock: Option<u64>,
    /// Last clock with IRDY# asserted (the next clock is idle).
    pub last_clock: u64,
    /// How it ended.
    pub end: TenureEnd,
    /// Clock from which the target asserted DEVSEL# (none: no target claimed it).
    pub devsel_clock: Option<u64>,
    /// Bytes per data phase (the bus width in bytes).
    pub phase_bytes: u64,
    /// The bytes its data phases moved, in order (`bytes` of them): what AD carried.
    pub data: Vec<u8>,
}
