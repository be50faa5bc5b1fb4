//! `MPI_COMM_WORLD` over VIPL ([`Comm`]): the point-to-point core ([`P2p`]) driven by
//! real VIPL calls on the simulated host, so every copy, registration, descriptor and
//! poll costs what the CPU model says.
//!
//! Resources of a process (made by [`Comm::init`]):
//! - one VI per peer, reliability as configured, both work queues tied to one
//!   completion queue, so one `VipCQWait` covers every arrival and every local send
//!   completion (and `MPI_ANY_SOURCE` needs nothing more);
//! - one registered bounce region: per peer `buffers_per_peer` receive slots (posted
//!   before connecting, so the first message always finds one), a pool of as many send
//!   slots, each slot 40 header bytes + `eager_limit` bytes rounded up to 64, and one
//!   64-byte descriptor per slot;
//! - stash buffers for unexpected eager messages, reused once copied out (the heap has
//!   no `free`).
//!
//! Files: `init` (MPI_Init / MPI_Finalize: the connection mesh), `progress` (reaping
//! completions, carrying out the core's actions, slots and registration), `api`
//! (Isend / Irecv / Wait / Test / Send / Recv), `coll` (Barrier, Bcast, Reduce,
//! Allreduce).

mod api;
mod coll;
mod init;
mod progress;

use crate::p2p::{P2p, P2pError, RecvId, SendId, StashId};
use crate::types::Rank;
use host_driver::vipl::{CqHandle, NicHandle, ViHandle, VipError, Vipl};
use host_driver::ProgramError;
use sim_kernel::Duration;
use std::collections::{BTreeMap, VecDeque};
use via_abi::bar::Reliability;
use via_abi::{MacAddr, MemHandle, ProtectionTag, Status};

pub use api::Request;

/// How user buffers of the synchronous mode are registered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Registration {
    /// Registered before and deregistered after every transfer, as the VMPI study did.
    PerCall,
    /// Kept registered and found again by address (a registration cache).
    Cache,
}

/// The library's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MpiConfig {
    /// Largest message sent eagerly \[bytes\].
    pub eager_limit: u32,
    /// Eager receive buffers per peer.
    pub buffers_per_peer: u16,
    /// Owed credits at which a credit message goes on its own.
    pub credit_threshold: u16,
    /// Registration of synchronous-mode buffers.
    pub registration: Registration,
    /// Reliability level of the VIs.
    pub reliability: Reliability,
    /// A wait that sees no completion for this long fails (the run cannot progress),
    /// plus [`MpiConfig::byte_time`] for each byte of the synchronous transfers under
    /// way, times the processes (which may share the links).
    pub progress_timeout: Duration,
    /// The slowest link's time per byte: what a transfer under way may take per byte
    /// before a wait gives up.
    pub byte_time: Duration,
    /// Connect discriminators are `discriminator_base + 64 * lower rank + higher rank`.
    pub discriminator_base: u32,
    /// Connect attempts before giving up.
    pub connect_attempts: u32,
    /// Pause between connect attempts.
    pub connect_retry: Duration,
}

impl Default for MpiConfig {
    fn default() -> Self {
        MpiConfig {
            eager_limit: 8192,
            buffers_per_peer: 8,
            credit_threshold: 4,
            registration: Registration::PerCall,
            reliability: Reliability::ReliableDelivery,
            progress_timeout: Duration::from_ns(50_000_000),
            byte_time: Duration::from_ns(8),
            discriminator_base: 0x4D50_0000,
            connect_attempts: 200,
            connect_retry: Duration::from_ns(20_000),
        }
    }
}

