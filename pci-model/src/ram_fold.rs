//! Reads a bus answers itself from a device target's RAM, and writes it stores there
//! itself: the "read fold" and the "write fold" of a RAM-backed target (the GEC's
//! buffer RAM on the card's local bus), in untraced `Stepping::FastForward` only (see
//! `bus/fold.rs` for the timing).
//!
//! Without the fold, the bus announces a device read with `TargetRead`; the device
//! samples the RAM when that message lands (the instant `t_s`, an event of its own) and
//! answers with `TargetReadData` a latency later. With it, the bus registers a *sample*
//! of `[addr, addr + len)` at the place `t_s` would have had in the run's order (an
//! [`EventKey`]) with the RAM instead, and reads it when it needs the data. The RAM must
//! then give the bytes it held at that place: [`ReadSamples`] keeps them copy-on-write.
//! Every write into the RAM happens inside an event whose key the RAM is told
//! ([`ReadSamples::set_now`], by the World, before it hands the RAM to a component);
//! a write by an event that comes after a pending sample's key first copies the
//! sample's bytes (the whole sample, once), so the sample never sees it; a write by an
//! event before the key lands in the RAM, where the sample reads it.
//!
//! Writes fold the other way ("the write fold"): a write that ends in the RAM outside
//! the target's watched window ([`RamBacking::watch`], where the target reacts to what
//! is written, as the GEC does to a descriptor's status) is not sent as `TargetWrite`;
//! the bus takes the sequence number that message would have taken
//! ([`sim_kernel::Ctx::reserve_sequence`]) and hands the bytes to the RAM with that place
//! ([`FoldRam::write_at`]). The RAM keeps them pending ([`PendingWrites`]) and applies
//! each once the run has passed its place ([`FoldRam::pass`]: the World calls it, through
//! the RAM's own event hook, before it hands the RAM to a component, and the bus before
//! it takes samples), with that place as the writing event's key, so a pending sample
//! sees the write exactly when it would have seen the message's.
//!
//! Same-instant order: `TargetRead` would have been an event at `t_s` with normal
//! priority and the sequence number the queue held when the bus sent it
//! ([`sim_kernel::Ctx::next_sequence`]). An event queued before that point has a lower
//! sequence number, one queued after it (the next one takes that very number) an equal
//! or higher one, so a writing event whose key is at or above the sample's comes after
//! the read in the run without the fold, and one below it before: the comparison is
//! exact, not conservative.

use sim_kernel::{Cycles, EventKey};

/// A device target whose reads are served from, and writes stored in, a RAM the bus can
/// be given (see [`crate::PciBus::set_ram_backed`]): where the RAM is, how late its data
/// comes, and which writes the target must see itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RamBacking {
    /// First byte of the RAM on the bus.
    pub start: u64,
    /// One past its last byte. A read starting outside `[start, end)` is a target
    /// abort; one running past `end` gets the bytes up to it.
    pub end: u64,
    /// Clocks of the target's own domain from the edge it samples the address (where
    /// `TargetRead` lands) to the edge it sends the data from (>= 1; 0 counts as 1).
    pub read_latency: Cycles,
    /// The window `[watch.0, watch.1)` whose writes the target itself must see (it
    /// reacts to them): a write overlapping it is sent as `TargetWrite`; any other
    /// write inside the RAM is stored by the bus (the write fold).
    pub watch: (u64, u64),
}

impl RamBacking {
    /// Whether a write of `len` bytes at `addr` lies in the RAM and outside the watched
    /// window (the bus may store it itself).
    #[must_use]
    pub fn folds_write(&self, addr: u64, len: u64) -> bool {
        let Some(end) = addr.checked_add(len) else {
            return false;
        };
        len > 0
            && addr >= self.start
            && end <= self.end
            && (end <= self.watch.0 || addr >= self.watch.1)
    }
}

