//! What the injected faults (`[faults]`) did in a system, per node, besides the wire's
//! (`System::wire_faults`): the ATT manager with its bit flips.

use super::build::System;
use super::world::Comp;
use nic_model::att::AttManager;

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
