//! The ATT manager: memory registration and address translation over the two-level
//! address translation table (HVIA-GE paper), kept in card SDRAM ([`AttLocation::CardSdram`])
//! or, as a what-if, in host memory read by DMA ([`AttLocation::HostMemory`]).
//!
//! # Memory handle (design choice, [`via_abi::handle`])
//!
//! | bits | field | meaning |
//! |---|---|---|
//! | 19:0 | index | L1 entry number, 0..l1_entries (at most 2^20) |
//! | 31:20 | generation | 1..=4095, stored in the L1 entry; bumped every time the index is handed out again |
//!
//! A translation reads the L1 entry the index names and refuses the access unless the
//! entry's generation equals the handle's and the entry is `VALID`: a handle kept after
//! `VipDeregisterMem` (the entry is zeroed, generation 0) or after the index was reused
//! (new generation), or a forged one, never reaches another region. Generation 0 is never
//! issued, so the null handle and never-written (zero) entries never translate. Indices
//! are reused as late as possible (fresh ones first, then freed ones first-in first-out).
//!
//! # L1 entry (24 bytes, little-endian; [`via_abi::att`])
//!
//! | bytes | bits | field | unit |
//! |---|---|---|---|
//! | 0..8 | | `start_va`: starting virtual address | host VA |
//! | 8..12 | | `l2_pointer`: address of the region's first L2 entry | table address |
//! | 12..16 | 19:0 | `page_count`: pages the region touches | pages |
//! | 12..16 | 31:20 | `last_page_len` - 1: region bytes in its last page | bytes |
//! | 16..18 | | `first_page_size`: `4096 - start_va % 4096` | bytes |
//! | 18..20 | | `attributes`: VALID 0x1, ENABLE_RDMA_WRITE 0x2, ENABLE_RDMA_READ 0x4 | flags |
//! | 20..22 | | `ptag`: protection tag | - |
//! | 22..24 | | `generation` | - |
//!
//! L2 entries: 4 bytes each, consecutive from `l2_pointer`, one per page: the physical
//! address of the region's piece in that page. Bounds are exact to the byte.
//!
//! # Refusals and VIA status bits
//!
//! VIA 1.0 reports a failed memory check on a local access as `VIP_STATUS_PROTECTION_ERROR`
//! and one detected at the remote end of an RDMA operation as
//! `VIP_STATUS_RDMA_PROT_ERROR` ([`TranslateError::status`]):
//!
//! | [`TranslateError`] | cause | local (`LocalRead`, `LocalWrite`) | remote (`RdmaWrite`, `RdmaRead`) |
//! |---|---|---|---|
//! | `InvalidHandle` | generation 0, index beyond the table | PROTECTION_ERROR 0x4 | RDMA_PROTECTION_ERROR 0x80 |
//! | `StaleHandle` | generation differs / entry not VALID (deregistered, reused, forged) | 0x4 | 0x80 |
//! | `TagMismatch` | region ptag != VI ptag | 0x4 | 0x80 |
//! | `OutOfBounds` | any byte of `va..va+len` outside the region | 0x4 | 0x80 |
//! | `RdmaWriteDisabled` | RDMA write without `EnableRdmaWrite` | - | 0x80 |
//! | `RdmaReadDisabled` | RDMA read without `EnableRdmaRead` | - | 0x80 |
//! | `CorruptEntry` | inconsistent entry in table memory | 0x4 | 0x80 |
//! | `TableRead` | host-memory ATT: the DMA read failed | 0x4 | 0x80 |
//!
//! Checks run in this order after the L1 read: handle, tag, RDMA enable, bounds.
//!
//! # Timing (card ATT, default PC100 CL2 SDRAM, 10 ns cycles)
//!
//! A translation costs one SDRAM read of the 24-byte L1 entry, then (dependent on its
//! contents) one read of the L2 entries of the pages touched, in 32-byte bursts. With the
//! rows already open (steady state): L1 8 cycles (READ, CL 2, 6 beats) + L2 3 cycles
//! (READ, CL 2, 1 beat) = 11 cycles = 110 ns for a one-page access to an entry that fits
//! one burst; from idle banks 10 + 5 = 15 cycles = 150 ns. The L1 cost depends on where
//! the 24-byte entry falls in the 32-byte bursts: warm, 8 / 14 / 12 / 10 cycles for index
//! mod 4 = 0 / 1 / 2 / 3. A refresh in the way costs about tRP + tRFC + tRCD = 11 cycles
//! more (22 cycles for the translation of the hand-counted test). Each further page adds
//! one 4-byte L2 beat (a new 32-byte burst every 8 pages). With the ATT in host memory
//! each of the two reads is a DMA read over the system PCI bus instead.
//!
//! Files: `params` ([`AttParams`]), `alloc` (index and L2 allocators), `table`
//! (registration layout and the CLI entry points [`layout_att`], [`preview_registration`]),
//! `translate` (checks and pieces), `table_io` (the host-memory table port's errors), `host_port` (that port as a
//! component driving the card's DMA master), `manager`
//! (the component; `manager/flip.rs`: a bit flip in the table's SDRAM, fault injection).

mod alloc;
mod host_port;
mod manager;
mod params;
mod table;
mod table_io;
mod translate;

#[cfg(test)]
mod tests;

pub use alloc::{ExtentAllocator, IndexAllocator};
pub use host_port::HostTablePort;
pub use manager::{
    AheadCounts, AttBitFlip, AttFlipError, AttManager, AttState, AttStats, L1_ENTRY_BITS,
};
pub use params::{AttConfigError, AttLocation, AttParams, TableGeometry};
pub use table::{
    layout_att, preview_registration, AttTable, DeregisterError, RegionLayout, RegionRequest,
    RegisterError,
};
pub use table_io::TableIoError;
pub use translate::{
    check_l1, pieces_from_l2, AccessKind, L2Fetch, Piece, TranslateError, TranslateRequest,
};
