//! The counters of every component, read from their statistics structs: one table per
//! struct giving each field's unit and a one-line description (from the field's doc
//! comment). `tests.rs` checks that each table names every field its struct has, so a
//! counter added to a model shows up here or fails the tests.

use gige_mac::dp83820::{BusSideStats, MacSideStats};
use gige_mac::gec::GecStats;
use gige_mac::switch::SwitchPortStats;
use gige_mac::{RxStats, TxStats, WireFaultStats};
use host_driver::CpuStats;
use nic_model::att::AttStats;
use nic_model::engine::EngineStats;
use pci_model::{BridgeStats, BusStats, DmaStats, MasterStats};
use sim_kernel::RunStats;

use super::Counter;

/// A value a counter can hold: a count, or a quantity in its unit.
pub(super) trait Count {
    /// The value as a number of units.
    fn count(&self) -> u64;
}

impl Count for u64 {
    fn count(&self) -> u64 {
        *self
    }
}
impl Count for usize {
    fn count(&self) -> u64 {
        u64::try_from(*self).unwrap_or(u64::MAX)
    }
}
impl Count for sim_kernel::Bytes {
    fn count(&self) -> u64 {
        self.0
    }
}
impl Count for sim_kernel::Cycles {
    fn count(&self) -> u64 {
        self.0
    }
}
impl Count for sim_kernel::Duration {
    fn count(&self) -> u64 {
        self.as_ps()
    }
}
impl Count for sim_kernel::Time {
    fn count(&self) -> u64 {
        self.as_ps()
    }
}

/// Pushes one counter per listed field of `$s` under `$prefix`.
macro_rules! counters {
    ($out:expr, $prefix:expr, $s:expr, { $($field:ident : $unit:literal, $desc:literal;)* }) => {
        $( $out.push(Counter::new(
            format!("{}.{}", $prefix, stringify!($field)),
            Count::count(&$s.$field),
            $unit,
            $desc,
        )); )*
    };
}

/// The field names each table lists, for the coverage test.
#[cfg(test)]
macro_rules! fields_of {
    ($($field:ident),*) => { &[$(stringify!($field)),*] };
}

/// A PCI bus (`n0.pci.system`, `n0.pci.local`), with one group per master.
pub(super) fn bus(out: &mut Vec<Counter>, prefix: &str, s: &BusStats) {
    counters!(out, prefix, s, {
        cycles: "PCI clocks", "clocks simulated";
        busy_cycles: "PCI clocks", "clocks with FRAME# or IRDY# asserted (a transaction owns the bus)";
        idle_cycles: "PCI clocks", "clocks with FRAME# and IRDY# deasserted (idle and turnaround)";
        data_phases: "PCI clocks", "clocks in which data moved (IRDY# and TRDY#)";
        wait_cycles: "PCI clocks", "busy clocks after the address phase in which no data moved";
        bytes: "bytes", "bytes moved, both directions";
        bytes_read: "bytes", "bytes read by masters";
        bytes_written: "bytes", "bytes written by masters";
        transactions: "count", "bus transactions (address phases)";
        requests: "count", "master requests completed";
        retries: "count", "transactions ended by target Retry";
        disconnects: "count", "transactions ended by target Disconnect before the master was done";
        latency_timer_expirations: "count", "transactions ended by latency-timer expiry";
        master_aborts: "count", "master aborts (no DEVSEL#)";
        target_aborts: "count", "target aborts";
        write_retry_refusals: "count", "writes a device target Retried for back-pressure (in retries)";
        wrong_inputs: "count", "messages of a kind the bus does not take (a wiring bug)";
        dropped_inputs: "count", "inputs of the right kind that could not be acted on (dropped)";
    });
    for m in &s.per_master {
        master(
            out,
            &format!("{prefix}.{}", m.name.replace(['.', '-'], "_")),
            m,
        );
    }
}

