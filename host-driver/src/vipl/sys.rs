//! What a program does besides VIPL calls, and what the library itself is built from:
//! time, computation, memory loads and stores through the cache model, memory-mapped
//! register accesses, polling loops, `malloc`, and instrumentation that costs nothing.
//!
//! Every method here hands one [`Op`] to the CPU; the costs are [`CpuCosts`] fields.

use super::{Timeout, VipError, VipResult, Vipl};
use crate::costs::{CpuCosts, CPU_PERIOD_PS};
use crate::ops::{Op, OpFuture, OpResult, PollCond, PollOutcome, PollTarget, ScanOutcome};
use crate::pattern::Message;
use pci_model::{TxnStatus, PAGE_SIZE};
use sim_kernel::{Cycles, Duration, MsgId, Time};

impl Vipl {
    async fn op(&self, op: Op) -> OpResult {
        OpFuture::new(self.slot.clone(), op).await
    }

    /// The current simulated time.
    #[must_use]
    pub fn now(&self) -> Time {
        self.slot.borrow().now
    }

    /// The device name `VipOpenNic` accepts on this node (`/dev/hvia0` by default).
    #[must_use]
    pub fn device_name(&self) -> &str {
        &self.cfg.nic_name
    }

    /// The cost table the CPU runs with.
    #[must_use]
    pub fn costs(&self) -> &CpuCosts {
        &self.cfg.costs
    }

    /// Sets the message id the following spans are recorded under (e.g. the iteration).
    pub fn set_trace_msg(&self, msg: MsgId) {
        self.slot.borrow_mut().msg = msg;
    }

    /// Executes for `cycles` CPU cycles (user computation).
    pub async fn compute(&self, cycles: Cycles) {
        if cycles.0 > 0 {
            self.op(Op::Compute(cycles)).await;
        }
    }

    /// Sleeps for `d` (rounded up to whole CPU cycles of 1.25 ns); idle, not CPU work.
    pub async fn sleep(&self, d: Duration) {
        let c = d.as_ps().div_ceil(CPU_PERIOD_PS);
        if c > 0 {
            self.op(Op::Sleep(Cycles(c))).await;
        }
    }

    /// Loads `len` bytes of process memory at `va` (cache model + copy cost).
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: an unmapped address.
    pub async fn read_mem(&self, va: u64, len: u64) -> VipResult<Vec<u8>> {
        match self.op(Op::Read { va, len }).await {
            OpResult::Bytes(b) => Ok(b),
            _ => Err(VipError::InvalidParameter),
        }
    }

    /// Stores `data` into process memory at `va` (cache model + copy cost).
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: an unmapped address.
    pub async fn write_mem(&self, va: u64, data: &[u8]) -> VipResult<()> {
        // The buffer of the CPU's last store, if it gave one back (`SlotState::spare`).
        let mut bytes = std::mem::take(&mut self.slot.borrow_mut().spare);
        bytes.clear();
        bytes.extend_from_slice(data);
        match self.op(Op::Write { va, data: bytes }).await {
            OpResult::Done => Ok(()),
            _ => Err(VipError::InvalidParameter),
        }
    }

    /// `memcpy(dst, src, len)` in process memory: each line of `src` loaded and each of
    /// `dst` stored through the cache model, plus the copy cost of `len` bytes once.
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: an unmapped address.
    pub async fn memcpy(&self, dst: u64, src: u64, len: u64) -> VipResult<()> {
        match self.op(Op::Copy { dst, src, len }).await {
            OpResult::Done => Ok(()),
            _ => Err(VipError::InvalidParameter),
        }
    }

    /// Instrumentation, not part of the modelled program: reads process memory at no
    /// simulated cost without touching the cache model (e.g. to verify received data).
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: an unmapped address.
    pub async fn peek(&self, va: u64, len: u64) -> VipResult<Vec<u8>> {
        self.peek_into(va, len, Vec::new()).await
    }

