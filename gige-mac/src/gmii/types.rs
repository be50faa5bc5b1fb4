//! What a GMII transmitter reports: [`TxStats`], [`TxRefused`], [`TxDone`], [`Captured`].

use crate::frame::Frame;
use sim_kernel::{Bytes, Cycles, Time};

/// What a transmitter counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxStats {
    /// Frames sent completely (through the last FCS byte).
    pub frames: u64,
    /// Bytes of those frames after the SFD, FCS included.
    pub bytes: Bytes,
    /// Clocks with TX_EN on: preamble, SFD and frame bytes \[GMII cycles\].
    pub busy: Cycles,
    /// Clocks spent in the inter-frame gap \[GMII cycles\].
    pub ifg: Cycles,
    /// Frames refused because the queue was full.
    pub queue_drops: u64,
    /// Frames refused because they had no bytes.
    pub rejected: u64,
    /// Most frames ever waiting in the queue at once.
    pub max_queued: usize,
    /// Streamed frames sent corrupted because a byte was not known in time.
    pub underruns: u64,
    /// Clocks a waiting data frame was held back by a received PAUSE (state `Paused`)
    /// \[GMII cycles\].
    pub paused: Cycles,
    /// Wake-ups with nothing to do: one in `Idle` or `Paused`, or a data phase with no
    /// frame on the wire (a wiring or scheduling bug; ignored, traced).
    pub unexpected_wakes: u64,
}

/// Why [`GmiiTx::enqueue`](super::GmiiTx::enqueue) refused a frame (the frame is handed back; it is also counted).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TxRefused {
    /// The queue already holds its capacity.
    #[error("transmit queue full; frame {} dropped", .0.id.0)]
    QueueFull(Frame),
    /// A frame without bytes cannot be sent.
    #[error("frame {} has no bytes", .0.id.0)]
    Empty(Frame),
}

/// A frame whose last FCS byte has left the transmitter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxDone {
    /// The frame, as it went out on the wire.
    pub frame: Frame,
    /// Edge its first preamble byte went out on.
    pub start: Time,
    /// Edge after its last FCS byte (TX_EN off).
    pub end: Time,
    /// A streamed frame's byte was not known when it was due: the frame went out corrupted.
    pub underrun: bool,
}

/// A frame recorded by the transmitter's tap, for pcap files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Captured {
    /// Edge its first preamble byte went out on at this transmitter.
    pub at: Time,
    /// The frame (FCS included).
    pub frame: Frame,
}
