//! Host programs written as a VIPL user writes them, for testbenches to run and users to
//! copy: ping-pong over RDMA write ([`rdma_pingpong_initiator`],
//! [`rdma_pingpong_responder`]), RDMA read ([`rdma_read_pingpong_initiator`],
//! [`rdma_read_pingpong_responder`]) and over send/receive ([`sendrecv_pingpong_initiator`],
//! [`sendrecv_pingpong_responder`]), and an RDMA write that breaks a protection rule
//! ([`protection_initiator`], [`protection_responder`]); streams with a window of
//! descriptors ([`stream_sender`], [`stream_receiver`], [`stream_duplex`]) and between
//! many nodes at once ([`mesh_node`]: incast, all-to-all).
//!
//! Both follow the paper's set-up ([`setup`]): open the NIC, create a protection tag,
//! `malloc` and register a control region (descriptors, set-up messages) and the data
//! buffers, create a VI, post receives, connect (the responder waits, the initiator
//! requests, retrying while refused), then tell each other the VA and memory handle of
//! their RDMA target buffer with an ordinary send/receive.
//!
//! # RDMA receive convention
//!
//! An RDMA write leaves no trace at the receiver but the data, so the receiver polls its
//! buffer: the **last byte of every message is a flag**, `flag(i) = i % 255 + 1` for
//! iteration `i` (never 0, so a fresh zeroed buffer never matches, and different from
//! the previous message's). The receiver polls that byte until it equals the flag it
//! expects. The card DMA-writes a message in address order and the host bridge commits
//! posted writes in order, so once the last byte is visible the whole message is.
//!
//! # Data and its cost
//!
//! Every message carries a fresh pattern ([`pattern`]) and the receiver compares every
//! byte at every iteration. With `touch_data` off (the default, like the paper's
//! latency test, which does not touch the payload) the payload is written and checked
//! by instrumentation at no simulated cost and only the flag store and the polls are
//! paid for; with `touch_data` on, the program pays for writing and reading the whole
//! buffer.

mod mesh;
mod protection;
mod rdma;
mod rdma_read;
mod scratch;
mod sendrecv;
pub mod setup;
mod stream;

pub use mesh::{
    mesh_discriminator, mesh_index, mesh_node, mesh_peer_message, MeshParams, LOOK, MESH_STRIDE,
    SCAN_AFTER,
};
pub use protection::{
    protection_initiator, protection_responder, ProtectionCase, PROTECTION_PATTERN,
};
pub use rdma::{rdma_pingpong_initiator, rdma_pingpong_responder};
pub use rdma_read::{rdma_read_pingpong_initiator, rdma_read_pingpong_responder};
pub use sendrecv::{sendrecv_pingpong_initiator, sendrecv_pingpong_responder, POST_RECV_TIMED};
pub use stream::{stream_duplex, stream_receiver, stream_sender, StreamParams};

pub(crate) use scratch::Scratch;

pub use crate::pattern::{flag, pattern, pattern_into, Direction, Message};

use crate::program::ProgramError;
use crate::vipl::{Timeout, Vipl};
use crate::VipResult;
use sim_kernel::Duration;
use via_abi::bar::Reliability;
use via_abi::MacAddr;

