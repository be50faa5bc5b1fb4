//! [`AttParams`]: where the ATT lives ([`AttLocation`]), where its two levels sit in that
//! memory ([`TableGeometry`]), and the SDRAM timing used when it is on the card.

use crate::sdram::{SdramParams, SdramParamsError};
use via_abi::att::{L1_ENTRY_LEN, L2_ENTRY_LEN};
use via_abi::MemHandle;

/// Where the address translation table lives (config switch `card.att_location`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum AttLocation {
    /// In the card SDRAM, read by the ATT manager through its SDRAM controller (the
    /// published HVIA-GE design; paper).
    #[default]
    CardSdram,
    /// In host memory, every table read a DMA read over the system PCI bus through the
    /// manager's table port (the software-VIA way, e.g. M-VIA on a Tigon II; what-if).
    HostMemory,
}

/// Placement of the two ATT levels in the table's address space: card SDRAM byte
/// addresses for [`AttLocation::CardSdram`], host physical addresses for
/// [`AttLocation::HostMemory`] (32-bit, as the L1 entry's `l2_pointer` field).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TableGeometry {
    /// Address of L1 entry 0 \[byte address\]; entry `i` is at `l1_base + 24 i`.
    /// Default 0 (card SDRAM); design choice.
    pub l1_base: u32,
    /// Number of L1 entries = most regions registered at once \[entries\], 1..=2^20 (the
    /// handle's 20-bit index). Default 65 536 (1.5 MiB of SDRAM); design choice.
    pub l1_entries: u32,
    /// Address of the L2 pool \[byte address\], 4-byte aligned. Default 0x0018_1000: just
    /// after the L1 table, moved to the next 4 KiB row so that the first L1 entries (bank
    /// 0) and the first L2 entries (bank 1) do not share a bank; design choice.
    pub l2_base: u32,
    /// Size of the L2 pool \[entries of 4 bytes\] = most pages registered at once.
    /// Default 16 382 976 (the rest of the 64 MiB SDRAM); design choice.
    pub l2_entries: u32,
}

impl TableGeometry {
    /// First byte after the L1 table.
    #[must_use]
    pub fn l1_end(&self) -> u64 {
        u64::from(self.l1_base) + u64::from(self.l1_entries) * L1_ENTRY_LEN as u64
    }

    /// First byte after the L2 pool.
    #[must_use]
    pub fn l2_end(&self) -> u64 {
        u64::from(self.l2_base) + u64::from(self.l2_entries) * L2_ENTRY_LEN as u64
    }

    /// Address of L1 entry `index`, if the table has it.
    #[must_use]
    pub fn l1_addr(&self, index: u32) -> Option<u32> {
        if index >= self.l1_entries {
            return None;
        }
        via_abi::att::l1_entry_addr(self.l1_base, index)
    }

    /// Checks the geometry against a memory of `size` bytes.
    ///
    /// # Errors
    /// See [`AttConfigError`].
    pub fn validate(&self, size: u64) -> Result<(), AttConfigError> {
        if self.l1_entries == 0 || self.l1_entries > MemHandle::MAX_INDEX + 1 {
            return Err(AttConfigError::L1Entries(self.l1_entries));
        }
        if self.l2_base % 4 != 0 {
            return Err(AttConfigError::UnalignedL2Base(self.l2_base));
        }
        let size = size.min(1 << 32);
        if self.l1_end() > size || self.l2_end() > size {
            return Err(AttConfigError::DoesNotFit { size });
        }
        let overlap =
            u64::from(self.l1_base) < self.l2_end() && u64::from(self.l2_base) < self.l1_end();
        if overlap && self.l2_entries > 0 {
            return Err(AttConfigError::Overlap);
        }
        Ok(())
    }
}

impl Default for TableGeometry {
    fn default() -> Self {
        let l1_entries = 65_536;
        let l2_base = 0x0018_1000;
        Self {
            l1_base: 0,
            l1_entries,
            l2_base,
            l2_entries: ((64 << 20) - l2_base) / 4,
        }
    }
}