    /// [`Vipl::peek`] into `buf`, which comes back holding the `len` bytes (a caller
    /// that peeks every iteration reuses one buffer instead of fresh memory each time).
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: an unmapped address.
    pub async fn peek_into(&self, va: u64, len: u64, buf: Vec<u8>) -> VipResult<Vec<u8>> {
        match self.op(Op::Peek { va, len, buf }).await {
            OpResult::Bytes(b) => Ok(b),
            _ => Err(VipError::InvalidParameter),
        }
    }

    /// Instrumentation, not part of the modelled program: writes process memory at no
    /// simulated cost (e.g. a fresh test pattern for each iteration).
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: an unmapped address.
    pub async fn poke(&self, va: u64, data: &[u8]) -> VipResult<()> {
        self.poke_owned(va, data.to_vec()).await.map(drop)
    }

    /// [`Vipl::poke`] of a buffer the caller hands over; it comes back unchanged, for
    /// the caller to reuse.
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: an unmapped address.
    pub async fn poke_owned(&self, va: u64, data: Vec<u8>) -> VipResult<Vec<u8>> {
        match self.op(Op::Poke { va, data }).await {
            OpResult::Bytes(b) => Ok(b),
            _ => Err(VipError::InvalidParameter),
        }
    }

    /// Instrumentation: writes the first `len` bytes of the test message `msg` at `va` at
    /// no simulated cost, as [`Vipl::poke`] of those bytes would, without the message
    /// being made whole (`Op::PokeMessage`).
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: a range not wholly mapped (nothing is written then), or
    /// `len` past the message's end (no op is made then).
    pub async fn poke_message(&self, va: u64, msg: Message, len: u64) -> VipResult<()> {
        if len > u64::from(msg.len) {
            return Err(VipError::InvalidParameter);
        }
        match self.op(Op::PokeMessage { va, msg, len }).await {
            OpResult::Done => Ok(()),
            _ => Err(VipError::InvalidParameter),
        }
    }

    /// Instrumentation: compares the test message `msg` with memory at `va` at no
    /// simulated cost, as [`Vipl::peek`] and a comparison would (`Op::CheckMessage`):
    /// `None` when every byte matches, else the first that differs as (offset in the
    /// message, the message's byte, the byte found).
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: a range not wholly mapped.
    pub async fn check_message(&self, va: u64, msg: Message) -> VipResult<Option<(u64, u8, u8)>> {
        match self.op(Op::CheckMessage { va, msg }).await {
            OpResult::Done => Ok(None),
            OpResult::Differs {
                offset,
                expected,
                found,
            } => Ok(Some((offset, expected, found))),
            _ => Err(VipError::InvalidParameter),
        }
    }

    /// A 32-bit store to the card's BAR0 register at `offset`: `mmio_write` cycles, then
    /// the wait until the host bridge has posted it.
    pub async fn mmio_write(&self, offset: u64, value: u32) {
        self.compute(self.cfg.costs.mmio_write).await;
        let addr = self.cfg.bar0.saturating_add(offset);
        self.op(Op::MmioWrite { addr, value }).await;
    }

    /// A 32-bit load from the card's BAR0 register at `offset`: `mmio_read` cycles, then
    /// the stall for the whole PCI read.
    ///
    /// # Errors
    /// `VIP_ERROR_RESOURCE`: the read ended in a master or target abort (no card there).
    pub async fn mmio_read(&self, offset: u64) -> VipResult<u32> {
        self.compute(self.cfg.costs.mmio_read).await;
        let addr = self.cfg.bar0.saturating_add(offset);
        match self.op(Op::MmioRead { addr }).await {
            OpResult::Word(v, TxnStatus::Ok) => Ok(v),
            _ => Err(VipError::ErrorResource),
        }
    }

    /// The instant a wait of `timeout` started now gives up at (`None`: never).
    pub(crate) fn deadline(&self, timeout: Timeout) -> Option<Time> {
        match timeout {
            Timeout::Infinite => None,
            Timeout::After(d) => Some(self.now() + d),
        }
    }

