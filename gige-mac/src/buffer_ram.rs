//! The card's buffer RAM: the FPGA memory that holds the TX and RX frame buffers and the
//! DP83820's descriptor rings, shared by the VIA protocol engine (`nic-model`) and the GEC.
//!
//! It is physical storage, not a component (see ARCHITECTURE.md): the World passes it
//! `&mut` into the handlers of the engine and the GEC, and each touches it only at the
//! instant its own model says the access happens (the engine writes a word into a TX
//! buffer on the core clock edge that moves it; the GEC serves the DP83820's local-bus
//! reads and writes from it).
//!
//! The HVIA-GE paper does not publish buffer counts or sizes; they are parameters
//! ([`BufferLayout`]) with documented assumptions. Layout, as seen on the local PCI bus
//! (the GEC claims `base .. base + size`):
//!
//! ```text
//! base + 0                        TX descriptor ring: tx_slots x 16-byte DP83820 descriptors
//! base + tx_ring_bytes            RX descriptor ring: rx_slots x 16-byte DP83820 descriptors
//! base + slots_offset             TX buffers: tx_slots x slot_bytes
//!  ... + tx_slots * slot_bytes    RX buffers: rx_slots x slot_bytes
//! ```
//!
//! Interface between engine and GEC (both directions are [`crate::MacMsg`] variants):
//!
//! | message | from -> to | meaning |
//! |---|---|---|
//! | `GecTransmit { slot, len, msg }` | engine -> GEC | TX buffer `slot` holds a frame of `len` bytes (Ethernet header onward, no FCS: the DP83820 appends it) |
//! | `GecTxDone { slot, ok, msg }` | GEC -> engine | the DP83820 has written back that descriptor: the slot is free again |
//! | `GecRxFrame { slot, len, msg }` | GEC -> engine | RX buffer `slot` holds a received frame of `len` bytes (FCS stripped), checked good by the MAC |
//! | `GecRxRelease { slot }` | engine -> GEC | the engine has moved the frame out: the slot may be given back to the DP83820 |
//! | `GecInit` | testbench -> GEC | at the start of a run: build the rings, program the DP83820 |
//! | `GecReady` | GEC -> engine | the DP83820 is programmed; earlier `GecTransmit`s waited for this |
//!
//! The local bus may also read the RAM itself for the DP83820 (the GEC read fold, untraced
//! fast stepping only, see `pci_model::ram_fold`): it registers a sample at the place the
//! GEC's read would have had in the run's order, and the RAM keeps the sample's bytes
//! copy-on-write. It may store the DP83820's data writes itself too (the write fold): the
//! RAM keeps each pending with the place the GEC's `TargetWrite` would have had, and
//! applies it once the run is past that place. For both the World tells the RAM the key
//! of each event it hands the RAM to ([`BufferRam::set_event`]).

use pci_model::{FoldRam, PendingWrites, ReadSamples};
use sim_kernel::EventKey;
use thiserror::Error;

/// Size of one DP83820 descriptor with 32-bit addressing \[bytes\] (DP83820 datasheet).
pub const DESCRIPTOR_BYTES: u64 = 16;

/// Where things live in the buffer RAM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferLayout {
    /// Local-bus address of the first byte of the RAM (the GEC's target window).
    /// Assumption: 0x1000_0000, any address the DP83820 can reach with 32-bit addressing.
    pub base: u64,
    /// Number of TX frame buffers. Assumption (not published): 2, double buffering, so
    /// the engine fills one while the MAC drains the other.
    pub tx_slots: u16,
    /// Number of RX frame buffers. Assumption (not published): 4.
    pub rx_slots: u16,
    /// Bytes per frame buffer \[bytes\]. Assumption: 2048, the power of two above the
    /// largest frame (1518 bytes with FCS).
    pub slot_bytes: u64,
}

impl Default for BufferLayout {
    fn default() -> Self {
        Self {
            base: 0x1000_0000,
            tx_slots: 2,
            rx_slots: 4,
            slot_bytes: 2048,
        }
    }
}

