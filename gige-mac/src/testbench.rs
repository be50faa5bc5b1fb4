//! The DP83820's DMA over the card's local bus against the GEC's buffer RAM: the scenario
//! behind `hvia dma --bus local` ([`local_dma`]).
//!
//! ```text
//!  probe --DmaStart--> DmaMaster (the DP83820's bus master: MXDMA bursts, its latency
//!                      timer, bursts queued ahead) ==local PciBus==> Gec (RAM target)
//!  probe <--DmaDone--
//! ```
//!
//! It builds its own kernel: the local bus in `pci.local`, the real [`Gec`] in
//! `card.core` answering from a [`BufferRam`] large enough for the transfer, and
//! `pci-model`'s [`DmaMaster`] configured as the DP83820 master (burst = MXDMA, latency
//! timer, `max_outstanding`, cache line, 64-bit capability from [`Dp83820Params`]). It
//! moves `bytes` with one job, checks every byte, and reports the throughput from the
//! edge the master got the job to the end of the last data phase (MB = 10^6 bytes).
//!
//! Equivalence: with the core and local clocks equal, this is what `pci-model`'s
//! `dma_throughput` with a `Device` target reports when that target's profile is
//! [`GecParams::target`] and its `read_latency` is `ram_read_latency - 1` (a
//! `SimpleTarget` answers one bus clock after its latency, the GEC drives its data
//! `ram_read_latency` core clocks after sampling the address); `tests/local_dma.rs`
//! checks it.

use crate::buffer_ram::{BufferError, BufferLayout, BufferRam};
use crate::dp83820::Dp83820Params;
use crate::gec::{Gec, GecParams};
use crate::msg::MacMsg;
use pci_model::{
    burst_account, contiguous_pages, BurstAccount, BusParams, BusStats, DmaDirection, DmaDone,
    DmaJob, DmaMaster, DmaParams, DmaStatus, PciBus, PciError, PciMsg,
};
use sim_kernel::{ClockDomain, Ctx, Duration, Kernel, OnMisroute, SplitMix64, Time, Wiring};

/// Which way the DP83820 moves the bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LocalDirection {
    /// Buffer RAM to the DP83820 (transmit data): DMA reads.
    Read,
    /// The DP83820 to buffer RAM (receive data): DMA writes.
    Write,
}

/// Parameters of one local-bus DMA run.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalDmaParams {
    /// The local bus.
    pub bus: BusParams,
    /// The GEC (its target profile, RAM latency, and MXDMA: the burst size).
    pub gec: GecParams,
    /// The DP83820 (its master settings).
    pub mac: Dp83820Params,
    /// FPGA core clock \[MHz\] (assumption: 33, as `card.core_clock_mhz`).
    pub core_clock_mhz: f64,
    /// Direction.
    pub direction: LocalDirection,
    /// Bytes to move (> 0, at most 64 MB).
    pub bytes: u64,
    /// Seed of the data.
    pub seed: u64,
}

impl Default for LocalDmaParams {
    /// The published card: 64 KB read in 512-byte bursts on a 32-bit / 33 MHz local bus.
    fn default() -> Self {
        Self {
            bus: BusParams::default(),
            gec: GecParams::default(),
            mac: Dp83820Params::default(),
            core_clock_mhz: 33.0,
            direction: LocalDirection::Read,
            bytes: 64 * 1024,
            seed: 1,
        }
    }
}

/// Result of one local-bus DMA run.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalDmaReport {
    /// Bytes moved (all verified).
    pub bytes: u64,
    /// From the master receiving the job to the end of its last data phase.
    pub elapsed: Duration,
    /// Local-bus clocks in `elapsed`.
    pub cycles: u64,
    /// `bytes / elapsed` [MB/s, 10^6 bytes].
    pub throughput_mb_s: f64,
    /// Bursts issued.
    pub bursts: u32,
    /// Bus statistics at the end.
    pub stats: BusStats,
    /// Clock-by-clock account of the middle burst (in steady state).
    pub accounting: Option<BurstAccount>,
    /// Kernel events delivered.
    pub events: u64,
}

