//! [`AttManager`]: the ATT manager component, in the SDRAM clock domain.
//!
//! ```text
//!  AttRegister ----+                         +--> AttRegistered / AttDeregistered
//!  AttDeregister --+--> FIFO --> one op --+--+--> AttTranslated
//!  AttTranslate ---+                      |
//!                                         +-- card:  SdramController timing, wake on
//!                                         |          AttSdramDone, bytes from SdramStore
//!                                         +-- host:  AttTableRead/Write to the table
//!                                                    port, resume on ...Done
//! ```
//!
//! One operation at a time, in arrival order (the SDRAM controller is blocking). Phases
//! (state machine `att`, traced):
//!
//! | op | phases | spans |
//! |---|---|---|
//! | translate | `read-l1` (24 B) -> checks -> `read-l2` (the pages touched, one access) -> reply | `att L1 read`, `att L2 read` |
//! | register | allocate, build bytes -> `write-l2` -> `write-l1` -> reply | `att L2 write`, `att L1 write` |
//! | deregister | check live -> `write-l1` (24 zero bytes) -> free -> reply | `att L1 write` |
//!
//! A translation whose handle could never have been issued (generation 0, index beyond
//! the table) is refused without a table read. Bytes move at the instant the access
//! completes: a read copies out of the SDRAM store on the wake-up edge, a write commits on
//! its completion edge. Replies are sent on that edge (they arrive one cycle of the
//! receiver later).
//!
//! Ports: `reply_to` of each request; the table port (host-memory ATT only).
//! Statistics: [`AttStats`].

use super::params::{AttConfigError, AttLocation, AttParams};
use super::table::{AttTable, DeregisterError, RegionLayout, RegionRequest, RegisterError};
use super::table_io::TableIoError;
use super::translate::{check_l1, pieces_from_l2, L2Fetch, TranslateError, TranslateRequest};
use crate::msg::{NicMsg, ReqId};
use crate::sdram::{SdramController, SdramOp, SdramStore};
use sim_kernel::{ComponentId, Ctx, Fsm, MsgId, StateName, Time};
use std::collections::VecDeque;
use via_abi::att::{L1Entry, L1Repr, L2Repr, L1_ENTRY_LEN};
use via_abi::MemHandle;

mod ahead;
mod flip;

pub use ahead::AheadCounts;
pub use flip::{AttBitFlip, AttFlipError, L1_ENTRY_BITS};

/// States of the manager's `att` state machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AttState {
    /// No operation in progress.
    Idle,
    /// Reading an L1 entry.
    ReadL1,
    /// Reading L2 entries.
    ReadL2,
    /// Writing a registration's L2 entries.
    WriteL2,
    /// Writing (or clearing) an L1 entry.
    WriteL1,
}

impl StateName for AttState {
    fn name(self) -> &'static str {
        match self {
            AttState::Idle => "idle",
            AttState::ReadL1 => "read-l1",
            AttState::ReadL2 => "read-l2",
            AttState::WriteL2 => "write-l2",
            AttState::WriteL1 => "write-l1",
        }
    }
}

/// Counters of the manager's work.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AttStats {
    /// Translations answered with pieces.
    pub translations: u64,
    /// Translations refused.
    pub refusals: u64,
    /// Registrations done.
    pub registrations: u64,
    /// Deregistrations done.
    pub deregistrations: u64,
    /// L1 entry reads.
    pub l1_reads: u64,
    /// L2 reads (one per translation that needs any).
    pub l2_reads: u64,
    /// L2 entries read.
    pub l2_entries_read: u64,
    /// Table writes (L1 and L2).
    pub table_writes: u64,
    /// Messages of a kind this component does not take (a wiring bug): counted and
    /// traced as errors; any of them fails a system run.
    pub wrong_inputs: u64,
    /// Table access completions (SDRAM or table port) that match no access in progress
    /// (dropped, traced).
    pub unexpected_completions: u64,
    /// Bits flipped in the table's card SDRAM by fault injection (`flip`).
    pub bit_flips: u64,
}

/// Where the table lives, and the means to reach it.
#[derive(Debug)]
enum Backend {
    Card(Box<CardSdram>),
    Host { port: ComponentId },
}

