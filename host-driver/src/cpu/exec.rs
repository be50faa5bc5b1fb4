//! How the CPU executes one [`Op`]: memory accesses through the page table and the cache
//! model, memory-mapped accesses through the host bridge, polling loops, and the cost of
//! each.
//!
//! Costs of a memory access of `len` bytes at `va`: for each 32-byte line it touches, a
//! hit (`cache_hit`), or for a load a miss (`cache_miss` for the first missing line,
//! `cache_miss_stream` for each further one), for a store `store_miss`; plus
//! `copy.cost(len)` for moving the bytes. The bytes are read or written at the instant
//! the op starts; the program resumes when the cost has passed.

use super::{CpuState, HostCpu, PollRun, Wait, POLL_LINE_MAX};
use crate::cache::LineAccess;
use crate::msg::HostMsg;
use crate::ops::{Op, OpResult, PollCond, PollOutcome};
use pci_model::{HostMemory, MemError, PciMsg};
use sim_kernel::{Ctx, Cycles, Duration, Time};

/// Which way a costed access goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dir {
    Load,
    Store,
}

impl HostCpu {
    /// Executes `op` now. `Some(result)`: done at once (zero cost); `None`: the CPU waits
    /// (a wake-up or a PCI completion is scheduled).
    pub(super) fn execute<M: From<PciMsg> + From<HostMsg>>(
        &mut self,
        op: Op,
        ctx: &mut Ctx<'_, M>,
        mem: &mut HostMemory,
    ) -> Option<OpResult> {
        tracing::trace!(target: "host::cpu", at = %ctx.now(), ?op, "op");
        match op {
            Op::Compute(c) => {
                self.stats.busy_cycles = self.stats.busy_cycles.saturating_add(c.0);
                self.after(c, OpResult::Done, CpuState::Compute, ctx)
            }
            Op::Sleep(c) => {
                self.stats.idle_cycles = self.stats.idle_cycles.saturating_add(c.0);
                self.after(c, OpResult::Done, CpuState::Sleep, ctx)
            }
            Op::Read { va, len } => match self.costed(mem, va, len, None) {
                Ok((cost, bytes)) => {
                    let c = cost + self.params.costs.copy.cost(len);
                    self.stats.busy_cycles = self.stats.busy_cycles.saturating_add(c.0);
                    self.after(c, OpResult::Bytes(bytes), CpuState::Compute, ctx)
                }
                Err(e) => Some(OpResult::Fault(e)),
            },
            Op::Write { va, data } => {
                let len = data.len() as u64;
                let costed = self.costed(mem, va, len, Some(&data));
                // The buffer goes back, emptied, for the library's next store.
                let mut data = data;
                data.clear();
                self.slot.borrow_mut().spare = data;
                match costed {
                    Ok((cost, _)) => {
                        let c = cost + self.params.costs.copy.cost(len);
                        self.stats.busy_cycles = self.stats.busy_cycles.saturating_add(c.0);
                        self.after(c, OpResult::Done, CpuState::Compute, ctx)
                    }
                    Err(e) => Some(OpResult::Fault(e)),
                }
            }
            Op::Copy { dst, src, len } => match self.costed(mem, src, len, None) {
                Ok((load, bytes)) => match self.costed(mem, dst, len, Some(&bytes)) {
                    Ok((store, _)) => {
                        let c = load + store + self.params.costs.copy.cost(len);
                        self.stats.busy_cycles = self.stats.busy_cycles.saturating_add(c.0);
                        self.after(c, OpResult::Done, CpuState::Compute, ctx)
                    }
                    Err(e) => Some(OpResult::Fault(e)),
                },
                Err(e) => Some(OpResult::Fault(e)),
            },
            Op::Peek { va, len, mut buf } => {
                let n = usize::try_from(len).unwrap_or(usize::MAX);
                Some(match self.read_va_into(mem, va, n, &mut buf) {
                    Ok(()) => OpResult::Bytes(buf),
                    Err(e) => OpResult::Fault(e),
                })
            }
            Op::Poke { va, data } => Some(match self.poke(mem, va, &data) {
                Ok(()) => OpResult::Bytes(data),
                Err(e) => OpResult::Fault(e),
            }),
            Op::PokeMessage { va, msg, len } => Some(match self.poke_message(mem, va, msg, len) {
                Ok(()) => OpResult::Done,
                Err(e) => OpResult::Fault(e),
            }),
            Op::CheckMessage { va, msg } => Some(match self.check_message(mem, va, msg) {
                Ok(None) => OpResult::Done,
                Ok(Some((offset, expected, found))) => OpResult::Differs {
                    offset,
                    expected,
                    found,
                },
                Err(e) => OpResult::Fault(e),
            }),
            Op::MmioWrite { addr, value } => {
                let tag = self.tag();
                self.stats.mmio_writes += 1;
                let reply_to = ctx.me();
                ctx.send(
                    self.bus,
                    PciMsg::CpuWrite {
                        tag,
                        addr,
                        data: value.to_le_bytes().to_vec(),
                        reply_to,
                    }
                    .into(),
                );
                self.wait = Wait::Write {
                    tag,
                    since: ctx.now(),
                };
                self.fsm.set(CpuState::MmioWrite, ctx);
                None
            }
            Op::MmioRead { addr } => {
                let tag = self.tag();
                self.stats.mmio_reads += 1;
                let reply_to = ctx.me();
                ctx.send(
                    self.bus,
                    PciMsg::CpuRead {
                        tag,
                        addr,
                        len: 4,
                        reply_to,
                    }
                    .into(),
                );
                self.wait = Wait::Read {
                    tag,
                    since: ctx.now(),
                };
                self.fsm.set(CpuState::MmioRead, ctx);
                None
            }
            Op::Poll {
                va,
                cond,
                deadline,
                iteration,
            } => {
                let run = PollRun {
                    va,
                    cond,
                    deadline,
                    iteration,
                    iterations: 0,
                    start: ctx.now(),
                    place: None,
                };
                self.poll_iteration(run, ctx.now(), ctx, mem)
            }
            Op::PollAny {
                targets,
                deadline,
                iteration,
            } => self.scan_start(targets, deadline, iteration, ctx, mem),
            Op::Map { va, len } => {
                let before = self.page_table.mapped_pages();
                Some(match self.page_table.map_range(va, len, mem) {
                    Ok(()) => OpResult::Count((self.page_table.mapped_pages() - before) as u64),
                    Err(e) => OpResult::Fault(e),
                })
            }
            Op::Pages { va, len } => Some(match self.page_table.pages_of(va, len) {
                Ok(p) => OpResult::Pages(p),
                Err(e) => OpResult::Fault(e),
            }),
        }
    }

