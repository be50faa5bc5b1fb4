//! Range and consistency checks of a [`SystemConfig`], each failure naming its key path
//! and the reason (with the standard or datasheet behind the limit when there is one).

use super::schema::{PciBusConfig, SystemConfig};
use super::validate_pci;

/// The slowest clock accepted for any domain \[MHz\]: 1 MHz runs every measurement in
/// seconds (a 64 KiB ping-pong with a 1 MHz GMII takes about 5 s of wall time); slower
/// clocks only make runs longer.
pub const MIN_CLOCK_MHZ: f64 = 1.0;

/// One rejected value: its dotted key path and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Dotted key path, e.g. `pci.system.burst_bytes`.
    pub key: String,
    /// Why the value is not accepted.
    pub reason: String,
}

fn problem(key: impl Into<String>, reason: impl Into<String>) -> Problem {
    Problem {
        key: key.into(),
        reason: reason.into(),
    }
}

/// Checks `value` is in `lo..=hi`.
pub(super) fn in_range(key: &str, value: u32, lo: u32, hi: u32, why: &str) -> Result<(), Problem> {
    if (lo..=hi).contains(&value) {
        Ok(())
    } else {
        Err(problem(
            key,
            format!("{value} is out of range: must be between {lo} and {hi}{why}"),
        ))
    }
}

/// Checks `value` is a power of two in `lo..=hi`.
pub(super) fn power_of_two(key: &str, value: u32, lo: u32, hi: u32) -> Result<(), Problem> {
    if value.is_power_of_two() && (lo..=hi).contains(&value) {
        Ok(())
    } else {
        Err(problem(
            key,
            format!("{value} is not allowed: must be a power of two between {lo} and {hi}"),
        ))
    }
}

