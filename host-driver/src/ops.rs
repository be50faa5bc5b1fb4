//! The op slot: how a host program (an `async` block) asks its [`HostCpu`](crate::HostCpu)
//! to do something that takes simulated time, and gets the answer.
//!
//! The program and its CPU share one [`Slot`] (`Rc<RefCell<..>>`, local to that pair and
//! never shared with another component: the deliberate exception to "no `Rc<RefCell>`
//! webs", because a future cannot borrow its executor). An awaited [`OpFuture`] stores
//! its [`Op`] in the slot and returns `Pending`; the CPU takes the op, executes it at
//! the current simulated time (touching host memory at that instant), pays its cost
//! (a self wake-up, or the PCI completion it waits for), stores the [`OpResult`] and
//! polls the program again, which then finds the result and goes on. The program never
//! sees a real waker: it is polled only when its CPU handles a message.

use crate::pattern::Message;
use pci_model::{MemError, TxnStatus};
use sim_kernel::{Cycles, MsgId, Time};
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

/// What a poll waits for (see [`Op::Poll`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollCond {
    /// The little-endian 32-bit word at the address has any bit of the mask set (e.g.
    /// the descriptor done bit).
    AnyBits32(u32),
    /// The byte at the address equals the value (e.g. the RDMA flag byte).
    ByteEquals(u8),
}

impl PollCond {
    /// Bytes the condition reads.
    #[must_use]
    pub const fn width(self) -> u64 {
        match self {
            PollCond::AnyBits32(_) => 4,
            PollCond::ByteEquals(_) => 1,
        }
    }

    /// Whether `bytes` (read at the polled address) satisfy the condition.
    #[must_use]
    pub fn holds(self, bytes: &[u8]) -> bool {
        match self {
            PollCond::AnyBits32(mask) => {
                let mut w = [0u8; 4];
                for (d, s) in w.iter_mut().zip(bytes) {
                    *d = *s;
                }
                u32::from_le_bytes(w) & mask != 0
            }
            PollCond::ByteEquals(v) => bytes.first() == Some(&v),
        }
    }
}

