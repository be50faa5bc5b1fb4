//! The word movers of the internal data path: [`Mover`] moves runs of bytes one 32-bit
//! word per core clock (Send FIFO -> TX buffer, RX buffer -> Recv FIFO), in order, one
//! run after the other (paper: "data moves through them one word per clock, pipelined").
//!
//! A run of `n` words that starts at edge `s` has `k` words done at edge `s + k` and ends
//! at edge `s + n`; the next run starts at `max(s + n, its ready time)`. With
//! [`WordStepping::PerWord`] the engine is woken at every edge of a run and moves one
//! word per wake-up; with [`WordStepping::Batched`] it is woken once, at the run's last
//! edge, and moves the whole run. Nothing else can observe the words between those edges
//! (the GEC reads a TX buffer only after its handoff, and the engine reads an RX buffer
//! only while it owns the slot), so both give the same results; a test checks it.
//!
//! Byte lanes: a run of `b` bytes takes `ceil(b / 4)` word moves whatever its alignment
//! in the buffer (assumption: the word path realigns bytes with a barrel shifter at no
//! extra cycle).
//!
//! FIFO space ([`FifoSpace`]) is accounted per run: the Send FIFO reserves a payload
//! chunk when its DMA read is issued and frees it when the chunk's last word has left;
//! the Recv FIFO reserves a chunk when it starts to fill and frees it when the chunk's
//! DMA write has completed.

use super::ids::MoverGen;
use super::params::WordStepping;
use sim_kernel::{Cycles, Duration, Priority, StateName, Time};
use std::collections::VecDeque;

/// Whether a mover is moving words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MoverState {
    /// No run in progress.
    Idle,
    /// A run in progress.
    Moving,
}

impl StateName for MoverState {
    fn name(self) -> &'static str {
        match self {
            MoverState::Idle => "idle",
            MoverState::Moving => "moving",
        }
    }
}

/// A run of bytes waiting to move, tagged with what it is.
#[derive(Clone, Debug)]
pub(crate) struct Run<T> {
    /// Bytes in the run (> 0).
    pub bytes: u64,
    /// Earliest edge it may start.
    pub ready: Time,
    /// What it is.
    pub tag: T,
}

/// The run in progress.
#[derive(Clone, Debug)]
pub(crate) struct Active<T> {
    pub run: Run<T>,
    pub start: Time,
    pub end: Time,
    /// Words moved so far.
    pub done: u64,
}

/// Words moved by one call of [`Mover::advance`]: words `from..to` of the current run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Progress {
    pub from: u64,
    pub to: u64,
    /// The run is over (its last word moved).
    pub finished: bool,
}

/// One word mover (see the module doc).
#[derive(Clone, Debug)]
pub(crate) struct Mover<T> {
    queue: VecDeque<Run<T>>,
    cur: Option<Active<T>>,
    /// Generation of the wake-up that is scheduled (older ones are stale).
    pub gen: MoverGen,
    scheduled: Option<Time>,
}

impl<T> Default for Mover<T> {
    fn default() -> Self {
        Self {
            queue: VecDeque::new(),
            cur: None,
            gen: MoverGen::default(),
            scheduled: None,
        }
    }
}

/// Tie-break priority of the TX mover's wake-ups: before every other message of its
/// edge, so that per-word and batched stepping see the same order at an edge.
pub(crate) const TX_MOVER_PRIORITY: Priority = Priority(60);
/// Tie-break priority of the RX mover's wake-ups (after the TX mover's).
pub(crate) const RX_MOVER_PRIORITY: Priority = Priority(62);

/// Whole cycles of `period` from `now` to the edge `t` (at least 1).
pub(crate) fn cycles_until(now: Time, t: Time, period: Duration) -> Cycles {
    Cycles((t - now).as_ps().div_ceil(period.as_ps().max(1)).max(1))
}

/// Words a run of `bytes` bytes takes.
pub(crate) fn words(bytes: u64) -> u64 {
    bytes.div_ceil(4)
}

impl<T> Mover<T> {
    /// Queues a run.
    pub fn push(&mut self, run: Run<T>) {
        self.queue.push_back(run);
    }

    /// The run in progress.
    pub fn current(&self) -> Option<&Active<T>> {
        self.cur.as_ref()
    }

    /// The run in progress, mutably.
    pub fn current_mut(&mut self) -> Option<&mut Active<T>> {
        self.cur.as_mut()
    }

    /// Starts the next queued run if none is in progress (at `max(now, ready)`).
    pub fn start_next(&mut self, now: Time, period: Duration) {
        if self.cur.is_some() {
            return;
        }
        if let Some(run) = self.queue.pop_front() {
            let start = now.max(run.ready);
            let end = start + period * words(run.bytes).max(1);
            self.cur = Some(Active {
                run,
                start,
                end,
                done: 0,
            });
        }
    }

