//! Fault injection on the host bridge: a range of host memory whose DMA accesses the
//! bridge answers with **Target-Abort** (it claims the access, DEVSEL#, then STOP#
//! without TRDY#: PCI 2.2 §3.3.3.2.1, as a bridge does for an access it cannot complete,
//! e.g. a memory error or a protected range), or does not claim at all, so no DEVSEL#
//! comes and the master ends with **Master-Abort** (§3.3.3.1: a hole in the bridge's
//! positive decode). Off (`BridgeParams::abort` = `None`) in every preset.
//!
//! The range is whole 4 KB pages: the bridge decodes host memory in pages and never
//! lets a burst cross a page boundary (`fetch_limit`, `write_limit`), so a burst that
//! starts below the range ends before it and the master's next transaction starts in
//! it. The bus asks the bridge [`HostBridge::claims`] when it decodes an address and
//! [`HostBridge::target_aborts`] when a transaction to it reaches DEVSEL#; the
//! terminations are the bus's own (counted in `BusStats::target_aborts` /
//! `master_aborts` and per master), and the master's DMA job ends with
//! `DmaStatus::TargetAbort` / `MasterAbort` at the first byte of the range.

use crate::bridge::HostBridge;
use crate::memory::PAGE_SIZE;

/// How the bridge answers DMA into the range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbortKind {
    /// The bridge claims the access and ends it with Target-Abort.
    Target,
    /// The bridge does not claim the access: Master-Abort.
    Master,
}

/// A range of host physical addresses `[start, end)`, whole 4 KB pages, answered with
/// an abort.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AbortRange {
    start: u64,
    end: u64,
    kind: AbortKind,
}

/// Why an [`AbortRange`] was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AbortRangeError {
    /// Empty, overflowing, or not whole pages.
    #[error("{start:#x} + {bytes} bytes is not a non-empty range of whole 4 KB pages")]
    NotPages {
        /// First address asked for.
        start: u64,
        /// Length asked for \[bytes\].
        bytes: u64,
    },
}

impl AbortRange {
    /// `bytes` bytes from `start`, answered with `kind`.
    ///
    /// # Errors
    /// An empty range, one that overflows, or one that is not whole 4 KB pages.
    pub fn new(start: u64, bytes: u64, kind: AbortKind) -> Result<Self, AbortRangeError> {
        let bad = AbortRangeError::NotPages { start, bytes };
        if bytes == 0 || start % PAGE_SIZE != 0 || bytes % PAGE_SIZE != 0 {
            return Err(bad);
        }
        let end = start.checked_add(bytes).ok_or(bad)?;
        Ok(Self { start, end, kind })
    }

    /// First address of the range.
    #[must_use]
    pub fn start(&self) -> u64 {
        self.start
    }

    /// One past its last address.
    #[must_use]
    pub fn end(&self) -> u64 {
        self.end
    }

    /// How the bridge answers.
    #[must_use]
    pub fn kind(&self) -> AbortKind {
        self.kind
    }

    /// Whether `addr` is in the range.
    #[must_use]
    pub fn contains(&self, addr: u64) -> bool {
        (self.start..self.end).contains(&addr)
    }
}

impl HostBridge {
    /// Whether the bridge claims a DMA access at `addr` (its positive decode: host
    /// memory but a master-abort range).
    #[must_use]
    pub fn claims(&self, addr: u64) -> bool {
        self.abort_at(addr) != Some(AbortKind::Master)
    }

    /// Whether the bridge ends a DMA access at `addr` with Target-Abort.
    #[must_use]
    pub fn target_aborts(&self, addr: u64) -> bool {
        self.abort_at(addr) == Some(AbortKind::Target)
    }

    /// How an access at `addr` is aborted, if it is.
    fn abort_at(&self, addr: u64) -> Option<AbortKind> {
        self.params()
            .abort
            .filter(|r| r.contains(addr))
            .map(|r| r.kind())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msg::Command;
    use crate::params::BridgeParams;

    fn bridge(kind: AbortKind) -> HostBridge {
        let params = BridgeParams {
            abort: Some(AbortRange::new(0x3000, 0x2000, kind).unwrap()),
            ..BridgeParams::default()
        };
        HostBridge::new(params, 1 << 20)
    }

    #[test]
    fn ranges_are_whole_pages() {
        for (start, bytes) in [(0, 0), (0x100, 4096), (0, 100), (u64::MAX - 4095, 8192)] {
            assert!(AbortRange::new(start, bytes, AbortKind::Target).is_err());
        }
        let r = AbortRange::new(0x3000, 0x2000, AbortKind::Master).unwrap();
        assert!(!r.contains(0x2FFF) && r.contains(0x3000) && r.contains(0x4FFF));
        assert!(!r.contains(0x5000));
    }

    #[test]
    fn target_abort_range_is_claimed_and_aborted_and_takes_no_data() {
        let b = bridge(AbortKind::Target);
        assert!(b.claims(0x3000) && b.target_aborts(0x3000));
        assert!(!b.target_aborts(0x2FFC) && !b.target_aborts(0x5000));
        // No data phase is offered inside it (the bus's lookahead sees a zero burst).
        assert_eq!(b.fetch_limit(0x3040, Command::MemoryReadMultiple), 0x3040);
        assert_eq!(b.write_limit(0x4000), 0x4000);
        // A burst from below still ends at its page boundary, before the range.
        assert_eq!(b.fetch_limit(0x2F00, Command::MemoryReadMultiple), 0x3000);
        assert_eq!(b.write_limit(0x2F00), 0x3000);
    }

    #[test]
    fn master_abort_range_is_not_claimed() {
        let b = bridge(AbortKind::Master);
        assert!(!b.claims(0x3000) && !b.claims(0x4FFF));
        assert!(b.claims(0x2FFF) && b.claims(0x5000));
        assert!(!b.target_aborts(0x3000));
    }
}
