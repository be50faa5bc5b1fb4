//! `gige-mac`: the wire side of HVIA-GE's gigabit Ethernet: real frames with a real FCS,
//! the GMII byte stream at 125 MHz, the DP83861 PHY and the cable as latencies, a
//! store-and-forward switch for more than two nodes, and pcap output.
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
//! | [`frame`] | building and checking Ethernet frames (pad, FCS); [`Frame`] in flight |
//! | [`gmii`] | [`GmiiTx`]: preamble, SFD, frame, IFG on the 125 MHz clock; queue; stats |
//! | [`rx`] | [`RxFrame`] (bytes arriving one per clock), [`GmiiRx`] (pairing, FCS check) |
//! | [`phy`] | the DP83861 PHY as transmit and receive pipeline latencies |
//! | [`cable`] | cable propagation |
//! | [`link`] | PHY + cable + PHY, and a transmitter's view of its far end ([`Attachment`]) |
//! | [`port`] | [`MacPort`], a test MAC endpoint (until the DP83820 exists) |
//! | [`switch`] | [`Switch`], N-port store-and-forward |
//! | [`fdb`] | the switch's address-learning table |
//! | [`pcap`] | pcap writer (nanosecond timestamps) and reader |
//! | [`msg`] | [`MacMsg`], everything these components receive |
//! | [`params`] | parameter structs, defaults = the published system |
//!
//! **Plugging a MAC in.** A MAC port is a component clocked by the 125 MHz `gmii` domain
//! that owns a [`GmiiTx`] (built with the [`Attachment`] that [`Link::attachment`] gives for
//! its far end) and a [`GmiiRx`]. It routes [`MacMsg::TxWake`] to [`GmiiTx::wake`], hands
//! frames to [`GmiiTx::enqueue`], and gives [`MacMsg::RxStart`] / [`MacMsg::RxEnd`] to its
//! receiver; between the two, [`RxFrame::arrived`] shows the bytes received so far.
//! [`MacPort`] is exactly that and nothing more. Handlers are generic over the system
//! message type: `fn handle<M: From<MacMsg>>(&mut self, msg: MacMsg, ctx: &mut Ctx<'_, M>)`.
//!
//! `tracing` targets: `mac::gmii` (transmitters, receivers, MAC ports), `mac::phy` (frames
//! put on a link), `mac::switch`.

#![forbid(unsafe_code)]

pub mod buffer_ram;
pub mod cable;
pub mod fdb;
pub mod frame;
pub mod gmii;
pub mod link;
pub mod msg;
pub mod params;
pub mod pcap;
pub mod phy;
pub mod port;
pub mod rx;
pub mod switch;

pub use buffer_ram::{BufferError, BufferLayout, BufferRam};
pub use cable::Millimetres;
pub use frame::{FcsError, Frame, FrameError, FrameId, FrameLimits};
pub use gmii::{Captured, GmiiState, GmiiTx, TxDone, TxRefused, TxStats};
pub use link::{Attachment, Link};
pub use msg::{MacMsg, PortIndex};
pub use params::{
    CableParams, GigeParams, LinkParams, MacPortParams, PhyParams, SwitchParams, WireParams,
    GMII_CLOCK_MHZ,
};
pub use port::{MacPort, RxFailure};
pub use rx::{GmiiRx, Received, RxError, RxFrame, RxStats};
pub use switch::{Switch, SwitchError, SwitchPortStats};
