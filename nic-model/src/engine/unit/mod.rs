//! The engine's units: each owns one part of the engine's state and the operations on
//! that state alone. They import only the engine's leaf modules (`ids`, `io`, `fifo`,
//! `frame`, `params`, `stats`) and never the [`Engine`](super::Engine) or its step files,
//! so there is no import circle: `mod.rs` -> units -> leaves, step files -> units.

pub(crate) mod completion;
pub(crate) mod doorbell;
pub(crate) mod outstanding;
pub(crate) mod pieces;
pub(crate) mod recv;
pub(crate) mod regs;
pub(crate) mod retx;
pub(crate) mod send;
pub(crate) mod vi;
