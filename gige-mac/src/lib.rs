//! `gige-mac`: HVIA-GE's gigabit Ethernet: the FPGA's GEC and the National DP83820 MAC
//! on the card's local PCI bus, and the wire side: real frames with a real FCS, the GMII
//! byte stream at 125 MHz, the DP83861 PHY and the cable as latencies, a
//! store-and-forward or cut-through switch for more than two nodes, and pcap output.
//!
//! ```text
//!  card.core            pci.local                               gmii (125 MHz)
//!  engine <-> Gec <==local PciBus==> Dp83820Bus <-(FIFOs)-> Dp83820Mac <==Link==> far MAC
//!             | (target: buffer RAM, master: DP83820 registers)
//!             BufferRam (env)
//! ```
//!
//! ```text
//!   MAC A                                                         MAC B
//!   GmiiTx --TXD--> PHY tx --cable--> PHY rx --RXD--> GmiiRx  (RxStart at first byte,
//!   GmiiRx <--RXD-- PHY rx <--cable-- PHY tx <--TXD-- GmiiTx   RxEnd at last byte)
//!            \__________________ Link (Attachment) _______/
//!
//!   three or more nodes: every MAC port is linked to one port of a Switch
//! ```
//!
//! | module | owns |
//! |---|---|
//! | [`buffer_ram`] | the card's buffer RAM (TX/RX buffers, DP83820 rings) and the engine-GEC interface |
//! | [`gec`] | [`Gec`]: the FPGA's gigabit Ethernet controller (RAM target, DP83820 register master, rings) |
//! | [`dp83820`] | [`Dp83820Bus`] (registers, DMA engines) and [`Dp83820Mac`] (FIFOs at the wire) |
//! | [`testbench`] | the DP83820's DMA over the local bus against the GEC's RAM (`hvia dma --bus local`) |
//! | [`frame`] | building and checking Ethernet frames (pad, FCS); [`Frame`] in flight |
//! | [`gmii`] | [`GmiiTx`]: preamble, SFD, frame, IFG on the 125 MHz clock; queue; PAUSE gate; stats |
//! | [`pause`] | IEEE 802.3x MAC Control frames: building and reading PAUSE, the pause quantum |
//! | [`rx`] | [`RxFrame`] (bytes arriving one per clock), [`GmiiRx`] (pairing, FCS check) |
//! | [`phy`] | the DP83861 PHY as transmit and receive pipeline latencies |
//! | [`cable`] | cable propagation |
//! | [`fault`] | faults on the wire, per direction: frame loss, bit errors, link down ([`WireFaults`]) |
//! | [`link`] | PHY + cable + PHY, and a transmitter's view of its far end ([`Attachment`]) |
//! | [`port`] | [`MacPort`], a plain MAC endpoint for wire-level tests |
//! | [`switch`] | [`Switch`], N-port store-and-forward or cut-through, port buffers, 802.3x PAUSE |
//! | [`fdb`] | the switch's address-learning table |
//! | `tags` | values keyed by descriptor address (the GEC's and DP83820's per-frame trace tags) |
//! | [`pcap`] | pcap writer (nanosecond timestamps) and reader |
//! | [`spare`] | [`SpareBuffers`], frame byte buffers kept for reuse |
//! | [`msg`] | [`MacMsg`], everything these components receive |
//! | [`params`] | parameter structs, defaults = the published system |
//!
//! **Plugging a MAC in.** A MAC port is a component clocked by the 125 MHz `gmii` domain
//! that owns a [`GmiiTx`] (built with the [`Attachment`] that [`Link::attachment`] gives for
//! its far end) and a [`GmiiRx`]. It routes [`MacMsg::TxWake`] to [`GmiiTx::wake`], hands
//! frames to [`GmiiTx::enqueue`], and gives [`MacMsg::RxStart`] / [`MacMsg::RxEnd`] to its
//! receiver; between the two, [`RxFrame::arrived`] shows the bytes received so far.
//! A MAC that obeys PAUSE frames calls [`GmiiTx::pause`] and routes
//! [`MacMsg::TxPauseEnd`] to [`GmiiTx::pause_end`] (the DP83820 and the switch do;
//! [`MacPort`] does not). Every owner routes [`MacMsg::TxReorderRelease`] to
//! [`GmiiTx::reorder_release`] (wire faults that hold frames back).
//! [`MacPort`] is exactly that and nothing more. Handlers are generic over the system
//! message type: `fn handle<M: From<MacMsg>>(&mut self, msg: MacMsg, ctx: &mut Ctx<'_, M>)`.
//!
//! `tracing` targets: `mac::gec` (the GEC), `mac::tx` / `mac::rx` (the DP83820's transmit
//! and receive paths), `mac::gmii` (transmitters, receivers, MAC ports), `mac::phy`
//! (frames put on a link), `mac::switch`.

#![forbid(unsafe_code)]

pub mod buffer_ram;
pub mod cable;
pub mod dp83820;
pub mod fault;
pub mod fdb;
pub mod frame;
pub mod gec;
pub mod gmii;
pub mod link;
pub mod msg;
pub mod params;
pub mod pause;
pub mod pcap;
pub mod phy;
pub mod port;
pub mod rx;
pub mod spare;
pub mod switch;
mod tags;
pub mod testbench;

pub use buffer_ram::{BufferError, BufferLayout, BufferRam};
pub use cable::Millimetres;
pub use dp83820::{
    BusSideStats, Dp83820Bus, Dp83820Mac, Dp83820Params, FlowControl, MacSideStats, RxEndStatus,
    RxState, TxChunk, TxState,
};
pub use fault::{FrameFate, LinkDown, WireFaultParams, WireFaultStats, WireFaults};
pub use frame::{FcsError, Frame, FrameError, FrameId, FrameLimits};
pub use gec::{Gec, GecParams, GecState, GecStats};
pub use gmii::stream::Extended;
pub use gmii::{Captured, GmiiState, GmiiTx, TxDone, TxRefused, TxStats};
pub use link::{Attachment, Link};
pub use msg::{MacMsg, PortIndex};
pub use params::{
    CableParams, ForwardingMode, GigeParams, LinkParams, MacPortParams, PhyParams,
    SwitchFlowControl, SwitchParams, WireParams, GMII_CLOCK_MHZ,
};
pub use port::{MacPort, RxFailure};
pub use rx::{GmiiRx, Received, RxError, RxFrame, RxStats};
pub use spare::SpareBuffers;
pub use switch::{Switch, SwitchError, SwitchPortStats};