/// Why a buffer RAM layout or access is refused.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum BufferError {
    /// The layout has no slots, slots too small for a maximal frame, or does not fit.
    #[error("buffer RAM layout: {0}")]
    BadLayout(&'static str),
    /// An access outside the RAM.
    #[error("buffer RAM access of {len} bytes at {addr:#x} is outside {base:#x}..{end:#x}")]
    OutOfRange {
        /// First byte asked for [local-bus address].
        addr: u64,
        /// Bytes asked for.
        len: u64,
        /// First byte of the RAM.
        base: u64,
        /// One past the last byte of the RAM.
        end: u64,
    },
    /// A slot number past the configured count.
    #[error("no {kind} slot {slot} (there are {count})")]
    NoSlot {
        /// "tx" or "rx".
        kind: &'static str,
        /// The slot asked for.
        slot: u16,
        /// Slots configured.
        count: u16,
    },
}

impl BufferLayout {
    /// Checks the layout.
    ///
    /// # Errors
    /// No TX or RX slot, slots under 1518 bytes, or a RAM that would pass 4 GB.
    pub fn validate(&self) -> Result<(), BufferError> {
        if self.tx_slots == 0 || self.rx_slots == 0 {
            return Err(BufferError::BadLayout("at least one TX and one RX slot"));
        }
        if self.slot_bytes < 1518 {
            return Err(BufferError::BadLayout("slots must hold a 1518-byte frame"));
        }
        if self
            .base
            .checked_add(self.size())
            .is_none_or(|end| end > u64::from(u32::MAX) + 1)
        {
            return Err(BufferError::BadLayout(
                "the RAM must lie below 4 GB (32-bit addressing)",
            ));
        }
        Ok(())
    }

    /// Bytes of the TX descriptor ring.
    #[must_use]
    pub fn tx_ring_bytes(&self) -> u64 {
        u64::from(self.tx_slots) * DESCRIPTOR_BYTES
    }

    /// Bytes of the RX descriptor ring.
    #[must_use]
    pub fn rx_ring_bytes(&self) -> u64 {
        u64::from(self.rx_slots) * DESCRIPTOR_BYTES
    }

    /// Offset of the first frame buffer from `base` (rings rounded up to 64 bytes).
    #[must_use]
    pub fn slots_offset(&self) -> u64 {
        (self.tx_ring_bytes() + self.rx_ring_bytes()).div_ceil(64) * 64
    }

    /// Total bytes of the RAM.
    #[must_use]
    pub fn size(&self) -> u64 {
        self.slots_offset()
            + (u64::from(self.tx_slots) + u64::from(self.rx_slots)) * self.slot_bytes
    }

    /// Local-bus address of TX descriptor `slot`.
    ///
    /// # Errors
    /// A slot past the count.
    pub fn tx_descriptor(&self, slot: u16) -> Result<u64, BufferError> {
        self.check(slot, self.tx_slots, "tx")?;
        Ok(self.base + u64::from(slot) * DESCRIPTOR_BYTES)
    }

    /// Local-bus address of RX descriptor `slot`.
    ///
    /// # Errors
    /// A slot past the count.
    pub fn rx_descriptor(&self, slot: u16) -> Result<u64, BufferError> {
        self.check(slot, self.rx_slots, "rx")?;
        Ok(self.base + self.tx_ring_bytes() + u64::from(slot) * DESCRIPTOR_BYTES)
    }

    /// Local-bus address of TX buffer `slot`.
    ///
    /// # Errors
    /// A slot past the count.
    pub fn tx_buffer(&self, slot: u16) -> Result<u64, BufferError> {
        self.check(slot, self.tx_slots, "tx")?;
        Ok(self.base + self.slots_offset() + u64::from(slot) * self.slot_bytes)
    }

    /// Local-bus address of RX buffer `slot`.
    ///
    /// # Errors
    /// A slot past the count.
    pub fn rx_buffer(&self, slot: u16) -> Result<u64, BufferError> {
        self.check(slot, self.rx_slots, "rx")?;
        Ok(self.base
            + self.slots_offset()
            + (u64::from(self.tx_slots) + u64::from(slot)) * self.slot_bytes)
    }

    fn check(&self, slot: u16, count: u16, kind: &'static str) -> Result<(), BufferError> {
        if slot < count {
            Ok(())
        } else {
            Err(BufferError::NoSlot { kind, slot, count })
        }
    }
}

