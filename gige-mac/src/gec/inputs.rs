//! The engine's inputs to the GEC taken where they are sent (untraced fast stepping):
//! `GecTransmit` and `GecRxRelease` without their events.
//!
//! The engine sends both one core clock ahead: the message would land on the GEC's next
//! edge, at a place `P` (that instant, normal priority, the sequence number its push
//! takes). The engine reserves `P` instead of sending (`Ctx::reserve_sequence`) and
//! hands the message to [`Gec::take_engine_input`], which the system calls right after
//! the engine's event with the GEC in hand. Where no event for the GEC is queued before
//! `P` (`Ctx::queued_for_before`) and the run reaches `P` (`Ctx::horizon`), nothing
//! reaches the GEC between now and `P` in the reference either: whatever is queued from
//! now on lands at least a clock from now, so at `P` or later, and after `P` by its
//! sequence number (no one sends to the GEC above normal priority). The GEC then takes
//! the input in the state it has now, with `P`'s instant as its now ([`GecCtx`]), and
//! what it sends or queues for itself is deferred to `P` (`Ctx::send_deferred`): each
//! message takes, when the run passes `P`, the sequence number its push at `P` would
//! have taken. Else the message is queued at `P` as sent (`Ctx::send_at_place`), the
//! entry its send would have made. Traced runs and exact stepping never take an input
//! this way. No component stops a run (`Ctx::stop`) between the engine's event and `P`,
//! which the horizon does not cover (none in the system does). The GEC's debug logs
//! (`tracing`) of an input taken this way come in the engine's event.
//!
//! Proof: the lockstep harness (`testbenches/tests/lockstep.rs`) compares runs with and
//! without it; [`Gec::set_input_skew_cycles`] takes the inputs a clock late for the
//! test that shows it is caught.

use super::Gec;
use crate::msg::MacMsg;
use pci_model::PciMsg;
use sim_kernel::{ClockDomain, ComponentId, Ctx, Cycles, EventKey, Priority, Time};

/// What the GEC's handlers of the engine's inputs ask of the kernel: its own `Ctx`, or
/// the engine's while it hands the GEC an input ([`Gec::take_engine_input`]).
pub trait GecCtx<M> {
    /// The instant the input is taken at.
    fn now(&self) -> Time;
    /// The GEC's clock.
    fn core(&self) -> &ClockDomain;
    /// Whether the run is traced.
    fn tracing(&self) -> bool;
    /// Sends `msg` to `to`, one of `to`'s cycles later (`Ctx::send`).
    fn send(&mut self, to: ComponentId, msg: M);
    /// The GEC's own wake-up on its first edge at or after `at` (`Ctx::wake_at`).
    fn wake_at(&mut self, at: Time, msg: M);
}

impl<M> GecCtx<M> for Ctx<'_, M> {
    fn now(&self) -> Time {
        Ctx::now(self)
    }

    fn core(&self) -> &ClockDomain {
        self.my_domain()
    }

    fn tracing(&self) -> bool {
        Ctx::tracing(self)
    }

    fn send(&mut self, to: ComponentId, msg: M) {
        Ctx::send(self, to, msg);
    }

    fn wake_at(&mut self, at: Time, msg: M) {
        Ctx::wake_at(self, at, msg);
    }
}

/// The engine's `Ctx` as the GEC's while the GEC takes an input at `place`.
struct AtPlace<'a, 'c, M> {
    ctx: &'a mut Ctx<'c, M>,
    /// The GEC.
    me: ComponentId,
    /// Its instant (the place's, or later by the test hook's skew).
    at: Time,
    place: EventKey,
}

impl<M> GecCtx<M> for AtPlace<'_, '_, M> {
    fn now(&self) -> Time {
        self.at
    }

    fn core(&self) -> &ClockDomain {
        self.ctx.domain_of(self.me)
    }

    fn tracing(&self) -> bool {
        false
    }

    fn send(&mut self, to: ComponentId, msg: M) {
        self.ctx
            .send_deferred_from(to, self.at, Cycles(1), Time::ZERO, msg, self.place);
    }

    fn wake_at(&mut self, at: Time, msg: M) {
        self.ctx
            .send_deferred_from(self.me, self.at, Cycles(1), at, msg, self.place);
    }
}

impl Gec {
    /// Test hook: inputs taken where they are sent ([`Gec::take_engine_input`]) are
    /// taken `cycles` core clocks late (a broken fold, for the test that catches it).
    pub fn set_input_skew_cycles(&mut self, cycles: u64) {
        self.input_skew_cycles = cycles;
    }

    /// Inputs from the engine taken where they were sent, and queued at their place.
    #[must_use]
    pub fn engine_inputs(&self) -> (u64, u64) {
        self.engine_inputs
    }

    /// Takes `msg` from the engine, which reserved `place` for it where it would have
    /// sent it (see the module docs): now, if nothing can reach this GEC (`me`) before
    /// `place`, else queued at `place`. `ctx` is the engine's, in its event.
    pub fn take_engine_input<M: From<PciMsg> + From<MacMsg>>(
        &mut self,
        me: ComponentId,
        place: EventKey,
        msg: MacMsg,
        ctx: &mut Ctx<'_, M>,
    ) {
        let core = ctx.domain_of(me);
        let next_edge = core.edge_after(ctx.now(), Cycles(1)) == place.time;
        let takes = matches!(
            msg,
            MacMsg::GecTransmit { .. } | MacMsg::GecRxRelease { .. }
        );
        if !takes
            || !next_edge
            || place.priority != Priority::NORMAL
            || ctx.tracing()
            || ctx.horizon() < place.time
            || ctx.queued_for_before(me, place)
        {
            self.engine_inputs.1 += 1;
            ctx.send_at_place(me, place, msg.into());
            return;
        }
        self.engine_inputs.0 += 1;
        let at = place.time + core.period() * self.input_skew_cycles;
        let mut port = AtPlace { ctx, me, at, place };
        match msg {
            MacMsg::GecTransmit { slot, len, msg } => self.transmit(slot, len, msg, &mut port),
            MacMsg::GecRxRelease { slot } => self.release(slot, &mut port),
            _ => {}
        }
    }
}
