//! The National DP83820 gigabit MAC as two components: its **bus side**
//! ([`Dp83820Bus`], clocked by the local PCI bus: register file, transmit and receive DMA
//! engines, PCI master) and its **MAC side** ([`Dp83820Mac`], clocked by the 125 MHz
//! `gmii` domain: transmit and receive FIFOs at the wire, GMII transmitter and receiver).
//! The FIFOs sit between them; every crossing is a message, so it costs at least one
//! cycle of the receiving clock, as synchronizers do.
//!
//! ```text
//!   GEC --CR.TXE (local-bus write)--> regs  TX DMA: desc fetch -> data bursts --MacTxData--> TX FIFO -> GmiiTx ==> wire
//!   buffer RAM <--DMA read/write-- bus side                     <--MacTxStatus-- (frame sent)
//!   (GEC target) <--cmdsts write-back--    RX DMA: desc fetch -> data bursts <--MacRxFrame/End-- RX FIFO <- GmiiRx <== wire
//!                                                                 --MacRxDrained-->
//! ```
//!
//! **Transmit.** TXE starts the engine at TXDP (a TXE while it is busy is latched, so a
//! descriptor handed over during a fetch is never missed). It reads the 16-byte
//! descriptor; if OWN is set it reads the buffer in bursts of at most MXDMA bytes
//! (TXCFG), each only when the FIFO has room for it and at least FLTH bytes free. Each
//! burst's bytes cross to the MAC side when the burst ends. When the frame's data is all
//! read, TXDP follows the link and the next descriptor is fetched while the MAC sends
//! (a descriptor whose status write-back is still pending is not re-read: the ring
//! waits). The MAC side starts a frame once DRTH bytes of it (TXCFG drain threshold) or
//! the whole frame are in the FIFO, pads it to 60 bytes (TXCFG ATP) and appends the
//! FCS; bytes that arrive later stream onto the wire ([`crate::gmii::stream`]); a byte
//! not there when due is an underrun. When the frame has left, the bus side writes back
//! cmdsts (OWN cleared, OK set, or the TFU status bit on an underrun). A data read that
//! fails on the bus (master or target abort) aborts its frame: nothing of it is sent if
//! it had not started (cmdsts TXA), and one already on the wire runs dry (TFU); the
//! missing bytes are never made up. A refused descriptor (several fragments, or empty)
//! is written back with TXA too. A descriptor
//! without OWN stops the engine (TXIDLE) until the next TXE. (In DP83815/DP83820 terms
//! FLTH is the *fill* threshold of the bus side and DRTH the *drain* threshold at which
//! transmission starts: the brief's "fill threshold reached or whole frame in" is DRTH.)
//!
//! **Receive.** RXE starts the engine at RXDP: it fetches the descriptor and, if the
//! MAC owns it (OWN clear), waits for a frame. The MAC side puts arriving frames into
//! the 32 KB FIFO (the bus side sees a byte one local-bus clock after it is complete on
//! RXD) and judges each at its end (FCS, length); a good frame that would not fit in
//! the FIFO at its end is dropped and counted (RXORN), bad frames are counted and
//! dropped (a bad FCS also as a CRC error, `MacSideStats::rx_crc_errors`: errored frames
//! are not accepted, so nothing of them is written back as a received frame). The bus side moves the head frame into the descriptor's buffer in bursts of
//! at most MXDMA bytes as soon as RXCFG DRTH bytes are visible (or the frame has ended),
//! holding back the last 4 bytes until the end when the FCS is stripped; it may thus
//! start before the end of the frame. A frame that turns out bad after its DMA started
//! leaves the descriptor to the next frame (rewind). At the end it writes back cmdsts
//! (OWN, OK, size = bytes written, without the FCS when STRIPCRC is set) and follows
//! the link. A descriptor with OWN set stops the engine (RXIDLE): frames wait in the
//! FIFO until an RXE. FIFO space of a frame is freed when it has left the FIFO
//! (write-back done), so early DMA never makes room sooner than that (conservative).
//!
//! **Flow control** ([`flow`], IEEE 802.3x): when the RX FIFO passes its high-water mark
//! the MAC side sends a PAUSE ahead of its queued frames, re-sends it while the FIFO
//! stays above the low-water mark and sends a resume (`pause_time` 0) below it; a PAUSE
//! it receives stops its transmitter from starting data frames for `pause_time` x 512
//! bit times after the frame in progress ([`crate::gmii::pause`]). MAC Control frames
//! are consumed by the MAC side and never reach the bus side. Parameters:
//! [`FlowControl`] (in [`Dp83820Params::flow`]).
//!
//! **Trace spans** (stage names are stable; per frame message, contiguous along the
//! one-way path, each written by the component where the frame waits):
//!
//! | stage | by | from | to |
//! |---|---|---|---|
//! | `gec descriptor write` | GEC | `GecTransmit` lands | descriptor in buffer RAM |
//! | `txe write` | GEC | descriptor written | CR.TXE write ends on the local bus |
//! | `tx dma wait` | bus side | TXE seen | descriptor fetch issued (engine busy with earlier frames) |
//! | `mac descriptor fetch` | bus side | fetch issued | descriptor read |
//! | `mac data fetch` | MAC side | descriptor read | drain threshold (or whole frame) in the TX FIFO |
//! | `tx fifo wait` | MAC side | start condition met | first preamble byte (line busy, IFG) |
//! | `gmii tx` | GMII transmitter | first preamble byte | last FCS byte out (the wire) |
//! | `phy+cable+phy` | GMII transmitter | last FCS byte out | last byte complete at the far RXD |
//! | `rx fifo` | far bus side | end of frame at RXD | its receive DMA starts (empty if it started earlier) |
//! | `mac rx dma` | far bus side | later of end of frame and DMA start | last data burst done |
//! | `rx write-back` | far bus side | last data burst done | cmdsts write done |
//! | `gec notify` | far GEC | write-back seen | `GecRxFrame` lands at the engine |
//! | `tx write-back` | bus side | frame-sent status seen | cmdsts write done (completion path) |
//! | `gec tx done` | GEC | write-back seen | `GecTxDone` lands at the engine (completion path) |
//!
//! `tracing` targets: `mac::tx`, `mac::rx`.

