//! The translation rules, as pure functions over the bytes read from the table: the
//! checks on the L1 entry ([`check_l1`]), the L2 entries to read ([`L2Fetch`]) and the
//! physical pieces built from them ([`pieces_from_l2`]); the refusals
//! ([`TranslateError`]) and their VIA status bits ([`TranslateError::status`]).
//!
//! The [`AttManager`](super::AttManager) calls these with the bytes its SDRAM (or DMA)
//! reads returned, so what is in the table is exactly what translation uses.

use super::table_io::TableIoError;
use via_abi::att::{L1Entry, L1Repr, L2Entry, L2Repr, L2_ENTRY_LEN};
use via_abi::{MemAttributes, MemHandle, ProtectionTag, Status};

/// Who accesses the memory, and how (decides the attribute check and the status bit).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccessKind {
    /// The local engine reads host memory (send data, RDMA-write source, descriptors).
    LocalRead,
    /// The local engine writes host memory (receive data, descriptor status).
    LocalWrite,
    /// A remote peer's RDMA write into this memory (needs `ENABLE_RDMA_WRITE`).
    RdmaWrite,
    /// A remote peer's RDMA read from this memory (needs `ENABLE_RDMA_READ`).
    RdmaRead,
}

impl AccessKind {
    /// Whether the access comes from a remote peer (RDMA), whose refusals are RDMA
    /// protection errors (VIA 1.0).
    #[must_use]
    pub const fn is_remote(self) -> bool {
        matches!(self, AccessKind::RdmaWrite | AccessKind::RdmaRead)
    }
}

/// What a translation is asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TranslateRequest {
    /// Memory handle from the descriptor or the wire.
    pub handle: MemHandle,
    /// First virtual address.
    pub va: u64,
    /// Length \[bytes\]; 0 checks handle, tag, attributes and that `va` is inside (or just
    /// past the end of) the region, and yields no pieces.
    pub len: u64,
    /// Who accesses and how.
    pub access: AccessKind,
    /// Protection tag of the VI doing the access.
    pub ptag: ProtectionTag,
}

/// One physically contiguous piece of a translation; pieces split at page boundaries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Piece {
    /// Physical address of the first byte.
    pub pa: u64,
    /// Length \[bytes\], 1..=4096.
    pub len: u32,
}

/// Why a translation was refused. [`TranslateError::status`] gives the VIA status bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum TranslateError {
    /// The handle could never have been issued: generation 0, or index beyond the table.
    #[error("memory handle {0} was never issued")]
    InvalidHandle(MemHandle),
    /// The L1 entry is not the handle's region: its generation differs (stale handle
    /// after deregistration or re-registration, or a forged one) or it is not valid.
    #[error("memory handle {0} is stale or forged (L1 entry does not match)")]
    StaleHandle(MemHandle),
    /// The protection tag of the region is not the one of the accessing VI.
    #[error("protection tag {requested:?} does not match the region's tag")]
    TagMismatch {
        /// Tag presented by the access.
        requested: ProtectionTag,
    },
    /// The region was not registered with `EnableRdmaWrite`.
    #[error("RDMA write is not enabled on the region")]
    RdmaWriteDisabled,
    /// The region was not registered with `EnableRdmaRead`.
    #[error("RDMA read is not enabled on the region")]
    RdmaReadDisabled,
    /// `va .. va + len` is not inside the registered region.
    #[error("{len} bytes at {va:#x} are outside the region {start:#x} + {region_len}")]
    OutOfBounds {
        /// First virtual address asked for.
        va: u64,
        /// Length asked for \[bytes\].
        len: u64,
        /// Start of the region.
        start: u64,
        /// Length of the region \[bytes\].
        region_len: u64,
    },
    /// The L1 entry's generation and valid bit match but its geometry is inconsistent,
    /// or its L2 entries lie outside the table (corrupted table memory).
    #[error("ATT entry of handle {0} is corrupt")]
    CorruptEntry(MemHandle),
    /// A table read failed (host-memory ATT: the DMA read failed).
    #[error("ATT table read failed: {0}")]
    TableRead(TableIoError),
}