/// Parameters of a ping-pong program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PingPongParams {
    /// Message size \[bytes\], at least 1 (the flag byte).
    pub msg_bytes: u32,
    /// Timed iterations (after the warm-up).
    pub iterations: u32,
    /// Warm-up iterations, recorded with `warmup = true`.
    pub warmup: u32,
    /// The peer NIC's MAC address (the initiator connects to it).
    pub peer: MacAddr,
    /// Connection discriminator both sides use.
    pub discriminator: u32,
    /// Whether writing and checking the payload costs CPU time (see the module doc).
    pub touch_data: bool,
    /// Timeout of every wait. Setting: 10 ms, far above any healthy round trip.
    pub wait_timeout: Timeout,
    /// Connect requests the initiator makes before giving up.
    pub connect_attempts: u32,
    /// Pause between two connect requests (the responder may not be waiting yet).
    pub connect_retry: Duration,
    /// Reliability level of both VIs. Default: unreliable delivery, the VIA default
    /// service, under which the sender's descriptor completes once its frame is sent and
    /// nothing travels back but the reply.
    pub reliability: Reliability,
    /// Send/receive: the initiator posts the receive for each pong inside the timed
    /// round trip, right before its ping (true), or before it starts the clock (false).
    /// Default true, the usual shape of a ping-pong loop timed as a whole (post the
    /// receive, send, wait for the send, wait for the receive): the assumption under
    /// which the paper's send/recv figures were measured (see `sendrecv`).
    pub post_recv_timed: bool,
    /// RDMA read: both VIs are created with RDMA read enabled and the responder's
    /// incoming buffer (`dst`, the one the peer learns in set-up) is registered with
    /// RDMA read enabled, so the peer may read it. Default false.
    pub rdma_read: bool,
}

impl PingPongParams {
    /// `iterations` round trips of `msg_bytes` bytes with the peer at `peer`.
    #[must_use]
    pub fn new(msg_bytes: u32, iterations: u32, peer: MacAddr) -> Self {
        Self {
            msg_bytes,
            iterations,
            warmup: 0,
            peer,
            discriminator: 0x5649_4121,
            touch_data: false,
            wait_timeout: Timeout::After(Duration::from_ns(10_000_000)),
            connect_attempts: 100,
            connect_retry: Duration::from_ns(20_000),
            reliability: Reliability::Unreliable,
            post_recv_timed: true,
            rdma_read: false,
        }
    }

    /// Warm-up plus timed iterations.
    #[must_use]
    pub fn total(&self) -> u32 {
        self.warmup.saturating_add(self.iterations)
    }
}

/// Fills the send buffer at `va` with `data`: costed stores if `touch`, else
/// instrumentation for all but the last byte and a costed store of the flag byte.
/// `data` comes back unchanged, for the caller to reuse.
pub(crate) async fn fill(
    vipl: &Vipl,
    va: u64,
    mut data: Vec<u8>,
    touch: bool,
) -> VipResult<Vec<u8>> {
    if touch && !data.is_empty() {
        vipl.write_mem(va, &data).await?;
        return Ok(data);
    }
    let Some(last) = data.pop() else {
        return Ok(data);
    };
    let mut data = vipl.poke_owned(va, data).await?;
    let at = va + data.len() as u64;
    data.push(last);
    vipl.write_mem(at, &[last]).await?;
    Ok(data)
}

/// Compares the buffer at `va` with `expected` (costed loads if `touch`, else
/// instrumentation); returns the bytes verified.
pub(crate) async fn verify(
    vipl: &Vipl,
    va: u64,
    expected: &[u8],
    touch: bool,
    iteration: u32,
) -> Result<u64, ProgramError> {
    let len = expected.len() as u64;
    let got = if touch {
        vipl.read_mem(va, len).await
    } else {
        vipl.peek(va, len).await
    }
    .map_err(|error| ProgramError::Vipl {
        call: "verify",
        error,
    })?;
    compare(&got, expected, iteration)
}

/// Whether `got` is `expected` (the bytes verified), or where it first differs.
pub(crate) fn compare(got: &[u8], expected: &[u8], iteration: u32) -> Result<u64, ProgramError> {
    match crate::pattern::first_difference(got, expected) {
        None => Ok(expected.len() as u64),
        // One is the start of the other: a read of the wrong length.
        Some(k) if k == got.len().min(expected.len()) => Err(ProgramError::Protocol("short read")),
        Some(k) => Err(ProgramError::DataMismatch {
            iteration,
            offset: k as u64,
            expected: expected.get(k).copied().unwrap_or(0),
            found: got.get(k).copied().unwrap_or(0),
        }),
    }
}
