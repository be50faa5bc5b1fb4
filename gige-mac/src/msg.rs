//! [`MacMsg`]: everything the components of this crate receive, and [`PortIndex`].
//!
//! Senders and receivers of each variant:
//!
//! | variant | from | to | when it lands |
//! |---|---|---|---|
//! | [`MacMsg::Transmit`] | a MAC (the test MAC's driver; later the DP83820) | a [`crate::port::MacPort`] | one `gmii` cycle after it is sent |
//! | [`MacMsg::TxWake`] | a GMII transmitter, to itself | its owner | the edge of its next state change |
//! | [`MacMsg::RxStart`] | the far transmitter, through the link | the receiving port | the edge the frame's first byte is complete on RXD |
//! | [`MacMsg::RxEnd`] | the far transmitter, through the link | the receiving port | the edge its last (FCS) byte is complete on RXD |
//! | [`MacMsg::SwitchForward`] | a switch, to itself | the switch | forwarding latency after the frame's end (cut-through: after its destination address) |
//! | [`MacMsg::SwitchCutThrough`] | a cut-through switch, to itself | the switch | forwarding latency after a frame's destination address is in |
//! | [`MacMsg::SwitchPauseRefresh`] | a switch, to itself | the switch | half a `pause_time` after it sent a PAUSE out of `port` |
//! | [`MacMsg::GecTransmit`], [`MacMsg::GecRxRelease`] | the VIA engine | the GEC | one core cycle later |
//! | [`MacMsg::GecTxDone`], [`MacMsg::GecRxFrame`] | the GEC | the VIA engine | one core cycle later |
//! | [`MacMsg::RxData`] | a transmitter sending a streamed (cut-through) frame | the receiving port | no sooner than the frame's first byte |
//! | [`MacMsg::GecInit`] | the testbench, at the start of a run | the GEC | its first core edge |
//! | [`MacMsg::GecReady`] | the GEC, once the DP83820 is programmed | the VIA engine | one core cycle later |
//! | [`MacMsg::GecWake`] | the GEC, to itself | the GEC | when its RAM port finishes a write |
//! | [`MacMsg::TraceTag`] | GEC -> DP83820 bus side (TX), DP83820 bus side -> GEC (RX) | the other | one cycle later; trace bookkeeping only |
//! | [`MacMsg::MacConfig`], [`MacMsg::MacTxData`], [`MacMsg::MacRxDrained`] | DP83820 bus side | DP83820 MAC side | one `gmii` cycle later (clock crossing) |
//! | [`MacMsg::MacTxStatus`], [`MacMsg::MacRxFrame`], [`MacMsg::MacRxEnd`] | DP83820 MAC side | DP83820 bus side | one local-bus cycle later (clock crossing) |
//! | [`MacMsg::MacBusWake`] | the DP83820 bus side, to itself | itself | when receive data will be visible |
//! | [`MacMsg::TxPauseEnd`] | a paused GMII transmitter, to itself | its owner | the edge its PAUSE gate opens |
//! | [`MacMsg::TxReorderRelease`] | a GMII transmitter whose wire holds a frame back, to itself | its owner | when the hold ends (`faults.reorder_hold_us`) |
//! | [`MacMsg::MacPauseRefresh`] | the DP83820 MAC side, to itself | itself | when its own PAUSE is due to be re-sent |
//!
//! The enum is `#[non_exhaustive]` so that matches elsewhere allow for new variants.

use crate::dp83820::{RxEndStatus, TxChunk};
use crate::frame::Frame;
use crate::rx::RxFrame;
use sim_kernel::MsgId;

/// A port of a component: 0 for a single-port MAC, the port number on a switch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortIndex(pub u16);