impl TranslateError {
    /// The VIA 1.0 status bit for this refusal when it happens to an access of `access`:
    /// `PROTECTION_ERROR` (0x4) for a local access, `RDMA_PROTECTION_ERROR` (0x80) for a
    /// remote one (see the table in the [`att`](super) module docs).
    #[must_use]
    pub fn status(&self, access: AccessKind) -> Status {
        if access.is_remote() {
            Status::RDMA_PROTECTION_ERROR
        } else {
            Status::PROTECTION_ERROR
        }
    }
}

/// The L2 entries a translation needs: `count` entries from index `first`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct L2Fetch {
    /// The checked L1 entry.
    pub l1: L1Repr,
    /// Index (within the region) of the first L2 entry needed.
    pub first: u32,
    /// Number of L2 entries needed (0 for a zero-length request).
    pub count: u32,
    /// Table address of the first of them.
    pub addr: u32,
}

impl L2Fetch {
    /// Bytes to read from the table \[bytes\].
    #[must_use]
    pub fn bytes(&self) -> u64 {
        u64::from(self.count) * L2_ENTRY_LEN as u64
    }
}

/// Checks the L1 entry read for `req` (24 bytes) in VIA order: handle (generation and
/// valid bit), protection tag, RDMA enable attribute, bounds; returns the L2 entries to
/// read next.
///
/// # Errors
/// The refusal, see [`TranslateError`].
pub fn check_l1(l1_bytes: &[u8], req: &TranslateRequest) -> Result<L2Fetch, TranslateError> {
    let corrupt = TranslateError::CorruptEntry(req.handle);
    let l1 = L1Repr::parse(&L1Entry::new_unchecked(l1_bytes)).map_err(|_| corrupt)?;
    if l1.generation != req.handle.generation() || !l1.attributes.contains(MemAttributes::VALID) {
        return Err(TranslateError::StaleHandle(req.handle));
    }
    if !l1.is_well_formed() {
        return Err(corrupt);
    }
    if l1.ptag != req.ptag {
        return Err(TranslateError::TagMismatch {
            requested: req.ptag,
        });
    }
    match req.access {
        AccessKind::RdmaWrite if !l1.attributes.contains(MemAttributes::ENABLE_RDMA_WRITE) => {
            return Err(TranslateError::RdmaWriteDisabled)
        }
        AccessKind::RdmaRead if !l1.attributes.contains(MemAttributes::ENABLE_RDMA_READ) => {
            return Err(TranslateError::RdmaReadDisabled)
        }
        _ => {}
    }
    let region_len = l1.region_len();
    let out = TranslateError::OutOfBounds {
        va: req.va,
        len: req.len,
        start: l1.start_va,
        region_len,
    };
    let offset = req.va.checked_sub(l1.start_va).ok_or(out)?;
    let end = offset.checked_add(req.len).ok_or(out)?;
    if end > region_len {
        return Err(out);
    }
    if req.len == 0 {
        return Ok(L2Fetch {
            l1,
            first: 0,
            count: 0,
            addr: l1.l2_pointer,
        });
    }
    let first = l1.locate(req.va).ok_or(out)?;
    // end <= region_len, so va + len - 1 is inside the region and does not overflow.
    let last = l1.locate(req.va + (req.len - 1)).ok_or(out)?;
    let addr = l1.l2_entry_addr(first.index).ok_or(corrupt)?;
    l1.l2_entry_addr(last.index).ok_or(corrupt)?;
    Ok(L2Fetch {
        l1,
        first: first.index,
        count: (last.index - first.index).saturating_add(1),
        addr,
    })
}

