//! One bus transaction ("tenure"): from its address phase to its last clock, with the
//! master's FRAME# rules and the target's DEVSEL#/TRDY#/STOP# rules (what happens at its
//! end is in `complete.rs`).
//!
//! Timing rules, with `A` the address clock:
//!
//! - **DEVSEL#** in clock `A+1` (fast), `A+2` (medium) or `A+3` (slow) (PCI 2.2 §3.6.1);
//!   none by `A+4` means master abort in `A+5` (§3.3.3.1).
//! - **TRDY#** not before DEVSEL#; for reads not before `A+2` (the AD turnaround,
//!   §3.3.1); one word per clock while both IRDY# and TRDY# are asserted.
//! - **Target initial latency**: if the first TRDY# would come after `A+15` (16 clocks
//!   from FRAME#), the target signals Retry in `A+15` instead (§3.5.1.1); a device's
//!   late read data is then kept as a delayed completion for the master's retry.
//!   **Subsequent latency**: more than 8 clocks between data phases is a disconnect
//!   without data (§3.5.1.2).
//! - **FRAME#** is deasserted in the clock of the master's last data phase: its last
//!   word, or the first clock in which its latency timer has expired (`c - A >= LT`)
//!   and GNT# was removed (§3.5.4), or the clock after it sampled STOP# (§3.3.3.2).
//! - **STOP#** with TRDY# on the target's last word while FRAME# is asserted is a
//!   disconnect with data; the master then deasserts FRAME# with no data in the next
//!   clock. STOP# without TRDY# is Retry on the first data phase, disconnect later.
//! - **Write back-pressure**: a device write whose first data phase would fall in one of
//!   the target's write-retry windows gets STOP# without TRDY# (Retry) in its DEVSEL#
//!   clock; one that starts below a window takes no word at or past the window's start
//!   (disconnect with data). Decided at the first data phase only.
//! - After the last clock with IRDY# asserted comes one idle clock (turnaround of FRAME#
//!   and AD, §3.2.4); the next address phase is the clock after at the earliest.

use super::words::{align_down, bytes_through, words, words_within};
use super::{DeviceRead, DeviceReply, PciBus, TargetKind};
use crate::msg::{Command, PciMsg};
use crate::params::{ReadMode, TargetProfile};
use crate::stats::TenureEnd;
use sim_kernel::{ComponentId, Ctx};

/// Clocks after the address phase by which a target must claim the transaction with
/// DEVSEL#; with none by then the master aborts (PCI 2.2 §3.6.1: fast, medium and slow
/// decode take clocks 1 to 3, subtractive decode clock 4, master abort in clock 5).
const MASTER_ABORT_CLOCKS: u64 = 5;
/// Clocks from the address phase within which a target must complete its first data
/// phase, else it ends the transaction with Retry (PCI 2.2 §3.5.1.1, the 16-clock
/// initial latency rule: the Retry is signalled in the 16th clock after FRAME#).
pub(super) const INITIAL_LATENCY_LIMIT: u64 = 15;
/// Clocks from one data phase within which a target must complete the next, else it
/// disconnects (PCI 2.2 §3.5.1.2, the 8-clock subsequent latency rule).
const SUBSEQUENT_LATENCY_LIMIT: u64 = 8;

/// One past the last byte a device target of `profile` whose range ends at `range_end`
/// takes in one write burst starting at `addr` (its burst limit, its range).
pub(super) fn device_write_end(profile: &TargetProfile, range_end: u64, addr: u64) -> u64 {
    if profile.max_write_burst_bytes > 0 {
        range_end.min(addr.saturating_add(profile.max_write_burst_bytes))
    } else {
        range_end
    }
}

/// The first clock a device target of `profile` can take a written word in, for a write
/// whose address phase is clock `a`: DEVSEL#, and its write wait states after the address.
pub(super) fn device_write_first(profile: &TargetProfile, a: u64) -> u64 {
    a + profile.devsel.clocks().max(1 + profile.write_wait_states.0)
}