/// One request from the program to its CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Execute for `cycles` (busy: counted as CPU work).
    Compute(Cycles),
    /// Sleep for `cycles` (idle: not counted as CPU work).
    Sleep(Cycles),
    /// Load `len` bytes of process memory at `va` (cache model + copy cost).
    Read {
        /// First byte \[process VA\].
        va: u64,
        /// Bytes.
        len: u64,
    },
    /// Store bytes into process memory at `va` (cache model + copy cost).
    Write {
        /// First byte \[process VA\].
        va: u64,
        /// Bytes.
        data: Vec<u8>,
    },
    /// `memcpy(dst, src, len)` in process memory: the loads of `src`'s lines and the
    /// stores of `dst`'s through the cache model, and the copy cost once (memmove
    /// semantics: every byte is read before any is written).
    Copy {
        /// First byte written \[process VA\].
        dst: u64,
        /// First byte read \[process VA\].
        src: u64,
        /// Bytes.
        len: u64,
    },
    /// Instrumentation: read process memory at no simulated cost, cache untouched. The
    /// bytes come back in `buf` (resized to `len`: a caller that reads often hands the same
    /// buffer back, so no fresh memory is touched per read).
    Peek {
        /// First byte \[process VA\].
        va: u64,
        /// Bytes.
        len: u64,
        /// The buffer to read into.
        buf: Vec<u8>,
    },
    /// Instrumentation: write process memory at no simulated cost (the cache model takes
    /// the new bytes as the CPU's own). `data` comes back as `OpResult::Bytes`, for the
    /// caller to reuse.
    Poke {
        /// First byte \[process VA\].
        va: u64,
        /// Bytes.
        data: Vec<u8>,
    },
    /// Instrumentation: writes the first `len` bytes of the test message `msg` at `va`, as
    /// [`Op::Poke`] of those bytes would (no simulated cost, the cache model takes the
    /// new bytes; a range not wholly mapped is refused before anything is written), a
    /// piece at a time, without the whole message being made. `OpResult::Done`.
    PokeMessage {
        /// First byte \[process VA\].
        va: u64,
        /// The message.
        msg: Message,
        /// Bytes written, from its first (at most its length).
        len: u64,
    },
    /// Instrumentation: compares the test message `msg` with process memory at `va`, as
    /// [`Op::Peek`] of its length and a comparison would (no simulated cost, cache
    /// untouched), a piece at a time. `OpResult::Done` when every byte matches,
    /// `OpResult::Differs` for the first that does not.
    CheckMessage {
        /// First byte \[process VA\].
        va: u64,
        /// The message expected there.
        msg: Message,
    },
    /// A 32-bit memory-mapped store to bus address `addr` (posted by the host bridge).
    MmioWrite {
        /// Bus address.
        addr: u64,
        /// Value (little-endian on the bus).
        value: u32,
    },
    /// A 32-bit memory-mapped load from bus address `addr` (stalls for the PCI read).
    MmioRead {
        /// Bus address.
        addr: u64,
    },
    /// Poll process memory at `va` until `cond` holds or `deadline` passes; each
    /// iteration costs `iteration` cycles plus its load.
    Poll {
        /// Address polled \[process VA\].
        va: u64,
        /// What ends the poll.
        cond: PollCond,
        /// Give up at the first iteration at or after this instant (`None`: never).
        deadline: Option<Time>,
        /// Loop cost per iteration, besides the load \[cycles\].
        iteration: Cycles,
    },
    /// A poll loop over several words (`VipCQWait`'s scan of every work queue's head
    /// status): each iteration loads the targets one after the other, each load at its
    /// own time and costed like [`Op::Read`] of the target's width (line cost plus copy
    /// cost), and ends the poll at the first whose condition holds; after a scan that
    /// found none it gives up if `deadline` has passed, else pays `iteration` cycles and
    /// scans again.
    PollAny {
        /// The polled words, in scan order.
        targets: Vec<PollTarget>,
        /// Give up after the first unsuccessful scan that ends at or after this instant
        /// (`None`: never).
        deadline: Option<Time>,
        /// Loop cost per scan, besides the loads \[cycles\].
        iteration: Cycles,
    },
    /// Map every unmapped page of `[va, va + len)` to fresh, scattered frames.
    Map {
        /// First byte \[process VA\].
        va: u64,
        /// Bytes.
        len: u64,
    },
    /// The ATT-style physical page list of `[va, va + len)` (kernel page-table walk).
    Pages {
        /// First byte \[process VA\].
        va: u64,
        /// Bytes.
        len: u64,
    },
}

/// How a poll ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PollOutcome {
    /// Whether the condition held (false: the deadline passed).
    pub satisfied: bool,
    /// Iterations run \[loads\].
    pub iterations: u64,
    /// The bytes read by the last iteration.
    pub last: Vec<u8>,
}

/// One word an [`Op::PollAny`] polls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PollTarget {
    /// Address polled \[process VA\].
    pub va: u64,
    /// What ends the poll.
    pub cond: PollCond,
}

/// How an [`Op::PollAny`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanOutcome {
    /// The index of the target whose condition held (the first in scan order of the
    /// last scan); `None`: the deadline passed.
    pub found: Option<usize>,
    /// Scans run, the last included \[iterations\].
    pub iterations: u64,
}

/// The CPU's answer to an [`Op`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OpResult {
    /// Done, nothing to return.
    Done,
    /// Bytes read.
    Bytes(Vec<u8>),
    /// A memory-mapped read: the value and how the PCI read ended.
    Word(u32, TxnStatus),
    /// A page list.
    Pages(Vec<u64>),
    /// A poll ended.
    Polled(PollOutcome),
    /// A poll over several words ended.
    Scanned(ScanOutcome),
    /// A count (pages newly mapped by [`Op::Map`]).
    Count(u64),
    /// The memory access could not be done (unmapped page, outside memory).
    Fault(MemError),
    /// [`Op::CheckMessage`] found byte `offset` of the message to be `found`, not
    /// `expected`.
    Differs {
        /// Offset in the message \[bytes\].
        offset: u64,
        /// The message's byte.
        expected: u8,
        /// The byte in memory.
        found: u8,
    },
}