/// Parameters of the ATT manager.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttParams {
    /// Where the table lives. Default [`AttLocation::CardSdram`] (paper).
    pub location: AttLocation,
    /// Placement of the table in that memory. Default [`TableGeometry::default`] for the
    /// card; [`AttParams::host_memory`] gives a host-memory placement.
    pub table: TableGeometry,
    /// Card SDRAM timing and size (used for [`AttLocation::CardSdram`]). Default: the
    /// PC100 CL2 preset.
    pub sdram: SdramParams,
}

impl Default for AttParams {
    /// The published card: ATT in a 64 MiB PC100 SDRAM.
    fn default() -> Self {
        Self {
            location: AttLocation::CardSdram,
            table: TableGeometry::default(),
            sdram: SdramParams::default(),
        }
    }
}

impl AttParams {
    /// The software-VIA what-if: the ATT in host memory. Assumption: the kernel agent
    /// reserves a 5.5 MiB block of host physical memory at 16 MiB for it, 65 536 L1
    /// entries (1.5 MiB) then an L2 pool of 2^20 entries (4 GiB of registrations).
    #[must_use]
    pub fn host_memory() -> Self {
        Self {
            location: AttLocation::HostMemory,
            table: TableGeometry {
                l1_base: 0x0100_0000,
                l1_entries: 65_536,
                l2_base: 0x0118_0000,
                l2_entries: 1 << 20,
            },
            sdram: SdramParams::default(),
        }
    }

    /// Checks the parameters: the SDRAM preset, and the table against the SDRAM size (card)
    /// or the 32-bit address space (host).
    ///
    /// # Errors
    /// See [`AttConfigError`].
    pub fn validate(&self) -> Result<(), AttConfigError> {
        self.sdram.validate().map_err(AttConfigError::Sdram)?;
        let size = match self.location {
            AttLocation::CardSdram => self.sdram.capacity.0,
            AttLocation::HostMemory => 1 << 32,
        };
        self.table.validate(size)
    }
}

/// Why ATT parameters cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AttConfigError {
    /// The L1 table must have 1..=2^20 entries (20-bit handle index).
    #[error("ATT L1 table of {0} entries: must be 1..=1048576 (20-bit handle index)")]
    L1Entries(u32),
    /// The L2 pool must start on a 4-byte boundary.
    #[error("ATT L2 pool base {0:#x} is not 4-byte aligned")]
    UnalignedL2Base(u32),
    /// The table does not fit in its memory.
    #[error("ATT table does not fit in {size} bytes of memory")]
    DoesNotFit {
        /// Size of the memory \[bytes\].
        size: u64,
    },
    /// The L1 table and the L2 pool overlap.
    #[error("ATT L1 table and L2 pool overlap")]
    Overlap,
    /// The SDRAM parameters are invalid.
    #[error("card SDRAM: {0}")]
    Sdram(SdramParamsError),
    /// [`AttLocation::HostMemory`] needs a table port to send its DMA requests to.
    #[error("ATT in host memory needs a table port (the DMA path) and none was given")]
    NoTablePort,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_are_valid() {
        assert_eq!(AttParams::default().validate(), Ok(()));
        assert_eq!(AttParams::host_memory().validate(), Ok(()));
        let g = TableGeometry::default();
        assert_eq!(g.l1_end(), 0x18_0000);
        assert_eq!(g.l2_end(), 64 << 20);
        assert_eq!(g.l1_addr(2), Some(48));
        assert_eq!(g.l1_addr(65_536), None);
    }

    #[test]
    fn bad_geometry_is_an_error() {
        let g = TableGeometry::default();
        let size = 64 << 20;
        let cases = [
            (
                TableGeometry { l1_entries: 0, ..g },
                AttConfigError::L1Entries(0),
            ),
            (
                TableGeometry {
                    l1_entries: (1 << 20) + 1,
                    ..g
                },
                AttConfigError::L1Entries((1 << 20) + 1),
            ),
            (
                TableGeometry { l2_base: 2, ..g },
                AttConfigError::UnalignedL2Base(2),
            ),
            (
                TableGeometry {
                    l2_entries: g.l2_entries + 1,
                    ..g
                },
                AttConfigError::DoesNotFit { size },
            ),
            (
                TableGeometry {
                    l2_base: 0x1000,
                    l2_entries: 16,
                    ..g
                },
                AttConfigError::Overlap,
            ),
        ];
        for (geometry, err) in cases {
            assert_eq!(geometry.validate(size), Err(err));
        }
    }
}