/// The transaction in progress.
#[derive(Clone, Debug)]
pub(crate) struct Tenure {
    pub master: usize,
    pub tag: u64,
    pub command: Command,
    /// First byte of this transaction.
    pub addr: u64,
    /// One past the last byte the master wants.
    pub end: u64,
    /// Bytes per data phase.
    pub w: u64,
    /// Data phases the master wants.
    pub words: u64,
    pub target: Option<usize>,
    /// Clocks from the address phase to DEVSEL#.
    pub devsel: u64,
    pub a_clk: u64,
    pub lt: u64,
    /// FRAME# in the last clock evaluated.
    pub frame: bool,
    pub done_words: u64,
    /// STOP# was asserted in the previous clock with FRAME# asserted.
    pub stop_prev: bool,
    /// What the target's STOP# meant.
    pub stop_end: Option<TenureEnd>,
    /// FRAME# was released because the latency timer expired without GNT#.
    pub lt_cut: bool,
    /// Words the target takes in this transaction, once known.
    pub limit_words: Option<u64>,
    /// The bridge's delayed-read slot serving this read.
    pub slot: Option<u64>,
    /// The device read serving this read.
    pub read_tag: Option<u64>,
    /// Memory streams at least one word per clock (bridge reads).
    pub stream_ok: bool,
    pub first_data: Option<u64>,
    pub last_data: Option<u64>,
    /// The target Retried it because of a write-retry window.
    pub retry_window: bool,
}

impl Tenure {
    /// The words of this transaction a device read's answer of `len` bytes covers, the
    /// target's range ending at `range_end`.
    pub(super) fn words_answered(&self, len: u64, range_end: u64) -> u64 {
        words_within(
            self.addr,
            self.end,
            self.w,
            self.addr.saturating_add(len).min(range_end),
        )
    }
}

/// The target's answer in one clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Resp {
    /// DEVSEL# not asserted (yet).
    NoDevsel,
    /// DEVSEL# asserted, TRDY# not.
    Wait,
    /// TRDY#: one word moves; `stop`: STOP# with it (the target takes no more).
    Transfer { stop: bool },
    /// STOP# without TRDY#: retry, disconnect without data, or target abort.
    Stop(TenureEnd),
    /// The clock after STOP# with FRAME# asserted: FRAME# released, no data.
    Hold,
    /// No DEVSEL# by the fifth clock.
    MasterAbort,
}

/// The master's FRAME# and the target's response in one clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TenureClock {
    /// FRAME# asserted in this clock.
    pub frame: bool,
    /// FRAME# released in this clock because of the latency timer.
    pub lt_cut: bool,
    /// The target's response.
    pub resp: Resp,
}

/// What a target can do for the next word.
enum Ready {
    /// TRDY#; the target takes `limit` words in this transaction.
    Yes { limit: u64 },
    /// TRDY# held off.
    NotYet,
    /// Retry (first word) / disconnect (later words).
    Retry,
    /// Target abort.
    Abort,
}

impl PciBus {
    /// Starts master `m`'s transaction with an address phase in clock `c`.
    pub(super) fn begin<M: From<PciMsg>>(&mut self, m: usize, c: u64, ctx: &mut Ctx<'_, M>) {
        let t_c = self.edge(c);
        let Some(port) = self.masters.get_mut(m) else {
            return;
        };
        let (lt, is64) = (port.lt, port.is64);
        let Some(head) = port.queue.front_mut() else {
            return;
        };
        head.transactions += 1;
        head.start.get_or_insert(t_c);
        let addr = head.req.addr + head.done;
        let end = head.req.addr + head.total;
        let mut command = head.req.command;
        if command == Command::MemoryWriteInvalidate && head.done > 0 {
            // A continuation may not be line aligned: plain Memory Write (§3.1.1).
            command = Command::MemoryWrite;
        }
        let tag = head.req.tag;
        let target = self.decode(addr, m);
        let (t64, devsel) = match target.map(|i| &self.targets[i].kind) {
            Some(TargetKind::HostBridge) => self.bridge.as_ref().map_or((false, 2), |b| {
                (b.params().supports_64bit, b.params().devsel.clocks())
            }),
            Some(TargetKind::Device { profile, .. }) => {
                (profile.supports_64bit, profile.devsel.clocks())
            }
            None => (false, 1),
        };
        let w = if self.params.width.bytes() == 8 && is64 && t64 {
            8
        } else {
            4
        };
        let stream_ok = self
            .bridge
            .as_ref()
            .is_some_and(|b| b.stream_keeps_up(w, self.period_ps));
        let mut read_tag = None;
        if command.is_read() {
            if let Some(ti) = target {
                if let TargetKind::Device { component, .. } = self.targets[ti].kind {
                    read_tag = Some(self.device_read(ti, component, addr, end, command, c, ctx));
                }
            }
        }
        let tenure = Tenure {
            master: m,
            tag,
            command,
            addr,
            end,
            w,
            words: words(addr, end, w),
            target,
            devsel,
            a_clk: c,
            lt,
            frame: true,
            done_words: 0,
            stop_prev: false,
            stop_end: None,
            lt_cut: false,
            limit_words: None,
            slot: None,
            read_tag,
            stream_ok,
            first_data: None,
            last_data: None,
            retry_window: false,
        };
        // The box of the last transaction is reused: no allocation per transaction.
        self.active = Some(match self.spare_tenure.take() {
            Some(mut b) => {
                *b = tenure;
                b
            }
            None => Box::new(tenure),
        });
        self.stats.transactions += 1;
        if let Some(s) = self.stats.per_master.get_mut(m) {
            s.transactions += 1;
        }
        tracing::trace!(target: "pci::bus", master = m, cmd = command.name(), addr, bytes = end - addr, clock = c, "address phase");
    }