impl PortIndex {
    /// The index as a `usize`, for indexing a component's port table.
    #[must_use]
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// Everything gige-mac components receive.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MacMsg {
    /// Transmit request: queue `frame` (its bytes exactly as on the wire after the SFD,
    /// FCS included) for the GMII transmitter of the receiving MAC port.
    Transmit {
        /// The frame.
        frame: Frame,
    },
    /// Internal wake-up of the GMII transmitter of `port`: its state machine changes state
    /// on this edge (end of preamble, end of FCS, end of inter-frame gap).
    TxWake {
        /// Which transmitter of the receiving component.
        port: PortIndex,
    },
    /// The first byte (destination address, after preamble and SFD) of a frame is complete
    /// on the GMII receive side of `port`. Further bytes follow one per GMII clock; the
    /// frame shows only the bytes that have arrived ([`RxFrame::arrived`]).
    RxStart {
        /// Which port of the receiving component.
        port: PortIndex,
        /// The arriving frame.
        frame: RxFrame,
    },
    /// The last byte (last FCS byte) of a frame is complete on the GMII receive side of
    /// `port`; every byte of the frame is now available.
    RxEnd {
        /// Which port of the receiving component.
        port: PortIndex,
        /// The frame, complete.
        frame: RxFrame,
    },
    /// engine -> GEC: TX buffer `slot` of the [`crate::BufferRam`] holds a frame of `len`
    /// bytes (Ethernet header onward, no FCS) to transmit.
    GecTransmit {
        /// TX buffer slot.
        slot: u16,
        /// Frame length without FCS \[bytes\].
        len: u32,
        /// The message the frame belongs to (for traces).
        msg: MsgId,
    },
    /// GEC -> engine: the DP83820 has written back the TX descriptor of `slot`: the frame
    /// is sent (`ok`) or failed, and the slot is free again.
    GecTxDone {
        /// TX buffer slot.
        slot: u16,
        /// Whether the MAC reported the frame sent without error.
        ok: bool,
        /// The message the frame belonged to.
        msg: MsgId,
    },
    /// GEC -> engine: RX buffer `slot` holds a good received frame of `len` bytes (FCS
    /// stripped).
    GecRxFrame {
        /// RX buffer slot.
        slot: u16,
        /// Frame length without FCS \[bytes\].
        len: u32,
        /// Trace id given to the received frame.
        msg: MsgId,
    },
    /// engine -> GEC: the engine has moved the frame out of RX buffer `slot`; it may be
    /// handed back to the DP83820.
    GecRxRelease {
        /// RX buffer slot.
        slot: u16,
    },
    /// More bytes of a streamed frame in progress on `port` are known (see
    /// [`crate::gmii::stream`]); the frame shows the bytes known so far. Receivers that only
    /// look at whole frames ignore it.
    RxData {
        /// Which port of the receiving component.
        port: PortIndex,
        /// The arriving frame, with more bytes known.
        frame: RxFrame,
    },
    /// testbench -> GEC: the run starts; build the rings and program the DP83820.
    GecInit,
    /// GEC -> engine: the DP83820 is programmed (TXDP, RXDP, TXCFG, RXCFG, RXE): frames
    /// can be sent and received. Earlier `GecTransmit`s wait for this point.
    GecReady,
    /// GEC -> itself: its buffer-RAM write port finished a write.
    GecWake,
    /// Simulator bookkeeping, not hardware: the frame in the descriptor at local-bus
    /// address `descriptor` belongs to message `msg`. The GEC tells the DP83820 for TX
    /// descriptors, the DP83820 tells the GEC for RX descriptors, so that trace spans on
    /// both cards carry the sender's message id. Only trace spans read it, so it is sent
    /// only while tracing: untraced, frames carry message id 0, the GEC numbers the
    /// frames it receives itself, and the DP83820 numbers its bus requests in order
    /// (traced, their tag is the message id, which the bus's spans use).
    TraceTag {
        /// Local-bus address of the descriptor.
        descriptor: u64,
        /// The message.
        msg: MsgId,
    },
    /// DP83820 bus side -> MAC side: the values of TXCFG and RXCFG after a write.
    MacConfig {
        /// Transmit configuration register.
        txcfg: u32,
        /// Receive configuration register.
        rxcfg: u32,
    },
    /// DP83820 bus side -> MAC side: bytes of a frame moved into the transmit FIFO.
    MacTxData(TxChunk),
    /// DP83820 MAC side -> bus side: frame `frame` has left (or failed) and its bytes
    /// have left the transmit FIFO.
    MacTxStatus {
        /// The bus side's frame sequence number.
        frame: u64,
        /// How it ended.
        outcome: crate::dp83820::TxOutcome,
        /// Transmit FIFO bytes freed \[bytes\].
        fifo_bytes: u32,
    },
    /// DP83820 MAC side -> bus side: a frame is arriving into the receive FIFO (first
    /// message), or more of its bytes are known (later ones).
    MacRxFrame {
        /// The MAC side's frame sequence number.
        frame: u64,
        /// The arriving frame.
        rx: RxFrame,
    },
    /// DP83820 MAC side -> bus side: the frame's last byte arrived; its verdict.
    MacRxEnd {
        /// The MAC side's frame sequence number.
        frame: u64,
        /// Good (with its length), bad or dropped for lack of FIFO space.
        status: RxEndStatus,
    },
    /// DP83820 bus side -> MAC side: bytes left the receive FIFO (moved or discarded).
    MacRxDrained {
        /// Bytes \[bytes\].
        bytes: u32,
    },
    /// DP83820 bus side -> itself: receive bytes may have become visible.
    MacBusWake,
    /// Internal wake-up of the GMII transmitter of `port`, held by a received PAUSE: the
    /// pause may be over on this edge (see [`crate::gmii::pause`]). Owners route it to
    /// [`crate::GmiiTx::pause_end`].
    TxPauseEnd {
        /// Which transmitter of the receiving component.
        port: PortIndex,
    },
    /// Internal wake-up of the GMII transmitter of `port` whose wire faults hold a frame
    /// back for reordering: the hold may be over on this edge (see
    /// [`crate::fault::order`]). Owners route it to [`crate::GmiiTx::reorder_release`].
    TxReorderRelease {
        /// Which transmitter of the receiving component.
        port: PortIndex,
    },
    /// DP83820 MAC side -> itself: the PAUSE it sent may need re-sending (its RX FIFO is
    /// still above the low-water mark; see [`crate::dp83820::flow`]).
    MacPauseRefresh,
    /// Internal to a switch: the forwarding latency of a good frame received on `in_port`
    /// has passed; look up its destination and queue it on the output port(s).
    SwitchForward {
        /// The port it came in on (never sent back there).
        in_port: PortIndex,
        /// The frame.
        frame: Frame,
    },
    /// Internal to a cut-through switch: the destination address of frame `id`, still
    /// arriving on `in_port`, is in and the forwarding latency has passed; start it on its
    /// output port if that port is idle (else it is stored and forwarded).
    SwitchCutThrough {
        /// The port it is arriving on.
        in_port: PortIndex,
        /// The arriving frame (a later frame on the same port makes this one stale).
        id: crate::frame::FrameId,
    },
    /// Internal to a switch: half the `pause_time` of the PAUSE it sent out of `port` has
    /// passed; re-send it if that node's frames still fill the buffers (see
    /// [`crate::switch::flow`]).
    SwitchPauseRefresh {
        /// The port the PAUSE went out of.
        port: PortIndex,
    },
}

