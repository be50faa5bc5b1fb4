//! The switch's address-learning table (filtering database, IEEE 802.1D clause 7.9 in
//! spirit): source address -> port, learned from good frames, looked up for unicast
//! destinations.
//!
//! A `BTreeMap`, so nothing about it depends on hashing or iteration order. No ageing: a
//! run is far shorter than the 300 s default ageing time of IEEE 802.1D, so entries never
//! expire within one. A station that shows up on another port moves.

use crate::msg::PortIndex;
use std::collections::BTreeMap;
use via_abi::MacAddr;

/// What the table counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TableStats {
    /// New addresses learned.
    pub learned: u64,
    /// Known addresses seen on a different port (entry moved).
    pub moved: u64,
    /// New addresses not learned because the table was full.
    pub full: u64,
    /// Group (multicast or broadcast) source addresses, never learned (they are invalid
    /// as sources).
    pub group_sources: u64,
}

/// Source address -> port.
#[derive(Clone, Debug)]
pub struct LearningTable {
    entries: BTreeMap<MacAddr, PortIndex>,
    capacity: usize,
    stats: TableStats,
}

impl LearningTable {
    /// An empty table of at most `capacity` entries.
    #[must_use]
    pub fn new(capacity: usize) -> Self {
        Self {
            entries: BTreeMap::new(),
            capacity,
            stats: TableStats::default(),
        }
    }

    /// Records that `src` was seen on `port`.
    pub fn learn(&mut self, src: MacAddr, port: PortIndex) {
        if src.is_multicast() {
            self.stats.group_sources += 1;
            return;
        }
        let len = self.entries.len();
        match self.entries.get_mut(&src) {
            Some(p) if *p == port => {}
            Some(p) => {
                *p = port;
                self.stats.moved += 1;
            }
            None if len < self.capacity => {
                self.entries.insert(src, port);
                self.stats.learned += 1;
            }
            None => self.stats.full += 1,
        }
    }

    /// The port a unicast `dst` was learned on; `None` for unknown and group addresses.
    #[must_use]
    pub fn lookup(&self, dst: MacAddr) -> Option<PortIndex> {
        if dst.is_multicast() {
            return None;
        }
        self.entries.get(&dst).copied()
    }

    /// Entries, in address order.
    pub fn entries(&self) -> impl Iterator<Item = (MacAddr, PortIndex)> + '_ {
        self.entries.iter().map(|(a, p)| (*a, *p))
    }

    /// Number of entries.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the table is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// What it counted.
    #[must_use]
    pub fn stats(&self) -> &TableStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learns_moves_and_fills() {
        let a = MacAddr([2, 0, 0, 0, 0, 1]);
        let b = MacAddr([2, 0, 0, 0, 0, 2]);
        let c = MacAddr([2, 0, 0, 0, 0, 3]);
        let mut t = LearningTable::new(2);
        assert!(t.is_empty());
        t.learn(a, PortIndex(0));
        t.learn(a, PortIndex(0));
        t.learn(b, PortIndex(1));
        t.learn(c, PortIndex(2)); // full
        t.learn(a, PortIndex(2)); // moved
        t.learn(MacAddr::BROADCAST, PortIndex(1));
        assert_eq!(t.lookup(a), Some(PortIndex(2)));
        assert_eq!(t.lookup(b), Some(PortIndex(1)));
        assert_eq!(t.lookup(c), None);
        assert_eq!(t.lookup(MacAddr::BROADCAST), None);
        assert_eq!(t.len(), 2);
        assert_eq!(
            *t.stats(),
            TableStats {
                learned: 2,
                moved: 1,
                full: 1,
                group_sources: 1
            }
        );
        let order: Vec<_> = t.entries().map(|(m, _)| m).collect();
        assert_eq!(order, vec![a, b]);
    }
}
