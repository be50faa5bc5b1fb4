//! [`EngineParams`]: every number of the VIA protocol engine, with its unit and source,
//! and [`EnginePorts`], the components it talks to.
//!
//! The HVIA-GE paper publishes the engine's structure (doorbell, ATT manager, RDMA
//! engine, VI protocol manager; Send/Recv FIFOs and TX/RX buffers moving one word per
//! clock) but none of its internal latencies or sizes. Every processing time below is
//! therefore an **assumption**, kept as an explicit cycle count of the FPGA core clock
//! (`card.core`) so that it can be calibrated against the published 12.5 us one-way
//! latency later. A 32-bit word path is the paper's ("one word per clock").

use gige_mac::BufferError;
use sim_kernel::{Bytes, ComponentId, Cycles, MsgId};
use via_abi::bar;
use via_abi::MacAddr;

/// How the word movers (Send FIFO -> TX buffer, RX buffer -> Recv FIFO) are woken. Both
/// give identical results (a test proves it); the words move one per core clock either
/// way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WordStepping {
    /// One kernel event per core clock while a mover is busy; each moves one word (the
    /// reference).
    PerWord,
    /// One event at the end of each run of words (the edge the per-word stepping would
    /// reach), moving the whole run.
    Batched,
}

/// The components the engine talks to (its ports), given when the system is wired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnginePorts {
    /// The system PCI bus: target-read answers and write back-pressure go there.
    pub bus: ComponentId,
    /// The card's DMA master on that bus (`pci_model::DmaMaster`).
    pub dma: ComponentId,
    /// The ATT manager (`crate::att::AttManager`).
    pub att: ComponentId,
    /// The GEC (gigabit Ethernet controller logic in the FPGA): frame handoff and arrival.
    pub gec: ComponentId,
}

