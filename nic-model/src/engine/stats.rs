//! Counters of the engine ([`EngineStats`]) and of each VI ([`ViCounters`]), and the
//! snapshot of one VI the engine exposes ([`ViInfo`]).

use via_abi::bar::{Reliability, ViStateCode};
use via_abi::{MacAddr, ProtectionTag, Status};

/// Card-wide counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// BAR register writes decoded (dwords).
    pub reg_writes: u64,
    /// BAR register reads answered.
    pub reg_reads: u64,
    /// Writes to unknown or read-only offsets (ignored, as the bar contract says).
    pub reg_writes_ignored: u64,
    /// `ATT_CMD` or `VI_CMD` writes while the previous command was still busy (ignored).
    pub cmd_while_busy: u64,
    /// Doorbells rung (records whose last dword was written).
    pub doorbells: u64,
    /// Most doorbells waiting in the FIFO at once.
    pub doorbell_fifo_max: usize,
    /// Times the doorbell FIFO turned write back-pressure on (the bus then Retries
    /// doorbell writes; it counts each refusal in `BusStats::write_retry_refusals`).
    pub doorbell_backpressure: u64,
    /// Doorbells that arrived with the FIFO already full (the skid was too small). They
    /// are kept, never dropped; this must stay 0.
    pub doorbell_overruns: u64,
    /// Doorbells whose record named another VI than its window (the window's VI is used).
    pub doorbell_vi_mismatch: u64,
    /// Doorbells for a VI that does not exist (dropped: no protection tag to complete
    /// the descriptor with).
    pub doorbell_no_vi: u64,
    /// Doorbells with an unknown queue byte (their descriptor completes with a format
    /// error).
    pub doorbell_bad_queue: u64,
    /// Doorbells without `HEAD` whose descriptor could not be found: the card knew no
    /// earlier descriptor of that queue, or its Next link was still null (the provider
    /// rang before linking). Traced as errors; the post is not taken.
    pub doorbell_unlinked: u64,
    /// Doorbells whose queue link could not be read: the previous descriptor no longer
    /// translates (its memory was deregistered) or the DMA failed. Traced as errors; the
    /// post is not taken.
    pub doorbell_link_failures: u64,
    /// Queue links read (doorbells without `HEAD`).
    pub doorbell_links_read: u64,
    /// Doorbells without `HEAD` dispatched with the link an earlier read of the queue's
    /// tail found already written (no queue-link read; `follow_read_links`).
    pub doorbell_links_known: u64,
    /// Send descriptors taken into processing.
    pub sends_started: u64,
    /// Descriptors whose status was written (send, receive, flushed).
    pub status_writes: u64,
    /// Send descriptors completed with an error bit.
    pub send_errors: u64,
    /// Descriptors that could not be completed: their own address did not translate, or
    /// a DMA of them failed (no status can be written).
    pub descriptors_unreachable: u64,
    /// Receive descriptors the post check refused (completed with their error, or
    /// unreadable).
    pub recv_post_refused: u64,
    /// Bookkeeping lookups that missed (a bug; debug builds assert).
    pub bookkeeping_misses: u64,
    /// DMA jobs that ended in a bus error.
    pub dma_failures: u64,
    /// Receive chunks whose bytes could not be read from the buffer RAM (dropped, their
    /// message failed; never placed as made-up bytes).
    pub buffer_ram_read_failures: u64,
    /// Data frames handed to the GEC.
    pub data_frames_sent: u64,
    /// Control frames (connect, disconnect, ack, nak) handed to the GEC.
    pub control_frames_sent: u64,
    /// Payload bytes handed to the GEC.
    pub payload_bytes_sent: u64,
    /// Frames reported failed by the GEC.
    pub tx_failures: u64,
    /// Frames received from the GEC.
    pub rx_frames: u64,
    /// Received frames not addressed to this card's MAC (dropped).
    pub rx_not_for_us: u64,
    /// Received frames with another EtherType (dropped).
    pub rx_bad_ethertype: u64,
    /// Received frames whose VIA header is short, of another version or inconsistent.
    pub rx_malformed: u64,
    /// Received frames with an operation the engine does not know (dropped).
    pub rx_bad_op: u64,
    /// Received frames for a VI that does not exist (dropped).
    pub rx_no_vi: u64,
    /// Received frames for a VI from another MAC or VI than its peer, or for a VI that is
    /// not connected (dropped).
    pub rx_not_connected: u64,
    /// Acks and Naks from the peer that match no send waiting for one, or acknowledge a
    /// frame never sent (dropped, traced).
    pub acks_unmatched: u64,
    /// Acks older than a VI's window base (repeats of what an earlier cumulative Ack
    /// covered; dropped).
    pub acks_duplicate: u64,
    /// Messages received and placed completely, over all VIs.
    pub messages_received: u64,
    /// Data frames received again, over all VIs (reliable: dropped).
    pub rx_duplicates: u64,
    /// Data frames received after a gap, over all VIs (reliable: dropped until the
    /// go-back).
    pub rx_out_of_order: u64,
    /// Data frames out of sequence on unreliable VIs, over all VIs (their message fails).
    pub rx_sequence_errors: u64,
    /// Data frames resent, over all VIs (a go-back after a Nak or a timeout).
    pub frames_resent: u64,
    /// Frames a go-back was to resend that no send held any more (their send had failed
    /// and completed; traced).
    pub resends_unavailable: u64,
    /// Go-back Naks that asked for nothing new (stale, or already being resent).
    pub goback_naks_ignored: u64,
    /// Retransmission timeouts, over all VIs.
    pub retx_timeouts: u64,
    /// Connect requests sent again (no accept or reject came in time).
    pub connect_requests_resent: u64,
    /// Connect requests given up after `retx_limit` resends (`VI_RESULT` TimedOut).
    pub connect_timeouts: u64,
    /// Accepts sent again for a repeated request of the peer already connected.
    pub connect_accepts_repeated: u64,
    /// Connections given up after more than `retx_limit` timeouts in a row (the VI went
    /// to `error`, its sends completed with a transport error or flushed).
    pub retx_give_ups: u64,
    /// Transmit completions from the GEC for a TX slot not handed over (dropped, traced).
    pub tx_done_unexpected: u64,
    /// Answers of the ATT manager for no pending `ATT_CMD` (dropped, traced).
    pub att_answers_unexpected: u64,
    /// RDMA-write payload bytes placed into host memory.
    pub rdma_bytes_placed: u64,
    /// Send payload bytes placed into receive buffers.
    pub recv_bytes_placed: u64,
    /// RDMA read requests sent (requester; first sendings).
    pub read_requests_sent: u64,
    /// RDMA read requests received in sequence (responder).
    pub read_requests_received: u64,
    /// RDMA read requests refused (responder: RDMA read not enabled on the VI, or the
    /// source range did not translate with `RdmaRead` access): answered with a Nak
    /// carrying `RDMA_PROTECTION_ERROR`, no byte read.
    pub read_requests_refused: u64,
    /// RDMA read response frames handed to the GEC (responder; first sendings).
    pub read_response_frames_sent: u64,
    /// RDMA read responses completed (responder: their last frame acknowledged).
    pub read_responses_completed: u64,
    /// RDMA read response frames received in sequence (requester).
    pub read_response_frames_received: u64,
    /// RDMA read response bytes placed into the requester's buffers.
    pub read_bytes_placed: u64,
    /// RDMA read response messages that matched no read waiting for its data (dropped
    /// with a transport error).
    pub read_responses_unmatched: u64,
    /// Most bytes in the Send FIFO at once (reserved or held).
    pub send_fifo_max: u64,
    /// Most bytes in the Recv FIFO at once.
    pub recv_fifo_max: u64,
    /// Words moved into TX buffers (headers and payload).
    pub tx_words: u64,
    /// Words moved out of RX buffers into the Recv FIFO.
    pub rx_words: u64,
    /// Messages of a kind this component does not take (a wiring bug): counted and
    /// traced as errors; any of them fails a system run.
    pub wrong_inputs: u64,
}

