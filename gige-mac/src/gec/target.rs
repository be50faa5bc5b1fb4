//! The GEC as the local-bus target of its buffer RAM: reads answered after the RAM's
//! latency, writes stored, and DP83820 status write-backs recognised by address.
//!
//! Read timing: the bus announces a read (`TargetRead`) at the edge after its address
//! phase, when the GEC samples the address; the GEC reads the RAM then and drives the
//! data `ram_read_latency` core clocks later (the bus holds TRDY# off until then, wait
//! states, at most 16 clocks before it retries). With the default medium DEVSEL# and 2
//! core clocks at 33 MHz, the first data phase is the third clock after the address
//! phase (one wait state). Reads past the end of the RAM get what is there; a read
//! starting outside it is a target abort.
//!
//! In untraced fast stepping the local bus answers these reads itself from the RAM with
//! the same timing and bytes (`GecParams::ram_backing`, `pci_model::ram_fold`): no
//! `TargetRead` reaches the GEC then, and the bus counts those reads
//! (`PciBus::fold_stats`), which the system's reports add to `target_reads` and
//! `target_errors`. It stores the writes outside the descriptor rings itself as well
//! (the write fold, at the place `TargetWrite` would have had): those only store bytes
//! here; the rings' writes, where a status write-back completes a descriptor, still
//! come as `TargetWrite`. The system's reports add the stored ones to `target_writes`.

use super::Gec;
use crate::buffer_ram::BufferRam;
use crate::msg::MacMsg;
use pci_model::PciMsg;
use sim_kernel::{Ctx, Cycles};
use via_abi::dp83820::CmdSts;

/// Whether `[addr, addr + len)` covers all of `[at, at + 4)`.
fn covers(addr: u64, len: u64, at: u64) -> bool {
    addr <= at && addr.saturating_add(len) >= at + 4
}

impl Gec {
    pub(crate) fn target_read<M: From<PciMsg> + From<MacMsg>>(
        &mut self,
        tag: u64,
        addr: u64,
        len: u64,
        ctx: &mut Ctx<'_, M>,
        ram: &BufferRam,
    ) {
        self.stats.target_reads += 1;
        let end = self.layout.base + self.layout.size();
        let n = len.min(end.saturating_sub(addr));
        let msg = match ram.read_vec(addr, n).ok().filter(|d| !d.is_empty()) {
            Some(data) => PciMsg::TargetReadData { tag, data },
            None => {
                self.stats.target_errors += 1;
                tracing::warn!(target: "mac::gec", addr, len, "read outside the buffer RAM: target abort");
                PciMsg::TargetAbort { tag }
            }
        };
        let at = ctx
            .my_domain()
            .edge_after(ctx.now(), Cycles(self.params.ram_read_latency.0.max(1)));
        ctx.send_at(self.bus, at, msg.into());
    }

    pub(crate) fn target_write<M: From<PciMsg> + From<MacMsg>>(
        &mut self,
        addr: u64,
        data: &[u8],
        ctx: &mut Ctx<'_, M>,
        ram: &mut BufferRam,
    ) {
        self.stats.target_writes += 1;
        if let Err(e) = ram.write(addr, data) {
            self.stats.target_errors += 1;
            tracing::warn!(target: "mac::gec", %e, "write outside the buffer RAM dropped");
            return;
        }
        let len = data.len() as u64;
        let cmdsts = |ram: &BufferRam, at: u64| {
            let mut b = [0u8; 4];
            ram.read(at, &mut b)
                .ok()
                .map(|()| CmdSts::from_bits_retain(u32::from_le_bytes(b)))
        };
        for pos in 0..self.layout.tx_slots {
            let Ok(d) = self.layout.tx_descriptor(pos) else {
                continue;
            };
            if !covers(addr, len, d + 8) {
                continue;
            }
            let pending = self
                .tx_ring
                .get(usize::from(pos))
                .is_some_and(Option::is_some);
            match cmdsts(ram, d + 8) {
                Some(c) if !c.contains(CmdSts::OWN) && pending => {
                    self.tx_complete(pos, c.contains(CmdSts::OK), ctx);
                }
                _ => {}
            }
        }
        for slot in 0..self.layout.rx_slots {
            let Ok(d) = self.layout.rx_descriptor(slot) else {
                continue;
            };
            if !covers(addr, len, d + 8) {
                continue;
            }
            if let Some(c) = cmdsts(ram, d + 8).filter(|c| c.contains(CmdSts::OWN)) {
                self.rx_complete(slot, c, ctx);
            }
        }
    }
}