/// Parameters of the VIA protocol engine. Cycle counts are core-clock cycles
/// (`card.core`: 33 MHz in the published preset, 30.3 ns each).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineParams {
    /// First address of the card's BAR0 on the system bus \[bus address\], 64 KB
    /// ([`bar::BAR0_SIZE`]). Default 0xE000_0000; setting (assigned by the BIOS).
    pub bar0_base: u64,
    /// The card's MAC address (source of its frames, `MAC_LO`/`MAC_HI`). Default
    /// 02:48:56:49:41:01 (locally administered); setting.
    pub mac: MacAddr,
    /// VI contexts the card holds \[VIs\], at most [`bar::MAX_VIS`]. Default 64; assumption
    /// (not published; enough for one process per node with several connections).
    pub max_vis: u16,
    /// Entries of the doorbell FIFO \[doorbells\]. Default 16; assumption (not published).
    pub doorbell_fifo_depth: usize,
    /// Entries kept free when the card starts Retrying doorbell writes \[doorbells\]: room
    /// for writes that complete before the Retry takes effect on the bus. With the core
    /// on the PCI clock none can (the card's retry request reaches the bus one PCI clock
    /// after it saw a write, before the next posted write's first data phase; a flood
    /// test with 0 sees no overrun); 1 is a margin for a slower core clock. Default 1;
    /// assumption (the "almost full" threshold of the FIFO).
    pub doorbell_skid: usize,
    /// Cycles to decode one doorbell and dispatch it \[cycles\]. Default 2; assumption.
    pub doorbell_decode_cycles: Cycles,
    /// Posted receive descriptors one VI holds before its receive doorbells wait in the
    /// doorbell FIFO \[descriptors\]. Default 64; assumption.
    pub recv_queue_depth: usize,
    /// Send descriptors in flight at once (each on its own VI) \[descriptors\]. Default 4;
    /// assumption (the paper does not say how many descriptors the engine overlaps).
    pub max_send_contexts: usize,
    /// Cycles to decode and check a fetched VI descriptor \[cycles\]. Default 2; assumption.
    pub descriptor_decode_cycles: Cycles,
    /// Most payload bytes the engine puts in one frame \[bytes\]: the MTU minus the
    /// Ethernet and VIA headers (1..=1460). Default 1460 (MTU 1514).
    pub fragment_payload: u32,
    /// The doorbell unit checks a posted receive descriptor (reads it, checks its
    /// format, translates its buffers) before taking its doorbell (`recvcheck`).
    /// Default false.
    pub check_recv_on_post: bool,
    /// The doorbell unit keeps a queue tail's Next link when a DMA read of that tail
    /// finds it already written, and dispatches the queue's next doorbell without
    /// `HEAD` with it, without reading the queue link (`qlink`). Default false.
    pub follow_read_links: bool,
    /// The receive path reads and translates a message's receive descriptor again for
    /// every frame of the message, keeping nothing between frames. Default false (once
    /// per message).
    pub recv_descriptor_per_frame: bool,
    /// Cycles to assemble the Ethernet + VIA headers of a frame before its first word is
    /// written into the TX buffer \[cycles\]; the 54 header bytes then take 14 word moves
    /// like payload. Default 2; assumption.
    pub header_build_cycles: Cycles,
    /// Cycles from a frame's last word in the TX buffer to the GEC seeing the handoff
    /// \[cycles, >= 1\]. Default 1 (a registered handoff strobe); assumption.
    pub handoff_cycles: Cycles,
    /// Cycles to compare a received header after its 14 words have been read out of the
    /// RX buffer (one per clock) \[cycles\]. Default 2; assumption.
    pub header_check_cycles: Cycles,
    /// Wait cycles before the card answers a BAR register read (0: the data is on the
    /// bus in the clock after the card sees the address) \[PCI clocks\]. Default 0;
    /// assumption (registers are flip-flops in the FPGA).
    pub reg_read_wait: Cycles,
    /// Size of the Send FIFO between the DMA master and the TX buffers \[bytes\]. Default
    /// 2048 (four 512-byte bursts); assumption (not published).
    pub send_fifo_bytes: Bytes,
    /// Size of the Recv FIFO between the RX buffers and the DMA master \[bytes\]. Default
    /// 2048; assumption (not published).
    pub recv_fifo_bytes: Bytes,
    /// Largest payload DMA the engine asks the DMA master for at once \[bytes\]. Default
    /// 512; paper (512-byte DMA bursts).
    pub dma_chunk_bytes: Bytes,
    /// Pages the ATT registration mailbox accepts for one region \[pages\]. Default 65 536
    /// (256 MB, the host's memory); assumption.
    pub max_region_pages: usize,
    /// Connect requests the card keeps while no matching `ConnectWait` is posted
    /// \[requests\]; more are rejected. Default 8; assumption.
    pub max_pending_connects: usize,
    /// First trace id this card hands out; give each card of a system a disjoint range.
    /// Default 1; setting.
    pub msg_id_base: MsgId,
    /// How the word movers are stepped (no effect on results). Default batched; setting.
    pub stepping: WordStepping,
    /// Reliable VIs recover lost or corrupted frames: go-back-N per VI, the resent
    /// fragments read again from host memory. `false`: a sequence gap or a failed
    /// transmission breaks a reliable VI (TRANSPORT_ERROR). Default true; assumption (the paper publishes the reliability levels, not
    /// how the card keeps them on a lossy link).
    pub retransmit: bool,
    /// Retransmission timeout \[cycles\]: from a reliable data frame's transmit
    /// completion to going back to the oldest unacknowledged frame if no Ack moved the
    /// window (1 000..=33 000 000). Default 33 000 (1 ms at 33 MHz); assumption (above the
    /// worst fault-free Ack delay, about 0.57 ms with the default window).
    pub retx_timeout_cycles: Cycles,
    /// Timeouts in a row without progress a reliable VI survives; one more completes the
    /// oldest unacknowledged send with TRANSPORT_ERROR and breaks the VI. Default 7;
    /// assumption (InfiniBand's largest retry count, a 3-bit field).
    pub retx_limit: u8,
    /// Data frames a reliable VI may have sent and not had acknowledged \[frames\]
    /// (2..=4096); the sender asks for an Ack every `max(1, window / 4)` frames. Default
    /// 64; assumption (sized not to bind without faults: about 32 frames are in flight).
    pub retx_window_frames: u32,
    /// The engine implements RDMA read (VIA 1.0 optional; `CARD_STATUS` bit 1): an RDMA
    /// read descriptor on a reliable VI sends a read request, the peer's engine answers
    /// with the data. `false`, the published card (RDMA write only): an RDMA read
    /// descriptor completes with `FORMAT_ERROR` and a read request is dropped as an
    /// unknown op. Default false; paper (the card implements RDMA write).
    pub rdma_read: bool,
}

impl Default for EngineParams {
    fn default() -> Self {
        Self {
            bar0_base: 0xE000_0000,
            mac: MacAddr([0x02, 0x48, 0x56, 0x49, 0x41, 0x01]),
            max_vis: 64,
            doorbell_fifo_depth: 16,
            doorbell_skid: 1,
            doorbell_decode_cycles: Cycles(2),
            recv_queue_depth: 64,
            max_send_contexts: 4,
            descriptor_decode_cycles: Cycles(2),
            fragment_payload: 1460,
            check_recv_on_post: false,
            follow_read_links: false,
            recv_descriptor_per_frame: false,
            header_build_cycles: Cycles(2),
            handoff_cycles: Cycles(1),
            header_check_cycles: Cycles(2),
            reg_read_wait: Cycles(0),
            send_fifo_bytes: Bytes(2048),
            recv_fifo_bytes: Bytes(2048),
            dma_chunk_bytes: Bytes(512),
            max_region_pages: 65_536,
            max_pending_connects: 8,
            msg_id_base: MsgId(1),
            stepping: WordStepping::Batched,
            retransmit: true,
            retx_timeout_cycles: Cycles(33_000),
            retx_limit: 7,
            retx_window_frames: 64,
            rdma_read: false,
        }
    }
}