/// The first problem of `cfg`, in schema order.
///
/// # Errors
/// The first value out of range.
pub fn check(cfg: &SystemConfig) -> Result<(), Problem> {
    if i64::try_from(cfg.sim.seed).is_err() {
        return Err(problem(
            "sim.seed",
            format!(
                "{} is too large: must be at most {} (TOML integers are signed 64-bit)",
                cfg.sim.seed,
                i64::MAX
            ),
        ));
    }
    let t = &cfg.topology;
    match t.nodes {
        0 | 1 => {
            return Err(problem(
                "topology.nodes",
                format!("{}: at least 2 nodes are needed", t.nodes),
            ))
        }
        2 => {}
        n if n > 64 => {
            return Err(problem(
                "topology.nodes",
                format!("{n}: at most 64 nodes (the switch's ports)"),
            ))
        }
        n if t.switch == super::schema::SwitchKind::None => {
            return Err(problem(
                "topology.nodes",
                format!(
                    "{n}: more than 2 nodes need a switch (topology.switch = \"store-and-forward\")"
                ),
            ))
        }
        _ => {}
    }
    in_range(
        "topology.switch_latency_ns",
        t.switch_latency_ns,
        8,
        1_000_000,
        " (one switch clock .. 1 ms)",
    )?;
    // A port buffer must hold one frame of the largest size the wire carries (MTU + FCS;
    // the MTU itself is checked with the wire below).
    let max_frame = cfg.wire.mtu_bytes.min(9014) + 4;
    in_range(
        "topology.switch_buffer_bytes",
        t.switch_buffer_bytes,
        max_frame,
        16 << 20,
        &format!(" (one largest frame, wire.mtu_bytes + 4 = {max_frame} .. 16 MB)"),
    )?;
    in_range(
        "topology.switch_pause_high_bytes",
        t.switch_pause_high_bytes,
        1,
        16 << 20,
        " bytes",
    )?;
    in_range(
        "topology.switch_pause_low_bytes",
        t.switch_pause_low_bytes,
        0,
        t.switch_pause_high_bytes.saturating_sub(1),
        " (below topology.switch_pause_high_bytes)",
    )?;
    in_range(
        "topology.switch_pause_quanta",
        t.switch_pause_quanta,
        1,
        u32::from(u16::MAX),
        " (the 16-bit pause_time of IEEE 802.3 Annex 31B; 0 would be a resume)",
    )?;

    for clock in cfg.clocks() {
        let mhz = clock.mhz;
        if !mhz.is_finite() || mhz > clock.max_mhz {
            return Err(problem(
                clock.key,
                format!(
                    "{mhz} MHz is out of range: must be at least {MIN_CLOCK_MHZ} and at most {} MHz ({})",
                    clock.max_mhz, clock.limit
                ),
            ));
        }
        if mhz < MIN_CLOCK_MHZ {
            return Err(problem(
                clock.key,
                format!(
                    "{mhz} MHz is out of range: must be at least {MIN_CLOCK_MHZ} MHz (a limit of the simulator: a busy-polling host CPU is stepped per loop iteration, so below 1 MHz a single ping-pong runs for hours)"
                ),
            ));
        }
        if let Err(e) = clock.period_ps() {
            return Err(problem(clock.key, e.to_string()));
        }
    }

    in_range(
        "host.memory_mb",
        cfg.host.memory_mb,
        1,
        4096,
        " (the model uses 32-bit physical addresses, as the DP83820 descriptors do)",
    )?;

    super::host::check(&cfg.host.costs)?;
    check_bus("pci.system", &cfg.pci.system)?;
    check_bus("pci.local", &cfg.pci.local)?;
    validate_pci::bridge("pci.bridge", &cfg.pci.bridge)?;

    in_range("card.sdram_mb", cfg.card.sdram_mb, 1, 4096, "")?;
    validate_pci::dma_master("card.dma", &cfg.card.dma)?;
    validate_pci::target("card.pci_target", &cfg.card.pci_target.target())?;
    validate_pci::local_target("card.local_target", &cfg.card.local_target)?;
    let e = &cfg.card.engine;
    in_range(
        "card.engine.doorbell_decode_cycles",
        e.doorbell_decode_cycles,
        1,
        100_000,
        "",
    )?;
    in_range(
        "card.engine.descriptor_decode_cycles",
        e.descriptor_decode_cycles,
        1,
        100_000,
        "",
    )?;
    in_range(
        "card.engine.header_build_cycles",
        e.header_build_cycles,
        1,
        100_000,
        "",
    )?;
    in_range(
        "card.engine.handoff_cycles",
        e.handoff_cycles,
        1,
        100_000,
        "",
    )?;
    in_range(
        "card.engine.header_check_cycles",
        e.header_check_cycles,
        1,
        100_000,
        "",
    )?;
    in_range(
        "card.engine.send_fifo_bytes",
        e.send_fifo_bytes,
        64,
        1 << 20,
        "",
    )?;
    in_range(
        "card.engine.recv_fifo_bytes",
        e.recv_fifo_bytes,
        64,
        1 << 20,
        "",
    )?;
    in_range(
        "card.engine.retx_timeout_cycles",
        e.retx_timeout_cycles,
        1_000,
        33_000_000,
        " (30 us to 1 s at 33 MHz)",
    )?;
    in_range(
        "card.engine.retx_limit",
        u32::from(e.retx_limit),
        0,
        255,
        "",
    )?;
    in_range(
        "card.engine.retx_window_frames",
        e.retx_window_frames,
        2,
        4096,
        "",
    )?;
    let b = &cfg.card.buffers;
    in_range("card.buffers.tx_slots", b.tx_slots, 1, 256, "")?;
    in_range("card.buffers.rx_slots", b.rx_slots, 1, 256, "")?;

    let fifo = " (at least one minimum frame, at most 1 MiB)";
    in_range(
        "mac.tx_fifo_bytes",
        cfg.mac.tx_fifo_bytes,
        64,
        1 << 20,
        fifo,
    )?;
    in_range(
        "mac.rx_fifo_bytes",
        cfg.mac.rx_fifo_bytes,
        64,
        1 << 20,
        fifo,
    )?;
    validate_pci::dma_master("mac.dma", &cfg.mac.dma.master())?;

    in_range(
        "wire.mtu_bytes",
        cfg.wire.mtu_bytes,
        128,
        9014,
        " (at least the 54 header bytes of a card frame plus some payload; 9014 is a 9000-byte jumbo frame)",
    )?;
    let cable = cfg.wire.cable_m;
    if !cable.is_finite() || !(0.0..=100.0).contains(&cable) {
        return Err(problem(
            "wire.cable_m",
            format!("{cable} m is out of range: must be between 0 and 100 m (IEEE 802.3 clause 40: 1000BASE-T segments are at most 100 m)"),
        ));
    }
    in_range(
        "wire.min_ifg_bytes",
        cfg.wire.min_ifg_bytes,
        1,
        1024,
        " (IEEE 802.3 requires at least 12; smaller values are a what-if)",
    )?;
    check_faults(&cfg.faults)?;
    check_att_flip(cfg)?;
    check_pci_abort(cfg)?;
    check_libraries(cfg)?;
    super::feasible::check(cfg)
}

