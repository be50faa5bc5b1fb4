//! The engine's effects as values (sans-IO): every unit of the engine takes its inputs
//! and writes what it wants done into an [`Io`] outbox as [`Action`]s; it never touches
//! the kernel. The [`Engine`](super::Engine) component gives one `Io` to each message it
//! handles (the same one, emptied, each time) and, when its units are done, applies the
//! actions to the kernel in the order they were written ([`Io::apply`]). Nothing a unit
//! reads during one message (the time, the clock domains) depends on the kernel calls of
//! that message, so applying them at the end is the same as making them on the spot: the
//! order of sends, wake-ups, spans and transitions within an event, and with it every
//! result, is unchanged.
//!
//! A unit test builds an `Io` with [`Io::new`], calls a unit and compares
//! [`Io::take_actions`] with the actions it expects, at exact times, with no bus, no ATT
//! manager, no GEC and no second node.
//!
//! | action | kernel call | port |
//! |---|---|---|
//! | [`Action::Translate`] | `send(att, AttTranslate { reply_to: me, .. })` | ATT manager |
//! | [`Action::Register`] / [`Action::Deregister`] | `send(att, AttRegister / AttDeregister)` | ATT manager |
//! | [`Action::Dma`] | `send(dma, DmaStart(DmaJob { reply_to: me, .. }))` | DMA master |
//! | [`Action::WakeAfter`] | `wake_after_with(after, prio, NicMsg::Engine(wake))` | itself |
//! | [`Action::ToGec`] | `send_after(gec, after, msg)` | GEC |
//! | [`Action::ToBus`] | `send_after(bus, after, msg)` | system bus |
//! | [`Action::Span`] | `span(msg, stage, start, end)` | trace |
//! | [`Action::Transition`] | the transition record `Fsm::set` makes | trace |
//!
//! A status write-back is an [`Action::Dma`] whose purpose (kept by the engine's
//! outstanding-request table) is a status job.

use super::ids::DmaTag;
use super::ids::{MoverGen, RetxGen, RxId, SendId};
use super::params::EnginePorts;
use crate::att::{AccessKind, RegionRequest};
use crate::msg::{NicMsg, ReqId};
use gige_mac::MacMsg;
use pci_model::{DmaDirection, DmaJob, PciMsg};
use sim_kernel::fsm::TransitionSink;
use sim_kernel::{ClockDomain, Ctx, Cycles, EventKey, MsgId, Priority, Time, Transition};
use via_abi::{MemHandle, ProtectionTag};

/// The message bounds of the engine's handlers: a system message type that wraps the
/// three crates' enums.
pub trait EngineMsg: From<PciMsg> + From<NicMsg> + From<MacMsg> {}

impl<T: From<PciMsg> + From<NicMsg> + From<MacMsg>> EngineMsg for T {}

/// The engine's wake-ups to itself (carried as [`NicMsg::Engine`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EngineWake {
    /// A doorbell's decode time is over.
    DoorbellDecoded,
    /// Send context `ctx`'s descriptor decode time is over.
    DescriptorDecoded {
        /// The send context.
        send: SendId,
    },
    /// The receive descriptor of received message `id` is decoded.
    RecvDescriptorDecoded {
        /// The received message.
        rx: RxId,
    },
    /// The header of the frame in the receive front end has been read and checked.
    HeaderChecked,
    /// The receive descriptor the doorbell unit checks is decoded.
    RecvCheckDecoded,
    /// The TX word mover's scheduled edge (stale generations are ignored).
    TxMover {
        /// Generation of the wake-up.
        gen: MoverGen,
    },
    /// The RX word mover's scheduled edge.
    RxMover {
        /// Generation of the wake-up.
        gen: MoverGen,
    },
    /// The retransmission timer (stale generations are ignored).
    Retx {
        /// Generation of the wake-up.
        gen: RetxGen,
    },
}

