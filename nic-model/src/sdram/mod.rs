//! The card SDRAM (64 MiB of real bytes) and its controller's timing.
//!
//! - [`params`]: [`SdramParams`], every timing and geometry constant with unit and
//!   source (PC100 CL2 preset, an assumption: the paper gives only the capacity);
//! - [`store`]: [`SdramStore`], the bytes (sparse, zero until written, bounds-checked);
//! - [`controller`]: [`SdramController`], the command-level timing (row activate, CAS
//!   latency, precharge, bursts, refresh) in absolute SDRAM cycles, open-page policy.
//!
//! The controller is not a component of its own: the SDRAM holds only the ATT (paper),
//! so the [`AttManager`](crate::att::AttManager) runs it inside its own component, in the
//! SDRAM clock domain, and turns its cycle counts into wake-ups.

pub mod controller;
pub mod params;
pub mod store;

#[cfg(test)]
mod stepped;
#[cfg(test)]
mod tests;

pub use controller::{AccessTiming, CmdRecord, SdramCmd, SdramController, SdramOp};
pub use params::{SdramParams, SdramParamsError};
pub use store::{SdramError, SdramStore};