#[cfg(test)]
pub(super) const BUS_FIELDS: &[&str] = fields_of!(
    cycles,
    busy_cycles,
    idle_cycles,
    data_phases,
    wait_cycles,
    bytes,
    bytes_read,
    bytes_written,
    transactions,
    requests,
    retries,
    disconnects,
    latency_timer_expirations,
    master_aborts,
    target_aborts,
    write_retry_refusals,
    wrong_inputs,
    dropped_inputs,
    per_master
);

/// One master of a bus (`n0.pci.system.card_dma`).
pub(super) fn master(out: &mut Vec<Counter>, prefix: &str, s: &MasterStats) {
    counters!(out, prefix, s, {
        requests: "count", "requests of this master completed (any status)";
        transactions: "count", "bus transactions of this master (address phases)";
        bytes: "bytes", "bytes this master moved";
        retries: "count", "its transactions ended by target Retry";
        disconnects: "count", "its transactions ended by target Disconnect, request unfinished";
        latency_timer_expirations: "count", "its transactions ended by latency-timer expiry";
        master_aborts: "count", "its master aborts";
        target_aborts: "count", "its target aborts";
        wait_for_grant_cycles: "PCI clocks", "clocks with REQ# asserted while another master owned the bus or GNT#";
    });
}

#[cfg(test)]
pub(super) const MASTER_FIELDS: &[&str] = fields_of!(
    name,
    requests,
    transactions,
    bytes,
    retries,
    disconnects,
    latency_timer_expirations,
    master_aborts,
    target_aborts,
    wait_for_grant_cycles
);

/// The host bridge (`n0.pci.system.bridge`).
pub(super) fn bridge(out: &mut Vec<Counter>, prefix: &str, s: &BridgeStats) {
    counters!(out, prefix, s, {
        delayed_reads: "count", "delayed read requests latched (memory fetches started)";
        read_retries: "count", "read transactions the bridge ended with Retry";
        write_retries: "count", "write transactions retried because the posted-write buffer was full";
        partial_prefetches: "count", "prefetched completions used only in part";
        posted_writes: "count", "DMA writes posted";
        committed_bytes: "bytes", "bytes committed to host memory";
        cpu_writes: "count", "CPU writes to devices";
        cpu_reads: "count", "CPU reads of devices";
        cpu_write_stalls: "count", "CPU writes that found the posting buffer full (the CPU stalls)";
    });
}

#[cfg(test)]
pub(super) const BRIDGE_FIELDS: &[&str] = fields_of!(
    delayed_reads,
    read_retries,
    write_retries,
    partial_prefetches,
    posted_writes,
    committed_bytes,
    cpu_writes,
    cpu_reads,
    cpu_write_stalls
);

/// The card's DMA master (`n0.card.dma`).
pub(super) fn dma(out: &mut Vec<Counter>, prefix: &str, s: &DmaStats) {
    counters!(out, prefix, s, {
        jobs: "count", "DMA jobs finished (any status)";
        failed_jobs: "count", "DMA jobs that failed";
        bursts: "count", "bursts issued";
        bytes_read: "bytes", "bytes read from the bus";
        bytes_written: "bytes", "bytes written to the bus";
        wrong_inputs: "count", "messages of a kind the master does not take (a wiring bug)";
        unknown_completions: "count", "completions of a burst this master has not issued (dropped)";
    });
}

#[cfg(test)]
pub(super) const DMA_FIELDS: &[&str] = fields_of!(
    jobs,
    failed_jobs,
    bursts,
    bytes_read,
    bytes_written,
    wrong_inputs,
    unknown_completions
);

