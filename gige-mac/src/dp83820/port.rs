//! [`BusPort`]: what the DP83820's bus side needs of the kernel while it takes an input:
//! the instant, its clock period, its sends, its own wake-ups, its bus requests and its
//! trace spans. A [`Ctx`] is one (the bus side as a component of its own); the local bus
//! is another, when it runs the bus side's completions itself
//! ([`pci_model::FoldedMaster`], untraced fast stepping: [`FoldPort`] below).

use super::bus::Dp83820Bus;
use crate::msg::MacMsg;
use pci_model::{BusRequest, FoldPort, FoldedMaster, PciMsg, TransactionDone};
use sim_kernel::{ComponentId, Ctx, Cycles, Duration, MsgId, Time, TransitionSink};

/// The kernel as the bus side sees it (see the module doc).
pub trait BusPort: TransitionSink {
    /// The instant the input is taken at.
    fn now(&self) -> Time;
    /// Whether a trace is being recorded.
    fn tracing(&self) -> bool;
    /// The period of the bus side's clock.
    fn period(&self) -> Duration;
    /// Sends `msg` to `to`, as [`Ctx::send`].
    fn send_mac(&mut self, to: ComponentId, msg: MacMsg);
    /// Sends `msg` to `to` after `n` of its cycles, as [`Ctx::send_after`].
    fn send_pci_after(&mut self, to: ComponentId, n: Cycles, msg: PciMsg);
    /// A wake-up of its own, as [`Ctx::wake_at`].
    fn wake_at(&mut self, at: Time, msg: MacMsg);
    /// Queues `req` on its bus `bus` (a `Request` message, as [`Ctx::send`]).
    fn request(&mut self, bus: ComponentId, req: BusRequest);
    /// A trace span, as [`Ctx::span`].
    fn span(&mut self, msg: MsgId, stage: &'static str, start: Time, end: Time);
}

impl<M: From<PciMsg> + From<MacMsg>> BusPort for Ctx<'_, M> {
    #[inline]
    fn now(&self) -> Time {
        Ctx::now(self)
    }

    #[inline]
    fn tracing(&self) -> bool {
        Ctx::tracing(self)
    }

    #[inline]
    fn period(&self) -> Duration {
        self.my_domain().period()
    }

    #[inline]
    fn send_mac(&mut self, to: ComponentId, msg: MacMsg) {
        self.send(to, msg.into());
    }

    #[inline]
    fn send_pci_after(&mut self, to: ComponentId, n: Cycles, msg: PciMsg) {
        self.send_after(to, n, msg.into());
    }

    #[inline]
    fn wake_at(&mut self, at: Time, msg: MacMsg) {
        Ctx::wake_at(self, at, msg.into());
    }

    #[inline]
    fn request(&mut self, bus: ComponentId, req: BusRequest) {
        self.send(bus, PciMsg::Request(req).into());
    }

    #[inline]
    fn span(&mut self, msg: MsgId, stage: &'static str, start: Time, end: Time) {
        Ctx::span(self, msg, stage, start, end);
    }
}

/// The local bus's port, as the bus side's: its sends and wake-ups are the bus's
/// messages as if from the bus side (untraced: no span, no transition recorded).
struct Folded<'a, 'b, M> {
    port: &'a mut (dyn FoldPort<M> + 'b),
}

impl<M> TransitionSink for Folded<'_, '_, M> {
    fn record_transition(&mut self, _: &'static str, _: &'static str, _: &'static str) {}

    fn records_transitions(&self) -> bool {
        false
    }
}

impl<M: From<PciMsg> + From<MacMsg>> BusPort for Folded<'_, '_, M> {
    fn now(&self) -> Time {
        self.port.now()
    }

    fn tracing(&self) -> bool {
        false
    }

    fn period(&self) -> Duration {
        self.port.period()
    }

    fn send_mac(&mut self, to: ComponentId, msg: MacMsg) {
        self.port.send(to, Cycles(1), msg.into());
    }

    fn send_pci_after(&mut self, to: ComponentId, n: Cycles, msg: PciMsg) {
        self.port.send(to, n, msg.into());
    }

    fn wake_at(&mut self, at: Time, msg: MacMsg) {
        self.port.wake_at(at, msg.into());
    }

    fn request(&mut self, _bus: ComponentId, req: BusRequest) {
        self.port.request(req);
    }

    fn span(&mut self, _: MsgId, _: &'static str, _: Time, _: Time) {}
}

impl<M: From<PciMsg> + From<MacMsg>> FoldedMaster<M> for Dp83820Bus {
    fn completion(&mut self, done: TransactionDone, port: &mut dyn FoldPort<M>) {
        self.completion(done, &mut Folded { port });
    }

    fn target_write(&mut self, addr: u64, data: &[u8], port: &mut dyn FoldPort<M>) {
        self.register_write(addr, data, &mut Folded { port });
    }
}