impl EngineParams {
    /// Checks the ranges.
    ///
    /// # Errors
    /// A zero-sized FIFO, chunk or VI table, more VIs than the doorbell windows address,
    /// a skid that leaves no room, a FIFO smaller than a word, a BAR that overflows, or a
    /// retransmission timeout or window out of its range.
    pub fn validate(&self) -> Result<(), EngineError> {
        let bad = |name: &'static str, why: &'static str| Err(EngineError::BadParam { name, why });
        if self.max_vis == 0 || u64::from(self.max_vis) > bar::MAX_VIS {
            return bad("max_vis", "must be 1..=3840 (the doorbell windows of BAR0)");
        }
        if self.doorbell_fifo_depth == 0 || self.doorbell_skid >= self.doorbell_fifo_depth {
            return bad(
                "doorbell_fifo_depth",
                "must be >= 1 and larger than doorbell_skid",
            );
        }
        if self.fragment_payload == 0
            || self.fragment_payload as usize > via_abi::wire_header::MAX_FRAGMENT_PAYLOAD
        {
            return bad("fragment_payload", "must be 1..=1460 bytes");
        }
        if self.recv_queue_depth == 0 || self.max_send_contexts == 0 {
            return bad("recv_queue_depth/max_send_contexts", "must be >= 1");
        }
        if self.send_fifo_bytes.0 < 4 || self.recv_fifo_bytes.0 < 4 {
            return bad("send/recv_fifo_bytes", "must hold at least one 32-bit word");
        }
        if self.dma_chunk_bytes.0 == 0 {
            return bad("dma_chunk_bytes", "must be > 0");
        }
        if self.handoff_cycles.0 == 0 {
            return bad("handoff_cycles", "must be >= 1");
        }
        if self.bar0_base.checked_add(bar::BAR0_SIZE).is_none() {
            return bad("bar0_base", "BAR0 must fit below 2^64");
        }
        if !(1_000..=33_000_000).contains(&self.retx_timeout_cycles.0) {
            return bad("retx_timeout_cycles", "must be 1000..=33000000 cycles");
        }
        if !(2..=4096).contains(&self.retx_window_frames) {
            return bad("retx_window_frames", "must be 2..=4096 frames");
        }
        Ok(())
    }

    /// Payload DMA chunk for a Send FIFO of this size: never larger than the FIFO.
    #[must_use]
    pub(crate) fn tx_chunk(&self) -> u64 {
        self.dma_chunk_bytes.0.min(self.send_fifo_bytes.0)
    }

    /// Payload DMA chunk for a Recv FIFO of this size.
    #[must_use]
    pub(crate) fn rx_chunk(&self) -> u64 {
        self.dma_chunk_bytes.0.min(self.recv_fifo_bytes.0)
    }
}

/// Why an engine cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// A parameter is out of range.
    #[error("engine parameter {name}: {why}")]
    BadParam {
        /// The parameter.
        name: &'static str,
        /// What is wrong.
        why: &'static str,
    },
    /// The buffer RAM layout is invalid.
    #[error("buffer RAM: {0}")]
    Layout(#[from] BufferError),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(p: &EngineParams) -> &'static str {
        match p.validate() {
            Err(EngineError::BadParam { name, .. }) => name,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn retransmission_defaults_and_ranges() {
        let d = EngineParams::default();
        assert_eq!(d.validate(), Ok(()));
        assert!(d.retransmit, "reliable VIs recover from loss");
        assert_eq!(
            (d.retx_timeout_cycles, d.retx_limit, d.retx_window_frames),
            (Cycles(33_000), 7, 64)
        );
        for (t, ok) in [
            (999, false),
            (1_000, true),
            (33_000_000, true),
            (33_000_001, false),
        ] {
            let p = EngineParams {
                retx_timeout_cycles: Cycles(t),
                ..EngineParams::default()
            };
            assert_eq!(p.validate().is_ok(), ok, "timeout {t}");
            if !ok {
                assert_eq!(refused(&p), "retx_timeout_cycles");
            }
        }
        for (w, ok) in [(1, false), (2, true), (4096, true), (4097, false)] {
            let p = EngineParams {
                retx_window_frames: w,
                ..EngineParams::default()
            };
            assert_eq!(p.validate().is_ok(), ok, "window {w}");
            if !ok {
                assert_eq!(refused(&p), "retx_window_frames");
            }
        }
    }
}