    /// The device read for (`ti`, `addr`, `command`): a pending one (a delayed completion
    /// of an earlier, retried attempt) or a new one announced to the target, which samples
    /// the address at the next edge.
    #[allow(clippy::too_many_arguments)]
    fn device_read<M: From<PciMsg>>(
        &mut self,
        ti: usize,
        component: ComponentId,
        addr: u64,
        end: u64,
        command: Command,
        c: u64,
        ctx: &mut Ctx<'_, M>,
    ) -> u64 {
        if let Some(r) = self
            .device_reads
            .iter()
            .find(|r| r.target == ti && r.addr == addr && r.command == command)
        {
            return r.tag;
        }
        let tag = self.next_read_tag;
        self.next_read_tag += 1;
        if let Some(r) = self.fold_read(ti, component, (tag, addr, end - addr), command, c, ctx) {
            self.device_reads.push(r); // answered from the target's RAM (`fold.rs`)
            return tag;
        }
        self.device_reads.push(DeviceRead {
            tag,
            target: ti,
            addr,
            command,
            reply: None,
            visible_from: 0,
        });
        let at = self.edge(c + 1);
        self.emit(
            ctx,
            component,
            at,
            PciMsg::TargetRead {
                tag,
                addr,
                len: end - addr,
                command,
            },
        );
        tag
    }

    /// The target claiming `addr` for master `m` (the bridge never claims its own cycles).
    pub(super) fn decode(&self, addr: u64, m: usize) -> Option<usize> {
        self.targets.iter().position(|t| {
            t.start <= addr
                && addr < t.end
                && !(matches!(t.kind, TargetKind::HostBridge) && self.bridge_master == Some(m))
                && !(matches!(t.kind, TargetKind::HostBridge)
                    && self.bridge.as_ref().is_some_and(|b| !b.claims(addr)))
        })
    }

    /// FRAME# and the target's response in clock `c` of the transaction in progress.
    #[inline]
    pub(super) fn tenure_clock(&mut self, c: u64, gnt_prev: Option<usize>) -> TenureClock {
        let Some(mut t) = self.active.take() else {
            return TenureClock {
                frame: false,
                lt_cut: false,
                resp: Resp::Hold,
            };
        };
        let r = self.tenure_clock_of(&mut t, c, gnt_prev);
        self.active = Some(t);
        r
    }

    fn tenure_clock_of(&mut self, t: &mut Tenure, c: u64, gnt_prev: Option<usize>) -> TenureClock {
        if t.stop_prev {
            return TenureClock {
                frame: false,
                lt_cut: false,
                resp: Resp::Hold,
            };
        }
        let words_left = t.words - t.done_words;
        let lt_cut = t.frame && words_left > 1 && c - t.a_clk >= t.lt && gnt_prev != Some(t.master);
        let frame = t.frame && words_left > 1 && !lt_cut;
        let with = |resp| TenureClock {
            frame,
            lt_cut,
            resp,
        };
        let Some(ti) = t.target else {
            return with(if c >= t.a_clk + MASTER_ABORT_CLOCKS {
                Resp::MasterAbort
            } else {
                Resp::NoDevsel
            });
        };
        if c < t.a_clk + t.devsel {
            return with(Resp::NoDevsel);
        }
        let k = t.done_words;
        let resp = match self.target_ready(t, ti, c) {
            Ready::Yes { limit } => {
                t.limit_words = Some(limit);
                Resp::Transfer {
                    stop: k + 1 >= limit && k + 1 < t.words,
                }
            }
            Ready::NotYet => {
                if k == 0 && c >= t.a_clk + INITIAL_LATENCY_LIMIT {
                    Resp::Stop(TenureEnd::Retry)
                } else if t
                    .last_data
                    .is_some_and(|l| c >= l + SUBSEQUENT_LATENCY_LIMIT)
                {
                    Resp::Stop(TenureEnd::Disconnect)
                } else {
                    Resp::Wait
                }
            }
            Ready::Retry if k == 0 => Resp::Stop(TenureEnd::Retry),
            Ready::Retry => Resp::Stop(TenureEnd::Disconnect),
            Ready::Abort => Resp::Stop(TenureEnd::TargetAbort),
        };
        with(resp)
    }