/// The host CPU (`n0.host.cpu`).
pub(super) fn cpu(out: &mut Vec<Counter>, prefix: &str, s: &CpuStats) {
    counters!(out, prefix, s, {
        ops: "count", "program ops executed";
        busy_cycles: "CPU cycles", "cycles spent working (compute, memory accesses, poll iterations)";
        idle_cycles: "CPU cycles", "cycles spent sleeping";
        mmio_writes: "count", "memory-mapped writes";
        mmio_reads: "count", "memory-mapped reads";
        mmio_write_wait: "ps", "time stalled until the bridge posted the writes";
        mmio_read_wait: "ps", "time stalled on PCI reads";
        poll_iterations: "count", "poll loop iterations";
        line_hits: "count", "cache line accesses that hit";
        line_misses: "count", "cache line accesses that missed (cold or evicted)";
        dma_misses: "count", "cache line loads that missed because a DMA write changed the line";
        wrong_inputs: "count", "messages of a kind the CPU does not take (a wiring bug)";
        unexpected: "count", "host messages it had no use for (ignored)";
        open_no_card: "count", "VipOpenNic calls that found no card at BAR0";
    });
}

#[cfg(test)]
pub(super) const CPU_FIELDS: &[&str] = fields_of!(
    ops,
    busy_cycles,
    idle_cycles,
    mmio_writes,
    mmio_reads,
    mmio_write_wait,
    mmio_read_wait,
    poll_iterations,
    line_hits,
    line_misses,
    dma_misses,
    wrong_inputs,
    unexpected,
    open_no_card
);

/// The ATT manager (`n0.card.att`).
pub(super) fn att(out: &mut Vec<Counter>, prefix: &str, s: &AttStats) {
    counters!(out, prefix, s, {
        translations: "count", "translations answered with pieces";
        refusals: "count", "translations refused";
        registrations: "count", "memory registrations done";
        deregistrations: "count", "deregistrations done";
        l1_reads: "count", "ATT L1 entry reads";
        l2_reads: "count", "ATT L2 reads (one per translation that needs any)";
        l2_entries_read: "count", "ATT L2 entries read";
        table_writes: "count", "ATT table writes (L1 and L2)";
        wrong_inputs: "count", "messages of a kind the manager does not take (a wiring bug)";
        unexpected_completions: "count", "table access completions matching no access in progress";
        bit_flips: "bits", "bits flipped in the table's card SDRAM (faults.att_flip_*)";
    });
}

#[cfg(test)]
pub(super) const ATT_FIELDS: &[&str] = fields_of!(
    translations,
    refusals,
    registrations,
    deregistrations,
    l1_reads,
    l2_reads,
    l2_entries_read,
    table_writes,
    wrong_inputs,
    unexpected_completions,
    bit_flips
);

/// The GEC (`n0.card.gec`).
pub(super) fn gec(out: &mut Vec<Counter>, prefix: &str, s: &GecStats) {
    counters!(out, prefix, s, {
        tx_frames: "frames", "frames handed to the DP83820";
        tx_failed: "frames", "transmit completions with a MAC error";
        tx_refused: "count", "transmit requests refused (bad slot, busy slot, bad length)";
        rx_frames: "frames", "good frames reported to the engine";
        rx_errors: "frames", "receive write-backs without OK (given back to the DP83820)";
        bad_releases: "count", "releases of a slot the engine did not hold";
        target_reads: "count", "local-bus reads served";
        target_writes: "count", "local-bus writes received";
        target_errors: "count", "local-bus accesses outside the RAM (target abort)";
        register_write_errors: "count", "register writes to the DP83820 that did not complete normally";
        unexpected: "count", "messages it had no use for";
        wrong_inputs: "count", "messages of a kind the GEC does not take (a wiring bug)";
    });
}

#[cfg(test)]
pub(super) const GEC_FIELDS: &[&str] = fields_of!(
    tx_frames,
    tx_failed,
    tx_refused,
    rx_frames,
    rx_errors,
    bad_releases,
    target_reads,
    target_writes,
    target_errors,
    register_write_errors,
    unexpected,
    wrong_inputs
);