impl MacMsg {
    /// The variant's name, for logs.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        match self {
            MacMsg::Transmit { .. } => "transmit",
            MacMsg::TxWake { .. } => "tx-wake",
            MacMsg::RxStart { .. } => "rx-start",
            MacMsg::RxEnd { .. } => "rx-end",
            MacMsg::SwitchForward { .. } => "switch-forward",
            MacMsg::SwitchCutThrough { .. } => "switch-cut-through",
            MacMsg::SwitchPauseRefresh { .. } => "switch-pause-refresh",
            MacMsg::GecTransmit { .. } => "gec-transmit",
            MacMsg::GecTxDone { .. } => "gec-tx-done",
            MacMsg::GecRxFrame { .. } => "gec-rx-frame",
            MacMsg::GecRxRelease { .. } => "gec-rx-release",
            MacMsg::RxData { .. } => "rx-data",
            MacMsg::GecInit => "gec-init",
            MacMsg::GecReady => "gec-ready",
            MacMsg::GecWake => "gec-wake",
            MacMsg::TraceTag { .. } => "trace-tag",
            MacMsg::MacConfig { .. } => "mac-config",
            MacMsg::MacTxData(_) => "mac-tx-data",
            MacMsg::MacTxStatus { .. } => "mac-tx-status",
            MacMsg::MacRxFrame { .. } => "mac-rx-frame",
            MacMsg::MacRxEnd { .. } => "mac-rx-end",
            MacMsg::MacRxDrained { .. } => "mac-rx-drained",
            MacMsg::MacBusWake => "mac-bus-wake",
            MacMsg::TxPauseEnd { .. } => "tx-pause-end",
            MacMsg::TxReorderRelease { .. } => "tx-reorder-release",
            MacMsg::MacPauseRefresh => "mac-pause-refresh",
        }
    }
}