    /// Whether target `ti` moves word `t.done_words` in clock `c` (DEVSEL# asserted).
    fn target_ready(&mut self, t: &mut Tenure, ti: usize, c: u64) -> Ready {
        let t_c = self.edge(c);
        let range_end = self.targets[ti].end;
        match &self.targets[ti].kind {
            TargetKind::HostBridge => {
                let Some(bridge) = self.bridge.as_mut() else {
                    return Ready::Abort;
                };
                if bridge.target_aborts(t.addr) {
                    return Ready::Abort; // fault injection (`crate::abort`)
                }
                if t.command.is_read() {
                    let id = match t.slot {
                        Some(id) => id,
                        None => match bridge.claim_read(t.addr, t.command, t_c) {
                            Some(id) => {
                                t.slot = Some(id);
                                id
                            }
                            None => return Ready::Retry,
                        },
                    };
                    let Some(slot) = bridge.slot(id) else {
                        return Ready::Retry;
                    };
                    let limit = words_within(t.addr, t.end, t.w, slot.limit);
                    if limit == 0 {
                        return Ready::Retry;
                    }
                    if slot.first_data > t_c {
                        return match bridge.params().read_mode {
                            ReadMode::Delayed => Ready::Retry,
                            ReadMode::WaitStates => Ready::NotYet,
                        };
                    }
                    let offset = bytes_through(t.addr, t.end, t.w, t.done_words);
                    if bridge.available_at(slot, offset) <= t_c {
                        Ready::Yes { limit }
                    } else {
                        Ready::NotYet
                    }
                } else {
                    let limit = match t.limit_words {
                        Some(l) => l,
                        None => words_within(t.addr, t.end, t.w, bridge.write_limit(t.addr)),
                    };
                    if limit == 0 {
                        Ready::Retry
                    } else {
                        Ready::Yes { limit }
                    }
                }
            }
            TargetKind::Device { profile, .. } => {
                if t.command.is_read() {
                    let Some(pos) = self
                        .device_reads
                        .iter()
                        .position(|r| Some(r.tag) == t.read_tag)
                    else {
                        return Ready::Retry;
                    };
                    let read = &self.device_reads[pos];
                    match read.reply.as_ref().filter(|_| c >= read.visible_from) {
                        None => Ready::NotYet,
                        Some(DeviceReply::Abort) => Ready::Abort,
                        Some(reply) => {
                            let len = reply.data_len().unwrap_or(0);
                            let limit = t.words_answered(len, range_end);
                            if limit == 0 {
                                // Not even the first data phase: the target cannot
                                // supply this address (a retry would loop forever).
                                Ready::Abort
                            } else {
                                Ready::Yes { limit }
                            }
                        }
                    }
                } else {
                    // Back-pressure: decided once per transaction, at its first data
                    // phase (STOP# with DEVSEL#), from the windows on in this clock.
                    let first_word = align_down(t.addr, t.w);
                    if t.limit_words.is_none()
                        && self
                            .write_retry
                            .iter()
                            .any(|&(s, e)| s < first_word.saturating_add(t.w) && first_word < e)
                    {
                        t.retry_window = true;
                        return Ready::Retry;
                    }
                    if t.done_words == 0 && c < t.a_clk + 1 + profile.write_wait_states.0 {
                        return Ready::NotYet;
                    }
                    if let Some(limit) = t.limit_words {
                        return Ready::Yes { limit };
                    }
                    let mut lim = device_write_end(profile, range_end, t.addr);
                    // A window above the start: disconnect at its first byte.
                    for &(s, _) in &self.write_retry {
                        if s > t.addr {
                            lim = lim.min(s);
                        }
                    }
                    Ready::Yes {
                        limit: words_within(t.addr, t.end, t.w, lim).max(1),
                    }
                }
            }
        }
    }