    /// One poll iteration at a wake-up; resumes the program when the poll has ended.
    pub(super) fn poll_step<M: From<PciMsg> + From<HostMsg>>(
        &mut self,
        run: PollRun,
        ctx: &mut Ctx<'_, M>,
        mem: &mut HostMemory,
    ) {
        if let Some(result) = self.poll_iteration(run, ctx.now(), ctx, mem) {
            self.resume(result, ctx, mem);
        }
    }

    /// A write into the line a parked poll watches, visible from `written` on: account
    /// the iterations that could not see it (cache hits), then do the first one that
    /// does, at its own time: now if that is not later than now (nothing else can write
    /// the line within the one clock the notice took), else at a wake-up then.
    pub(super) fn unpark<M: From<PciMsg> + From<HostMsg>>(
        &mut self,
        mut run: PollRun,
        next: Time,
        hit: Cycles,
        written: Time,
        ctx: &mut Ctx<'_, M>,
        mem: &mut HostMemory,
    ) {
        mem.unwatch(ctx.me());
        let period = ctx.my_domain().period().0.max(1);
        let step = hit.0.max(1).saturating_mul(period);
        // The iteration at `written` itself runs before the commit (the bus commits at
        // LATE priority), so the first to see it is strictly later.
        let skipped = if written < next {
            0
        } else {
            (written.0 - next.0) / step + 1
        };
        let skew = Duration(self.params.fast_poll_skew_cycles.saturating_mul(period));
        let at = Time(next.0 + skipped * step) + skew;
        run.iterations += skipped;
        self.stats.poll_iterations += skipped;
        self.stats.line_hits += skipped;
        self.stats.busy_cycles = self
            .stats
            .busy_cycles
            .saturating_add(skipped.saturating_mul(hit.0));
        if at > ctx.now() {
            self.fsm.set(CpuState::Poll, ctx);
            self.wake_at(at, ctx);
            self.wait = Wait::Poll(run);
            return;
        }
        if let Some(result) = self.poll_iteration(run, at, ctx, mem) {
            self.resume(result, ctx, mem);
        }
    }

