//! `nic-model`: the HVIA-GE card's FPGA.
//!
//! Built so far (issue 4): the card SDRAM and its controller ([`sdram`]) and the address
//! translation table manager on top of it ([`att`]). Every component is a plain struct
//! whose handler is generic over the system message type (`M: From<NicMsg>`); the
//! messages they receive and send are the variants of [`NicMsg`] ([`msg`]).
//!
//! `tracing` targets: `nic::att` (ATT manager), `nic::sdram` (SDRAM controller).

#![forbid(unsafe_code)]

pub mod att;
pub mod msg;
pub mod sdram;

pub use msg::{NicMsg, ReqId};
