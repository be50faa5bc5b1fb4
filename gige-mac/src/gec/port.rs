//! The GEC's buffer-RAM write port (its own descriptor writes, one at a time, landing at
//! their end) and its local-bus master interface (DP83820 register writes, completed in
//! order), with the initialization sequence that uses both.
//!
//! Initialization, in order: every TX and RX descriptor into the RAM (`(tx_slots +
//! rx_slots) x ceil(16 / ram_port_bytes)` core clocks), then register writes TXDP =
//! TX descriptor 0, RXDP = RX descriptor 0, TXCFG, RXCFG ([`GecParams::txcfg`],
//! [`GecParams::rxcfg`]), CR = RXE. Ready when the CR write has ended on the bus.

use super::inputs::GecCtx;
use super::{Gec, GecParams, GecState, RxSlot};
use crate::buffer_ram::{BufferRam, DESCRIPTOR_BYTES};
use crate::dp83820::regs::{self, cr};
use crate::msg::MacMsg;
use pci_model::{BusRequest, Command, PciMsg, TransactionDone, TxnStatus};
use sim_kernel::{Ctx, Cycles, MsgId, Time};
use via_abi::dp83820::{CmdSts, Descriptor, DescriptorRepr};

/// A write of the GEC's RAM port, landing at `at`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RamJob {
    pub at: Time,
    pub what: RamWrite,
}

/// What a RAM-port write is.
#[derive(Clone, Copy, Debug)]
pub(crate) enum RamWrite {
    /// Every descriptor of both rings (initialization).
    Rings,
    /// The TX descriptor at ring position `pos` handed to the DP83820.
    TxDescriptor { pos: u16 },
    /// RX descriptor `slot`'s cmdsts reset (the buffer given back).
    RxRelease { slot: u16 },
}

/// A register write in flight on the local bus.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RegWrite {
    pub what: RegWhat,
    pub issued: Time,
}

/// Why a register write was made.
#[derive(Clone, Copy, Debug)]
pub(crate) enum RegWhat {
    /// Part of initialization; `last`: the CR.RXE that ends it.
    Init { last: bool },
    /// CR.TXE for the frame of `msg`.
    Txe { msg: MsgId },
    /// CR.RXE after a release.
    Rxe,
}

impl GecParams {
    /// Core clocks the RAM port takes for `bytes`.
    fn port_cycles(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.ram_port_bytes.max(1)).max(1)
    }
}

impl Gec {
    /// Starts initialization (`GecInit`).
    pub(crate) fn init<M: From<PciMsg> + From<MacMsg>>(&mut self, ctx: &mut Ctx<'_, M>) {
        if self.fsm.state() != GecState::Reset {
            self.stats.unexpected += 1;
            tracing::warn!(target: "mac::gec", "GecInit after initialization: ignored");
            return;
        }
        self.fsm.set(GecState::BuildingRings, ctx);
        let descriptors = u64::from(self.layout.tx_slots) + u64::from(self.layout.rx_slots);
        let cycles = descriptors * self.params.port_cycles(DESCRIPTOR_BYTES);
        self.ram_write(RamWrite::Rings, cycles, ctx);
    }

    /// Queues a RAM-port write of `cycles` core clocks.
    pub(crate) fn ram_write<M: From<PciMsg> + From<MacMsg>, C: GecCtx<M> + ?Sized>(
        &mut self,
        what: RamWrite,
        cycles: u64,
        ctx: &mut C,
    ) {
        let core = ctx.core();
        let start = core.edge_at_or_after(ctx.now().max(self.ram_free_at));
        let at = start + core.cycles(Cycles(cycles.max(1)));
        self.ram_free_at = at;
        self.ram_jobs.push_back(RamJob { at, what });
        ctx.wake_at(at, MacMsg::GecWake.into());
    }

    /// Core clocks of one descriptor write.
    pub(crate) fn descriptor_cycles(&self) -> u64 {
        self.params.port_cycles(DESCRIPTOR_BYTES)
    }

    /// Core clocks of one cmdsts write.
    pub(crate) fn cmdsts_cycles(&self) -> u64 {
        self.params.port_cycles(4)
    }

    /// RAM-port writes whose time has come land in the RAM.
    pub(crate) fn ram_wake<M: From<PciMsg> + From<MacMsg>>(
        &mut self,
        ctx: &mut Ctx<'_, M>,
        ram: &mut BufferRam,
    ) {
        while self.ram_jobs.front().is_some_and(|j| j.at <= ctx.now()) {
            let Some(job) = self.ram_jobs.pop_front() else {
                break;
            };
            match job.what {
                RamWrite::Rings => self.rings_written(ctx, ram),
                RamWrite::TxDescriptor { pos } => self.tx_descriptor_written(pos, ctx, ram),
                RamWrite::RxRelease { slot } => self.rx_release_written(slot, ctx, ram),
            }
        }
    }

    /// Writes one descriptor into the RAM.
    pub(crate) fn put_descriptor(&mut self, ram: &mut BufferRam, at: u64, d: DescriptorRepr) {
        let mut bytes = [0u8; 16];
        d.emit(&mut Descriptor::new_unchecked(&mut bytes[..]));
        if let Err(e) = ram.write(at, &bytes) {
            tracing::error!(target: "mac::gec", %e, "descriptor outside the buffer RAM");
        }
    }