    /// Loads the polled bytes now; ends the poll (after this iteration's cost) if the
    /// condition holds or the deadline has passed, else schedules the next iteration.
    ///
    /// `now` is the iteration's own time: the kernel's now, or (a parked poll woken by
    /// a write) an edge at most one clock before it.
    fn poll_iteration<M: From<PciMsg> + From<HostMsg>>(
        &mut self,
        mut run: PollRun,
        now: Time,
        ctx: &mut Ctx<'_, M>,
        mem: &mut HostMemory,
    ) -> Option<OpResult> {
        let mut buf = [0u8; POLL_LINE_MAX];
        let (load, bytes) = match self.poll_load(mem, run.va, run.cond, &mut run.place, &mut buf) {
            Ok(x) => x,
            Err(e) => return Some(OpResult::Fault(e)),
        };
        run.iterations += 1;
        self.stats.poll_iterations += 1;
        let cost = run.iteration + load;
        self.stats.busy_cycles = self.stats.busy_cycles.saturating_add(cost.0);
        let satisfied = run.cond.holds(&bytes);
        let expired = run.deadline.is_some_and(|d| now >= d);
        let end = ctx.my_domain().edge_after(now, cost);
        if satisfied || expired {
            let msg = self.slot.borrow().msg;
            ctx.span(msg, "poll", run.start, end);
            tracing::trace!(target: "host::cpu", va = run.va, iterations = run.iterations, satisfied, "poll ended");
            let result = OpResult::Polled(PollOutcome {
                satisfied,
                iterations: run.iterations,
                last: bytes.to_vec(),
            });
            if now == ctx.now() {
                return self.after(cost, result, CpuState::Poll, ctx);
            }
            self.fsm.set(CpuState::Poll, ctx);
            self.wake_at(end, ctx);
            self.wait = Wait::Timer { result };
            return None;
        }
        self.fsm.set(CpuState::Poll, ctx);
        let line = run.place.map(|(_, line)| line);
        match line {
            // Fast polls stop stepping: the next iterations hit the line just loaded
            // until a write into it (see `Wait::Parked`).
            // Not on a line a lazily committed DMA write will change: no wake-up would
            // come for it (`HostMemory::pending_into`).
            Some(line)
                if self.params.fast_poll
                    && run.deadline.is_none()
                    && !mem.pending_into(line, self.cache.line_bytes()) =>
            {
                mem.watch(line, self.cache.line_bytes(), ctx.me());
                let hit = run.iteration + self.params.costs.cache_hit;
                self.wait = Wait::Parked {
                    run,
                    next: end,
                    hit,
                };
            }
            _ => {
                if now == ctx.now() {
                    self.wake_after(cost, ctx);
                } else {
                    self.wake_at(end, ctx);
                }
                self.wait = Wait::Poll(run);
            }
        }
        None
    }

