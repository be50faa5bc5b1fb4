//! The GEC's side of the two descriptor rings: handing TX buffers to the DP83820 and
//! reporting their completion, reporting filled RX buffers and giving them back.
//!
//! TX: `GecTransmit { slot }` takes the next ring position (positions complete in ring
//! order, so it is free whenever the slot is); its descriptor is written through the RAM
//! port (`gec descriptor write`), then CR.TXE goes out (`txe write`). The DP83820's
//! write-back of that position's cmdsts with OWN clear frees the slot: `GecTxDone`.
//!
//! RX: a write-back with OWN set hands buffer `slot` to the engine: `GecRxFrame` with the
//! size field (minus the FCS when the DP83820 keeps it). Without OK it is given straight
//! back. `GecRxRelease` resets cmdsts (size, OWN clear) through the RAM port.

use super::inputs::GecCtx;
use super::port::{RamWrite, RegWhat};
use super::{Gec, GecState, RxSlot, TxRequest};
use crate::buffer_ram::BufferRam;
use crate::dp83820::regs::{self, cr};
use crate::msg::MacMsg;
use pci_model::PciMsg;
use sim_kernel::{Ctx, MsgId};
use via_abi::dp83820::{CmdSts, DescriptorRepr};
use via_abi::ethernet::FCS_LEN;

impl Gec {
    /// `GecTransmit`.
    pub(crate) fn transmit<M: From<PciMsg> + From<MacMsg>, C: GecCtx<M> + ?Sized>(
        &mut self,
        slot: u16,
        len: u32,
        msg: MsgId,
        ctx: &mut C,
    ) {
        let fits = u64::from(len) <= self.layout.slot_bytes && len <= u32::from(u16::MAX);
        let busy = self.tx_busy.get(usize::from(slot)).copied();
        if len == 0 || !fits || busy != Some(false) {
            self.stats.tx_refused += 1;
            tracing::warn!(target: "mac::gec", slot, len, ?busy, "GecTransmit refused");
            ctx.send(
                self.engine,
                MacMsg::GecTxDone {
                    slot,
                    ok: false,
                    msg,
                }
                .into(),
            );
            return;
        }
        if let Some(b) = self.tx_busy.get_mut(usize::from(slot)) {
            *b = true;
        }
        let r = TxRequest {
            slot,
            len,
            msg,
            arrived: ctx.now(),
        };
        if self.fsm.state() != GecState::Ready || !self.waiting.is_empty() {
            self.waiting.push_back(r);
            return;
        }
        if !self.start_tx(r, ctx) {
            self.waiting.push_front(r);
        }
    }

    /// Puts a frame on the next ring position; false if that position is still in use.
    pub(crate) fn start_tx<M: From<PciMsg> + From<MacMsg>, C: GecCtx<M> + ?Sized>(
        &mut self,
        r: TxRequest,
        ctx: &mut C,
    ) -> bool {
        let pos = self.tx_next;
        let Some(entry) = self.tx_ring.get_mut(usize::from(pos)) else {
            return false;
        };
        if entry.is_some() {
            return false;
        }
        *entry = Some(r);
        self.tx_next = (pos + 1) % self.layout.tx_slots.max(1);
        // A trace tag only names the message in trace spans: untraced, none is sent.
        if let (Some(mac), Ok(d), true) =
            (self.mac_bus, self.layout.tx_descriptor(pos), ctx.tracing())
        {
            ctx.send(
                mac,
                MacMsg::TraceTag {
                    descriptor: d,
                    msg: r.msg,
                }
                .into(),
            );
        }
        tracing::debug!(target: "mac::gec", slot = r.slot, pos, len = r.len, at = %ctx.now(), "transmit");
        let cycles = self.descriptor_cycles();
        self.ram_write(RamWrite::TxDescriptor { pos }, cycles, ctx);
        true
    }

    /// The TX descriptor at `pos` is in the RAM: hand it over with CR.TXE.
    pub(crate) fn tx_descriptor_written<M: From<PciMsg> + From<MacMsg>>(
        &mut self,
        pos: u16,
        ctx: &mut Ctx<'_, M>,
        ram: &mut BufferRam,
    ) {
        let Some(r) = self.tx_ring.get(usize::from(pos)).copied().flatten() else {
            return;
        };
        let l = &self.layout;
        let addr32 = |a: Result<u64, _>| a.ok().and_then(|a| u32::try_from(a).ok()).unwrap_or(0);
        let d = DescriptorRepr {
            link: addr32(l.tx_descriptor((pos + 1) % l.tx_slots.max(1))),
            bufptr: addr32(l.tx_buffer(r.slot)),
            cmdsts: CmdSts::OWN.with_size(u16::try_from(r.len).unwrap_or(u16::MAX)),
            extsts: 0,
        };
        let at = l.tx_descriptor(pos).unwrap_or(l.base);
        self.put_descriptor(ram, at, d);
        if ctx.tracing() {
            ctx.span(r.msg, "gec descriptor write", r.arrived, ctx.now());
        }
        self.stats.tx_frames += 1;
        self.register_write(regs::CR, cr::TXE, RegWhat::Txe { msg: r.msg }, r.msg.0, ctx);
    }