    fn rings_written<M: From<PciMsg> + From<MacMsg>>(
        &mut self,
        ctx: &mut Ctx<'_, M>,
        ram: &mut BufferRam,
    ) {
        let l = self.layout.clone();
        let addr32 = |a: Result<u64, _>| a.ok().and_then(|a| u32::try_from(a).ok()).unwrap_or(0);
        for pos in 0..l.tx_slots {
            let next = (pos + 1) % l.tx_slots;
            let d = DescriptorRepr {
                link: addr32(l.tx_descriptor(next)),
                bufptr: addr32(l.tx_buffer(pos)),
                cmdsts: CmdSts::empty(),
                extsts: 0,
            };
            let at = l.tx_descriptor(pos).unwrap_or(l.base);
            self.put_descriptor(ram, at, d);
        }
        let size = u16::try_from(l.slot_bytes).unwrap_or(u16::MAX);
        for slot in 0..l.rx_slots {
            let next = (slot + 1) % l.rx_slots;
            let d = DescriptorRepr {
                link: addr32(l.rx_descriptor(next)),
                bufptr: addr32(l.rx_buffer(slot)),
                cmdsts: CmdSts::empty().with_size(size),
                extsts: 0,
            };
            let at = l.rx_descriptor(slot).unwrap_or(l.base);
            self.put_descriptor(ram, at, d);
        }
        self.fsm.set(GecState::Programming, ctx);
        let writes = [
            (regs::TXDP, addr32(l.tx_descriptor(0))),
            (regs::RXDP, addr32(l.rx_descriptor(0))),
            (regs::TXCFG, self.params.txcfg()),
            (regs::RXCFG, self.params.rxcfg()),
        ];
        for (off, v) in writes {
            self.register_write(off, v, RegWhat::Init { last: false }, 0, ctx);
        }
        self.register_write(regs::CR, cr::RXE, RegWhat::Init { last: true }, 0, ctx);
    }

    /// Queues a one-dword write of `v` to DP83820 register `offset`.
    pub(crate) fn register_write<M: From<PciMsg> + From<MacMsg>>(
        &mut self,
        offset: u64,
        v: u32,
        what: RegWhat,
        tag: u64,
        ctx: &mut Ctx<'_, M>,
    ) {
        self.reg_writes.push_back(RegWrite {
            what,
            issued: ctx.now(),
        });
        let req = BusRequest {
            master: self.master,
            tag,
            command: Command::MemoryWrite,
            addr: self.params.mac_regs_base + offset,
            len: 4,
            data: v.to_le_bytes().to_vec(),
        };
        ctx.send(self.bus, PciMsg::Request(req).into());
    }

    /// A register write has ended on the bus.
    pub(crate) fn register_write_done<M: From<PciMsg> + From<MacMsg>>(
        &mut self,
        done: &TransactionDone,
        ctx: &mut Ctx<'_, M>,
    ) {
        let Some(w) = self.reg_writes.pop_front() else {
            self.stats.unexpected += 1;
            return;
        };
        if done.status != TxnStatus::Ok {
            self.stats.register_write_errors += 1;
            tracing::warn!(target: "mac::gec", status = ?done.status, "DP83820 register write failed");
        }
        match w.what {
            RegWhat::Init { last: true } => {
                self.fsm.set(GecState::Ready, ctx);
                tracing::debug!(target: "mac::gec", at = %ctx.now(), "ready");
                ctx.send(self.engine, MacMsg::GecReady.into());
                while let Some(r) = self.waiting.pop_front() {
                    if !self.start_tx(r, ctx) {
                        self.waiting.push_front(r);
                        break;
                    }
                }
            }
            RegWhat::Txe { msg } => {
                if ctx.tracing() {
                    ctx.span(msg, "txe write", w.issued, ctx.now());
                }
            }
            RegWhat::Init { last: false } | RegWhat::Rxe => {}
        }
    }

    fn rx_release_written<M: From<PciMsg> + From<MacMsg>>(
        &mut self,
        slot: u16,
        ctx: &mut Ctx<'_, M>,
        ram: &mut BufferRam,
    ) {
        let size = u16::try_from(self.layout.slot_bytes).unwrap_or(u16::MAX);
        if let Ok(d) = self.layout.rx_descriptor(slot) {
            let cmdsts = CmdSts::empty().with_size(size).bits().to_le_bytes();
            if let Err(e) = ram.write(d + 8, &cmdsts) {
                tracing::error!(target: "mac::gec", %e, "RX descriptor outside the RAM");
            }
        }
        if let Some(s) = self.rx_slots.get_mut(usize::from(slot)) {
            *s = RxSlot::Mac;
        }
        // The receiver stops at the first descriptor it does not own: if that is this
        // one, it may be idle there now.
        if slot == self.rx_mac_next && self.fsm.state() == GecState::Ready {
            self.register_write(regs::CR, cr::RXE, RegWhat::Rxe, 0, ctx);
        }
    }
}
