//! `nic-model`: the HVIA-GE card's FPGA.
//!
//! - [`sdram`]: the card SDRAM and its controller;
//! - [`att`]: the address translation table manager on top of it;
//! - [`engine`]: the VIA protocol engine: BAR0 target (registers, registration mailbox,
//!   doorbells), VI protocol manager, send and receive paths, Send/Recv FIFOs and the
//!   TX/RX buffers it shares with the GEC ([`gige_mac::BufferRam`]).
//!
//! Every component is a plain struct whose handler is generic over the system message
//! type (`M: From<NicMsg>`, the engine also `From<PciMsg> + From<MacMsg>`); the messages
//! of this crate are the variants of [`NicMsg`] ([`msg`]).
//!
//! `tracing` targets: `nic::att` (ATT manager), `nic::sdram` (SDRAM controller),
//! `nic::doorbell`, `nic::vi`, `nic::tx`, `nic::rx` (engine).

#![forbid(unsafe_code)]

pub mod att;
pub mod engine;
pub mod msg;
pub mod sdram;

pub use engine::{Engine, EngineParams, EnginePorts, EngineWake};
pub use msg::{NicMsg, ReqId};
