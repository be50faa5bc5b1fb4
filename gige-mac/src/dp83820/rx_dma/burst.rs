//! The receive engine's data path: bursts of the head frame into the descriptor's
//! buffer while bytes become visible, and the status write-back at the end.

use super::super::bus::{Dp83820Bus, Req};
use super::super::port::BusPort;
use super::super::regs::isr;
use super::{RxEndStatus, RxState, WriteBack};
use crate::msg::MacMsg;
use sim_kernel::Time;
use via_abi::dp83820::CmdSts;
use via_abi::ethernet::FCS_LEN;

impl Dp83820Bus {
    /// Issues what can be issued for the head frame, or its write-back, or a wake-up.
    pub(super) fn rx_move<P: BusPort + ?Sized>(&mut self, ctx: &mut P) {
        let now = ctx.now();
        let sync = ctx.period();
        let cfg = self.rxcfg();
        let hold = if cfg.strip_crc { FCS_LEN as u64 } else { 0 };
        let Some(desc) = self.rx.desc else {
            return;
        };
        let max_out = self.params.max_outstanding.max(1);
        loop {
            let Some(head) = self.rx.fifo.front() else {
                return;
            };
            let good_len = match head.end {
                Some(RxEndStatus::Good { len }) => Some(u64::from(len)),
                _ => None,
            };
            let visible = head
                .rx
                .arrived_count(Time(now.as_ps().saturating_sub(sync.as_ps())))
                .min(head.rx.known_len()) as u64;
            let avail = match good_len {
                Some(l) => self.data_len(l).min(head.rx.known_len() as u64),
                None => visible.saturating_sub(hold),
            }
            .min(desc.size);
            let to_issue = avail.saturating_sub(head.issued);
            let threshold = cfg.drain.max(8);
            if let Some(l) = good_len {
                let data_len = self.data_len(l);
                if head.done >= data_len && self.rx.in_flight == 0 {
                    self.rx_write_back(l, data_len, ctx);
                    return;
                }
            }
            let go = to_issue > 0 && (good_len.is_some() || to_issue >= threshold);
            if !go || self.rx.in_flight >= max_out {
                if !go && good_len.is_none() {
                    // Wake when the next DRTH bytes are visible.
                    let k = usize::try_from(head.issued + hold + threshold)
                        .unwrap_or(usize::MAX)
                        .saturating_sub(1);
                    let at = head.rx.byte_at(k) + sync;
                    if self.rx.wake.is_none_or(|w| w > at || w <= now) {
                        self.rx.wake = Some(at);
                        ctx.wake_at(at, MacMsg::MacBusWake);
                    }
                }
                return;
            }
            let n = to_issue.min(cfg.mxdma);
            let from = usize::try_from(head.issued).unwrap_or(usize::MAX);
            let to = from.saturating_add(usize::try_from(n).unwrap_or(0));
            let data = head.rx.arrived(Time::MAX).get(from..to).map(|b| {
                // Given back once stored: by the buffer RAM (`BufferRam`'s `pass`, the
                // write fold) or by the GEC (its `TargetWrite`).
                let mut v = sim_kernel::spare::take_bytes(b.len());
                v.extend_from_slice(b);
                v
            });
            let Some(data) = data else {
                // Arrived but not known: a streamed frame's update is late (a model bug).
                self.stats.unexpected += 1;
                tracing::warn!(target: "mac::rx", from, to, "receive bytes not known yet");
                return;
            };
            let msg = head.rx.msg();
            let addr = u64::from(desc.bufptr) + head.issued;
            if let Some(h) = self.rx.fifo.front_mut() {
                h.issued += n;
                h.dma_start.get_or_insert(now);
            }
            self.rx.in_flight += 1;
            self.rx.fsm.set(RxState::Dma, ctx);
            self.issue(Req::RxData { len: n }, msg.0, addr, n, data, ctx);
        }
    }

    pub(in crate::dp83820) fn rx_data_done<P: BusPort + ?Sized>(&mut self, len: u64, ctx: &mut P) {
        self.rx.in_flight = self.rx.in_flight.saturating_sub(1);
        if let Some(h) = self.rx.fifo.front_mut() {
            h.done += len;
        }
        self.rx_pump(ctx);
    }

    fn rx_write_back<P: BusPort + ?Sized>(&mut self, len: u64, data_len: u64, ctx: &mut P) {
        let now = ctx.now();
        let (Some(desc), Some(head)) = (self.rx.desc, self.rx.fifo.front()) else {
            return;
        };
        let msg = head.rx.msg();
        let end_at = head.rx.last_byte_at();
        let dma_from = head.dma_start.unwrap_or(now).max(end_at);
        Self::span(ctx, msg, "rx fifo", end_at, dma_from);
        Self::span(ctx, msg, "mac rx dma", dma_from, now);
        let size = u16::try_from(data_len).unwrap_or(u16::MAX);
        let cmdsts = (CmdSts::OWN | CmdSts::OK).with_size(size);
        // A trace tag only names the message in trace spans: untraced, none is sent.
        if let (Some(gec), true) = (self.gec, ctx.tracing()) {
            ctx.send_mac(
                gec,
                MacMsg::TraceTag {
                    descriptor: desc.addr,
                    msg,
                },
            );
        }
        self.rx.wb = Some(WriteBack {
            start: now,
            msg,
            fifo_len: u32::try_from(len).unwrap_or(u32::MAX),
        });
        self.rx.fsm.set(RxState::WriteBack, ctx);
        tracing::debug!(target: "mac::rx", desc = desc.addr, len = data_len, "status write-back");
        let bytes = cmdsts.bits().to_le_bytes().to_vec();
        self.issue(Req::RxWriteBack, msg.0, desc.addr + 8, 4, bytes, ctx);
    }

    pub(in crate::dp83820) fn rx_write_back_done<P: BusPort + ?Sized>(&mut self, ctx: &mut P) {
        let now = ctx.now();
        if let Some(wb) = self.rx.wb.take() {
            Self::span(ctx, wb.msg, "rx write-back", wb.start, now);
            ctx.send_mac(self.mac, MacMsg::MacRxDrained { bytes: wb.fifo_len });
        }
        self.rx.fifo.pop_front();
        self.stats.rx_frames += 1;
        self.regs.isr |= isr::RXOK;
        let link = self.rx.desc.map_or(0, |d| u64::from(d.link));
        self.rx_fetch(link, ctx);
    }
}
