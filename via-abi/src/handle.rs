//! Memory handles, protection tags and memory attributes (VIA 1.0 memory registration).
//!
//! VIA 1.0 leaves the contents of a memory handle (`VIP_MEM_HANDLE`, 32 bits in the
//! descriptor) to the provider. HVIA-GE's layout is not published; this crate fixes it
//! (design choice) so that a handle names one ATT level-1 entry *and* one registration of
//! it, and a stale or forged handle cannot reach another region:
//!
//! | bits | field | meaning |
//! |---|---|---|
//! | 19:0 | index | ATT level-1 entry number (up to 2^20 entries; 2^20 x 24 B = 24 MiB of the card's 64 MB SDRAM) |
//! | 31:20 | generation | 1..=4095; stored in the L1 entry and bumped on every re-registration of that index |
//!
//! Generation 0 is never issued, so the all-zero handle (and an all-zero, never-written L1
//! entry) never translates. The ATT manager compares the handle's generation with the one
//! stored in the L1 entry; a deregistered-then-reused index has a new generation, so old
//! handles to it fail the protection check.

use bitflags::bitflags;

/// A VIA memory handle (`VIP_MEM_HANDLE`): ATT level-1 index plus a generation.
///
/// See the module docs for the bit layout (design choice). Any `u32` can be wrapped with
/// [`MemHandle::from_raw`] (a descriptor may hold garbage); [`MemHandle::is_well_formed`]
/// tells whether it could have been issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct MemHandle(pub u32);

impl MemHandle {
    /// Width of the index field \[bits\].
    pub const INDEX_BITS: u32 = 20;
    /// Mask of the index field (bits 19:0).
    pub const INDEX_MASK: u32 = (1 << Self::INDEX_BITS) - 1;
    /// Largest ATT level-1 index a handle can name.
    pub const MAX_INDEX: u32 = Self::INDEX_MASK;
    /// Largest generation (12 bits).
    pub const MAX_GENERATION: u16 = 0xFFF;
    /// The null handle (index 0, generation 0): never valid.
    pub const NULL: MemHandle = MemHandle(0);

    /// Builds a handle from an L1 index and a generation.
    ///
    /// Returns `None` if `index > MAX_INDEX` or `generation` is 0 or above
    /// `MAX_GENERATION` (such handles are never issued).
    pub const fn new(index: u32, generation: u16) -> Option<MemHandle> {
        if index > Self::MAX_INDEX || generation == 0 || generation > Self::MAX_GENERATION {
            return None;
        }
        Some(MemHandle(((generation as u32) << Self::INDEX_BITS) | index))
    }

    /// Wraps a raw 32-bit value as found in a descriptor, a doorbell or on the wire.
    pub const fn from_raw(raw: u32) -> MemHandle {
        MemHandle(raw)
    }

    /// The raw 32-bit value.
    pub const fn raw(self) -> u32 {
        self.0
    }

    /// ATT level-1 index (bits 19:0).
    pub const fn index(self) -> u32 {
        self.0 & Self::INDEX_MASK
    }

    /// Generation (bits 31:20); 0 only in handles that were never issued.
    pub const fn generation(self) -> u16 {
        (self.0 >> Self::INDEX_BITS) as u16
    }

    /// Whether this handle could have been issued (generation is not 0).
    pub const fn is_well_formed(self) -> bool {
        self.generation() != 0
    }

    /// The generation that follows `generation` when an index is re-registered:
    /// 1, 2, ..., 4095, then 1 again (0 is skipped; out-of-range inputs restart at 1).
    pub const fn next_generation(generation: u16) -> u16 {
        if generation == 0 || generation >= Self::MAX_GENERATION {
            1
        } else {
            generation + 1
        }
    }
}

impl core::fmt::Display for MemHandle {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{:#010x}", self.0)
    }
}

/// A VIA protection tag (`VIP_PROTECTION_HANDLE`), as stored in the ATT level-1 entry.
///
/// Design choice: 16 bits, because two bytes are what the 24-byte L1 entry has left
/// (see [`crate::att`]); 65 535 tags are far more than one node's processes need. Tag 0 is
/// never issued by `VipCreatePtag`, so a zeroed entry matches no VI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ProtectionTag(pub u16);