    /// Records FRAME# of this clock.
    pub(super) fn apply_frame(&mut self, tc: TenureClock) {
        if let Some(t) = self.active.as_mut() {
            t.frame = tc.frame;
            t.lt_cut |= tc.lt_cut;
        }
    }

    /// One word moved in clock `c`; `stop`: STOP# came with it.
    pub(super) fn transfer(&mut self, c: u64, stop: bool) {
        if let Some(t) = self.active.as_mut() {
            t.done_words += 1;
            t.first_data.get_or_insert(c);
            t.last_data = Some(c);
            if stop {
                t.stop_end = Some(TenureEnd::Disconnect);
                t.stop_prev = t.frame;
            }
        }
        self.stats.data_phases += 1;
    }

    /// STOP# without data in this clock.
    pub(super) fn stop(&mut self, end: TenureEnd, frame: bool) {
        if let Some(t) = self.active.as_mut() {
            t.stop_end = Some(end);
            t.stop_prev = frame;
        }
    }

    /// Without a trace: clocks after `c` before the transaction in progress can have an
    /// output (before DEVSEL# nothing moves; with no target it ends in master abort; a
    /// transaction to the host bridge or a device that moves a word per clock from
    /// DEVSEL# ends with its last word, see `lookahead.rs`). Otherwise the bus is woken
    /// every clock from DEVSEL# on while no data moves: a device's read data lands as an
    /// input and may move (and end a one-word read, an output) in the clock it lands
    /// in, which must then be stepped on time. 0 once a word has moved, after STOP#, or
    /// with no transaction.
    pub(super) fn untraced_tenure_wait(&self, c: u64) -> u64 {
        let Some(t) = self.active.as_ref() else {
            return 0;
        };
        if t.done_words > 0 || t.stop_prev {
            return 0;
        }
        let first = match t.target {
            None => t.a_clk + MASTER_ABORT_CLOCKS,
            Some(ti) => match self.bridge_burst_clocks(t, ti) {
                Some(n) => t.a_clk + n,
                None => self
                    .device_output_clock(t, ti, c)
                    .unwrap_or(t.a_clk + t.devsel),
            },
        };
        first.saturating_sub(c + 1)
    }

    /// For a transaction of the host bridge that will move its data without a Retry
    /// or a wait state (a read whose delayed-read data is in the bridge by its DEVSEL#
    /// clock and streams a word per clock; a write the posting buffer has room for),
    /// the clocks from its address phase to its last one at the earliest: DEVSEL#, then
    /// one word per clock up to what the target takes, or the master's latency timer
    /// if that comes first and GNT# may be taken away. `None` for any other transaction.
    fn bridge_burst_clocks(&self, t: &Tenure, ti: usize) -> Option<u64> {
        if !matches!(self.targets.get(ti)?.kind, TargetKind::HostBridge) {
            return None;
        }
        let b = self.bridge.as_ref()?;
        let limit = if t.command.is_read() {
            let slot = b.slot_for(t.addr, t.command)?;
            let ready = slot.first_data <= self.edge(t.a_clk + t.devsel) && t.stream_ok;
            ready.then_some(slot.limit)?
        } else {
            b.write_limit(t.addr)
        };
        let n = words_within(t.addr, t.end, t.w, limit).min(t.words);
        let last = t.devsel + n - 1;
        (n > 0).then(|| {
            if self.others_want(t) {
                last.min(t.lt).max(t.devsel)
            } else {
                last
            }
        })
    }

    /// Clocks after `c` that are certainly plain data phases of the transaction in
    /// progress (no output, no phase change): fast-forward may skip over them.
    #[inline]
    pub(super) fn quiet_clocks(&self, c: u64) -> u64 {
        let Some(t) = self.active.as_ref() else {
            return 0;
        };
        if self.phase.state() != super::BusPhase::Data || t.stop_prev || !t.frame {
            return 0;
        }
        let Some(limit) = t.limit_words else {
            return 0;
        };
        if t.slot.is_some() && !t.stream_ok {
            return 0;
        }
        let last_word = limit.min(t.words);
        let plain = last_word.saturating_sub(1).saturating_sub(t.done_words);
        if self.others_want(t) {
            plain.min((t.a_clk + t.lt).saturating_sub(c + 1))
        } else {
            plain
        }
    }
}