/// The VIA engine (`n0.card.engine`).
pub(super) fn engine(out: &mut Vec<Counter>, prefix: &str, s: &EngineStats) {
    counters!(out, prefix, s, {
        reg_writes: "count", "BAR register writes decoded (dwords)";
        reg_reads: "count", "BAR register reads answered";
        reg_writes_ignored: "count", "writes to unknown or read-only offsets (ignored)";
        cmd_while_busy: "count", "ATT_CMD or VI_CMD writes while the previous command was busy (ignored)";
        doorbells: "count", "doorbells rung";
        doorbell_fifo_max: "entries", "most doorbells waiting in the FIFO at once";
        doorbell_backpressure: "count", "times the doorbell FIFO turned write back-pressure on";
        doorbell_overruns: "count", "doorbells that arrived with the FIFO already full (must stay 0)";
        doorbell_vi_mismatch: "count", "doorbells whose record named another VI than its window";
        doorbell_no_vi: "count", "doorbells for a VI that does not exist (dropped)";
        doorbell_bad_queue: "count", "doorbells with an unknown queue byte";
        doorbell_unlinked: "count", "doorbells without HEAD whose descriptor could not be found";
        doorbell_link_failures: "count", "doorbells whose queue link could not be read";
        doorbell_links_read: "count", "queue links read (doorbells without HEAD)";
        doorbell_links_known: "count", "doorbells without HEAD whose link a read of the queue's tail had already found (no queue-link read)";
        sends_started: "count", "send descriptors taken into processing";
        status_writes: "count", "descriptor status writes (send, receive, flushed)";
        send_errors: "count", "send descriptors completed with an error bit";
        descriptors_unreachable: "count", "descriptors that could not be completed (no status written)";
        recv_post_refused: "count", "receive descriptors the post check refused";
        bookkeeping_misses: "count", "bookkeeping lookups that missed (a bug)";
        dma_failures: "count", "DMA jobs that ended in a bus error";
        buffer_ram_read_failures: "count", "receive chunks whose bytes could not be read from the buffer RAM";
        data_frames_sent: "frames", "data frames handed to the GEC";
        control_frames_sent: "frames", "control frames (connect, disconnect, ack, nak) handed to the GEC";
        payload_bytes_sent: "bytes", "payload bytes handed to the GEC";
        tx_failures: "frames", "frames reported failed by the GEC";
        rx_frames: "frames", "frames received from the GEC";
        rx_not_for_us: "frames", "received frames not addressed to this card (dropped)";
        rx_bad_ethertype: "frames", "received frames with another EtherType (dropped)";
        rx_malformed: "frames", "received frames whose VIA header is short, of another version or inconsistent";
        rx_bad_op: "frames", "received frames with an unknown operation (dropped)";
        rx_no_vi: "frames", "received frames for a VI that does not exist (dropped)";
        rx_not_connected: "frames", "received frames from another peer or for an unconnected VI (dropped)";
        acks_unmatched: "count", "Acks and Naks that match no send waiting for one (dropped)";
        acks_duplicate: "count", "Acks older than a VI's window base (dropped)";
        messages_received: "count", "messages received and placed completely, over all VIs";
        rx_duplicates: "frames", "data frames received again (reliable: dropped)";
        rx_out_of_order: "frames", "data frames received after a gap (reliable: dropped until the go-back)";
        rx_sequence_errors: "frames", "data frames out of sequence on unreliable VIs (their message fails)";
        frames_resent: "frames", "data frames resent (a go-back after a Nak or a timeout)";
        resends_unavailable: "frames", "frames a go-back was to resend that no send held any more";
        goback_naks_ignored: "count", "go-back Naks that asked for nothing new";
        retx_timeouts: "count", "retransmission timeouts, over all VIs";
        connect_requests_resent: "count", "connect requests sent again (no answer in time)";
        connect_timeouts: "count", "connect requests given up after retx_limit resends";
        connect_accepts_repeated: "count", "accepts sent again for a repeated request";
        retx_give_ups: "count", "connections given up after more than retx_limit timeouts in a row";
        tx_done_unexpected: "count", "transmit completions for a TX slot not handed over (dropped)";
        att_answers_unexpected: "count", "ATT manager answers for no pending ATT_CMD (dropped)";
        rdma_bytes_placed: "bytes", "RDMA-write payload bytes placed into host memory";
        recv_bytes_placed: "bytes", "send payload bytes placed into receive buffers";
        read_requests_sent: "count", "RDMA read requests sent (first sendings)";
        read_requests_received: "count", "RDMA read requests received in sequence";
        read_requests_refused: "count", "RDMA read requests refused (VI not read-enabled, source did not translate): no byte read";
        read_response_frames_sent: "frames", "RDMA read response frames handed to the GEC (first sendings)";
        read_responses_completed: "count", "RDMA read responses completed (last frame acknowledged)";
        read_response_frames_received: "frames", "RDMA read response frames received in sequence";
        read_bytes_placed: "bytes", "RDMA read response bytes placed into the requester's buffers";
        read_responses_unmatched: "count", "RDMA read responses that matched no read waiting for data (dropped)";
        send_fifo_max: "bytes", "most bytes in the Send FIFO at once";
        recv_fifo_max: "bytes", "most bytes in the Recv FIFO at once";
        tx_words: "words", "32-bit words moved into TX buffers (headers and payload)";
        rx_words: "words", "32-bit words moved out of RX buffers into the Recv FIFO";
        wrong_inputs: "count", "messages of a kind the engine does not take (a wiring bug)";
    });
}

