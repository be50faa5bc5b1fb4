//! Registration bookkeeping and the bytes a registration writes: [`AttTable`] (L1 index
//! and L2 pool allocation), [`RegionLayout`] (the L1 and L2 bytes and where they go), and
//! the library entry points of `hvia layout att`: [`layout_att`] and
//! [`preview_registration`]. The manager's registration and the CLI run the same
//! [`AttTable::plan`], so they cannot disagree.

use super::alloc::{ExtentAllocator, IndexAllocator};
use super::params::{AttParams, TableGeometry};
use super::table_io::TableIoError;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use via_abi::att::{page_count, AttRegionRepr, L1Repr, L2Repr, RegionSpec, L2_ENTRY_LEN};
use via_abi::{AttError, MemAttributes, MemHandle, ProtectionTag};

/// A `VipRegisterMem` as the ATT manager receives it: the region, its physical pages and
/// its VIA memory attributes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RegionRequest {
    /// Starting virtual address.
    pub va: u64,
    /// Length \[bytes\], at least 1.
    pub len: u64,
    /// Physical address of each page the region touches: the first is the region's own
    /// physical start (same offset within its page as `va`), the others page bases.
    pub pages: Vec<u64>,
    /// Protection tag (VIA `Ptag`); [`ProtectionTag::NONE`] is refused.
    pub ptag: ProtectionTag,
    /// VIA `EnableRdmaWrite`.
    pub enable_rdma_write: bool,
    /// VIA `EnableRdmaRead`.
    pub enable_rdma_read: bool,
}

impl RegionRequest {
    /// A region with the defaults `hvia layout att` shows: ptag 1 (the first tag
    /// `VipCreatePtag` issues), RDMA write enabled (the published use), RDMA read not.
    #[must_use]
    pub fn with_defaults(va: u64, len: u64, pages: Vec<u64>) -> Self {
        Self {
            va,
            len,
            pages,
            ptag: ProtectionTag(1),
            enable_rdma_write: true,
            enable_rdma_read: false,
        }
    }

    /// The attributes stored in the L1 entry: `VALID` plus the enable bits.
    #[must_use]
    pub fn attributes(&self) -> MemAttributes {
        let mut a = MemAttributes::VALID;
        a.set(MemAttributes::ENABLE_RDMA_WRITE, self.enable_rdma_write);
        a.set(MemAttributes::ENABLE_RDMA_READ, self.enable_rdma_read);
        a
    }
}

/// Everything a registration writes into the table, and where.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RegionLayout {
    /// The handle the registration returns.
    pub handle: MemHandle,
    /// Table address of the L1 entry.
    pub l1_addr: u32,
    /// Table address of the first L2 entry (= `repr.l1.l2_pointer`).
    pub l2_addr: u32,
    /// The L1 entry and the L2 entries as values.
    pub repr: AttRegionRepr,
    /// The 24 bytes written at `l1_addr`.
    pub l1_bytes: [u8; 24],
    /// The bytes written from `l2_addr` (4 per page).
    pub l2_bytes: Vec<u8>,
}

impl RegionLayout {
    /// The L1 entry.
    #[must_use]
    pub fn l1(&self) -> &L1Repr {
        &self.repr.l1
    }

    /// The L2 entries, one per page.
    #[must_use]
    pub fn l2(&self) -> &[L2Repr] {
        &self.repr.l2
    }

    /// `l1_bytes` as lowercase hex, two digits per byte in memory order, no separators.
    #[must_use]
    pub fn l1_hex(&self) -> String {
        hex(&self.l1_bytes)
    }

    /// `l2_bytes` as lowercase hex, two digits per byte in memory order, no separators.
    #[must_use]
    pub fn l2_hex(&self) -> String {
        hex(&self.l2_bytes)
    }
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Why a registration was refused (VIPL return code in brackets).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum RegisterError {
    /// The region or its page list is malformed (`VIP_INVALID_PARAMETER`).
    #[error("bad region: {0}")]
    Layout(AttError),
    /// Protection tag 0 is never issued (`VIP_INVALID_PTAG`).
    #[error("protection tag 0 is not a valid tag")]
    InvalidPtag,
    /// Every L1 entry is in use (`VIP_ERROR_RESOURCE`).
    #[error("no free ATT L1 entry")]
    NoFreeEntry,
    /// The L2 pool has no free run of this many entries (`VIP_ERROR_RESOURCE`).
    #[error("no room for {pages} ATT L2 entries")]
    NoL2Space {
        /// Pages of the region.
        pages: u32,
    },
    /// Writing the table failed (host-memory ATT only).
    #[error("ATT table write failed: {0}")]
    TableWrite(TableIoError),
}

/// Why a deregistration was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum DeregisterError {
    /// The handle is not a live registration (`VIP_INVALID_PARAMETER`).
    #[error("memory handle {0} is not registered")]
    InvalidHandle(MemHandle),
    /// Writing the table failed (host-memory ATT only).
    #[error("ATT table write failed: {0}")]
    TableWrite(TableIoError),
}

