//! What became of the messages of a run ([`Delivery`]): sent, delivered, lost,
//! duplicated, corrupted, resent, and the frames dropped on the way by cause, read off
//! the cards' counters, the DP83820s, the wire-fault injectors of every node and the
//! switch's ports.
//!
//! - `messages`: every VIA message the cards took from a send queue (`sends_started`):
//!   the programs' set-up exchange (one each way) included;
//! - `delivered`: messages received and placed completely by a card
//!   (`messages_received`);
//! - `lost`: messages sent and never delivered (`messages - delivered` when more were
//!   sent than delivered);
//! - `duplicated`: messages delivered more than once (`delivered - messages` when more
//!   were delivered than sent; the receiver's sequence check keeps it 0);
//! - `corrupted`: messages whose bytes did not match at the receiving program (which
//!   compares every byte of every message; a mismatch ends the run);
//! - `retransmissions`: data frames the cards sent again (go-back after a Nak or a
//!   timeout);
//! - `frames_dropped`: frames that did not deliver their bytes, by cause (the keys are
//!   always present, zeros included).

use serde::Serialize;
use std::collections::BTreeMap;

use super::System;

/// What became of a run's messages (see the module doc).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Delivery {
    /// Messages the cards took from send queues.
    pub messages: u64,
    /// Messages received and placed completely.
    pub delivered: u64,
    /// Messages sent and never delivered.
    pub lost: u64,
    /// Messages delivered more than once.
    pub duplicated: u64,
    /// Messages whose bytes did not match at the receiving program.
    pub corrupted: u64,
    /// Data frames sent again.
    pub retransmissions: u64,
    /// Frames that did not deliver their bytes, by cause.
    pub frames_dropped: BTreeMap<&'static str, u64>,
}

/// The causes of `frames_dropped`, with what each counts.
pub const DROP_CAUSES: [(&str, &str); 9] = [
    ("wire_loss", "lost on the wire (faults.frame_loss)"),
    (
        "link_down",
        "lost to the link being down (faults.link_down_*)",
    ),
    (
        "crc_error",
        "dropped by the receiving DP83820 for a bad FCS (bit errors, truncation)",
    ),
    (
        "rx_fifo_overflow",
        "dropped by the receiving DP83820 for a full RX FIFO",
    ),
    (
        "duplicate",
        "dropped by the receiving card: already received (reliable VIs)",
    ),
    (
        "out_of_order",
        "dropped by the receiving card: after a gap, until the sender goes back (reliable VIs)",
    ),
    (
        "out_of_sequence",
        "taken by the receiving card after a gap on an unreliable VI: its message fails",
    ),
    (
        "switch_queue_overflow",
        "dropped by the switch: no room in the output port's queue or packet buffer",
    ),
    (
        "switch_bad_frame",
        "dropped by the switch on input: bad FCS, too short, too long or broken",
    ),
];

impl Delivery {
    /// The delivery of `sys`'s run so far; `corrupted`: messages the programs found
    /// with wrong bytes.
    #[must_use]
    pub fn of(sys: &System, corrupted: u64) -> Self {
        let mut d = Delivery {
            corrupted,
            ..Delivery::default()
        };
        let mut drop = [0u64; DROP_CAUSES.len()];
        for n in 0..sys.macs.len() {
            if let Some(e) = sys.engine(n) {
                let s = e.stats();
                d.messages += s.sends_started;
                d.delivered += s.messages_received;
                d.retransmissions += s.frames_resent;
                drop[4] += s.rx_duplicates;
                drop[5] += s.rx_out_of_order;
                drop[6] += s.rx_sequence_errors;
            }
            let w = sys.wire_faults(n);
            drop[0] += w.frames_lost;
            drop[1] += w.link_down_lost;
            if let Some(m) = sys.mac_side(n) {
                let s = m.stats();
                drop[2] += s.rx_crc_errors;
                drop[3] += s.rx_overflows;
            }
        }
        if let Some(sw) = sys.switch() {
            for port in 0..sw.port_count() {
                let p = u16::try_from(port).unwrap_or(u16::MAX);
                if let Some(st) = sw.port_stats(gige_mac::PortIndex(p)) {
                    drop[7] += st.queue_drops + st.buffer_drops;
                    drop[8] += st.fcs_drops + st.malformed_drops;
                }
            }
        }
        d.lost = d.messages.saturating_sub(d.delivered);
        d.duplicated = d.delivered.saturating_sub(d.messages);
        d.frames_dropped = DROP_CAUSES
            .iter()
            .zip(drop)
            .map(|((cause, _), n)| (*cause, n))
            .collect();
        d
    }

    /// Whether anything but clean delivery happened (the table then shows it).
    #[must_use]
    pub fn eventful(&self) -> bool {
        self.lost + self.duplicated + self.corrupted + self.retransmissions > 0
            || self.frames_dropped.values().any(|&n| n > 0)
    }

    /// One line for people: the counts, and the causes that are not zero.
    #[must_use]
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} messages, {} delivered, {} lost, {} duplicated, {} corrupted, {} frames resent",
            self.messages,
            self.delivered,
            self.lost,
            self.duplicated,
            self.corrupted,
            self.retransmissions
        );
        let causes: Vec<String> = self
            .frames_dropped
            .iter()
            .filter(|(_, &n)| n > 0)
            .map(|(c, n)| format!("{c} {n}"))
            .collect();
        if !causes.is_empty() {
            s.push_str("; frames dropped: ");
            s.push_str(&causes.join(", "));
        }
        s
    }
}