/// Why an MPI call failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MpiError {
    /// A VIPL call failed.
    #[error("{call} returned {error}")]
    Vipl {
        /// The call.
        call: &'static str,
        /// Its return code.
        error: VipError,
    },
    /// A descriptor completed with error bits.
    #[error("{call}: descriptor completed with status {status:?}")]
    Completion {
        /// The call that reaped it.
        call: &'static str,
        /// Its status.
        status: Status,
    },
    /// The protocol refused a call or a message.
    #[error(transparent)]
    Protocol(#[from] P2pError),
    /// A message that is not VMPI.
    #[error("message from {peer}: {error}")]
    Wire {
        /// Its sender.
        peer: Rank,
        /// What is wrong.
        error: crate::wire::WireError,
    },
    /// Nothing completed for the progress budget while a call waited.
    #[error("{call}: nothing completed for {waited} while waiting; the run cannot progress")]
    Stalled {
        /// The waiting call.
        call: &'static str,
        /// How long it waited.
        waited: Duration,
    },
    /// A bad argument.
    #[error("{0}")]
    Argument(&'static str),
}

impl From<MpiError> for ProgramError {
    fn from(e: MpiError) -> Self {
        tracing::warn!(target: "host::mpi", %e, "MPI call failed");
        match e {
            MpiError::Vipl { call, error } => ProgramError::Vipl { call, error },
            MpiError::Completion { call, status } => ProgramError::Completion { call, status },
            MpiError::Stalled { call, .. } => ProgramError::Vipl {
                call,
                error: VipError::Timeout,
            },
            MpiError::Protocol(_) | MpiError::Wire { .. } => {
                ProgramError::Protocol("VMPI protocol error")
            }
            MpiError::Argument(a) => ProgramError::Protocol(a),
        }
    }
}

/// Names the VIPL call of a failed result.
pub(crate) trait Call<T> {
    fn call(self, call: &'static str) -> Result<T, MpiError>;
}

impl<T> Call<T> for Result<T, VipError> {
    fn call(self, call: &'static str) -> Result<T, MpiError> {
        self.map_err(|error| MpiError::Vipl { call, error })
    }
}

/// What the library did, for reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MpiStats {
    /// Messages sent eagerly.
    pub eager_sends: u64,
    /// Messages sent in synchronous mode.
    pub synchronous_sends: u64,
    /// Control messages (RTS, CTS, credits) sent.
    pub control_messages: u64,
    /// Eager messages that arrived before their receive (copied twice).
    pub unexpected: u64,
    /// Memory copies made by the library.
    pub copies: u64,
    /// Bytes those copies moved \[bytes\].
    pub copy_bytes: u64,
    /// `VipRegisterMem` calls for user buffers.
    pub registrations: u64,
    /// `VipDeregisterMem` calls for user buffers.
    pub deregistrations: u64,
    /// Registrations found in the cache.
    pub cache_hits: u64,
    /// Waits that had to block in `VipCQWait`.
    pub blocking_waits: u64,
}

/// A process's connection to one peer.
#[derive(Clone, Debug)]
struct Peer {
    vi: ViHandle,
    /// Receive slots posted on the VI, in posting order.
    posted: VecDeque<usize>,
    /// Send-queue posts not yet reaped, in posting order.
    in_flight: VecDeque<Posted>,
}

/// A post on a peer's send queue.
#[derive(Clone, Copy, Debug)]
enum Posted {
    /// A message from a send slot.
    Message { slot: usize },
    /// The RDMA write of a synchronous send (its descriptor in a send slot).
    Write {
        slot: usize,
        send: SendId,
        handle: MemHandle,
    },
}

/// The bounce region: slots and their descriptors.
#[derive(Clone, Copy, Debug)]
struct Bounce {
    va: u64,
    handle: MemHandle,
    slot_bytes: u64,
    /// Receive slots (`buffers_per_peer` per peer, peers in rank order, self skipped).
    recv_slots: usize,
    /// Send slots after them.
    send_slots: usize,
}

impl Bounce {
    /// The slots' bytes, then one 64-byte descriptor per slot.
    fn slot_va(&self, slot: usize) -> u64 {
        self.va + self.slot_bytes * slot as u64
    }

    fn desc_va(&self, slot: usize) -> u64 {
        self.va + self.slot_bytes * (self.recv_slots + self.send_slots) as u64 + 64 * slot as u64
    }

    fn bytes(&self) -> u64 {
        (self.slot_bytes + 64) * (self.recv_slots + self.send_slots) as u64
    }
}

/// `MPI_COMM_WORLD` of one process.
pub struct Comm {
    vipl: Vipl,
    cfg: MpiConfig,
    rank: Rank,
    size: u16,
    p2p: P2p,
    nic: NicHandle,
    ptag: ProtectionTag,
    cq: CqHandle,
    peers: Vec<Option<Peer>>,
    vi_peer: BTreeMap<u16, Rank>,
    bounce: Bounce,
    send_free: Vec<usize>,
    user_sends: BTreeMap<SendId, (u64, u32)>,
    user_recvs: BTreeMap<RecvId, (u64, u32)>,
    recv_handles: BTreeMap<RecvId, MemHandle>,
    stashes: BTreeMap<StashId, u64>,
    stash_free: Vec<u64>,
    reg_cache: BTreeMap<u64, (u64, MemHandle)>,
    /// Collectives called so far (the next one's tag).
    coll_seq: u64,
    /// Scratch buffers of the collectives, free for reuse (address, bytes).
    scratch_free: Vec<(u64, u64)>,
    /// Whether the VIs and RDMA areas allow RDMA read (the card has it).
    rdma_read: bool,
    /// Whether `MPI_Finalize` has begun (a peer's disconnect is expected).
    finalizing: bool,
    /// Whether actions are being carried out (progress made meanwhile only queues).
    in_actions: bool,
    stats: MpiStats,
}

impl Comm {
    /// `MPI_Comm_rank`.
    #[must_use]
    pub fn rank(&self) -> Rank {
        self.rank
    }

    /// `MPI_Comm_size`.
    #[must_use]
    pub fn size(&self) -> u16 {
        self.size
    }

    /// Whether RDMA read is available ([`Comm::rdma_read`]): the card has it and the VIs
    /// are reliable.
    #[must_use]
    pub fn has_rdma_read(&self) -> bool {
        self.rdma_read
    }

    /// The library's settings.
    #[must_use]
    pub fn config(&self) -> &MpiConfig {
        &self.cfg
    }

    /// What the library did so far.
    #[must_use]
    pub fn stats(&self) -> MpiStats {
        self.stats
    }

    /// The VIPL underneath (for buffers, compute and instrumentation).
    pub fn vipl(&mut self) -> &mut Vipl {
        &mut self.vipl
    }

    /// `MPI_Wtime` \[s\]: `gettimeofday` on the simulated host.
    pub async fn wtime(&self) -> f64 {
        let t = self.vipl.gettimeofday().await;
        t.0 as f64 * 1e-12
    }

    /// The peer `r`'s connection.
    fn peer(&self, r: Rank) -> Option<&Peer> {
        self.peers.get(usize::from(r.0))?.as_ref()
    }

    fn peer_mut(&mut self, r: Rank) -> Option<&mut Peer> {
        self.peers.get_mut(usize::from(r.0))?.as_mut()
    }
}

/// The MAC addresses of the world, one per rank.
pub type WorldMacs = Vec<MacAddr>;