/// The card SDRAM: its bytes and its controller's timing state.
#[derive(Debug)]
struct CardSdram {
    store: SdramStore,
    ctrl: SdramController,
}

/// A queued request.
#[derive(Debug)]
enum Op {
    Register {
        req: ReqId,
        region: RegionRequest,
        reply_to: ComponentId,
    },
    Deregister {
        req: ReqId,
        handle: MemHandle,
        reply_to: ComponentId,
    },
    Translate {
        req: ReqId,
        msg: MsgId,
        t: TranslateRequest,
        reply_to: ComponentId,
    },
}

/// The operation in progress and the phase it is in.
#[derive(Debug)]
enum Phase {
    TranslateL1 {
        req: ReqId,
        msg: MsgId,
        t: TranslateRequest,
        reply_to: ComponentId,
    },
    TranslateL2 {
        req: ReqId,
        msg: MsgId,
        t: TranslateRequest,
        reply_to: ComponentId,
        fetch: L2Fetch,
    },
    RegisterL2 {
        req: ReqId,
        reply_to: ComponentId,
        layout: RegionLayout,
    },
    RegisterL1 {
        req: ReqId,
        reply_to: ComponentId,
        layout: RegionLayout,
    },
    Deregister {
        req: ReqId,
        handle: MemHandle,
        reply_to: ComponentId,
    },
}

/// A table access in flight.
#[derive(Debug)]
enum Io {
    Read { addr: u64, len: u64 },
    Write { addr: u64, data: Vec<u8> },
}

#[derive(Debug)]
struct InFlight {
    phase: Phase,
    io: Io,
    tag: u64,
    started: Time,
}

/// The ATT manager: registration, deregistration and translation over a table in card
/// SDRAM or host memory. See the module docs for its phases, ports and timing.
#[derive(Debug)]
pub struct AttManager {
    params: AttParams,
    table: AttTable,
    backend: Backend,
    fsm: Fsm<AttState>,
    queue: VecDeque<Op>,
    current: Option<InFlight>,
    next_tag: u64,
    stats: AttStats,
    /// A bit flip scheduled and not applied yet (fault injection, `flip`).
    flip: Option<AttBitFlip>,
    /// The bytes of the last SDRAM table read (a buffer kept between reads).
    read_buf: Vec<u8>,
    /// Whether a translation may be computed ahead ([`AttManager::set_ahead`]).
    ahead_on: bool,
    /// A translation computed ahead whose places the run may not have passed yet.
    ahead: Option<ahead::Ahead>,
    /// The completion edge of the next card SDRAM access, computed ahead (the
    /// controller has already accounted for that access).
    access_done: Option<Time>,
    /// Test hook: the reply of a translation computed ahead lands this many cycles late.
    ahead_skew_cycles: u64,
    ahead_counts: AheadCounts,
}

impl AttManager {
    /// A manager with an empty table. `table_port` is where host-memory table accesses
    /// go ([`AttLocation::HostMemory`] needs one; the card ATT ignores it).
    ///
    /// # Errors
    /// Invalid parameters, or a host-memory ATT without a table port.
    pub fn new(params: AttParams, table_port: Option<ComponentId>) -> Result<Self, AttConfigError> {
        params.validate()?;
        let backend = match params.location {
            AttLocation::CardSdram => Backend::Card(Box::new(CardSdram {
                store: SdramStore::new(params.sdram.capacity.0),
                ctrl: SdramController::new(params.sdram.clone()),
            })),
            AttLocation::HostMemory => Backend::Host {
                port: table_port.ok_or(AttConfigError::NoTablePort)?,
            },
        };
        Ok(Self {
            table: AttTable::new(params.table),
            params,
            backend,
            fsm: Fsm::new("att", AttState::Idle),
            queue: VecDeque::new(),
            current: None,
            next_tag: 0,
            stats: AttStats::default(),
            flip: None,
            read_buf: Vec::new(),
            ahead_on: false,
            ahead: None,
            access_done: None,
            ahead_skew_cycles: 0,
            ahead_counts: AheadCounts::default(),
        })
    }

    /// The parameters.
    #[must_use]
    pub fn params(&self) -> &AttParams {
        &self.params
    }

    /// Counters so far.
    #[must_use]
    pub fn stats(&self) -> AttStats {
        self.stats
    }