/// The buffer RAM's bytes, addressed by local-bus address.
#[derive(Clone, Debug)]
pub struct BufferRam {
    layout: BufferLayout,
    bytes: Vec<u8>,
    /// Reads the local bus answers itself, pending (copy-on-write).
    samples: ReadSamples,
    /// Writes the local bus stored at places still to come (the write fold).
    writes: PendingWrites,
}

impl BufferRam {
    /// A zeroed RAM with `layout`.
    ///
    /// # Errors
    /// An invalid layout.
    pub fn new(layout: BufferLayout) -> Result<Self, BufferError> {
        layout.validate()?;
        let size = usize::try_from(layout.size())
            .map_err(|_| BufferError::BadLayout("larger than this host's address space"))?;
        Ok(Self {
            layout,
            bytes: vec![0; size],
            samples: ReadSamples::default(),
            writes: PendingWrites::default(),
        })
    }

    /// The layout.
    #[must_use]
    pub fn layout(&self) -> &BufferLayout {
        &self.layout
    }

    fn range(&self, addr: u64, len: u64) -> Result<core::ops::Range<usize>, BufferError> {
        let base = self.layout.base;
        let end = base + self.layout.size();
        let err = BufferError::OutOfRange {
            addr,
            len,
            base,
            end,
        };
        let last = addr.checked_add(len).ok_or_else(|| err.clone())?;
        if addr < base || last > end {
            return Err(err);
        }
        let start = usize::try_from(addr - base).map_err(|_| err.clone())?;
        let stop = usize::try_from(last - base).map_err(|_| err)?;
        Ok(start..stop)
    }

    /// Copies `buf.len()` bytes at local-bus address `addr` into `buf`.
    ///
    /// # Errors
    /// Any byte outside the RAM (nothing is read).
    pub fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), BufferError> {
        let r = self.range(addr, buf.len() as u64)?;
        buf.copy_from_slice(&self.bytes[r]);
        Ok(())
    }

    /// `len` bytes at `addr`, as a new vector.
    ///
    /// # Errors
    /// Any byte outside the RAM.
    pub fn read_vec(&self, addr: u64, len: u64) -> Result<Vec<u8>, BufferError> {
        let r = self.range(addr, len)?;
        Ok(self.bytes[r].to_vec())
    }

    /// Writes `data` at local-bus address `addr`.
    ///
    /// # Errors
    /// Any byte outside the RAM (nothing is written).
    pub fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), BufferError> {
        let r = self.range(addr, data.len() as u64)?;
        if !self.samples.is_empty() {
            let (bytes, base) = (&self.bytes, self.layout.base);
            self.samples
                .before_write(addr, data.len() as u64, |a, n| copy_of(bytes, base, a, n));
        }
        self.bytes[r].copy_from_slice(data);
        Ok(())
    }

    /// The event that touches the RAM next: the World calls it before it hands the RAM
    /// to a component's handler, so that the writes the bus stored for earlier places
    /// are in, and a write knows whether it comes after a pending sample of the bus (see
    /// the module doc).
    #[inline]
    pub fn set_event(&mut self, key: EventKey) {
        if !self.writes.is_empty() {
            self.pass(key);
        }
        self.samples.set_now(key);
    }
}

/// `n` bytes of `bytes` (a RAM starting at `base`) from `addr` (zeros where outside).
/// The bytes are copied into a spare vector ([`sim_kernel::spare`]) without zero-filling
/// it first (only what lies outside the RAM is filled with zeros).
fn copy_of(bytes: &[u8], base: u64, addr: u64, n: u64) -> Vec<u8> {
    let n = usize::try_from(n).unwrap_or(0);
    let from = usize::try_from(addr.saturating_sub(base)).unwrap_or(usize::MAX);
    let src = bytes.get(from..).unwrap_or_default();
    let mut out = sim_kernel::spare::take_bytes(n);
    out.extend_from_slice(&src[..n.min(src.len())]);
    out.resize(n, 0);
    out
}

impl FoldRam for BufferRam {
    fn sample(&mut self, at: EventKey, addr: u64, len: u64) -> u64 {
        self.samples.add(at, addr, len)
    }

    fn take_sample(&mut self, id: u64) -> Option<Vec<u8>> {
        let (bytes, base) = (&self.bytes, self.layout.base);
        self.samples.take(id, |a, n| copy_of(bytes, base, a, n))
    }

