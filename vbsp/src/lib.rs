//! `vbsp`: BSPlib over VIPL, after the VBSP of the VIA cluster studies, on the HVIA-GE
//! card: registered areas, `bsp_put` by RDMA write straight into the remote area (or,
//! when small, combined per destination into one message), `bsp_get`, bulk-synchronous
//! messages and `bsp_sync`, over the VMPI transport ([`vmpi::Comm`]).
//!
//! - [`bsp`]: the library ([`Bsp`]);
//! - [`programs`]: the probe of the BSP cost parameters, LU decomposition;
//! - [`records`]: the format of the messages a sync exchanges;
//! - [`staging`]: host-memory buffers the outgoing records are built in.

#![forbid(unsafe_code)]

pub mod bsp;
pub mod programs;
pub mod records;
pub mod staging;

pub use bsp::{Bsp, BspConfig, BspError, BspStats, BSP_CONTEXT};