/// `[mpi]` and `[bsp]`: sizes the libraries can hold, credits that cannot deadlock.
fn check_libraries(cfg: &SystemConfig) -> Result<(), Problem> {
    let m = &cfg.mpi;
    in_range(
        "mpi.eager_limit_bytes",
        m.eager_limit_bytes,
        0,
        1 << 20,
        " (an eager slot is this plus a 40-byte header, one per buffer per peer)",
    )?;
    in_range(
        "mpi.buffers_per_peer",
        m.buffers_per_peer,
        3,
        64,
        " (one carries data, the last credit is kept for credit messages, one is in flight)",
    )?;
    in_range(
        "mpi.credit_threshold",
        m.credit_threshold,
        2,
        m.buffers_per_peer.saturating_sub(1).max(2),
        " (at least 2, so credit messages cannot answer each other for ever; below mpi.buffers_per_peer)",
    )?;
    in_range(
        "bsp.rdma_put_min_bytes",
        cfg.bsp.rdma_put_min_bytes,
        1,
        u32::MAX,
        "",
    )
}

/// Longest link-down start or length accepted \[us\]: 1000 s of simulated time, far
/// beyond any run (and its picoseconds fit 64 bits).
pub const MAX_LINK_DOWN_US: u64 = 1_000_000_000;

/// `faults.att_flip_*`: a time in range, on a node that exists, in an entry and bit of
/// the card-SDRAM table (the keys are checked even while the flip is off).
fn check_att_flip(cfg: &SystemConfig) -> Result<(), Problem> {
    let f = &cfg.faults;
    if f.att_flip_at_us > MAX_LINK_DOWN_US {
        return Err(problem(
            "faults.att_flip_at_us",
            format!(
                "{} us is out of range: must be at most {MAX_LINK_DOWN_US} us (1000 s)",
                f.att_flip_at_us
            ),
        ));
    }
    if f.att_flip_node >= cfg.topology.nodes {
        return Err(problem(
            "faults.att_flip_node",
            format!(
                "{} is not a node: nodes are 0 to {}",
                f.att_flip_node,
                cfg.topology.nodes.saturating_sub(1)
            ),
        ));
    }
    let bits = u32::from(nic_model::att::L1_ENTRY_BITS);
    if f.att_flip_bit >= bits {
        return Err(problem(
            "faults.att_flip_bit",
            format!(
                "{} is out of range: must be a bit of the 24-byte L1 entry, 0 to {}",
                f.att_flip_bit,
                bits - 1
            ),
        ));
    }
    let entries = super::feasible::att_params(cfg).table.l1_entries;
    if f.att_flip_entry >= entries {
        return Err(problem(
            "faults.att_flip_entry",
            format!(
                "{} is out of range: the ATT has L1 entries 0 to {}",
                f.att_flip_entry,
                entries.saturating_sub(1)
            ),
        ));
    }
    if f.att_flip_at_us > 0 && cfg.card.att_location != super::schema::AttLocation::Card {
        return Err(problem(
            "faults.att_flip_at_us",
            "a bit flip in card SDRAM needs the ATT there (card.att_location = \"card\"): a host-memory ATT has no card SDRAM to flip".to_owned(),
        ));
    }
    Ok(())
}