/// One thing a unit of the engine wants done (see the module doc for the kernel call).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Ask the ATT manager to translate a virtual range; the answer comes back as
    /// `NicMsg::AttTranslated { req, .. }`.
    Translate {
        /// Request id (matches the answer).
        req: ReqId,
        /// Trace id of the message the translation works for.
        msg: MsgId,
        /// Memory handle.
        handle: MemHandle,
        /// First virtual address.
        va: u64,
        /// Length \[bytes\].
        len: u64,
        /// Who accesses the memory, and how.
        access: AccessKind,
        /// Protection tag of the VI.
        ptag: ProtectionTag,
    },
    /// Registration mailbox: register a region (`NicMsg::AttRegister`).
    Register {
        /// Request id.
        req: ReqId,
        /// The region.
        region: RegionRequest,
    },
    /// Registration mailbox: end a registration (`NicMsg::AttDeregister`).
    Deregister {
        /// Request id.
        req: ReqId,
        /// The handle.
        handle: MemHandle,
    },
    /// Start a DMA job at the card's DMA master; it answers `PciMsg::DmaDone` with the tag.
    Dma {
        /// Tag of the job.
        tag: DmaTag,
        /// Read `len` bytes, or write the data.
        direction: DmaDirection,
        /// ATT-style page list (entry 0 = physical start, later = page bases).
        pages: Vec<u64>,
    },
    /// Wake the engine `after` core cycles from now (at least 1), at tie-break `prio`.
    WakeAfter {
        /// Core clock cycles.
        after: Cycles,
        /// Tie-break priority among the events of that edge.
        prio: Priority,
        /// The wake-up.
        wake: EngineWake,
    },
    /// A message to the GEC, arriving `after` of its cycles from now (at least 1).
    ToGec {
        /// Cycles of the GEC's domain.
        after: Cycles,
        /// The message.
        msg: MacMsg,
    },
    /// A message to the system bus, arriving `after` of its cycles from now (at least 1).
    ToBus {
        /// Bus clock cycles.
        after: Cycles,
        /// The message.
        msg: PciMsg,
    },
    /// A trace span of this component, in its own domain.
    Span {
        /// Trace id.
        msg: MsgId,
        /// Stage name.
        stage: &'static str,
        /// Start \[ps\].
        start: Time,
        /// End \[ps\].
        end: Time,
    },
    /// A state machine of this component changed state.
    Transition {
        /// The machine (`tx`, `rx`, `doorbell`, `vi`, ..).
        machine: &'static str,
        /// State left.
        from: &'static str,
        /// State entered.
        to: &'static str,
    },
}

/// The outbox of one message's handling, and what a unit may read of the world: the time
/// and the clock domains.
#[derive(Clone, Debug)]
pub struct Io {
    now: Time,
    core: ClockDomain,
    gec: ClockDomain,
    actions: Vec<Action>,
    /// Whether spans and state transitions are kept (the run is traced); without a
    /// trace they would be dropped when applied, so they are not queued at all.
    traced: bool,
}

impl Io {
    /// An empty outbox at `now`, for an engine clocked by `core` whose GEC is clocked by
    /// `gec`.
    #[must_use]
    pub fn new(now: Time, core: ClockDomain, gec: ClockDomain) -> Self {
        Self::reusing(now, (core, gec), Vec::new(), true)
    }

    /// An outbox at `now` that queues its actions in `actions` (emptied first: the
    /// engine hands back the vector of its last message, so no event allocates one), and
    /// keeps spans and transitions only if `traced`.
    #[must_use]
    pub(crate) fn reusing(
        now: Time,
        (core, gec): (ClockDomain, ClockDomain),
        mut actions: Vec<Action>,
        traced: bool,
    ) -> Self {
        actions.clear();
        Self {
            now,
            core,
            gec,
            actions,
            traced,
        }
    }

    /// The current instant (an edge of the core clock).
    #[must_use]
    pub fn now(&self) -> Time {
        self.now
    }

    /// The engine's own clock domain (`card.core`).
    #[must_use]
    pub fn my_domain(&self) -> &ClockDomain {
        &self.core
    }

    /// The GEC's clock domain.
    #[must_use]
    pub fn gec_domain(&self) -> &ClockDomain {
        &self.gec
    }

    /// Adds an action.
    pub fn push(&mut self, a: Action) {
        self.actions.push(a);
    }

    /// The actions so far, in order (emptied).
    pub fn take_actions(&mut self) -> Vec<Action> {
        std::mem::take(&mut self.actions)
    }

    /// The actions so far.
    #[must_use]
    pub fn actions(&self) -> &[Action] {
        &self.actions
    }

    /// Wake the engine after `n` core cycles (normal priority).
    pub fn wake_after(&mut self, n: Cycles, wake: EngineWake) {
        self.wake_after_with(n, Priority::NORMAL, wake);
    }

    /// Wake the engine after `n` core cycles with a tie-break priority.
    pub fn wake_after_with(&mut self, n: Cycles, prio: Priority, wake: EngineWake) {
        self.push(Action::WakeAfter {
            after: n,
            prio,
            wake,
        });
    }

    /// A message to the GEC after `n` of its cycles.
    pub fn to_gec(&mut self, n: Cycles, msg: MacMsg) {
        self.push(Action::ToGec { after: n, msg });
    }

    /// A message to the system bus after `n` of its cycles.
    pub fn to_bus(&mut self, n: Cycles, msg: PciMsg) {
        self.push(Action::ToBus { after: n, msg });
    }

    /// Records a span.
    pub fn span(&mut self, msg: MsgId, stage: &'static str, start: Time, end: Time) {
        if !self.traced {
            return;
        }
        self.push(Action::Span {
            msg,
            stage,
            start,
            end,
        });
    }