/// A span recorded by the program (a VIPL call), flushed into the trace by the CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpanRecord {
    /// Message the work belongs to.
    pub msg: MsgId,
    /// Stage name (the VIPL call name, `poll`, `doorbell`).
    pub stage: &'static str,
    /// Start.
    pub start: Time,
    /// End.
    pub end: Time,
}

/// State shared by one program and its CPU (see the module doc).
#[derive(Debug, Default)]
pub struct SlotState {
    /// The op the program waits on, not yet taken by the CPU.
    pub request: Option<Op>,
    /// The answer to the last op, not yet taken by the program.
    pub result: Option<OpResult>,
    /// The simulated time, updated by the CPU before every poll of the program.
    pub now: Time,
    /// The message id the program's spans are recorded under.
    pub msg: MsgId,
    /// Spans recorded by the program since the last flush.
    pub spans: Vec<SpanRecord>,
    /// The last span the program recorded (a VIPL call or a poll) and when it ended, for
    /// diagnoses of a stalled run.
    pub last_span: Option<(&'static str, Time)>,
    /// A wait the library is in that reads card registers in a loop (e.g. for a
    /// connection): only the card can end it.
    pub register_wait: Option<RegisterWait>,
    /// `VipOpenNic` calls that found no card since the CPU last took this count (into
    /// [`CpuStats::open_no_card`](crate::CpuStats::open_no_card)).
    pub open_no_card: u64,
    /// The buffer of the last store the CPU executed (`Op::Write`), given back emptied
    /// for the library's next store to fill: no allocation per store once warm (it
    /// keeps the capacity of the largest store so far).
    pub spare: Vec<u8>,
}

/// A library wait that polls card registers (see [`SlotState::register_wait`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegisterWait {
    /// What it waits for.
    pub what: &'static str,
    /// When it gives up (`None`: never).
    pub deadline: Option<Time>,
    /// When it started.
    pub since: Time,
}

/// The shared slot.
pub type Slot = Rc<RefCell<SlotState>>;

/// A future that hands one [`Op`] to the CPU and resolves with its [`OpResult`].
#[derive(Debug)]
pub struct OpFuture {
    slot: Slot,
    op: Option<Op>,
}

impl OpFuture {
    /// A future for `op` on `slot`.
    #[must_use]
    pub fn new(slot: Slot, op: Op) -> Self {
        Self { slot, op: Some(op) }
    }
}

impl Future for OpFuture {
    type Output = OpResult;

    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<OpResult> {
        let this = self.get_mut();
        let mut s = this.slot.borrow_mut();
        if let Some(op) = this.op.take() {
            s.result = None;
            s.request = Some(op);
            return Poll::Pending;
        }
        match s.result.take() {
            Some(r) => Poll::Ready(r),
            None => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poll_conditions() {
        assert!(PollCond::AnyBits32(1).holds(&[1, 0, 0, 0]));
        assert!(!PollCond::AnyBits32(1).holds(&[2, 0, 0, 0]));
        assert!(PollCond::AnyBits32(0x100).holds(&[0, 1]));
        assert!(!PollCond::AnyBits32(1).holds(&[]));
        assert!(PollCond::ByteEquals(7).holds(&[7]));
        assert!(!PollCond::ByteEquals(7).holds(&[]));
        assert_eq!(PollCond::ByteEquals(0).width(), 1);
    }

    #[test]
    fn op_future_hands_over_and_resolves() {
        let slot: Slot = Rc::default();
        let mut f = OpFuture::new(slot.clone(), Op::Compute(Cycles(5)));
        let mut cx = Context::from_waker(std::task::Waker::noop());
        assert!(Pin::new(&mut f).poll(&mut cx).is_pending());
        assert_eq!(
            slot.borrow_mut().request.take(),
            Some(Op::Compute(Cycles(5)))
        );
        assert!(Pin::new(&mut f).poll(&mut cx).is_pending(), "no result yet");
        slot.borrow_mut().result = Some(OpResult::Done);
        assert_eq!(Pin::new(&mut f).poll(&mut cx), Poll::Ready(OpResult::Done));
    }
}