/// `faults.pci_abort*`: a node that exists; when on, whole 4 KB pages inside host memory.
fn check_pci_abort(cfg: &SystemConfig) -> Result<(), Problem> {
    let f = &cfg.faults;
    if f.pci_abort_node >= cfg.topology.nodes {
        return Err(problem(
            "faults.pci_abort_node",
            format!(
                "{} is not a node: nodes are 0 to {}",
                f.pci_abort_node,
                cfg.topology.nodes.saturating_sub(1)
            ),
        ));
    }
    if f.pci_abort == super::schema::PciAbort::None {
        return Ok(());
    }
    let page = pci_model::PAGE_SIZE;
    if f.pci_abort_start % page != 0 {
        return Err(problem(
            "faults.pci_abort_start",
            format!(
                "{:#x} is not a multiple of 4096: the bridge decodes host memory in 4 KB pages",
                f.pci_abort_start
            ),
        ));
    }
    if f.pci_abort_bytes == 0 || f.pci_abort_bytes % page != 0 {
        return Err(problem(
            "faults.pci_abort_bytes",
            format!(
                "{} is not allowed: with faults.pci_abort on, the range must be a whole number of 4 KB pages, at least one",
                f.pci_abort_bytes
            ),
        ));
    }
    let mem = cfg.host_memory_bytes();
    if f.pci_abort_start.saturating_add(f.pci_abort_bytes) > mem {
        return Err(problem(
            "faults.pci_abort_bytes",
            format!(
                "{:#x} + {} bytes runs past the end of host memory ({mem:#x}: host.memory_mb)",
                f.pci_abort_start, f.pci_abort_bytes
            ),
        ));
    }
    Ok(())
}

fn check_faults(f: &super::schema::FaultsConfig) -> Result<(), Problem> {
    let loss = f.frame_loss;
    if !(0.0..=1.0).contains(&loss) {
        return Err(problem(
            "faults.frame_loss",
            format!("{loss} is out of range: must be a probability between 0 and 1"),
        ));
    }
    for (key, p, what) in [
        ("faults.duplicate", f.duplicate, "duplicated"),
        ("faults.reorder", f.reorder, "held back and reordered"),
    ] {
        if !(0.0..=1.0).contains(&p) {
            return Err(problem(
                key,
                format!("{p} is out of range: must be the probability that a frame is {what}, between 0 and 1"),
            ));
        }
    }
    let ber = f.bit_error_rate;
    let max = gige_mac::fault::MAX_BIT_ERROR_RATE;
    if !(0.0..=max).contains(&ber) {
        return Err(problem(
            "faults.bit_error_rate",
            format!(
                "{ber} is out of range: must be a probability per bit between 0 and {max} (above it nearly every frame is lost)"
            ),
        ));
    }
    for (key, us) in [
        ("faults.link_down_at_us", f.link_down_at_us),
        ("faults.link_down_for_us", f.link_down_for_us),
        ("faults.reorder_hold_us", f.reorder_hold_us),
    ] {
        if us > MAX_LINK_DOWN_US {
            return Err(problem(
                key,
                format!("{us} us is out of range: must be at most {MAX_LINK_DOWN_US} us (1000 s)"),
            ));
        }
    }
    match (f.link_down_at_us, f.link_down_for_us) {
        (0, 0) => Ok(()),
        (0, n) => Err(problem(
            "faults.link_down_at_us",
            format!("0 (never) while faults.link_down_for_us is {n}: a link-down window needs both a start and a length (or neither)"),
        )),
        (n, 0) => Err(problem(
            "faults.link_down_for_us",
            format!("0 (never) while faults.link_down_at_us is {n}: a link-down window needs both a start and a length (or neither)"),
        )),
        _ => Ok(()),
    }
}

fn check_bus(prefix: &str, bus: &PciBusConfig) -> Result<(), Problem> {
    if bus.width_bits != 32 && bus.width_bits != 64 {
        return Err(problem(
            format!("{prefix}.width_bits"),
            format!(
                "{} is not allowed: must be 32 or 64 (PCI Local Bus data path widths)",
                bus.width_bits
            ),
        ));
    }
    let key = format!("{prefix}.burst_bytes");
    power_of_two(&key, bus.burst_bytes, 4, 4096)?;
    if bus.burst_bytes < bus.bytes_per_data_phase() {
        return Err(problem(
            key,
            format!(
                "{} bytes is less than one {}-bit data phase ({} bytes)",
                bus.burst_bytes,
                bus.width_bits,
                bus.bytes_per_data_phase()
            ),
        ));
    }
    Ok(())
}
