//! A translation computed ahead: the card ATT answers a translation without waking for
//! its two SDRAM reads, when nothing can tell the difference.
//!
//! A translation wakes the manager twice: when the L1 read completes (the manager
//! checks the entry and issues the L2 read) and when the L2 read completes (it answers).
//! Only the manager touches its SDRAM and its controller, and both wake-ups are its own,
//! so when the translation starts everything they will do is known: the entry's bytes
//! (nothing writes the table before the first wake-up but this manager, one operation
//! at a time), the L2 read's completion (the controller's state after the L1 read, which
//! nothing else changes), and the answer.
//!
//! With [`AttManager::set_ahead`], a translation that starts with nothing queued behind
//! it, no bit flip pending and no trace asked for is computed whole when it starts:
//! - the first wake-up's place is reserved (`Ctx::reserve_sequence`) and not queued;
//! - the answer is deferred through the two places the wake-ups would have had
//!   (`Ctx::send_deferred_via`: the second place takes its sequence number when the run
//!   passes the first, as the first wake-up's push would have), or to the first alone
//!   when the answer comes from the L1 entry;
//! - the manager's state becomes the one the last wake-up leaves (idle, counters
//!   counted), with enough kept to rebuild its state at either place.
//!
//! The run must pass the last place (`Ctx::horizon`), so a run never ends in between
//! and nothing outside reads the counters early (unless a component stops the run,
//! `Ctx::stop`, which the horizon does not cover: none in the system does). An input that reaches the manager
//! before the last place takes the translation back (`catch_up`): the state at the next
//! place to come is rebuilt (the counters by what was counted ahead), the answer
//! cancelled, and that place's wake-up queued
//! where it would have been (`Ctx::wake_at_place`), with the L2 read's completion
//! already computed (the controller has accounted for it). From there everything runs
//! as without the fold. Debug logs (`tracing`) of a translation computed ahead come
//! when it is computed, and again from the wake-ups if it is taken back. Proof:
//! `att/tests/ahead.rs`.

use super::{AttManager, AttState, Backend, InFlight, Io, Phase};
use crate::att::translate::{check_l1, pieces_from_l2, L2Fetch, TranslateError, TranslateRequest};
use crate::msg::{NicMsg, ReqId};
use sim_kernel::{ComponentId, Ctx, Cycles, EventKey, EventToken, MsgId, Priority, Time};

/// How often translations were computed ahead, and taken back (not part of
/// [`super::AttStats`]: a run with and without the fold counts the same there).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AheadCounts {
    /// Translations computed ahead.
    pub computed: u64,
    /// Taken back at the first wake-up's place (an input came before it).
    pub taken_back_first: u64,
    /// Taken back at the second wake-up's place.
    pub taken_back_second: u64,
}

/// A translation computed ahead whose last place the run may not have passed: enough
/// to rebuild the manager's state at either place.
#[derive(Debug)]
pub(super) struct Ahead {
    /// The first wake-up's place (reserved).
    first: EventKey,
    /// The deferred answer.
    token: EventToken,
    req: ReqId,
    msg: MsgId,
    t: TranslateRequest,
    reply_to: ComponentId,
    /// The L1 read: address and length.
    l1: (u64, u64),
    /// The L1 read's tag (the L2 read's is the next).
    tag: u64,
    /// When the translation started (the L1 read was issued).
    started: Time,
    /// The L2 read issued at the first place, and its completion edge (accounted by
    /// the controller).
    l2: Option<(L2Fetch, Time)>,
    /// Whether the answer is a refusal (counted as one).
    refused: bool,
}

impl Ahead {
    /// The L1 read in flight, as the translation's start left it.
    fn l1_read(&self) -> InFlight {
        InFlight {
            phase: Phase::TranslateL1 {
                req: self.req,
                msg: self.msg,
                t: self.t,
                reply_to: self.reply_to,
            },
            io: Io::Read {
                addr: self.l1.0,
                len: self.l1.1,
            },
            tag: self.tag,
            started: self.started,
        }
    }

    /// The L2 read of `fetch` in flight, as the first wake-up left it.
    fn l2_read(&self, fetch: L2Fetch) -> InFlight {
        InFlight {
            phase: Phase::TranslateL2 {
                req: self.req,
                msg: self.msg,
                t: self.t,
                reply_to: self.reply_to,
                fetch,
            },
            io: Io::Read {
                addr: u64::from(fetch.addr),
                len: fetch.bytes(),
            },
            tag: self.tag.wrapping_add(1),
            started: self.first.time,
        }
    }
}

impl AttManager {
    /// Lets a card ATT compute a translation ahead (see the module docs): the same
    /// answers at the same instants and in the same order, two wake-ups fewer. For
    /// untraced fast stepping.
    pub fn set_ahead(&mut self, on: bool) {
        self.ahead_on = on;
    }

    /// Test hook: the answer of a translation computed ahead lands `cycles` of its
    /// receiver late (a broken fold, for the tests that catch it).
    pub fn set_ahead_skew_cycles(&mut self, cycles: u64) {
        self.ahead_skew_cycles = cycles;
    }

    /// How often translations were computed ahead and taken back.
    #[must_use]
    pub fn ahead_counts(&self) -> AheadCounts {
        self.ahead_counts
    }

