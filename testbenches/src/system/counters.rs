//! Counters of a component that another one keeps part of: the GEC's local-bus reads
//! and writes, which the local bus answers from and stores in the buffer RAM on its
//! behalf in untraced fast stepping (the GEC read and write folds,
//! `pci_model::ram_fold`), the card's DMA master, which
//! the system bus runs then (`PciBus::fold_dma_master`), and the DP83820's bus side,
//! kept in the node's storage while the local bus runs its completions
//! (`PciBus::fold_master_completions`).

use super::build::System;
use super::world::Comp;
use gige_mac::dp83820::Dp83820Bus;
use gige_mac::gec::{Gec, GecStats};
use pci_model::DmaMaster;

impl System {
    /// The GEC of node `n` (kept in its node's storage).
    #[must_use]
    pub fn gec(&self, n: usize) -> Option<&Gec> {
        self.world.store.get(n).map(|s| &*s.gec)
    }

    /// The GEC of node `n`, to change it (test hooks).
    pub fn gec_mut(&mut self, n: usize) -> Option<&mut Gec> {
        self.world.store.get_mut(n).map(|s| &mut *s.gec)
    }

    /// The GEC's counters of node `n` with the local-bus reads the bus answered from
    /// the buffer RAM for it and the writes it stored there (`PciBus::fold_stats`): the
    /// counts of a run in which every read and write reached the GEC.
    #[must_use]
    pub fn gec_stats(&self, n: usize) -> Option<GecStats> {
        let ids = self.nodes.get(n)?;
        let mut s = self.gec(n)?.stats().clone();
        if let Some(Comp::LocalBus(_, b)) = self.world.get(ids.local_bus) {
            let folded = b.fold_stats();
            s.target_reads += folded.reads;
            s.target_errors += folded.aborts;
            s.target_writes += folded.writes;
        }
        Some(s)
    }

    /// The card DMA master of node `n`: its component, or the one its system bus runs
    /// (untraced fast stepping, `PciBus::fold_dma_master`).
    #[must_use]
    pub fn dma(&self, n: usize) -> Option<&DmaMaster> {
        let ids = self.nodes.get(n)?;
        match self.world.get(ids.dma) {
            Some(Comp::Dma(_, d)) => Some(d),
            Some(Comp::FoldedDma(_)) => self.system_bus(n)?.folded_dma(),
            _ => None,
        }
    }

    /// Node `n`'s DP83820 bus side, wherever it lives.
    #[must_use]
    pub fn mac_bus(&self, n: usize) -> Option<&Dp83820Bus> {
        let ids = self.nodes.get(n)?;
        match self.world.get(ids.mac_bus) {
            Some(Comp::MacBus(_, d)) => Some(d),
            Some(Comp::FoldedMacBus(_)) => self.world.store.get(n)?.mac_bus.as_deref(),
            _ => None,
        }
    }
}
