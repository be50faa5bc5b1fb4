//! `vmpi`: a minimal MPI over VIPL, after the VMPI of the VIA cluster studies: eager
//! ("ready mode") messages up to a threshold, copied through pre-posted, pre-registered
//! bounce buffers, and a synchronous mode above it (request to send, reply with the
//! receive buffer's address and memory handle, RDMA write of the data, done).
//!
//! The protocol pieces that need no network are here and tested alone:
//! - [`collective`]: barrier, broadcast and reduction schedules, and the sums;
//! - [`types`]: ranks, tags, contexts, envelopes and receive patterns;
//! - [`wire`]: the 40-byte header in front of every VMPI message;
//! - [`matching`]: posted receives, unexpected messages, MPI's non-overtaking rule;
//! - [`credits`]: flow control of the eager buffers;
//! - [`programs`]: the MPI ping-pong and broadcast benchmarks;
//! - [`p2p`]: the point-to-point protocol as a core that performs no I/O (eager and
//!   synchronous modes, truncation, credits), tested over a network of byte vectors.

#![forbid(unsafe_code)]

pub mod collective;
pub mod comm;
pub mod credits;
pub mod matching;
pub mod p2p;
pub mod programs;
pub mod types;
pub mod wire;

pub use comm::{Comm, MpiConfig, MpiError, MpiStats, Registration, Request};
pub use credits::{CreditError, Credits};
pub use matching::Matcher;
pub use p2p::{Action, P2p, P2pError, P2pParams, Payload, RecvId, RecvStatus, SendId, StashId};
pub use types::{Context, Envelope, Pattern, Rank, Source, Tag, TagSel};
pub use wire::{Header, Kind, WireError};