    /// Current state of the `att` state machine.
    #[must_use]
    pub fn state(&self) -> AttState {
        self.fsm.state()
    }

    /// Allocation state of the table.
    #[must_use]
    pub fn table(&self) -> &AttTable {
        &self.table
    }

    /// The card SDRAM bytes (`None` for a host-memory ATT).
    #[must_use]
    pub fn sdram(&self) -> Option<&SdramStore> {
        match &self.backend {
            Backend::Card(card) => Some(&card.store),
            Backend::Host { .. } => None,
        }
    }

    /// Records every SDRAM command from now on (for waveforms; a host-memory ATT has
    /// none).
    pub fn log_sdram_commands(&mut self) {
        if let Backend::Card(card) = &mut self.backend {
            card.ctrl.log_commands();
        }
    }

    /// The SDRAM controller's timing state (`None` for a host-memory ATT).
    #[must_use]
    pub fn sdram_controller(&self) -> Option<&SdramController> {
        match &self.backend {
            Backend::Card(card) => Some(&card.ctrl),
            Backend::Host { .. } => None,
        }
    }

    /// The L1 entry `index` and its L2 entries as they are in card SDRAM now (no
    /// timing; for tools and tests). `None` for a host-memory ATT, an index beyond the
    /// table, or L2 entries outside the SDRAM.
    #[must_use]
    pub fn read_entry(&self, index: u32) -> Option<(L1Repr, Vec<L2Repr>)> {
        let store = self.sdram()?;
        let addr = self.table.geometry().l1_addr(index)?;
        let bytes = store.read_vec(u64::from(addr), L1_ENTRY_LEN).ok()?;
        let l1 = L1Repr::parse(&L1Entry::new_unchecked(&bytes[..])).ok()?;
        let n = usize::try_from(l1.page_count).ok()?;
        let l2 = store
            .read_vec(u64::from(l1.l2_pointer), n.checked_mul(4)?)
            .ok()?;
        Some((l1, L2Repr::parse_table(&l2).ok()?))
    }

    /// Handles one message; see the module docs. Messages that are not for the manager
    /// are logged and dropped.
    pub fn handle<M: From<NicMsg>>(&mut self, msg: NicMsg, ctx: &mut Ctx<'_, M>) {
        if self.ahead.is_some() {
            self.catch_up(ctx);
        }
        match msg {
            NicMsg::AttRegister {
                req,
                region,
                reply_to,
            } => self.enqueue(
                Op::Register {
                    req,
                    region,
                    reply_to,
                },
                ctx,
            ),
            NicMsg::AttDeregister {
                req,
                handle,
                reply_to,
            } => self.enqueue(
                Op::Deregister {
                    req,
                    handle,
                    reply_to,
                },
                ctx,
            ),
            NicMsg::AttTranslate {
                req,
                msg,
                handle,
                va,
                len,
                access,
                ptag,
                reply_to,
            } => {
                let t = TranslateRequest {
                    handle,
                    va,
                    len,
                    access,
                    ptag,
                };
                self.enqueue(
                    Op::Translate {
                        req,
                        msg,
                        t,
                        reply_to,
                    },
                    ctx,
                );
            }
            NicMsg::AttSdramDone { tag } => {
                let card = matches!(self.backend, Backend::Card(_));
                if card && self.current.as_ref().is_some_and(|c| c.tag == tag) {
                    if self.flip.is_some() {
                        self.apply_due_flip(ctx.now());
                    }
                    let mut buf = std::mem::take(&mut self.read_buf);
                    let result = self.sdram_transfer(&mut buf);
                    self.io_done(result.map(|()| &buf[..]), ctx);
                    self.read_buf = buf;
                } else {
                    self.stats.unexpected_completions += 1;
                    tracing::warn!(target: "nic::att", tag, "unexpected SDRAM completion");
                }
            }
            NicMsg::AttTableReadDone { tag, result } => {
                self.port_done(tag, result, ctx);
            }
            NicMsg::AttTableWriteDone { tag, result } => {
                self.port_done(tag, result.map(|()| Vec::new()), ctx);
            }
            other => {
                self.stats.wrong_inputs += 1;
                tracing::error!(target: "nic::att", ?other, "message not for the ATT manager dropped");
            }
        }
    }

