//! The whole simulated system: two nodes (host CPU, host bridge and memory, system PCI
//! bus, HVIA-GE card with engine, ATT manager, DMA master, GEC, local bus, DP83820)
//! linked back to back, built from a [`SystemConfig`](crate::config::SystemConfig).
//!
//! - [`world`]: the message type and the routing of messages to components;
//! - [`build`]: wiring the components from the config;
//! - [`run`]: run control (until the programs return; stall detection);
//! - [`faults`]: what the injected faults did, per node (besides the wire's);
//! - [`counters`]: the GEC's counters with the reads the local bus answered for it;
//! - [`pingpong`]: the ping-pong testbench;
//! - [`delivery`]: what became of a run's messages (lost, resent, dropped frames);
//! - [`spmd`]: one program on every node (the MPI and BSP libraries);
//! - [`traffic`]: traffic patterns beyond the ping-pong (the one-way stream);
//! - [`mesh`]: the many-node patterns (incast, all-to-all);
//! - [`breakdown`]: tiling one message's latency with the trace spans.

pub mod breakdown;
pub mod build;
pub mod counters;
pub mod delivery;
pub mod faults;
pub mod mesh;
pub mod pingpong;
pub mod run;
pub mod spmd;
pub mod traffic;
pub mod world;

pub use build::{node_mac, BuildError, NodeIds, System};
pub use delivery::Delivery;
pub use pingpong::{
    run_pingpong, run_pingpong_adjusted, Op, PingPongRun, PingPongSpec, RecvPost, RunError,
};
pub use run::{RunEnd, Stall, StallReason};
pub use spmd::{run_spmd, run_spmd_adjusted};
pub use world::{Comp, Msg, NodeStore, SystemWorld};