#[cfg(test)]
pub(super) const ENGINE_FIELDS: &[&str] = fields_of!(
    reg_writes,
    reg_reads,
    reg_writes_ignored,
    cmd_while_busy,
    doorbells,
    doorbell_fifo_max,
    doorbell_backpressure,
    doorbell_overruns,
    doorbell_vi_mismatch,
    doorbell_no_vi,
    doorbell_bad_queue,
    doorbell_unlinked,
    doorbell_link_failures,
    doorbell_links_read,
    doorbell_links_known,
    sends_started,
    status_writes,
    send_errors,
    descriptors_unreachable,
    recv_post_refused,
    bookkeeping_misses,
    dma_failures,
    buffer_ram_read_failures,
    data_frames_sent,
    control_frames_sent,
    payload_bytes_sent,
    tx_failures,
    rx_frames,
    rx_not_for_us,
    rx_bad_ethertype,
    rx_malformed,
    rx_bad_op,
    rx_no_vi,
    rx_not_connected,
    acks_unmatched,
    acks_duplicate,
    messages_received,
    rx_duplicates,
    rx_out_of_order,
    rx_sequence_errors,
    frames_resent,
    resends_unavailable,
    goback_naks_ignored,
    retx_timeouts,
    connect_requests_resent,
    connect_timeouts,
    connect_accepts_repeated,
    retx_give_ups,
    tx_done_unexpected,
    att_answers_unexpected,
    rdma_bytes_placed,
    recv_bytes_placed,
    read_requests_sent,
    read_requests_received,
    read_requests_refused,
    read_response_frames_sent,
    read_responses_completed,
    read_response_frames_received,
    read_bytes_placed,
    read_responses_unmatched,
    send_fifo_max,
    recv_fifo_max,
    tx_words,
    rx_words,
    wrong_inputs
);

/// The DP83820's bus side (`n0.mac.bus`).
pub(super) fn mac_bus(out: &mut Vec<Counter>, prefix: &str, s: &BusSideStats) {
    counters!(out, prefix, s, {
        tx_descriptors: "count", "transmit descriptors read with OWN set";
        tx_write_backs: "count", "transmit status write-backs done";
        tx_unsupported: "count", "transmit descriptors refused (MORE set or zero size)";
        rx_frames: "frames", "good frames written to a receive buffer and written back";
        rx_rewinds: "frames", "frames dropped after their receive DMA had started (descriptor reused)";
        rx_disabled_drops: "frames", "frames discarded because the receiver was disabled";
        rx_too_big: "frames", "good frames larger than their receive buffer (discarded)";
        bus_errors: "count", "bus requests that ended with master or target abort";
        register_reads: "count", "register reads served";
        register_writes: "count", "register writes served";
        unsupported_writes: "count", "register writes the model does not act on";
        unexpected: "count", "messages it had no use for";
        completions_out_of_order: "count", "bus completions whose tag was not the oldest request's";
        wrong_inputs: "count", "messages of a kind the bus side does not take (a wiring bug)";
        tx_read_failures: "count", "transmit data reads that failed on the bus";
    });
}