    /// Applies the actions to the kernel, in order (the engine's dispatcher). The outbox
    /// is empty afterwards. With `placed`, an untraced `GecTransmit` or `GecRxRelease`
    /// one GEC clock ahead is not sent: its place is reserved where its push would have
    /// taken it and it goes into `placed`, for the system to hand the GEC
    /// (`gige_mac::Gec::take_engine_input`).
    pub fn apply<M: EngineMsg>(
        &mut self,
        ports: &EnginePorts,
        ctx: &mut Ctx<'_, M>,
        mut placed: Option<&mut Vec<(EventKey, MacMsg)>>,
    ) {
        let me = ctx.me();
        for a in self.actions.drain(..) {
            match a {
                Action::Translate {
                    req,
                    msg,
                    handle,
                    va,
                    len,
                    access,
                    ptag,
                } => ctx.send(
                    ports.att,
                    NicMsg::AttTranslate {
                        req,
                        msg,
                        handle,
                        va,
                        len,
                        access,
                        ptag,
                        reply_to: me,
                    }
                    .into(),
                ),
                Action::Register { req, region } => ctx.send(
                    ports.att,
                    NicMsg::AttRegister {
                        req,
                        region,
                        reply_to: me,
                    }
                    .into(),
                ),
                Action::Deregister { req, handle } => ctx.send(
                    ports.att,
                    NicMsg::AttDeregister {
                        req,
                        handle,
                        reply_to: me,
                    }
                    .into(),
                ),
                Action::Dma {
                    tag,
                    direction,
                    pages,
                } => ctx.send(
                    ports.dma,
                    PciMsg::DmaStart(DmaJob {
                        tag: tag.0,
                        reply_to: me,
                        direction,
                        pages,
                    })
                    .into(),
                ),
                Action::WakeAfter { after, prio, wake } => {
                    ctx.wake_after_with(after, prio, NicMsg::Engine(wake).into());
                }
                Action::ToGec { after, msg } => match placed.as_deref_mut() {
                    Some(out)
                        if after == Cycles(1)
                            && !self.traced
                            && matches!(
                                msg,
                                MacMsg::GecTransmit { .. } | MacMsg::GecRxRelease { .. }
                            ) =>
                    {
                        let place = EventKey {
                            time: self.gec.edge_after(ctx.now(), Cycles(1)),
                            priority: Priority::NORMAL,
                            sequence: ctx.reserve_sequence(),
                        };
                        out.push((place, msg));
                    }
                    _ => ctx.send_after(ports.gec, after, msg.into()),
                },
                Action::ToBus { after, msg } => ctx.send_after(ports.bus, after, msg.into()),
                Action::Span {
                    msg,
                    stage,
                    start,
                    end,
                } => ctx.span(msg, stage, start, end),
                Action::Transition { machine, from, to } => {
                    if ctx.tracing() {
                        let t = Transition {
                            time: ctx.now(),
                            component: me,
                            machine,
                            from,
                            to,
                        };
                        ctx.trace().transition(t);
                    }
                }
            }
        }
    }

    /// Makes an applied (empty) outbox the outbox of a new message at `now`: the
    /// engine keeps one between messages, its clock domains and action vector with it.
    #[inline]
    pub(crate) fn restart(&mut self, now: Time, traced: bool) {
        self.actions.clear();
        self.now = now;
        self.traced = traced;
    }
}

impl TransitionSink for Io {
    #[inline]
    fn records_transitions(&self) -> bool {
        self.traced
    }

    fn record_transition(&mut self, machine: &'static str, from: &'static str, to: &'static str) {
        if !self.traced {
            return;
        }
        self.push(Action::Transition { machine, from, to });
    }
}

/// Records the span `[*mark, now)` of `stage` for `msg` (nothing if empty) and moves the
/// mark to now: spans recorded through one mark are contiguous.
pub(crate) fn span(io: &mut Io, msg: MsgId, stage: &'static str, mark: &mut Time) {
    let now = io.now();
    span_to(io, msg, stage, mark, now);
}

/// Records the span `[*mark, end)` and moves the mark to `end` (e.g. the edge a message
/// sent now lands at another component).
pub(crate) fn span_to(io: &mut Io, msg: MsgId, stage: &'static str, mark: &mut Time, end: Time) {
    if end > *mark {
        io.span(msg, stage, *mark, end);
        *mark = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim_kernel::TransitionSink;

    fn clocks() -> (ClockDomain, ClockDomain) {
        let core = ClockDomain::from_mhz("card.core", 33.0).expect("clock");
        let gec = ClockDomain::from_mhz("card.gec", 66.0).expect("clock");
        (core, gec)
    }

    /// Fills an outbox with a wake-up, a span and a transition.
    fn fill(io: &mut Io) {
        io.wake_after(Cycles(2), EngineWake::HeaderChecked);
        io.span(MsgId(7), "stage", Time(0), Time(10));
        io.record_transition("tx", "idle", "busy");
    }

    #[test]
    fn an_untraced_outbox_keeps_everything_but_trace_records() {
        let mut traced = Io::new(Time(0), clocks().0, clocks().1);
        fill(&mut traced);
        assert_eq!(traced.actions().len(), 3);
        // A reused vector is emptied first; untraced, the span and transition (which the
        // kernel would drop) are not queued, the wake-up is.
        let mut untraced = Io::reusing(Time(0), clocks(), traced.take_actions(), false);
        assert!(untraced.actions().is_empty());
        fill(&mut untraced);
        assert!(matches!(
            untraced.actions(),
            [Action::WakeAfter {
                wake: EngineWake::HeaderChecked,
                ..
            }]
        ));
    }
}
