//! `testbenches`: the system assembly of hvia-sim, its configuration and the `hvia`
//! command.
//!
//! - [`config`]: the serde schema of a whole simulated system, the embedded presets,
//!   `--config FILE` and `--set KEY=VALUE`, validation with located errors;
//! - [`calibrate`]: `hvia calibrate`, the `calibrated:` parameters fitted to the paper;
//! - [`cli`]: the `hvia` command line (clap) and its subcommands;
//! - [`layout`]: `hvia layout`, VI descriptors and ATT entries byte by byte;
//! - [`mpi_cli`]: `hvia mpi` and `hvia bsp`, the message-passing libraries measured;
//! - [`pingpong_cli`]: `hvia pingpong` (the main job) and `hvia breakdown`;
//! - [`system`]: the whole simulated system and its testbenches;
//! - [`report`]: output as table, JSON or CSV;
//! - [`validate`]: `hvia validate`, the published figures against the model.

#![forbid(unsafe_code)]

pub mod calibrate;
pub mod cli;
pub mod config;
pub mod dma;
pub mod grid;
pub mod layout;
pub mod mpi_cli;
pub mod pingpong_cli;
pub mod report;
pub mod runinfo;
pub mod stats;
pub mod system;
pub mod traffic_cli;
pub mod traffic_plot;
pub mod validate;