/// Counters of one VI (kept while it exists).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ViCounters {
    /// Send descriptors completed (any status).
    pub sends_completed: u64,
    /// Of those, with an error bit.
    pub send_errors: u64,
    /// Receive descriptors completed (any status).
    pub recvs_completed: u64,
    /// Data frames sent.
    pub frames_sent: u64,
    /// Data frames received (from the peer, in sequence or not).
    pub frames_received: u64,
    /// Messages placed whole (RDMA writes and sends).
    pub messages_received: u64,
    /// Incoming RDMA writes refused by the ATT or the VI (no byte written).
    pub rx_protection_errors: u64,
    /// Incoming sends with no receive descriptor posted (dropped / Nak'd).
    pub rx_no_descriptor: u64,
    /// Incoming sends longer than their receive descriptor's buffers.
    pub rx_length_errors: u64,
    /// Frames out of sequence (a gap or a repeat).
    pub rx_sequence_errors: u64,
    /// Fragments that did not continue their message (offset or first/last mismatch).
    pub rx_fragment_errors: u64,
    /// Receive descriptors that were malformed or did not translate.
    pub rx_descriptor_errors: u64,
    /// Frames dropped because the message they belong to had already failed.
    pub rx_dropped_after_error: u64,
    /// Acks sent (reliable delivery).
    pub acks_sent: u64,
    /// Naks sent (reliable delivery: an error reported to the sender).
    pub naks_sent: u64,
    /// Naks received.
    pub naks_received: u64,
    /// Acks received that acknowledged nothing new (older than the window base).
    pub acks_duplicate: u64,
    /// Data frames received again (reliable, `retransmit`): dropped, re-acknowledged if
    /// they carry LAST or ACK_REQ.
    pub rx_duplicates: u64,
    /// Data frames received after a gap (reliable, `retransmit`): dropped while the
    /// sender goes back.
    pub rx_out_of_order: u64,
    /// Go-back Naks sent (one per gap).
    pub goback_naks_sent: u64,
    /// Go-back Naks received that started a go-back.
    pub goback_naks_received: u64,
    /// Data frames resent (a go-back after a Nak or a timeout).
    pub frames_resent: u64,
    /// Retransmission timeouts.
    pub retx_timeouts: u64,
    /// Error bits of the last receive-side error (0 if none).
    pub last_rx_error: Status,
    /// Error bits of the last send completed in error (0 if none).
    pub last_tx_error: Status,
}

/// A snapshot of one VI, for tests and reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViInfo {
    /// VI number.
    pub vi: u16,
    /// State, as `VI_STATE` shows it.
    pub state: ViStateCode,
    /// Protection tag.
    pub ptag: ProtectionTag,
    /// Reliability level.
    pub reliability: Reliability,
    /// RDMA write accepted on this VI.
    pub rdma_write: bool,
    /// The peer's MAC address (once a connection is requested or accepted).
    pub peer_mac: MacAddr,
    /// The peer's VI number (once connected).
    pub peer_vi: u16,
    /// Receive descriptors posted and not yet used.
    pub recv_posted: usize,
    /// Counters.
    pub counters: ViCounters,
}