/// Builds the pieces of `req` from the L2 entries `fetch` named (`l2_bytes`, 4 bytes
/// each): one piece per page, starting at the L2 entry's address plus the offset within
/// the page, never longer than the region's share of that page.
///
/// # Errors
/// [`TranslateError::CorruptEntry`] if `l2_bytes` is not `fetch.count` entries.
pub fn pieces_from_l2(
    fetch: &L2Fetch,
    l2_bytes: &[u8],
    req: &TranslateRequest,
) -> Result<Vec<Piece>, TranslateError> {
    let corrupt = TranslateError::CorruptEntry(req.handle);
    // The entries are parsed as they are used, not into a table first: every error is
    // the same `corrupt`, so which entry or check finds one changes nothing.
    let whole = l2_bytes.len() % L2_ENTRY_LEN == 0;
    if !whole || (l2_bytes.len() / L2_ENTRY_LEN) as u64 != u64::from(fetch.count) {
        return Err(corrupt);
    }
    let l1 = &fetch.l1;
    let mut pieces = Vec::with_capacity(l2_bytes.len() / L2_ENTRY_LEN);
    let mut va = req.va;
    let mut left = req.len;
    for (k, chunk) in l2_bytes.chunks_exact(L2_ENTRY_LEN).enumerate() {
        let entry = L2Repr::parse(&L2Entry::new_unchecked(chunk)).map_err(|_| corrupt)?;
        let index = fetch.first + u32::try_from(k).map_err(|_| corrupt)?;
        let slot = l1.locate(va).ok_or(corrupt)?;
        if slot.index != index {
            return Err(corrupt);
        }
        let page_len = l1.page_len(index).ok_or(corrupt)?;
        let room = u64::from(page_len.checked_sub(slot.offset).ok_or(corrupt)?);
        let n = room.min(left);
        pieces.push(Piece {
            pa: u64::from(entry.phys_addr) + u64::from(slot.offset),
            len: u32::try_from(n).map_err(|_| corrupt)?,
        });
        va += n;
        left -= n;
    }
    if left != 0 {
        return Err(corrupt);
    }
    Ok(pieces)
}

#[cfg(test)]
mod tests {
    use super::*;
    use via_abi::att::{AttRegionRepr, RegionSpec};

    /// The 10 000-byte region of the via-abi examples: VA 0x0804_A100, pages
    /// 0x053A_7100 (0xF00 bytes), 0x0123_4000 (4096), 0x0777_0000 (0x810).
    fn region(attributes: MemAttributes) -> AttRegionRepr {
        AttRegionRepr::build(&RegionSpec {
            va: 0x0804_A100,
            len: 10_000,
            pages: &[0x053A_7100, 0x0123_4000, 0x0777_0000],
            attributes,
            ptag: ProtectionTag(7),
            generation: 3,
            l2_pointer: 0x0010_0000,
        })
        .expect("valid")
    }

    fn req(va: u64, len: u64, access: AccessKind) -> TranslateRequest {
        TranslateRequest {
            handle: MemHandle::new(5, 3).expect("ok"),
            va,
            len,
            access,
            ptag: ProtectionTag(7),
        }
    }

    fn translate(r: &AttRegionRepr, q: &TranslateRequest) -> Result<Vec<Piece>, TranslateError> {
        let f = check_l1(&r.l1_bytes(), q)?;
        let start = f.first as usize * 4;
        let bytes = r.l2_bytes();
        pieces_from_l2(&f, &bytes[start..start + f.count as usize * 4], q)
    }

    #[test]
    fn whole_region_in_three_pieces() {
        let r = region(MemAttributes::VALID);
        let q = req(0x0804_A100, 10_000, AccessKind::LocalRead);
        let f = check_l1(&r.l1_bytes(), &q).expect("ok");
        assert_eq!(
            (f.first, f.count, f.addr, f.bytes()),
            (0, 3, 0x0010_0000, 12)
        );
        let p = |pa, len| Piece { pa, len };
        assert_eq!(
            translate(&r, &q),
            Ok(vec![
                p(0x053A_7100, 0xF00),
                p(0x0123_4000, 4096),
                p(0x0777_0000, 0x810)
            ])
        );
        // A middle slice: from 0x10 before the first page end, 0x20 bytes.
        let q = req(0x0804_AFF0, 0x20, AccessKind::LocalWrite);
        assert_eq!(
            translate(&r, &q),
            Ok(vec![p(0x053A_7FF0, 0x10), p(0x0123_4000, 0x10)])
        );
        assert_eq!(
            translate(&r, &req(0x0804_C80F, 1, AccessKind::LocalRead)),
            Ok(vec![p(0x0777_080F, 1)])
        );
        assert_eq!(
            translate(&r, &req(0x0804_C810, 0, AccessKind::LocalRead)),
            Ok(vec![])
        );
    }