    fn write_at(&mut self, at: EventKey, addr: u64, data: Vec<u8>) {
        self.writes.push(at, addr, data);
    }

    fn pass(&mut self, now: EventKey) {
        while let Some((at, addr, data)) = self.writes.pop_before(now) {
            self.samples.set_now(at);
            if let Err(e) = self.write(addr, &data) {
                // The bus stores only writes inside the RAM (`RamBacking::folds_write`).
                tracing::error!(target: "mac::gec", %e, "a stored write outside the buffer RAM dropped");
            }
            sim_kernel::spare::give_bytes(data);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The place `(t, p, seq)` in a run's order.
    fn key(t: u64, p: sim_kernel::Priority, seq: u64) -> EventKey {
        EventKey {
            time: sim_kernel::Time(t),
            priority: p,
            sequence: seq,
        }
    }

    #[test]
    fn default_layout_addresses() {
        let l = BufferLayout::default();
        l.validate().unwrap();
        assert_eq!(l.tx_descriptor(0).unwrap(), 0x1000_0000);
        assert_eq!(l.tx_descriptor(1).unwrap(), 0x1000_0010);
        assert_eq!(l.rx_descriptor(0).unwrap(), 0x1000_0020);
        assert_eq!(l.rx_descriptor(3).unwrap(), 0x1000_0050);
        assert_eq!(l.slots_offset(), 0x80); // 96 bytes of rings rounded up to 128
        assert_eq!(l.tx_buffer(1).unwrap(), 0x1000_0080 + 2048);
        assert_eq!(l.rx_buffer(0).unwrap(), 0x1000_0080 + 2 * 2048);
        assert_eq!(l.size(), 0x80 + 6 * 2048);
        assert!(l.tx_buffer(2).is_err());
        assert!(l.rx_descriptor(4).is_err());
    }

    #[test]
    fn accesses_are_bounds_checked() {
        let mut ram = BufferRam::new(BufferLayout::default()).unwrap();
        let a = ram.layout().rx_buffer(3).unwrap();
        ram.write(a, &[1, 2, 3]).unwrap();
        assert_eq!(ram.read_vec(a, 3).unwrap(), vec![1, 2, 3]);
        let end = ram.layout().base + ram.layout().size();
        assert!(ram.write(end - 1, &[0, 0]).is_err());
        assert!(ram.read_vec(0, 4).is_err());
        assert!(ram.read_vec(u64::MAX, 2).is_err());
        let mut buf = [9u8; 2];
        assert!(ram.read(end, &mut buf).is_err());
        assert_eq!(buf, [9, 9], "a refused read leaves the buffer alone");
    }

    /// The bus's sample of a read at the place `at` sees every write of an event before
    /// it and none of an event at or after it (a same-instant event queued later than the
    /// read would have been has an equal or higher key).
    #[test]
    fn a_sample_keeps_the_bytes_of_its_place_in_the_order() {
        use sim_kernel::Priority;
        let mut ram = BufferRam::new(BufferLayout::default()).unwrap();
        let a = ram.layout().tx_buffer(0).unwrap();
        ram.write(a, &[1, 1, 1, 1, 1, 1, 1, 1]).unwrap();
        let at = key(1000, Priority::NORMAL, 50);
        let id = ram.sample(at, a, 8);
        // Before its place: earlier instants, earlier priority or an event queued
        // before the read's at the same instant and priority.
        ram.set_event(key(900, Priority::LATE, 70));
        ram.write(a, &[2]).unwrap();
        ram.set_event(key(1000, Priority::EARLY, 60));
        ram.write(a + 1, &[3]).unwrap();
        ram.set_event(key(1000, Priority::NORMAL, 49));
        ram.write(a + 2, &[4]).unwrap();
        // At or after it: the very next sequence number, a later priority, a later instant.
        ram.set_event(key(1000, Priority::NORMAL, 50));
        ram.write(a + 3, &[9]).unwrap();
        ram.set_event(key(1000, Priority::LATE, 10));
        ram.write(a, &[9, 9]).unwrap();
        ram.set_event(key(2000, Priority::EARLY, 1));
        ram.write(a + 4, &[9, 9, 9, 9]).unwrap();
        assert_eq!(ram.take_sample(id), Some(vec![2, 3, 4, 1, 1, 1, 1, 1]));
        assert_eq!(ram.take_sample(id), None, "a sample is taken once");
        assert_eq!(ram.read_vec(a, 8).unwrap(), vec![9, 9, 4, 9, 9, 9, 9, 9]);

        // A write that does not overlap leaves the sample reading the RAM; one after
        // its place that overlaps only its last byte still keeps all of it.
        let id = ram.sample(key(3000, Priority::NORMAL, 80), a, 4);
        ram.set_event(key(3000, Priority::NORMAL, 81));
        ram.write(a + 4, &[5]).unwrap();
        let id2 = ram.sample(key(3000, Priority::NORMAL, 82), a, 4);
        ram.set_event(key(3500, Priority::NORMAL, 90));
        ram.write(a + 3, &[7]).unwrap();
        assert_eq!(ram.take_sample(id), Some(vec![9, 9, 4, 9]));
        assert_eq!(ram.take_sample(id2), Some(vec![9, 9, 4, 9]));
        assert_eq!(ram.read_vec(a, 5).unwrap(), vec![9, 9, 4, 7, 5]);
    }

    /// A write the bus stored for a place still to come (the write fold) is in the RAM
    /// for every event after its place and for no event before it, stored writes land
    /// in the order of their places, and a sample sees one exactly when its place is
    /// after the write's.
    #[test]
    fn a_stored_write_lands_at_its_place_in_the_order() {
        use sim_kernel::{Priority, Time};
        let mut ram = BufferRam::new(BufferLayout::default()).unwrap();
        let a = ram.layout().rx_buffer(0).unwrap();
        ram.write(a, &[1, 1, 1, 1]).unwrap();
        let between = ram.sample(key(1000, Priority::NORMAL, 52), a, 4);
        let after = ram.sample(key(1000, Priority::NORMAL, 60), a, 4);
        // Stored out of order: the later place first.
        ram.write_at(key(1000, Priority::NORMAL, 55), a + 1, vec![6]);
        ram.write_at(key(1000, Priority::NORMAL, 50), a, vec![5, 5]);
        // An event before both places sees neither, and its own write comes first.
        ram.set_event(key(1000, Priority::NORMAL, 49));
        assert_eq!(ram.read_vec(a, 4).unwrap(), vec![1, 1, 1, 1]);
        ram.write(a + 1, &[2]).unwrap();
        // An event between them sees the first.
        ram.set_event(key(1000, Priority::NORMAL, 51));
        assert_eq!(ram.read_vec(a, 4).unwrap(), vec![5, 5, 1, 1]);
        // One after both sees both, in the order of their places.
        ram.set_event(key(1000, Priority::LATE, 0));
        assert_eq!(ram.read_vec(a, 4).unwrap(), vec![5, 6, 1, 1]);
        assert_eq!(ram.take_sample(between), Some(vec![5, 5, 1, 1]));
        assert_eq!(ram.take_sample(after), Some(vec![5, 6, 1, 1]));
        // The settling pass takes every write of an instant, and none later.
        ram.write_at(key(2000, Priority::LATE, 90), a + 3, vec![8]);
        ram.write_at(key(2001, Priority::EARLY, 91), a + 2, vec![7]);
        ram.pass(pci_model::PendingWrites::after_instant(Time(2000)));
        assert_eq!(ram.read_vec(a, 4).unwrap(), vec![5, 6, 1, 8]);
        ram.pass(pci_model::PendingWrites::after_instant(Time(2001)));
        assert_eq!(ram.read_vec(a, 4).unwrap(), vec![5, 6, 7, 8]);
    }

    #[test]
    fn bad_layouts_are_refused() {
        let l = BufferLayout {
            tx_slots: 0,
            ..BufferLayout::default()
        };
        assert!(BufferRam::new(l).is_err());
        let l = BufferLayout {
            slot_bytes: 1024,
            ..BufferLayout::default()
        };
        assert!(l.validate().is_err());
        let l = BufferLayout {
            base: 0xFFFF_F000,
            ..BufferLayout::default()
        };
        assert!(l.validate().is_err());
    }
}