    /// `gettimeofday`: a system call that reads the clock half-way through; returns
    /// the instant it read (what the program sees, to the picosecond instead of the
    /// microsecond).
    pub async fn gettimeofday(&self) -> Time {
        let half = Cycles(self.cfg.costs.gettimeofday.0 / 2);
        self.compute(half).await;
        let t = self.now();
        self.compute(Cycles(self.cfg.costs.gettimeofday.0 - half.0))
            .await;
        t
    }

    /// Polls process memory at `va` until `cond` holds, each iteration costing
    /// `poll_iteration` cycles plus its load (a hit while the line is unchanged, a miss
    /// once a DMA write has changed it). The load of an iteration sees memory as the host
    /// bridge has committed it at that instant.
    ///
    /// # Errors
    /// `VIP_TIMEOUT` when `timeout` passes first; `VIP_INVALID_PARAMETER` for an unmapped
    /// address.
    pub async fn poll_mem(
        &self,
        va: u64,
        cond: PollCond,
        timeout: Timeout,
    ) -> VipResult<PollOutcome> {
        let op = Op::Poll {
            va,
            cond,
            deadline: self.deadline(timeout),
            iteration: self.cfg.costs.poll_iteration,
        };
        match self.op(op).await {
            OpResult::Polled(p) if p.satisfied => Ok(p),
            OpResult::Polled(_) => Err(VipError::Timeout),
            _ => Err(VipError::InvalidParameter),
        }
    }

    /// Polls several words (in scan order) until one's condition holds, each scan
    /// costing `poll_iteration` cycles plus its loads (see
    /// [`Op::PollAny`]); gives up after the first scan that
    /// ends at or after `deadline`.
    ///
    /// # Errors
    /// `VIP_TIMEOUT` when the deadline passes first; `VIP_INVALID_PARAMETER` for an
    /// unmapped address.
    pub async fn poll_any(
        &self,
        targets: Vec<PollTarget>,
        deadline: Option<Time>,
    ) -> VipResult<ScanOutcome> {
        let op = Op::PollAny {
            targets,
            deadline,
            iteration: self.cfg.costs.poll_iteration,
        };
        match self.op(op).await {
            OpResult::Scanned(s) if s.found.is_some() => Ok(s),
            OpResult::Scanned(_) => Err(VipError::Timeout),
            _ => Err(VipError::InvalidParameter),
        }
    }

    /// The ATT-style physical page list of `[va, va + len)` (no cost: the caller charges
    /// the page-table walk).
    pub(crate) async fn pages_of(&self, va: u64, len: u64) -> VipResult<Vec<u64>> {
        match self.op(Op::Pages { va, len }).await {
            OpResult::Pages(p) => Ok(p),
            _ => Err(VipError::InvalidParameter),
        }
    }

    /// `malloc(len)` aligned to `align` bytes (a power of two; at least 16): the next
    /// range of the process heap, its fresh pages mapped to scattered physical frames and
    /// zeroed. Costs `malloc` plus `page_fault` per new page.
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: zero length or a bad alignment; `VIP_ERROR_RESOURCE`: the
    /// address space or host memory is exhausted.
    pub async fn malloc(&mut self, len: u64, align: u64) -> VipResult<u64> {
        if len == 0 || !align.is_power_of_two() || align > PAGE_SIZE {
            return Err(VipError::InvalidParameter);
        }
        let align = align.max(16);
        let va = self
            .heap_next
            .checked_add(align - 1)
            .map(|v| v & !(align - 1))
            .ok_or(VipError::ErrorResource)?;
        let end = va.checked_add(len).ok_or(VipError::ErrorResource)?;
        self.compute(self.cfg.costs.malloc).await;
        let fresh = match self.op(Op::Map { va, len }).await {
            OpResult::Count(n) => n,
            _ => return Err(VipError::ErrorResource),
        };
        self.heap_next = end;
        self.compute(Cycles(self.cfg.costs.page_fault.0.saturating_mul(fresh)))
            .await;
        Ok(va)
    }
}