    #[test]
    fn refusals_in_via_order() {
        let r = region(MemAttributes::VALID | MemAttributes::ENABLE_RDMA_WRITE);
        let past = req(0x0804_C810, 1, AccessKind::RdmaWrite);
        assert_eq!(
            translate(&r, &past),
            Err(TranslateError::OutOfBounds {
                va: 0x0804_C810,
                len: 1,
                start: 0x0804_A100,
                region_len: 10_000
            })
        );
        let before = req(0x0804_A0FF, 2, AccessKind::LocalRead);
        assert!(matches!(
            translate(&r, &before),
            Err(TranslateError::OutOfBounds { .. })
        ));
        let huge = req(0x0804_A100, u64::MAX, AccessKind::LocalRead);
        assert!(matches!(
            translate(&r, &huge),
            Err(TranslateError::OutOfBounds { .. })
        ));
        let read = req(0x0804_A100, 4, AccessKind::RdmaRead);
        assert_eq!(translate(&r, &read), Err(TranslateError::RdmaReadDisabled));
        let tag = TranslateRequest {
            ptag: ProtectionTag(8),
            ..read
        };
        assert_eq!(
            translate(&r, &tag),
            Err(TranslateError::TagMismatch {
                requested: ProtectionTag(8)
            })
        );
        let stale = TranslateRequest {
            handle: MemHandle::new(5, 2).expect("ok"),
            ..tag
        };
        assert_eq!(
            translate(&r, &stale),
            Err(TranslateError::StaleHandle(stale.handle))
        );
        let no_rdma = region(MemAttributes::VALID);
        assert_eq!(
            translate(&no_rdma, &req(0x0804_A100, 4, AccessKind::RdmaWrite)),
            Err(TranslateError::RdmaWriteDisabled)
        );
        let invalid = region(MemAttributes::ENABLE_RDMA_WRITE);
        let q = req(0x0804_A100, 4, AccessKind::LocalRead);
        assert_eq!(
            translate(&invalid, &q),
            Err(TranslateError::StaleHandle(q.handle))
        );
        assert_eq!(
            check_l1(&[0u8; 24], &q),
            Err(TranslateError::StaleHandle(q.handle))
        );
        assert_eq!(
            check_l1(&[0u8; 3], &q),
            Err(TranslateError::CorruptEntry(q.handle))
        );
    }

    #[test]
    fn status_bits() {
        let e = TranslateError::TagMismatch {
            requested: ProtectionTag(1),
        };
        assert_eq!(e.status(AccessKind::LocalRead), Status::PROTECTION_ERROR);
        assert_eq!(e.status(AccessKind::LocalWrite), Status::PROTECTION_ERROR);
        assert_eq!(
            e.status(AccessKind::RdmaWrite),
            Status::RDMA_PROTECTION_ERROR
        );
        assert_eq!(
            e.status(AccessKind::RdmaRead),
            Status::RDMA_PROTECTION_ERROR
        );
    }

    #[test]
    fn wrong_l2_bytes_are_corrupt_not_a_panic() {
        let r = region(MemAttributes::VALID);
        let q = req(0x0804_A100, 10_000, AccessKind::LocalRead);
        let f = check_l1(&r.l1_bytes(), &q).expect("ok");
        let corrupt = Err(TranslateError::CorruptEntry(q.handle));
        assert_eq!(pieces_from_l2(&f, &[0; 8], &q), corrupt);
        assert_eq!(pieces_from_l2(&f, &[0; 13], &q), corrupt);
    }
}