    fn port_done<M: From<NicMsg>>(
        &mut self,
        tag: u64,
        result: Result<Vec<u8>, TableIoError>,
        ctx: &mut Ctx<'_, M>,
    ) {
        let host = matches!(self.backend, Backend::Host { .. });
        if host && self.current.as_ref().is_some_and(|c| c.tag == tag) {
            self.io_done(result.as_ref().map(Vec::as_slice).map_err(|e| *e), ctx);
        } else {
            self.stats.unexpected_completions += 1;
            tracing::warn!(target: "nic::att", tag, "unexpected table port completion");
        }
    }

    fn enqueue<M: From<NicMsg>>(&mut self, op: Op, ctx: &mut Ctx<'_, M>) {
        self.queue.push_back(op);
        if self.current.is_none() {
            self.start_next(ctx);
        }
    }

    /// Starts queued operations until one has to wait for a table access.
    fn start_next<M: From<NicMsg>>(&mut self, ctx: &mut Ctx<'_, M>) {
        while self.current.is_none() {
            let Some(op) = self.queue.pop_front() else {
                self.fsm.set(AttState::Idle, ctx);
                return;
            };
            self.begin(op, ctx);
        }
    }

    fn begin<M: From<NicMsg>>(&mut self, op: Op, ctx: &mut Ctx<'_, M>) {
        match op {
            Op::Translate {
                req,
                msg,
                t,
                reply_to,
            } => {
                let addr = self.table.geometry().l1_addr(t.handle.index());
                match addr {
                    Some(addr) if t.handle.is_well_formed() => {
                        self.stats.l1_reads += 1;
                        let phase = Phase::TranslateL1 {
                            req,
                            msg,
                            t,
                            reply_to,
                        };
                        let io = Io::Read {
                            addr: u64::from(addr),
                            len: L1_ENTRY_LEN as u64,
                        };
                        self.issue(phase, io, AttState::ReadL1, ctx);
                    }
                    _ => {
                        let e = TranslateError::InvalidHandle(t.handle);
                        self.reply_translation(req, Err(e), reply_to, ctx);
                    }
                }
            }
            Op::Register {
                req,
                region,
                reply_to,
            } => match self.table.register(&region) {
                Ok(layout) => {
                    let io = Io::Write {
                        addr: u64::from(layout.l2_addr),
                        data: layout.l2_bytes.clone(),
                    };
                    let phase = Phase::RegisterL2 {
                        req,
                        reply_to,
                        layout,
                    };
                    self.issue(phase, io, AttState::WriteL2, ctx);
                }
                Err(e) => Self::reply_registration(req, Err(e), reply_to, ctx),
            },
            Op::Deregister {
                req,
                handle,
                reply_to,
            } => {
                let addr = self.table.geometry().l1_addr(handle.index());
                match addr {
                    Some(addr) if self.table.is_live(handle) => {
                        let io = Io::Write {
                            addr: u64::from(addr),
                            data: vec![0; L1_ENTRY_LEN],
                        };
                        let phase = Phase::Deregister {
                            req,
                            handle,
                            reply_to,
                        };
                        self.issue(phase, io, AttState::WriteL1, ctx);
                    }
                    _ => {
                        let e = DeregisterError::InvalidHandle(handle);
                        ctx.send(
                            reply_to,
                            NicMsg::AttDeregistered {
                                req,
                                result: Err(e),
                            }
                            .into(),
                        );
                    }
                }
            }
        }
    }