/// Allocation state of one table: which L1 entries and L2 runs are in use. Not used by
/// translation, which reads the table itself.
#[derive(Clone, Debug)]
pub struct AttTable {
    geometry: TableGeometry,
    indices: IndexAllocator,
    l2: ExtentAllocator,
    /// L1 index -> (first L2 entry in the pool, entries) of each live region.
    regions: BTreeMap<u32, (u32, u32)>,
}

impl AttTable {
    /// An empty table with `geometry` (checked by [`TableGeometry::validate`] beforehand).
    #[must_use]
    pub fn new(geometry: TableGeometry) -> Self {
        Self {
            geometry,
            indices: IndexAllocator::new(geometry.l1_entries),
            l2: ExtentAllocator::new(geometry.l2_entries),
            regions: BTreeMap::new(),
        }
    }

    /// The geometry.
    #[must_use]
    pub fn geometry(&self) -> &TableGeometry {
        &self.geometry
    }

    /// Live registrations.
    #[must_use]
    pub fn live(&self) -> usize {
        self.regions.len()
    }

    /// Whether `handle` names a live registration (current generation of its index).
    #[must_use]
    pub fn is_live(&self, handle: MemHandle) -> bool {
        self.indices.is_live(handle)
    }

    /// What registering `req` now would allocate and write, without allocating: the
    /// request is checked first (ptag, region and page list), then the resources.
    ///
    /// # Errors
    /// See [`RegisterError`].
    pub fn plan(&self, req: &RegionRequest) -> Result<RegionLayout, RegisterError> {
        let pages = Self::check_request(req, self.geometry.l2_base)?;
        let handle = self.indices.peek().ok_or(RegisterError::NoFreeEntry)?;
        let first = self
            .l2
            .peek(pages)
            .ok_or(RegisterError::NoL2Space { pages })?;
        self.layout_at(req, handle, first)
    }

    /// Plans `req` and takes the L1 entry and L2 run it names (the same as
    /// [`AttTable::plan`] would have returned just before).
    ///
    /// # Errors
    /// See [`RegisterError`]; nothing is taken on error.
    pub fn register(&mut self, req: &RegionRequest) -> Result<RegionLayout, RegisterError> {
        let pages = Self::check_request(req, self.geometry.l2_base)?;
        let no_room = RegisterError::NoL2Space { pages };
        self.indices.peek().ok_or(RegisterError::NoFreeEntry)?;
        self.l2.peek(pages).ok_or(no_room)?;
        let handle = self.indices.alloc().ok_or(RegisterError::NoFreeEntry)?;
        let Some(first) = self.l2.alloc(pages) else {
            self.indices.free(handle);
            return Err(no_room);
        };
        match self.layout_at(req, handle, first) {
            Ok(layout) => {
                self.regions.insert(handle.index(), (first, pages));
                Ok(layout)
            }
            Err(e) => {
                self.indices.free(handle);
                self.l2.free(first, pages);
                Err(e)
            }
        }
    }

    /// Checks what does not depend on the table state (ptag, region, page list) by
    /// building the entries at a stand-in placement; returns the page count.
    fn check_request(req: &RegionRequest, l2_base: u32) -> Result<u32, RegisterError> {
        if req.ptag == ProtectionTag::NONE {
            return Err(RegisterError::InvalidPtag);
        }
        AttRegionRepr::build(&Self::spec(req, 1, l2_base)).map_err(RegisterError::Layout)?;
        page_count(req.va, req.len).map_err(RegisterError::Layout)
    }

    fn spec(req: &RegionRequest, generation: u16, l2_pointer: u32) -> RegionSpec<'_> {
        RegionSpec {
            va: req.va,
            len: req.len,
            pages: &req.pages,
            attributes: req.attributes(),
            ptag: req.ptag,
            generation,
            l2_pointer,
        }
    }

    /// The layout of `req` with L1 entry `handle` and L2 entries from pool entry `first`.
    fn layout_at(
        &self,
        req: &RegionRequest,
        handle: MemHandle,
        first: u32,
    ) -> Result<RegionLayout, RegisterError> {
        let no_room = RegisterError::NoL2Space {
            pages: u32::try_from(req.pages.len()).unwrap_or(u32::MAX),
        };
        let l2_addr = first
            .checked_mul(L2_ENTRY_LEN as u32)
            .and_then(|o| self.geometry.l2_base.checked_add(o))
            .ok_or(no_room)?;
        let l1_addr = self
            .geometry
            .l1_addr(handle.index())
            .ok_or(RegisterError::NoFreeEntry)?;
        let repr = AttRegionRepr::build(&Self::spec(req, handle.generation(), l2_addr))
            .map_err(RegisterError::Layout)?;
        Ok(RegionLayout {
            handle,
            l1_addr,
            l2_addr,
            l1_bytes: repr.l1_bytes(),
            l2_bytes: repr.l2_bytes(),
            repr,
        })
    }

    /// Ends the registration of `handle`: frees its L1 entry (its next use gets a new
    /// generation) and its L2 run; returns the L1 entry's table address, to be zeroed.
    ///
    /// # Errors
    /// [`DeregisterError::InvalidHandle`] unless `handle` is live.
    pub fn deregister(&mut self, handle: MemHandle) -> Result<u32, DeregisterError> {
        let bad = DeregisterError::InvalidHandle(handle);
        if !self.indices.is_live(handle) {
            return Err(bad);
        }
        let l1_addr = self.geometry.l1_addr(handle.index()).ok_or(bad)?;
        let (start, n) = self.regions.remove(&handle.index()).ok_or(bad)?;
        self.indices.free(handle);
        self.l2.free(start, n);
        Ok(l1_addr)
    }
}