    /// One poll iteration's load of the bytes `cond` reads at `va`: the same
    /// accounting as [`Self::costed`] for a load, without its allocations and page walk
    /// once the polled bytes' `place` is known (a poll iteration is most of the
    /// simulator's events). Returns the line cost and the polled bytes (in `buf` when
    /// they come from the fast path).
    pub(super) fn poll_load<'b>(
        &mut self,
        mem: &mut HostMemory,
        va: u64,
        cond: PollCond,
        place: &mut Option<(u64, u64)>,
        buf: &'b mut [u8; POLL_LINE_MAX],
    ) -> Result<(Cycles, std::borrow::Cow<'b, [u8]>), MemError> {
        let width = cond.width();
        let Some((pa, line)) = *place else {
            let (cost, bytes) = self.costed(mem, va, width, None)?;
            *place = self.poll_place(va, width);
            return Ok((cost, std::borrow::Cow::Owned(bytes)));
        };
        let n = usize::try_from(self.cache.line_bytes()).unwrap_or(POLL_LINE_MAX);
        let line_bytes = buf.get_mut(..n).ok_or(MemError::Unmapped { va })?;
        mem.read(line, line_bytes)?;
        let c = self.params.costs;
        let cost = match self.cache.load(line, line_bytes) {
            LineAccess::Hit => {
                self.stats.line_hits += 1;
                c.cache_hit
            }
            LineAccess::DmaMiss => {
                self.stats.dma_misses += 1;
                c.cache_miss
            }
            LineAccess::Miss => {
                self.stats.line_misses += 1;
                c.cache_miss
            }
        };
        let off = usize::try_from(pa - line).unwrap_or(0);
        let w = usize::try_from(width).unwrap_or(0);
        let bytes = buf.get(off..off + w).ok_or(MemError::Unmapped { va })?;
        Ok((cost, std::borrow::Cow::Borrowed(bytes)))
    }

    /// The place of `width` polled bytes at `va` if they lie in one cache line of one
    /// page and the line fits the fast path's buffer.
    fn poll_place(&self, va: u64, width: u64) -> Option<(u64, u64)> {
        let line_len = self.cache.line_bytes();
        if line_len > POLL_LINE_MAX as u64 || width == 0 {
            return None;
        }
        let pa = self.page_table.translate(va).ok()?;
        let line = self.cache.line_of(pa);
        let in_line = pa + width <= line + line_len;
        let in_page = va % pci_model::PAGE_SIZE + width <= pci_model::PAGE_SIZE;
        (in_line && in_page).then_some((pa, line))
    }

    /// Result now if `cost` is zero, else after `cost` cycles in `state`.
    fn after<M: From<PciMsg> + From<HostMsg>>(
        &mut self,
        cost: Cycles,
        result: OpResult,
        state: CpuState,
        ctx: &mut Ctx<'_, M>,
    ) -> Option<OpResult> {
        if cost.0 == 0 {
            return Some(result);
        }
        self.fsm.set(state, ctx);
        self.wake_after(cost, ctx);
        self.wait = Wait::Timer { result };
        None
    }

    fn tag(&mut self) -> u64 {
        let t = self.next_tag;
        self.next_tag = self.next_tag.wrapping_add(1);
        t
    }

    /// Does a load (`store == None`) or store of `len` bytes at `va` through the cache
    /// model; returns the line cost and (loads) the bytes.
    ///
    /// The lines the access touches and what memory held in each before it go into
    /// buffers the CPU keeps (`scratch_lines`, `scratch_bytes`), so that, once they are
    /// large enough, an access within one or two pages allocates nothing but a load's
    /// returned bytes (a longer one also the page table's list of pieces).
    fn costed(
        &mut self,
        mem: &mut HostMemory,
        va: u64,
        len: u64,
        store: Option<&[u8]>,
    ) -> Result<(Cycles, Vec<u8>), MemError> {
        if len == 0 {
            return Ok((Cycles(0), Vec::new()));
        }
        self.with_scratch(|cpu, lines, before| cpu.costed_with(mem, va, len, store, lines, before))
    }

    /// Runs `f` with the CPU's two scratch buffers (`scratch_lines`, `scratch_bytes`),
    /// taken out of it for the call and kept again after it.
    fn with_scratch<R>(
        &mut self,
        f: impl FnOnce(&mut Self, &mut Vec<u64>, &mut Vec<u8>) -> R,
    ) -> R {
        let mut lines = std::mem::take(&mut self.scratch_lines);
        let mut bytes = std::mem::take(&mut self.scratch_bytes);
        let r = f(self, &mut lines, &mut bytes);
        self.scratch_lines = lines;
        self.scratch_bytes = bytes;
        r
    }

    /// [`Self::costed`] with its buffers: `lines` gets the physical lines in order,
    /// `before` each line's bytes before the access and, last, room for one line more
    /// (a store's line after it).
    fn costed_with(
        &mut self,
        mem: &mut HostMemory,
        va: u64,
        len: u64,
        store: Option<&[u8]>,
        lines: &mut Vec<u64>,
        before: &mut Vec<u8>,
    ) -> Result<(Cycles, Vec<u8>), MemError> {
        let dir = if store.is_some() {
            Dir::Store
        } else {
            Dir::Load
        };
        self.lines_of(va, len, lines)?;
        let line = self.cache.line_bytes();
        let n = usize::try_from(line).unwrap_or(32);
        before.clear();
        before.resize(n.saturating_mul(lines.len() + 1), 0);
        for (&l, old) in lines.iter().zip(before.chunks_exact_mut(n)) {
            mem.read(l, old)?;
        }
        let mut bytes = Vec::new();
        match store {
            Some(data) => self.page_table.write(mem, va, data)?,
            None => {
                bytes = vec![0u8; usize::try_from(len).unwrap_or(0)];
                self.page_table.read(mem, va, &mut bytes)?;
            }
        }
        let c = self.params.costs;
        let mut cost = Cycles(0);
        let mut missed = false;
        let (olds, new) = before.split_at_mut(n.saturating_mul(lines.len()));
        for (&l, old) in lines.iter().zip(olds.chunks_exact(n)) {
            let access = match dir {
                Dir::Load => self.cache.load(l, old),
                Dir::Store => {
                    mem.read(l, new)?;
                    self.cache.store(l, old, new)
                }
            };
            cost += match (access, dir) {
                (LineAccess::Hit, _) => {
                    self.stats.line_hits += 1;
                    c.cache_hit
                }
                (LineAccess::Miss | LineAccess::DmaMiss, Dir::Store) => {
                    self.stats.line_misses += 1;
                    c.store_miss
                }
                (a, Dir::Load) => {
                    if a == LineAccess::DmaMiss {
                        self.stats.dma_misses += 1;
                    } else {
                        self.stats.line_misses += 1;
                    }
                    let m = if missed {
                        c.cache_miss_stream
                    } else {
                        c.cache_miss
                    };
                    missed = true;
                    m
                }
            };
        }
        Ok((cost, bytes))
    }

    /// The physical lines `[va, va + len)` touches, in order, into `lines`.
    fn lines_of(&self, va: u64, len: u64, lines: &mut Vec<u64>) -> Result<(), MemError> {
        let line = self.cache.line_bytes();
        lines.clear();
        for seg in self.page_table.pieces(va, len)? {
            let mut l = self.cache.line_of(seg.addr);
            let end = seg.addr.saturating_add(seg.len);
            while l < end {
                lines.push(l);
                l = l.saturating_add(line);
            }
        }
        Ok(())
    }

    /// Instrumentation write: no cost; cached copies follow the new bytes.
    pub(super) fn poke(
        &mut self,
        mem: &mut HostMemory,
        va: u64,
        data: &[u8],
    ) -> Result<(), MemError> {
        self.page_table.write(mem, va, data)?;
        self.refresh_cached(mem, va, data.len() as u64)
    }

    /// The cache model's copies of the lines `[va, va + len)` touches made what memory
    /// holds (after an instrumentation write).
    pub(super) fn refresh_cached(
        &mut self,
        mem: &mut HostMemory,
        va: u64,
        len: u64,
    ) -> Result<(), MemError> {
        self.with_scratch(|cpu, held, bytes| cpu.refresh_with(mem, va, len, held, bytes))
    }

    /// [`Self::refresh_cached`] with its buffers: `held` for the cached lines the
    /// write touches, `bytes` for one line.
    fn refresh_with(
        &mut self,
        mem: &mut HostMemory,
        va: u64,
        len: u64,
        held: &mut Vec<u64>,
        bytes: &mut Vec<u8>,
    ) -> Result<(), MemError> {
        let n = usize::try_from(self.cache.line_bytes()).unwrap_or(32);
        // Only the lines the cache holds have a copy to refresh (a buffer larger than the
        // cache has most of its lines elsewhere): memory is read for those alone. A
        // write within one page (nearly all) is one range, without a vector.
        let mut pieces = self.page_table.pieces(va, len)?;
        match (pieces.next(), pieces.len()) {
            (None, _) => held.clear(),
            (Some(s), 0) => self.cache.held_lines_into(&[(s.addr, s.len)], held),
            (Some(s), _) => {
                let ranges: Vec<(u64, u64)> = std::iter::once(s)
                    .chain(pieces)
                    .map(|s| (s.addr, s.len))
                    .collect();
                self.cache.held_lines_into(&ranges, held);
            }
        }
        bytes.clear();
        bytes.resize(n, 0);
        for &l in held.iter() {
            mem.read(l, bytes)?;
            self.cache.refresh(l, bytes);
        }
        Ok(())
    }
}