#[cfg(test)]
pub(super) const MAC_BUS_FIELDS: &[&str] = fields_of!(
    tx_descriptors,
    tx_write_backs,
    tx_unsupported,
    rx_frames,
    rx_rewinds,
    rx_disabled_drops,
    rx_too_big,
    bus_errors,
    register_reads,
    register_writes,
    unsupported_writes,
    unexpected,
    completions_out_of_order,
    wrong_inputs,
    tx_read_failures
);

/// The DP83820's MAC side (`n0.mac.side`).
pub(super) fn mac_side(out: &mut Vec<Counter>, prefix: &str, s: &MacSideStats) {
    counters!(out, prefix, s, {
        tx_frames: "frames", "frames sent (status reported)";
        tx_underruns: "frames", "frames sent corrupted after a FIFO underrun";
        tx_refused: "frames", "frames the GMII transmitter refused";
        rx_good: "frames", "good frames admitted to the RX FIFO";
        rx_bad: "frames", "bad frames dropped (runt, too long, FCS, framing)";
        rx_crc_errors: "frames", "frames whose FCS did not match their bytes (dropped)";
        rx_overflows: "frames", "good frames dropped because the RX FIFO had no room";
        rx_fifo_peak: "bytes", "most bytes ever held in the RX FIFO";
        unexpected: "count", "messages it had no use for";
        pause_sent: "frames", "PAUSE frames sent with a non-zero pause_time";
        pause_refreshes: "frames", "PAUSE frames re-sent above the low-water mark";
        resume_sent: "frames", "PAUSE frames sent with pause_time 0 (resume)";
        pause_received: "frames", "valid PAUSE frames received and obeyed";
        control_ignored: "frames", "other MAC Control frames received (consumed)";
        paused_cycles: "GMII clocks", "clocks a ready frame was held back by a received PAUSE";
        wrong_inputs: "count", "messages of a kind the MAC side does not take (a wiring bug)";
        tx_aborted: "frames", "frames aborted by a failed data read";
    });
}

#[cfg(test)]
pub(super) const MAC_SIDE_FIELDS: &[&str] = fields_of!(
    tx_frames,
    tx_underruns,
    tx_refused,
    rx_good,
    rx_bad,
    rx_crc_errors,
    rx_overflows,
    rx_fifo_peak,
    unexpected,
    pause_sent,
    pause_refreshes,
    resume_sent,
    pause_received,
    control_ignored,
    paused_cycles,
    wrong_inputs,
    tx_aborted
);

/// The GMII transmitter (`n0.mac.gmii.tx`).
pub(super) fn gmii_tx(out: &mut Vec<Counter>, prefix: &str, s: &TxStats) {
    counters!(out, prefix, s, {
        frames: "frames", "frames sent completely (through the last FCS byte)";
        bytes: "bytes", "bytes of those frames after the SFD, FCS included";
        busy: "GMII clocks", "clocks with TX_EN on (preamble, SFD, frame)";
        ifg: "GMII clocks", "clocks spent in the inter-frame gap";
        queue_drops: "frames", "frames refused because the queue was full";
        rejected: "frames", "frames refused because they had no bytes";
        max_queued: "frames", "most frames waiting in the queue at once";
        underruns: "frames", "streamed frames sent corrupted because a byte was late";
        paused: "GMII clocks", "clocks a waiting data frame was held back by a received PAUSE";
        unexpected_wakes: "count", "wake-ups with nothing to do (ignored)";
    });
}

#[cfg(test)]
pub(super) const GMII_TX_FIELDS: &[&str] = fields_of!(
    frames,
    bytes,
    busy,
    ifg,
    queue_drops,
    rejected,
    max_queued,
    underruns,
    paused,
    unexpected_wakes
);