    /// Starts a table access for `phase`: on the card, the SDRAM controller says when it
    /// completes and the manager wakes itself then (or, for a translation computed
    /// ahead, answers without waking: [`AttManager::set_ahead`]); in host memory, the
    /// request goes to the table port.
    fn issue<M: From<NicMsg>>(
        &mut self,
        phase: Phase,
        io: Io,
        state: AttState,
        ctx: &mut Ctx<'_, M>,
    ) {
        let tag = self.next_tag;
        self.next_tag = self.next_tag.wrapping_add(1);
        let now = ctx.now();
        let wake = match &mut self.backend {
            Backend::Card(card) => Some(match self.access_done.take() {
                Some(at) => at,
                None => Self::card_access_at(card, &io, now, ctx),
            }),
            Backend::Host { port } => {
                let me = ctx.me();
                let m = match &io {
                    Io::Read { addr, len } => NicMsg::AttTableRead {
                        tag,
                        addr: *addr,
                        len: *len,
                        reply_to: me,
                    },
                    Io::Write { addr, data } => NicMsg::AttTableWrite {
                        tag,
                        addr: *addr,
                        data: data.clone(),
                        reply_to: me,
                    },
                };
                let port = *port;
                ctx.send(port, m.into());
                None
            }
        };
        self.fsm.set(state, ctx);
        self.current = Some(InFlight {
            phase,
            io,
            tag,
            started: now,
        });
        if let Some(at) = wake {
            if !(self.ahead_on && self.try_ahead(at, ctx)) {
                ctx.wake_at(at, NicMsg::AttSdramDone { tag }.into());
            }
        }
    }

    /// Runs `io` through the SDRAM controller as an access issued on the edge `now`:
    /// the edge on which the manager wakes for its completion (an access out of range
    /// completes on the next edge, and the store refuses it then).
    fn card_access_at<M>(card: &mut CardSdram, io: &Io, now: Time, ctx: &Ctx<'_, M>) -> Time {
        let (op, addr, len) = match io {
            Io::Read { addr, len } => (SdramOp::Read, *addr, *len),
            Io::Write { addr, data } => (SdramOp::Write, *addr, data.len() as u64),
        };
        let d = ctx.my_domain();
        let period = d.period().as_ps().max(1);
        let phase_ps = d.phase().as_ps();
        let cycle = now.as_ps().saturating_sub(phase_ps) / period;
        let done = match card.ctrl.access(cycle, op, addr, len) {
            Ok(t) => {
                tracing::debug!(target: "nic::att", ?op, addr, len, cycles = t.latency(),
                    row_hits = t.row_hits, refreshes = t.refreshes, "SDRAM access");
                Time(phase_ps.saturating_add(t.done.saturating_mul(period)))
            }
            // Out of range: the store refuses the same range on the wake-up.
            Err(_) => now,
        };
        d.landing(now, done)
    }

    /// Moves the bytes of the completed SDRAM access (card ATT): a read's into `buf`
    /// (emptied first; left empty by a write).
    fn sdram_transfer(&mut self, buf: &mut Vec<u8>) -> Result<(), TableIoError> {
        buf.clear();
        let (Some(c), Backend::Card(card)) = (&self.current, &mut self.backend) else {
            return Err(TableIoError::Bus { addr: 0 });
        };
        match &c.io {
            Io::Read { addr, len } => Self::card_read(card, *addr, *len, buf),
            Io::Write { addr, data } => {
                card.store
                    .write(*addr, data)
                    .map_err(|_| TableIoError::OutOfRange {
                        addr: *addr,
                        len: data.len() as u64,
                    })
            }
        }
    }

    /// Reads `len` bytes of the card SDRAM at `addr` into `buf` (emptied first).
    fn card_read(
        card: &CardSdram,
        addr: u64,
        len: u64,
        buf: &mut Vec<u8>,
    ) -> Result<(), TableIoError> {
        buf.clear();
        let out = TableIoError::OutOfRange { addr, len };
        let n = usize::try_from(len).map_err(|_| out)?;
        buf.resize(n, 0);
        card.store.read(addr, buf).map_err(|_| out)
    }