    /// The DP83820 wrote back the TX descriptor at `pos`.
    pub(crate) fn tx_complete<M: From<PciMsg> + From<MacMsg>>(
        &mut self,
        pos: u16,
        ok: bool,
        ctx: &mut Ctx<'_, M>,
    ) {
        let Some(r) = self
            .tx_ring
            .get_mut(usize::from(pos))
            .and_then(Option::take)
        else {
            return;
        };
        if let Some(b) = self.tx_busy.get_mut(usize::from(r.slot)) {
            *b = false;
        }
        if !ok {
            self.stats.tx_failed += 1;
        }
        let land = Self::landing(ctx, self.engine);
        if ctx.tracing() {
            ctx.span(r.msg, "gec tx done", ctx.now(), land);
        }
        tracing::debug!(target: "mac::gec", slot = r.slot, ok, at = %ctx.now(), "tx done");
        ctx.send(
            self.engine,
            MacMsg::GecTxDone {
                slot: r.slot,
                ok,
                msg: r.msg,
            }
            .into(),
        );
        while let Some(next) = self.waiting.pop_front() {
            if !self.start_tx(next, ctx) {
                self.waiting.push_front(next);
                break;
            }
        }
    }

    /// The DP83820 wrote back RX descriptor `slot` with OWN set.
    pub(crate) fn rx_complete<M: From<PciMsg> + From<MacMsg>>(
        &mut self,
        slot: u16,
        cmdsts: CmdSts,
        ctx: &mut Ctx<'_, M>,
    ) {
        let Some(state) = self.rx_slots.get(usize::from(slot)).copied() else {
            return;
        };
        if state != RxSlot::Mac {
            self.stats.unexpected += 1;
            tracing::warn!(target: "mac::gec", slot, ?state, "RX write-back of a buffer the DP83820 does not hold");
            return;
        }
        self.rx_mac_next = (slot + 1) % self.layout.rx_slots.max(1);
        let desc = self.layout.rx_descriptor(slot).unwrap_or(0);
        let msg = self.rx_tags.remove(desc).unwrap_or_else(|| {
            self.next_untraced += 1;
            MsgId(self.next_untraced)
        });
        if !cmdsts.contains(CmdSts::OK) {
            self.stats.rx_errors += 1;
            tracing::warn!(target: "mac::gec", slot, cmdsts = cmdsts.bits(), "RX write-back without OK: buffer given back");
            if let Some(s) = self.rx_slots.get_mut(usize::from(slot)) {
                *s = RxSlot::Releasing;
            }
            let cycles = self.cmdsts_cycles();
            self.ram_write(RamWrite::RxRelease { slot }, cycles, ctx);
            return;
        }
        let mut len = u32::from(cmdsts.size());
        if !self.params.strip_crc {
            len = len.saturating_sub(FCS_LEN as u32);
        }
        if let Some(s) = self.rx_slots.get_mut(usize::from(slot)) {
            *s = RxSlot::Engine;
        }
        self.stats.rx_frames += 1;
        let land = Self::landing(ctx, self.engine);
        if ctx.tracing() {
            ctx.span(msg, "gec notify", ctx.now(), land);
        }
        tracing::debug!(target: "mac::gec", slot, len, at = %ctx.now(), "rx frame");
        ctx.send(self.engine, MacMsg::GecRxFrame { slot, len, msg }.into());
    }

    /// `GecRxRelease`.
    pub(crate) fn release<M: From<PciMsg> + From<MacMsg>, C: GecCtx<M> + ?Sized>(
        &mut self,
        slot: u16,
        ctx: &mut C,
    ) {
        match self.rx_slots.get_mut(usize::from(slot)) {
            Some(s) if *s == RxSlot::Engine => *s = RxSlot::Releasing,
            other => {
                self.stats.bad_releases += 1;
                tracing::warn!(target: "mac::gec", slot, state = ?other, "GecRxRelease of a buffer the engine does not hold");
                return;
            }
        }
        let cycles = self.cmdsts_cycles();
        self.ram_write(RamWrite::RxRelease { slot }, cycles, ctx);
    }
}