pub mod bus;
pub mod flow;
pub mod mac;
pub mod params;
mod port;
pub mod regs;
pub mod rx_dma;
pub mod tx_dma;

pub use bus::{BusSideStats, Dp83820Bus};
pub use mac::{Dp83820Mac, MacSideStats};
pub use params::{Dp83820Params, FlowControl};
pub use port::BusPort;
pub use rx_dma::RxState;
pub use tx_dma::TxState;

use sim_kernel::{MsgId, Time};

/// Bytes of one transmit frame moved into the TX FIFO by one burst.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxChunk {
    /// The bus side's frame sequence number.
    pub frame: u64,
    /// Offset of `data` within the frame \[bytes\].
    pub offset: u32,
    /// The bytes.
    pub data: Vec<u8>,
    /// The frame's length from its descriptor, without pad and FCS \[bytes\].
    pub len: u32,
    /// The message the frame belongs to (traces).
    pub msg: MsgId,
    /// When the bus side had read the frame's descriptor (start of `mac data fetch`).
    pub since: Time,
    /// Bytes the burst asked for (`data` holds fewer when it failed).
    pub burst: u32,
    /// The burst's bus transaction failed (master or target abort): `data` holds only
    /// the bytes that arrived, and the frame cannot be sent whole.
    pub failed: bool,
}

/// How a transmitted frame ended (the MAC side's report to the bus side).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxOutcome {
    /// Sent whole: cmdsts OK.
    Sent,
    /// The FIFO ran dry while the frame was on the wire: sent corrupted, cmdsts TFU.
    Underrun,
    /// A data read of the frame failed on the bus before it started: not sent, cmdsts
    /// TXA (transmit abort).
    Aborted,
}

/// The MAC side's verdict on a received frame, at its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxEndStatus {
    /// Good FCS and length; it holds `len` bytes in the FIFO, FCS included.
    Good {
        /// Frame length with FCS \[bytes\].
        len: u32,
    },
    /// Runt, too long, bad FCS or framing error: dropped (counted by the MAC side).
    Bad,
    /// Good, but the FIFO had no room for it: dropped (counted by the MAC side).
    Overflow,
}