/// What registering `req` on a freshly reset card with `params` would write (the first
/// registration: L1 index 0, generation 1, L2 entries at the start of the pool).
///
/// # Errors
/// See [`RegisterError`].
pub fn preview_registration(
    params: &AttParams,
    req: &RegionRequest,
) -> Result<RegionLayout, RegisterError> {
    AttTable::new(params.table).plan(req)
}

/// `hvia layout att --va V --len L --pages P1,P2,...`: the L1 entry, the L2 entries and
/// their bytes that registering the region would write into the SDRAM of a freshly reset
/// default card, with [`RegionRequest::with_defaults`] attributes.
///
/// # Errors
/// [`RegisterError::Layout`] for malformed input: zero length, a page list that does
/// not have one address per page, a first address with a different page offset than
/// `va`, a later address that is not page aligned, an address above 4 GiB.
pub fn layout_att(va: u64, len: u64, pages: &[u64]) -> Result<RegionLayout, RegisterError> {
    preview_registration(
        &AttParams::default(),
        &RegionRequest::with_defaults(va, len, pages.to_vec()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use via_abi::att::{L1Entry, L2Repr};

    #[test]
    fn cli_layout_of_the_three_page_example() {
        let l = layout_att(
            0x0804_A100,
            10_000,
            &[0x053A_7100, 0x0123_4000, 0x0777_0000],
        )
        .expect("valid");
        assert_eq!(l.handle, MemHandle::new(0, 1).expect("ok"));
        assert_eq!((l.l1_addr, l.l2_addr), (0, 0x0018_1000));
        assert_eq!(l.l1().page_count, 3);
        assert_eq!(l.l1().last_page_len, 0x810);
        assert_eq!(
            l.l1_hex(),
            concat!(
                "00a1040800000000", // start_va
                "00101800",         // l2_pointer 0x0018_1000
                "0300f080",         // page word: 3 pages, last page 0x810 bytes
                "000f",             // first_page_size 0xF00
                "0300",             // attributes VALID | ENABLE_RDMA_WRITE
                "0100",             // ptag 1
                "0100"              // generation 1
            )
        );
        assert_eq!(l.l2_hex(), "00713a0500402301 00007707".replace(' ', ""));
        let parsed = L1Repr::parse(&L1Entry::new_unchecked(&l.l1_bytes[..]));
        assert_eq!(parsed, Ok(*l.l1()));
        assert_eq!(L2Repr::parse_table(&l.l2_bytes).as_deref(), Ok(l.l2()));
    }

    #[test]
    fn malformed_cli_input_is_an_error() {
        let e = |r| matches!(r, Err(RegisterError::Layout(_)));
        assert!(e(layout_att(0x1000, 0, &[])), "zero length");
        assert!(e(layout_att(0x1000, 4097, &[0x2000])), "one page for two");
        assert!(e(layout_att(0x1100, 16, &[0x2000])), "first page offset");
        assert!(
            e(layout_att(0x1000, 4097, &[0x2000, 0x3008])),
            "misaligned page"
        );
        assert!(e(layout_att(0x1000, 1, &[0x1_0000_0000])), "above 4 GiB");
    }

    #[test]
    fn plan_then_register_agree_and_resources_run_out() {
        let g = TableGeometry {
            l1_base: 0,
            l1_entries: 2,
            l2_base: 0x100,
            l2_entries: 3,
        };
        let mut t = AttTable::new(g);
        let two = RegionRequest::with_defaults(0x1800, 0x1000, vec![0x5800, 0x9000]);
        let plan = t.plan(&two).expect("fits");
        assert_eq!(t.register(&two), Ok(plan));
        let bad_tag = RegionRequest {
            ptag: ProtectionTag::NONE,
            ..two.clone()
        };
        assert_eq!(t.plan(&bad_tag), Err(RegisterError::InvalidPtag));
        assert_eq!(t.register(&two), Err(RegisterError::NoL2Space { pages: 2 }));
        let one = RegionRequest::with_defaults(0x1000, 8, vec![0x7000]);
        let h1 = t.register(&one).expect("fits").handle;
        assert_eq!(t.register(&one), Err(RegisterError::NoFreeEntry));
        assert_eq!(t.live(), 2);
        assert_eq!(t.deregister(h1), Ok(24));
        assert_eq!(t.deregister(h1), Err(DeregisterError::InvalidHandle(h1)));
        let again = t.register(&one).expect("fits");
        assert_eq!(
            again.handle,
            MemHandle::new(1, 2).expect("ok"),
            "new generation"
        );
        assert_eq!(again.l2_addr, 0x108, "the freed L2 run is reused");
    }
}
