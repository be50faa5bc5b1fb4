//! What the injected faults (`[faults]`) did in a system, per node, besides the wire's
//! (`System::wire_faults`): the ATT manager with its bit flips, the system bus with the
//! host bridge's aborts.

use super::build::System;
use super::world::Comp;
use nic_model::att::AttManager;
use pci_model::PciBus;

impl System {
    /// The ATT manager of node `n`.
    #[must_use]
    pub fn att(&self, n: usize) -> Option<&AttManager> {
        let id = self.nodes.get(n)?.att;
        match self.world.get(id) {
            Some(Comp::Att(_, a)) => Some(a),
            _ => None,
        }
    }

    /// Bits flipped in node `n`'s ATT in card SDRAM (`faults.att_flip_*`); 0 when none.
    #[must_use]
    pub fn att_bit_flips(&self, n: usize) -> u64 {
        self.att(n).map_or(0, |a| a.stats().bit_flips)
    }
}

impl System {
    /// The system PCI bus of node `n` (its statistics count the host bridge's
    /// Target-Aborts and Master-Aborts, `faults.pci_abort*`).
    #[must_use]
    pub fn system_bus(&self, n: usize) -> Option<&PciBus> {
        let id = self.nodes.get(n)?.system_bus;
        match self.world.get(id) {
            Some(Comp::SystemBus(_, b)) => Some(b),
            _ => None,
        }
    }
}