/// Why a local-bus DMA run failed.
#[derive(Clone, Debug, thiserror::Error)]
pub enum LocalDmaError {
    /// A bad parameter or wiring error from the PCI model.
    #[error(transparent)]
    Pci(#[from] PciError),
    /// The buffer RAM could not be built.
    #[error(transparent)]
    Buffer(#[from] BufferError),
    /// A parameter out of range.
    #[error("bad parameter: {0}")]
    Param(String),
    /// The run did not move the bytes exactly (a model bug).
    #[error("scenario failed: {0}")]
    Scenario(String),
}

#[derive(Debug)]
enum Msg {
    Pci(PciMsg),
    Mac(MacMsg),
}

impl From<PciMsg> for Msg {
    fn from(m: PciMsg) -> Self {
        Msg::Pci(m)
    }
}

impl From<MacMsg> for Msg {
    fn from(m: MacMsg) -> Self {
        Msg::Mac(m)
    }
}

/// The bench's components; the store is the card's buffer RAM.
enum Part {
    Bus(Box<PciBus>),
    Gec(Box<Gec>),
    Dma(DmaMaster),
    /// Stands for the engine: keeps the DMA master's `DmaDone`.
    Probe(Option<DmaDone>),
}

impl sim_kernel::Part<Msg, BufferRam> for Part {
    fn take(&mut self, msg: Msg, ctx: &mut Ctx<'_, Msg>, ram: &mut BufferRam) -> Option<Msg> {
        match (self, msg) {
            (Part::Bus(b), Msg::Pci(m)) => b.handle(m, ctx, None),
            (Part::Gec(g), Msg::Pci(m)) => g.handle_pci(m, ctx, ram),
            (Part::Gec(g), Msg::Mac(m)) => g.handle_mac(m, ctx, ram),
            (Part::Dma(d), Msg::Pci(m)) => d.handle(m, ctx),
            (Part::Probe(done), Msg::Pci(PciMsg::DmaDone(d))) => *done = Some(d),
            (_, m) => return Some(m),
        }
        None
    }
}

/// Runs the local-bus DMA scenario (see the module doc).
///
/// # Errors
/// Bad parameters, or bytes that do not arrive exactly.
pub fn local_dma(p: &LocalDmaParams) -> Result<LocalDmaReport, LocalDmaError> {
    if p.bytes == 0 || p.bytes > 64 << 20 {
        return Err(LocalDmaError::Param(format!(
            "bytes = {} must be in 1 ..= 64 MB",
            p.bytes
        )));
    }
    let local_domain = p.bus.clock_domain("pci.local")?;
    let core_domain = ClockDomain::from_mhz("card.core", p.core_clock_mhz)
        .map_err(|e| LocalDmaError::Param(e.to_string()))?;
    let period = local_domain.period();
    let slot = 2048u64;
    // Room for the bytes from a 4 KB-aligned start (the DMA master cuts bursts at 4 KB
    // page boundaries; the DP83820 does not, so the data starts on one).
    let slots = u16::try_from((p.bytes + 4096).div_ceil(slot))
        .map_err(|_| LocalDmaError::Param("too many bytes".into()))?;
    let layout = BufferLayout {
        tx_slots: slots,
        rx_slots: 1,
        slot_bytes: slot,
        ..BufferLayout::default()
    };
    let mut ram = BufferRam::new(layout.clone())?;
    let start = layout.tx_buffer(0)?.div_ceil(4096) * 4096;

    let mut k: Kernel<Msg> = Kernel::new(false);
    let local = k.add_domain(local_domain);
    let core = k.add_domain(core_domain);
    let ids = [
        k.add_component("local-bus", local),
        k.add_component("gec", core),
        k.add_component("dp83820.dma", local),
        k.add_component("probe", local),
    ];
    let dma_params = DmaParams {
        burst_bytes: p.gec.mxdma_bytes,
        latency_timer: p.mac.latency_timer,
        max_outstanding: p.mac.max_outstanding,
        cache_line_bytes: p.mac.cache_line_bytes,
        write_invalidate: p.mac.write_invalidate,
        supports_64bit: p.mac.supports_64bit,
        recovery: p.mac.recovery,
    };
    dma_params.validate()?;
    let mut bus = PciBus::new(p.bus.clone())?;
    // Keep the transaction log around the middle burst only, for its accounting.
    let middle = p.bytes.div_ceil(p.gec.mxdma_bytes.max(1)) / 2;
    bus.set_tenure_log_window(middle.saturating_sub(4), middle + 4);
    let gec_master = bus.add_master(p.gec.master_config("gec", ids[1]))?;
    let master = bus.add_master(DmaMaster::master_config("dp83820", ids[2], &dma_params))?;
    bus.add_device_target(layout.base, layout.size(), ids[1], p.gec.target.clone())?;
    let gec = Gec::new(p.gec.clone(), layout, ids[0], gec_master, ids[3], None);
    let dma = DmaMaster::new(dma_params, ids[0], master, p.bus.width);

    let len = usize::try_from(p.bytes).map_err(|_| LocalDmaError::Param("bytes".into()))?;
    let mut data = vec![0u8; len];
    SplitMix64::derive(p.seed, "local-dma.data").fill(&mut data);
    let direction = match p.direction {
        LocalDirection::Read => {
            ram.write(start, &data)?;
            DmaDirection::Read { len: p.bytes }
        }
        LocalDirection::Write => DmaDirection::Write { data: data.clone() },
    };
    let mut w = Wiring::of(
        vec![
            Part::Bus(Box::new(bus)),
            Part::Gec(Box::new(gec)),
            Part::Dma(dma),
            Part::Probe(None),
        ],
        ram,
        OnMisroute::Count,
    );
    k.post(
        ids[2],
        Time::ZERO,
        Msg::Pci(PciMsg::DmaStart(DmaJob {
            tag: 1,
            reply_to: ids[3],
            direction,
            pages: contiguous_pages(start, p.bytes),
        })),
    );
    k.run_to_idle(&mut w);
    if let Some(m) = w.misroutes().first() {
        return Err(LocalDmaError::Scenario(format!(
            "a message reached the wrong component: {m}"
        )));
    }
    let done = match w.get_mut(ids[3]) {
        Some(Part::Probe(done)) => done.take(),
        _ => None,
    }
    .ok_or_else(|| LocalDmaError::Scenario("the DMA never finished".into()))?;
    if done.status != DmaStatus::Ok || done.bytes != p.bytes {
        return Err(LocalDmaError::Scenario(format!(
            "DMA ended with {:?} after {} of {} bytes",
            done.status, done.bytes, p.bytes
        )));
    }
    let exact = match p.direction {
        LocalDirection::Read => done.data == data,
        LocalDirection::Write => w.store.read_vec(start, p.bytes)? == data,
    };
    if !exact {
        return Err(LocalDmaError::Scenario("bytes differ".into()));
    }
    let Some(Part::Bus(bus)) = w.get(ids[0]) else {
        return Err(LocalDmaError::Scenario("the bench has no bus".into()));
    };
    let elapsed = done.end - done.start;
    #[allow(clippy::cast_precision_loss)]
    let throughput_mb_s = if elapsed.as_ps() == 0 {
        0.0
    } else {
        p.bytes as f64 * 1e6 / elapsed.as_ps() as f64
    };
    Ok(LocalDmaReport {
        bytes: p.bytes,
        elapsed,
        cycles: elapsed.as_ps() / period.as_ps().max(1),
        throughput_mb_s,
        bursts: done.bursts,
        stats: bus.stats().clone(),
        accounting: burst_account(bus.tenure_log(), u64::from(done.bursts / 2)),
        events: k.stats().events,
    })
}