    /// The current table access has completed with `result` (bytes read, or empty for a
    /// write): run the next phase or reply.
    fn io_done<M: From<NicMsg>>(
        &mut self,
        result: Result<&[u8], TableIoError>,
        ctx: &mut Ctx<'_, M>,
    ) {
        let Some(InFlight { phase, started, .. }) = self.current.take() else {
            return;
        };
        let now = ctx.now();
        match phase {
            Phase::TranslateL1 {
                req,
                msg,
                t,
                reply_to,
            } => {
                ctx.span(msg, "att L1 read", started, now);
                let fetch = result
                    .map_err(TranslateError::TableRead)
                    .and_then(|bytes| check_l1(bytes, &t));
                match fetch {
                    Ok(fetch) if fetch.count > 0 => {
                        self.stats.l2_reads += 1;
                        self.stats.l2_entries_read += u64::from(fetch.count);
                        let io = Io::Read {
                            addr: u64::from(fetch.addr),
                            len: fetch.bytes(),
                        };
                        let phase = Phase::TranslateL2 {
                            req,
                            msg,
                            t,
                            reply_to,
                            fetch,
                        };
                        self.issue(phase, io, AttState::ReadL2, ctx);
                    }
                    Ok(_) => self.reply_translation(req, Ok(Vec::new()), reply_to, ctx),
                    Err(e) => self.reply_translation(req, Err(e), reply_to, ctx),
                }
            }
            Phase::TranslateL2 {
                req,
                msg,
                t,
                reply_to,
                fetch,
            } => {
                ctx.span(msg, "att L2 read", started, now);
                let pieces = result
                    .map_err(TranslateError::TableRead)
                    .and_then(|bytes| pieces_from_l2(&fetch, bytes, &t));
                self.reply_translation(req, pieces, reply_to, ctx);
            }
            Phase::RegisterL2 {
                req,
                reply_to,
                layout,
            } => {
                ctx.span(MsgId(req.0), "att L2 write", started, now);
                self.stats.table_writes += 1;
                match result {
                    Ok(_) => {
                        let io = Io::Write {
                            addr: u64::from(layout.l1_addr),
                            data: layout.l1_bytes.to_vec(),
                        };
                        let phase = Phase::RegisterL1 {
                            req,
                            reply_to,
                            layout,
                        };
                        self.issue(phase, io, AttState::WriteL1, ctx);
                    }
                    Err(e) => {
                        // The L1 entry was not written: the entry can be reused at once.
                        let _ = self.table.deregister(layout.handle);
                        let e = RegisterError::TableWrite(e);
                        Self::reply_registration(req, Err(e), reply_to, ctx);
                    }
                }
            }
            Phase::RegisterL1 {
                req,
                reply_to,
                layout,
            } => {
                ctx.span(MsgId(req.0), "att L1 write", started, now);
                self.stats.table_writes += 1;
                // On failure the L1 entry's contents are unknown: the index stays taken
                // (never reused) rather than risk a half-written entry translating.
                let result = match result {
                    Ok(_) => {
                        self.stats.registrations += 1;
                        Ok(layout.handle)
                    }
                    Err(e) => Err(RegisterError::TableWrite(e)),
                };
                Self::reply_registration(req, result, reply_to, ctx);
            }
            Phase::Deregister {
                req,
                handle,
                reply_to,
            } => {
                ctx.span(MsgId(req.0), "att L1 write", started, now);
                self.stats.table_writes += 1;
                let result = match result {
                    // Cleared in the table: now free the entry and its L2 run.
                    Ok(_) => self.table.deregister(handle).map(|_| {
                        self.stats.deregistrations += 1;
                    }),
                    Err(e) => Err(DeregisterError::TableWrite(e)),
                };
                ctx.send(reply_to, NicMsg::AttDeregistered { req, result }.into());
            }
        }
        if self.current.is_none() {
            self.start_next(ctx);
        }
    }

    fn reply_translation<M: From<NicMsg>>(
        &mut self,
        req: ReqId,
        result: Result<Vec<super::Piece>, TranslateError>,
        reply_to: ComponentId,
        ctx: &mut Ctx<'_, M>,
    ) {
        self.count_reply(req, &result);
        ctx.send(reply_to, NicMsg::AttTranslated { req, result }.into());
    }

    /// Counts a translation's answer.
    fn count_reply(&mut self, req: ReqId, result: &Result<Vec<super::Piece>, TranslateError>) {
        match result {
            Ok(_) => self.stats.translations += 1,
            Err(e) => {
                self.stats.refusals += 1;
                tracing::debug!(target: "nic::att", req = req.0, %e, "translation refused");
            }
        }
    }

    fn reply_registration<M: From<NicMsg>>(
        req: ReqId,
        result: Result<MemHandle, RegisterError>,
        reply_to: ComponentId,
        ctx: &mut Ctx<'_, M>,
    ) {
        tracing::debug!(target: "nic::att", req = req.0, ?result, "registration");
        ctx.send(reply_to, NicMsg::AttRegistered { req, result }.into());
    }
}
