//! Reads a bus answers itself from a device target's RAM: the "read fold" of a
//! RAM-backed target (the GEC's buffer RAM on the card's local bus), in untraced
//! `Stepping::FastForward` only (see `bus/fold.rs` for the timing).
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
//! Same-instant order: `TargetRead` would have been an event at `t_s` with normal
//! priority and the sequence number the queue held when the bus sent it
//! ([`sim_kernel::Ctx::next_sequence`]). An event queued before that point has a lower
//! sequence number, one queued after it (the next one takes that very number) an equal
//! or higher one, so a writing event whose key is at or above the sample's comes after
//! the read in the run without the fold, and one below it before: the comparison is
//! exact, not conservative.

use sim_kernel::{Cycles, EventKey};

/// A device target whose reads are served from a RAM the bus can be given (see
/// [`crate::PciBus::set_ram_backed`]): where the RAM is and how late its data comes.
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
}

/// Storage the bus can read a RAM-backed target's answers from (implemented by the
/// card's buffer RAM).
pub trait FoldRam {
    /// Registers a read of `[addr, addr + len)` sampled at the place `at` of the run's
    /// order (inside the RAM); returns its id.
    fn sample(&mut self, at: EventKey, addr: u64, len: u64) -> u64;
    /// The bytes of sample `id` as they were at its place, forgetting it (`None`: no
    /// such sample). Called only once every event before its place has run.
    fn take_sample(&mut self, id: u64) -> Option<Vec<u8>>;
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
