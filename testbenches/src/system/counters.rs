//! Counters of a component that another one keeps part of: the GEC's local-bus reads,
//! which the local bus answers from the buffer RAM on its behalf in untraced fast
//! stepping (the GEC read fold, `pci_model::ram_fold`).

use super::build::System;
use super::world::Comp;
use gige_mac::gec::GecStats;

impl System {
    /// The GEC's counters of node `n` with the local-bus reads the bus answered from
    /// the buffer RAM for it (`PciBus::fold_stats`): the counts of a run in which every
    /// read reached the GEC.
    #[must_use]
    pub fn gec_stats(&self, n: usize) -> Option<GecStats> {
        let ids = self.nodes.get(n)?;
        let mut s = match self.world.get(ids.gec) {
            Some(Comp::Gec(_, g)) => g.stats().clone(),
            _ => return None,
        };
        if let Some(Comp::LocalBus(_, b)) = self.world.get(ids.local_bus) {
            let folded = b.fold_stats();
            s.target_reads += folded.reads;
            s.target_errors += folded.aborts;
        }
        Some(s)
    }
}
