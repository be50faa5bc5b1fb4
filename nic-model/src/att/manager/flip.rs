//! A single-bit upset in the card SDRAM that holds the ATT (fault injection, config
//! `faults.att_flip_*`): one bit of one L1 entry inverts at a chosen time, as a
//! particle strike or a weak cell would do it. The card's SDRAM has no ECC or parity and
//! the L1 entry no checksum (neither is published for HVIA-GE; assumption), so the
//! manager sees the flipped bit on its next read and translates with it; only the
//! checks every translation makes anyway ([`check_l1`](super::check_l1)) stand between
//! the flip and the host's memory.
//!
//! What a flip does, by the field it hits ([`via_abi::att`] layout, bit `b` of the entry
//! is bit `b % 8` of byte `b / 8`):
//!
//! | bits | field | consequence |
//! |---|---|---|
//! | 0..12 | `start_va` low 12 bits | `first_page_size` no longer matches: `CorruptEntry`, refused |
//! | 12..64 | `start_va` page bits | the region moves in VA space: accesses at its VAs are `OutOfBounds`; the moved VAs reach the region's own pages |
//! | 64..96 | `l2_pointer` | the L2 entries of another part of the pool are used: **bytes land in the pages they name** (another region's, or physical page 0 for unused zero entries), or `CorruptEntry` past the table |
//! | 96..116 | `page_count` | more pages: accesses past the true end pass the bounds check, the old last page counts whole and later pages take the next regions' L2 entries (**bytes land outside**: the unregistered rest of the last frame, then another region's frames); fewer pages or a zero count: `OutOfBounds` / `CorruptEntry` |
//! | 116..128 | `last_page_len - 1` | the region ends elsewhere in its last page: a longer one lets an access run into the rest of that (already mapped) page, a shorter one refuses its end (`OutOfBounds`) |
//! | 128..144 | `first_page_size` | `CorruptEntry`, refused |
//! | 144 | `VALID` | `StaleHandle`, refused |
//! | 145, 146 | `ENABLE_RDMA_WRITE`, `_READ` | cleared: `RdmaWriteDisabled` / `RdmaReadDisabled`; set: RDMA allowed into the region's own pages |
//! | 147..160 | reserved attribute bits | nothing (kept, not checked) |
//! | 160..176 | `ptag` | `TagMismatch` for the region's VIs (another tag's VIs gain access to its own pages) |
//! | 176..192 | `generation` | `StaleHandle`, refused (generation 0 is never issued) |
//!
//! The flip is applied when the table is next accessed at or after its time (the moment
//! a read or write of the table completes; a bit no access sees afterwards changes
//! nothing), counted in `AttStats::bit_flips`; a registration that rewrites the entry
//! afterwards erases it, as a write to the cell would. A host-memory ATT has no card
//! SDRAM to flip.

use super::AttManager;
use sim_kernel::Time;
use via_abi::att::L1_ENTRY_LEN;

/// Bits in an L1 entry.
pub const L1_ENTRY_BITS: u16 = (L1_ENTRY_LEN * 8) as u16;

/// A single-bit upset scheduled in an L1 entry of the card-SDRAM ATT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttBitFlip {
    /// When the bit inverts \[simulated time\].
    pub at: Time,
    /// The L1 entry: its index (the low 20 bits of a memory handle).
    pub entry: u32,
    /// The bit within the 24-byte entry, 0..[`L1_ENTRY_BITS`]: bit `bit % 8` of byte
    /// `bit / 8`.
    pub bit: u16,
}

/// Why a bit flip cannot be scheduled.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AttFlipError {
    /// The table is in host memory: there is no card SDRAM to flip.
    #[error("the ATT is in host memory: there is no card SDRAM to flip")]
    HostTable,
    /// The entry is beyond the table.
    #[error("L1 entry {entry} is beyond the table ({entries} entries)")]
    NoSuchEntry {
        /// The entry asked for.
        entry: u32,
        /// Entries in the table.
        entries: u32,
    },
    /// The bit is beyond the entry.
    #[error("bit {0} is beyond the 24-byte L1 entry (0..{L1_ENTRY_BITS})")]
    NoSuchBit(u16),
}

impl AttManager {
    /// Schedules `flip` (replacing one still pending).
    ///
    /// # Errors
    /// A host-memory table, an entry beyond the table or a bit beyond the entry.
    pub fn schedule_bit_flip(&mut self, flip: AttBitFlip) -> Result<(), AttFlipError> {
        if self.sdram().is_none() {
            return Err(AttFlipError::HostTable);
        }
        if flip.bit >= L1_ENTRY_BITS {
            return Err(AttFlipError::NoSuchBit(flip.bit));
        }
        let geometry = self.table.geometry();
        if geometry.l1_addr(flip.entry).is_none() {
            return Err(AttFlipError::NoSuchEntry {
                entry: flip.entry,
                entries: geometry.l1_entries,
            });
        }
        self.flip = Some(flip);
        Ok(())
    }

    /// The flip scheduled and not applied yet.
    #[must_use]
    pub fn pending_bit_flip(&self) -> Option<AttBitFlip> {
        self.flip
    }

    /// Inverts the scheduled bit if its time has come (before a table access completes
    /// at `now`).
    pub(super) fn apply_due_flip(&mut self, now: Time) {
        let Some(flip) = self.flip.filter(|f| f.at <= now) else {
            return;
        };
        self.flip = None;
        let Some(addr) = self.table.geometry().l1_addr(flip.entry) else {
            return; // checked when scheduled: the geometry does not change
        };
        let super::Backend::Card(card) = &mut self.backend else {
            return; // checked when scheduled: a host table has no SDRAM
        };
        let byte = u64::from(addr) + u64::from(flip.bit / 8);
        let mut b = [0u8];
        if card.store.read(byte, &mut b).is_err() {
            return; // inside the table, which lies inside the SDRAM
        }
        b[0] ^= 1 << (flip.bit % 8);
        if card.store.write(byte, &b).is_ok() {
            self.stats.bit_flips += 1;
            tracing::warn!(target: "nic::att", entry = flip.entry, bit = flip.bit, at = %now, "bit flipped in an L1 entry in card SDRAM");
        }
    }
}
