//! `--pcap FILE`: the Ethernet frames of a run as each DP83820 sent them (its GMII
//! transmitter's capture tap), merged in time order into one pcap file with nanosecond
//! timestamps (the edge of each frame's first preamble byte), FCS stripped as Wireshark
//! expects for link type Ethernet, or kept with `--pcap-fcs` (the link type then says
//! so).
//!
//! The taps record only when the system assembly turned capture on for a traced run;
//! without it the file holds the pcap header and no frame, and the command warns.

use gige_mac::gmii::Captured;
use gige_mac::pcap::{FcsMode, PcapWriter};
use std::io;

use super::files::OutFile;
use crate::system::{Comp, System};

/// Printed (stderr) when the run captured no frame.
pub(super) const NO_FRAMES_WARNING: &str =
    "hvia: warning: --pcap: no frames were captured (the transmitters' capture is not \
     enabled in this build's system assembly); the file holds only the pcap header\n";

/// Takes every frame the DP83820 transmitters of `sys` captured, in time order (ties:
/// node order).
pub(super) fn captured(sys: &mut System) -> Vec<Captured> {
    let mut frames = Vec::new();
    for id in sys.nodes.clone() {
        if let Some(Comp::MacSide(_, mac)) = sys.world.get_mut(id.mac_side) {
            frames.extend(mac.tx_mut().take_capture());
        }
    }
    frames.sort_by_key(|c| c.at);
    frames
}

/// Writes the captured frames of `sys` to `out`; returns how many.
///
/// # Errors
/// The file cannot be written.
pub(super) fn write(out: OutFile, frames: &[Captured], fcs: FcsMode) -> io::Result<usize> {
    let mut w = PcapWriter::new(out, fcs).map_err(io::Error::other)?;
    for c in frames {
        w.write_frame(c.at, c.frame.bytes())
            .map_err(io::Error::other)?;
    }
    w.finish().map_err(io::Error::other)?.finish()?;
    Ok(frames.len())
}