    /// Moves the words due by `now` (an edge); returns them, or `None` if none moved.
    pub fn advance(&mut self, now: Time, period: Duration) -> Option<Progress> {
        let cur = self.cur.as_mut()?;
        let total = words(cur.run.bytes).max(1);
        // A run may start after now (its first word is on a later edge): none moved yet.
        let elapsed = now.saturating_since(cur.start).as_ps() / period.as_ps().max(1);
        let to = elapsed.min(total);
        if to <= cur.done {
            return None;
        }
        let from = cur.done;
        cur.done = to;
        Some(Progress {
            from,
            to,
            finished: to == total,
        })
    }

    /// Takes the finished run out (after [`Mover::advance`] said it finished).
    pub fn take_finished(&mut self) -> Option<Run<T>> {
        let done = self
            .cur
            .as_ref()
            .is_some_and(|c| c.done >= words(c.run.bytes).max(1));
        if done {
            self.cur.take().map(|a| a.run)
        } else {
            None
        }
    }

    /// The edge the engine must be woken at next, if it differs from the one already
    /// scheduled (then the generation is bumped: older wake-ups are stale).
    pub fn wake_needed(&mut self, stepping: WordStepping, period: Duration) -> Option<Time> {
        let want = self.cur.as_ref().map(|c| match stepping {
            WordStepping::PerWord => c.start + period * (c.done + 1),
            WordStepping::Batched => c.end,
        });
        if want == self.scheduled || want.is_none() {
            if want.is_none() {
                self.scheduled = None;
            }
            return None;
        }
        self.scheduled = want;
        self.gen = self.gen.next();
        want
    }

    /// A wake-up of generation `gen` arrived: whether it is the current one.
    pub fn woken(&mut self, gen: MoverGen) -> bool {
        if gen == self.gen {
            self.scheduled = None;
            true
        } else {
            false
        }
    }

    /// The state for traces.
    pub fn state(&self) -> MoverState {
        if self.cur.is_some() {
            MoverState::Moving
        } else {
            MoverState::Idle
        }
    }
}

/// Bytes held or reserved in a FIFO of fixed size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FifoSpace {
    /// Capacity \[bytes\].
    pub size: u64,
    /// In use \[bytes\].
    pub used: u64,
    /// Most ever in use \[bytes\].
    pub max: u64,
}

impl FifoSpace {
    /// A FIFO of `size` bytes.
    pub fn new(size: u64) -> Self {
        Self {
            size,
            used: 0,
            max: 0,
        }
    }

    /// Free bytes.
    pub fn free(&self) -> u64 {
        self.size.saturating_sub(self.used)
    }

    /// Reserves `n` bytes if they are free.
    pub fn reserve(&mut self, n: u64) -> bool {
        if n > self.free() {
            return false;
        }
        self.used += n;
        self.max = self.max.max(self.used);
        true
    }

    /// Frees `n` bytes.
    pub fn release(&mut self, n: u64) {
        self.used = self.used.saturating_sub(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: Duration = Duration(10);

    #[test]
    fn runs_move_one_word_per_clock_back_to_back() {
        let mut m: Mover<u8> = Mover::default();
        m.push(Run {
            bytes: 10,
            ready: Time(0),
            tag: 1,
        });
        m.push(Run {
            bytes: 4,
            ready: Time(0),
            tag: 2,
        });
        m.start_next(Time(0), P);
        assert_eq!(m.wake_needed(WordStepping::Batched, P), Some(Time(30)));
        assert_eq!(
            m.wake_needed(WordStepping::Batched, P),
            None,
            "already scheduled"
        );
        assert_eq!(
            m.advance(Time(20), P),
            Some(Progress {
                from: 0,
                to: 2,
                finished: false
            })
        );
        assert!(m.take_finished().is_none());
        assert!(m.woken(m.gen));
        assert_eq!(
            m.advance(Time(30), P),
            Some(Progress {
                from: 2,
                to: 3,
                finished: true
            })
        );
        assert_eq!(m.take_finished().map(|r| r.tag), Some(1));
        m.start_next(Time(30), P);
        assert_eq!(m.wake_needed(WordStepping::PerWord, P), Some(Time(40)));
        assert_eq!(m.current().map(|c| c.end), Some(Time(40)));
    }

    #[test]
    fn fifo_space_never_goes_negative() {
        let mut f = FifoSpace::new(100);
        assert!(f.reserve(60));
        assert!(!f.reserve(60));
        f.release(500);
        assert_eq!((f.used, f.max, f.free()), (0, 60, 100));
    }
}