/// The GMII receiver (`n0.mac.gmii.rx`).
pub(super) fn gmii_rx(out: &mut Vec<Counter>, prefix: &str, s: &RxStats) {
    counters!(out, prefix, s, {
        frames_ok: "frames", "good frames received";
        bytes_ok: "bytes", "bytes of good frames, FCS included";
        runts: "frames", "frames shorter than the minimum";
        too_long: "frames", "frames longer than the maximum";
        fcs_errors: "frames", "frames with a wrong FCS";
        framing_errors: "count", "start / end messages that did not pair up";
    });
}

#[cfg(test)]
pub(super) const GMII_RX_FIELDS: &[&str] = fields_of!(
    frames_ok,
    bytes_ok,
    runts,
    too_long,
    fcs_errors,
    framing_errors
);

/// The faults on the wire a node sends into (`n0.wire.faults`).
pub(super) fn wire_faults(out: &mut Vec<Counter>, prefix: &str, s: &WireFaultStats) {
    counters!(out, prefix, s, {
        frames: "frames", "frames put on the link while faults were installed";
        frames_lost: "frames", "frames lost at random (faults.frame_loss)";
        frames_corrupted: "frames", "frames that arrived with at least one bit inverted";
        bits_flipped: "bits", "bits inverted in all of them";
        link_down_lost: "frames", "frames whose transmission overlapped the link-down window";
        link_down_truncated: "frames", "of those, frames the far end saw truncated";
        frames_duplicated: "frames", "frames delivered twice (faults.duplicate)";
        frames_held: "frames", "frames held back (faults.reorder)";
        frames_reordered: "frames", "of those, frames overtaken by the next frame of their direction";
        frames_delayed: "frames", "frames that waited on the far line behind a copy or a released frame";
    });
}

#[cfg(test)]
pub(super) const WIRE_FAULT_FIELDS: &[&str] = fields_of!(
    frames,
    frames_lost,
    frames_corrupted,
    bits_flipped,
    link_down_lost,
    link_down_truncated,
    frames_duplicated,
    frames_held,
    frames_reordered,
    frames_delayed
);

/// The simulation kernel (`sim.events`, `sim.simulated_ps`).
pub(super) fn kernel(out: &mut Vec<Counter>, prefix: &str, s: &RunStats) {
    out.push(Counter::new(
        format!("{prefix}.events"),
        s.events,
        "events",
        "events the kernel delivered",
    ));
    out.push(Counter::new(
        format!("{prefix}.simulated_ps"),
        s.simulated.as_ps(),
        "ps",
        "simulated time reached",
    ));
}

pub(super) fn switch_port(out: &mut Vec<Counter>, prefix: &str, s: &SwitchPortStats) {
    counters!(out, prefix, s, {
        received: "frames", "good frames received on this port";
        fcs_drops: "frames", "frames received with a bad FCS, dropped";
        malformed_drops: "frames", "frames received too short, too long or broken, dropped";
        filtered: "frames", "good frames whose destination was learned on this same port, dropped";
        queue_drops: "frames", "frames that found this port's output queue full, dropped";
        queued_out: "frames", "frames queued for output on this port";
        flooded_out: "frames", "of those, copies made by flooding";
        control_consumed: "frames", "MAC Control frames (PAUSE) received: consumed, never forwarded";
        buffer_drops: "frames", "frames that did not fit in this port's output buffer (bytes), dropped";
        max_buffered_bytes: "bytes", "most bytes ever held in this port's output buffer";
        pause_received: "frames", "PAUSE frames received from the node and obeyed";
        pause_sent: "frames", "PAUSE frames sent to the node (its frames above the high-water mark)";
        resume_sent: "frames", "PAUSE frames with pause_time 0 sent to the node (below the low-water mark)";
        cut_through: "frames", "frames started on this output before their end had arrived";
        cut_through_bad: "frames", "frames received here and forwarded cut-through whose FCS turned out bad";
    });
}