    /// Called by `issue` with an SDRAM read just issued, completing at `first` (its
    /// wake-up not queued yet): computes the translation to its answer if it is the
    /// L1 read of one that may be computed ahead, and returns whether it did (else the
    /// caller queues the wake-up). When the L2 read would complete past the horizon it
    /// returns false having run that read through the controller: its completion is
    /// kept in `access_done` for the first wake-up's `issue`.
    pub(super) fn try_ahead<M: From<NicMsg>>(&mut self, first: Time, ctx: &mut Ctx<'_, M>) -> bool {
        let horizon = ctx.horizon();
        if !self.queue.is_empty() || self.flip.is_some() || ctx.tracing() || first > horizon {
            return false;
        }
        let Some(InFlight {
            phase:
                Phase::TranslateL1 {
                    req,
                    msg,
                    t,
                    reply_to,
                },
            io: Io::Read { addr, len },
            tag,
            started,
        }) = self.current
        else {
            return false;
        };
        let Backend::Card(card) = &mut self.backend else {
            return false;
        };
        // The first wake-up: the L1 entry's bytes, checked.
        let mut buf = std::mem::take(&mut self.read_buf);
        let fetch = Self::card_read(card, addr, len, &mut buf)
            .map_err(TranslateError::TableRead)
            .and_then(|()| check_l1(&buf, &t));
        let (result, l2) = match fetch {
            Ok(fetch) if fetch.count > 0 => {
                // It issues the L2 read, as `io_done` would on that edge.
                let io = Io::Read {
                    addr: u64::from(fetch.addr),
                    len: fetch.bytes(),
                };
                let done = Self::card_access_at(card, &io, first, ctx);
                if done > horizon {
                    // The run may end before the answer: the wake-ups are queued, the
                    // L2 read's completion kept for the first one's `issue`.
                    self.access_done = Some(done);
                    self.read_buf = buf;
                    return false;
                }
                // The second wake-up: the L2 entries, the answer.
                let pieces = Self::card_read(card, u64::from(fetch.addr), fetch.bytes(), &mut buf)
                    .map_err(TranslateError::TableRead)
                    .and_then(|()| pieces_from_l2(&fetch, &buf, &t));
                self.stats.l2_reads += 1;
                self.stats.l2_entries_read += u64::from(fetch.count);
                self.next_tag = self.next_tag.wrapping_add(1);
                (pieces, Some((fetch, done)))
            }
            Ok(_) => (Ok(Vec::new()), None),
            Err(e) => (Err(e), None),
        };
        self.read_buf = buf;
        let refused = result.is_err();
        self.count_reply(req, &result);
        self.current = None;
        self.fsm.set(AttState::Idle, ctx);
        let place = EventKey {
            time: first,
            priority: Priority::NORMAL,
            sequence: ctx.reserve_sequence(),
        };
        let last = l2.map_or(first, |(_, done)| done);
        let land = ctx
            .domain_of(reply_to)
            .edge_after(last, Cycles(1 + self.ahead_skew_cycles));
        let answer = NicMsg::AttTranslated { req, result }.into();
        let token = match l2 {
            Some((_, done)) => ctx.send_deferred_via(
                reply_to,
                land,
                Priority::NORMAL,
                answer,
                place,
                (done, Priority::NORMAL),
            ),
            None => ctx.send_deferred(reply_to, land, Priority::NORMAL, answer, place),
        };
        self.ahead_counts.computed += 1;
        self.ahead = Some(Ahead {
            first: place,
            token,
            req,
            msg,
            t,
            reply_to,
            l1: (addr, len),
            tag,
            started,
            l2,
            refused,
        });
        true
    }

    /// Before any input: a translation computed ahead whose answer is not queued for
    /// real yet (the run has not passed its last place) is taken back to the next place
    /// to come, whose wake-up is queued where it would have been.
    pub(super) fn catch_up<M: From<NicMsg>>(&mut self, ctx: &mut Ctx<'_, M>) {
        let Some(a) = self.ahead.take() else {
            return;
        };
        let Some(place) = ctx.deferred_place(a.token) else {
            return; // passed: the state is the one the last wake-up left
        };
        // The answer was counted when computed; the state at either place has not.
        if a.refused {
            self.stats.refusals -= 1;
        } else {
            self.stats.translations -= 1;
        }
        let (current, state) = match a.l2 {
            Some((fetch, done)) if place == a.first => {
                self.ahead_counts.taken_back_first += 1;
                self.stats.l2_reads -= 1;
                self.stats.l2_entries_read -= u64::from(fetch.count);
                self.next_tag = self.next_tag.wrapping_sub(1);
                self.access_done = Some(done);
                (a.l1_read(), AttState::ReadL1)
            }
            Some((fetch, _)) => {
                self.ahead_counts.taken_back_second += 1;
                (a.l2_read(fetch), AttState::ReadL2)
            }
            None => {
                self.ahead_counts.taken_back_first += 1;
                (a.l1_read(), AttState::ReadL1)
            }
        };
        debug_assert!(
            state == AttState::ReadL2 || place == a.first,
            "a one-place answer past its place"
        );
        let tag = current.tag;
        self.current = Some(current);
        self.fsm.set(state, ctx);
        ctx.cancel(a.token);
        ctx.wake_at_place(place, NicMsg::AttSdramDone { tag }.into());
    }
}