/// Storage the bus can read a RAM-backed target's answers from and store its writes in
/// (implemented by the card's buffer RAM).
pub trait FoldRam {
    /// Registers a read of `[addr, addr + len)` sampled at the place `at` of the run's
    /// order (inside the RAM); returns its id.
    fn sample(&mut self, at: EventKey, addr: u64, len: u64) -> u64;
    /// The bytes of sample `id` as they were at its place, forgetting it (`None`: no
    /// such sample). Called only once every event before its place has run, and
    /// [`FoldRam::pass`] with a key after that place.
    fn take_sample(&mut self, id: u64) -> Option<Vec<u8>>;
    /// Stores `data` for `[addr, addr + data.len())` as written by an event at the
    /// place `at` still to come (inside the RAM: [`RamBacking::folds_write`]); applied
    /// by [`FoldRam::pass`] once the run is past `at`.
    fn write_at(&mut self, at: EventKey, addr: u64, data: Vec<u8>);
    /// Applies, in the order of their places, every stored write whose place is before
    /// `now`, each as a write by the event at its place (pending samples copy-on-write).
    fn pass(&mut self, now: EventKey);
}

/// Writes stored at places still to come, in the order of their places (see the
/// module doc): kept by a RAM that implements [`FoldRam`].
#[derive(Clone, Debug, Default)]
pub struct PendingWrites {
    queue: std::collections::VecDeque<(EventKey, u64, Vec<u8>)>,
}

impl PendingWrites {
    /// Stores a write at place `at`.
    pub fn push(&mut self, at: EventKey, addr: u64, data: Vec<u8>) {
        // Places come in order (a bus's writes end in clock order); one that does not
        // is put where it belongs.
        if self.queue.back().is_none_or(|(k, _, _)| *k < at) {
            self.queue.push_back((at, addr, data));
            return;
        }
        let i = self
            .queue
            .iter()
            .rposition(|(k, _, _)| *k < at)
            .map_or(0, |i| i + 1);
        self.queue.insert(i, (at, addr, data));
    }

    /// Whether no write is stored.
    #[inline]
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// The first stored write if its place is before `now`, taken out.
    pub fn pop_before(&mut self, now: EventKey) -> Option<(EventKey, u64, Vec<u8>)> {
        if self.queue.front().is_some_and(|(k, _, _)| *k < now) {
            self.queue.pop_front()
        } else {
            None
        }
    }

    /// The last place of an event at or before `t` (every event of that instant):
    /// [`PendingWrites::pop_before`] with it takes the writes a run that stopped after
    /// its last event at or before `t` has passed.
    #[must_use]
    pub fn after_instant(t: sim_kernel::Time) -> EventKey {
        EventKey {
            time: t,
            priority: sim_kernel::Priority(u8::MAX),
            sequence: u64::MAX,
        }
    }
}

/// One pending sample.
#[derive(Clone, Debug)]
struct Sample {
    id: u64,
    at: EventKey,
    addr: u64,
    len: u64,
    /// Its bytes, copied before the first write that came after its place.
    frozen: Option<Vec<u8>>,
}

/// The pending samples of one RAM, copy-on-write (see the module doc).
#[derive(Clone, Debug, Default)]
pub struct ReadSamples {
    pending: Vec<Sample>,
    next_id: u64,
    /// The event touching the RAM now.
    now: EventKey,
}

impl ReadSamples {
    /// The event that will touch the RAM next (until the next call).
    pub fn set_now(&mut self, key: EventKey) {
        self.now = key;
    }

    /// Whether no sample is pending.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Registers a sample; returns its id.
    pub fn add(&mut self, at: EventKey, addr: u64, len: u64) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.pending.push(Sample {
            id,
            at,
            addr,
            len,
            frozen: None,
        });
        id
    }

    /// To be called before `[addr, addr + len)` is written by the event set with
    /// [`ReadSamples::set_now`]; `current(addr, len)` reads the RAM as it is. Every
    /// pending sample that overlaps the write and whose place is at or before that event
    /// keeps its bytes from now on.
    pub fn before_write(&mut self, addr: u64, len: u64, current: impl Fn(u64, u64) -> Vec<u8>) {
        let end = addr.saturating_add(len);
        for s in &mut self.pending {
            if s.frozen.is_none()
                && s.at <= self.now
                && s.addr < end
                && addr < s.addr.saturating_add(s.len)
            {
                s.frozen = Some(current(s.addr, s.len));
            }
        }
    }

    /// The bytes of sample `id` (its copy, or the RAM's bytes now through `current`),
    /// forgetting it.
    pub fn take(&mut self, id: u64, current: impl Fn(u64, u64) -> Vec<u8>) -> Option<Vec<u8>> {
        let i = self.pending.iter().position(|s| s.id == id)?;
        let s = self.pending.swap_remove(i);
        Some(s.frozen.unwrap_or_else(|| current(s.addr, s.len)))
    }
}