impl ProtectionTag {
    /// The tag that is never issued.
    pub const NONE: ProtectionTag = ProtectionTag(0);

    /// The raw 16-bit value.
    pub const fn raw(self) -> u16 {
        self.0
    }
}

bitflags! {
    /// Memory attributes of a registered region, as stored in the ATT level-1 entry
    /// (16 bits). VIA 1.0 `VIP_MEM_ATTRIBUTES` carries the protection tag (stored
    /// separately, see [`ProtectionTag`]) and the enable-RDMA-write / enable-RDMA-read
    /// booleans; `VALID` is a design choice marking an entry in use. Unknown bits are kept.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
    pub struct MemAttributes: u16 {
        /// The entry describes a registered region (design choice).
        const VALID = 0x0001;
        /// Remote peers may RDMA-write into the region (VIA 1.0 `EnableRdmaWrite`).
        const ENABLE_RDMA_WRITE = 0x0002;
        /// Remote peers may RDMA-read from the region (VIA 1.0 `EnableRdmaRead`).
        const ENABLE_RDMA_READ = 0x0004;
    }
}

impl MemAttributes {
    /// Bits with no defined meaning (must be zero when written by the ATT manager).
    pub const RESERVED_MASK: u16 = !0x0007;
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn handle_bit_layout() {
        let h = MemHandle::new(0x0_1234, 0xABC).expect("valid");
        assert_eq!(h.raw(), 0xABC0_1234);
        assert_eq!(h.index(), 0x1234);
        assert_eq!(h.generation(), 0xABC);
        assert!(h.is_well_formed());
        assert_eq!(h.to_string(), "0xabc01234");
    }

    #[test]
    fn handle_rejects_bad_parts() {
        assert_eq!(MemHandle::new(0, 0), None);
        assert_eq!(MemHandle::new(1 << 20, 1), None);
        assert_eq!(MemHandle::new(0, 0x1000), None);
        assert!(MemHandle::new(MemHandle::MAX_INDEX, MemHandle::MAX_GENERATION).is_some());
        assert!(!MemHandle::NULL.is_well_formed());
        assert!(!MemHandle::from_raw(0x000F_FFFF).is_well_formed());
    }

    #[test]
    fn generation_wraps_skipping_zero() {
        assert_eq!(MemHandle::next_generation(1), 2);
        assert_eq!(MemHandle::next_generation(0xFFE), 0xFFF);
        assert_eq!(MemHandle::next_generation(0xFFF), 1);
        assert_eq!(MemHandle::next_generation(0), 1);
        assert_eq!(MemHandle::next_generation(u16::MAX), 1);
    }

    #[test]
    fn attributes_keep_unknown_bits() {
        let a = MemAttributes::from_bits_retain(0x8003);
        assert!(a.contains(MemAttributes::VALID | MemAttributes::ENABLE_RDMA_WRITE));
        assert!(!a.contains(MemAttributes::ENABLE_RDMA_READ));
        assert_eq!(a.bits(), 0x8003);
        assert_eq!(a.bits() & MemAttributes::RESERVED_MASK, 0x8000);
    }

    proptest! {
        #[test]
        fn handle_parts_round_trip(index in 0u32..=MemHandle::MAX_INDEX, generation in 1u16..=0xFFF) {
            let h = MemHandle::new(index, generation).expect("in range");
            prop_assert_eq!(h.index(), index);
            prop_assert_eq!(h.generation(), generation);
            prop_assert_eq!(MemHandle::from_raw(h.raw()), h);
        }

        #[test]
        fn any_raw_handle_decomposes(raw in any::<u32>()) {
            let h = MemHandle::from_raw(raw);
            prop_assert_eq!(((h.generation() as u32) << 20) | h.index(), raw);
            prop_assert_eq!(h.is_well_formed(), MemHandle::new(h.index(), h.generation()) == Some(h));
        }
    }
}
