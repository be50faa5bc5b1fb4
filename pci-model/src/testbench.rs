//! A small self-contained PCI system ([`PciWorld`]) and the DMA throughput scenario
//! behind `hvia dma` ([`dma_throughput`]).
//!
//! `dma_throughput` builds its own kernel and world: one bus in its PCI clock domain, the
//! card's [`DmaMaster`], a [`Probe`] standing for the card engine, and either host memory
//! behind the host bridge (`--bus system`: a process buffer mapped to scattered frames)
//! or a [`SimpleTarget`] (`--bus local`: the FPGA seen from the DP83820). It moves the
//! bytes with one DMA job, checks every byte arrived where it should, and reports the
//! throughput (MB = 10^6 bytes) from the edge the DMA master got the job to the end of
//! the last data phase.

use crate::bridge::BridgeStats;
use crate::bus::PciBus;
use crate::device::SimpleTarget;
use crate::dma::DmaMaster;
use crate::error::PciError;
use crate::memory::{HostMemory, PAGE_SIZE};
use crate::msg::{DmaDirection, DmaJob, DmaStatus, PciMsg};
use crate::page_table::{contiguous_pages, PageTable};
use crate::params::{BridgeParams, BusParams, DmaParams, TargetProfile};
use crate::stats::{BusStats, TenureEnd, TenureRecord};
use sim_kernel::{
    Bytes, ComponentId, Ctx, Cycles, Duration, Kernel, OnMisroute, Part, SplitMix64, Time, Wiring,
};
use std::fmt;

/// A component that records every message it receives (a stand-in for a card engine,
/// a CPU or a master in tests).
#[derive(Clone, Debug, Default)]
pub struct Probe {
    /// (arrival, message), in order.
    pub received: Vec<(Time, PciMsg)>,
}

/// One component of a [`PciWorld`].
#[derive(Clone, Debug)]
pub enum Node {
    /// A PCI bus (with the host bridge if attached).
    Bus(Box<PciBus>),
    /// A DMA master.
    Dma(DmaMaster),
    /// A memory-like device target.
    Device(SimpleTarget),
    /// A recorder.
    Probe(Probe),
}

/// A system of PCI components and one host memory (the wiring's store), by
/// [`ComponentId`]. Every message kind is taken by every [`Node`]; a message to an id
/// with no component is a misroute.
pub type PciWorld = Wiring<Node, HostMemory>;

impl Part<PciMsg, HostMemory> for Node {
    fn take(
        &mut self,
        msg: PciMsg,
        ctx: &mut Ctx<'_, PciMsg>,
        mem: &mut HostMemory,
    ) -> Option<PciMsg> {
        match self {
            Node::Bus(b) => b.handle(msg, ctx, Some(mem)),
            Node::Dma(d) => d.handle(msg, ctx),
            Node::Device(d) => d.handle(msg, ctx),
            Node::Probe(p) => p.received.push((ctx.now(), msg)),
        }
        None
    }
}

/// The components of a [`PciWorld`] by kind.
pub trait PciParts {
    /// The bus at `id`.
    fn bus(&self, id: ComponentId) -> Option<&PciBus>;
    /// The bus at `id`, mutably.
    fn bus_mut(&mut self, id: ComponentId) -> Option<&mut PciBus>;
    /// The probe at `id`.
    fn probe(&self, id: ComponentId) -> Option<&Probe>;
    /// The device target at `id`.
    fn device(&self, id: ComponentId) -> Option<&SimpleTarget>;
    /// The device target at `id`, mutably.
    fn device_mut(&mut self, id: ComponentId) -> Option<&mut SimpleTarget>;
}

impl PciParts for PciWorld {
    fn bus(&self, id: ComponentId) -> Option<&PciBus> {
        match self.get(id) {
            Some(Node::Bus(b)) => Some(b),
            _ => None,
        }
    }

    fn bus_mut(&mut self, id: ComponentId) -> Option<&mut PciBus> {
        match self.get_mut(id) {
            Some(Node::Bus(b)) => Some(b),
            _ => None,
        }
    }

    fn probe(&self, id: ComponentId) -> Option<&Probe> {
        match self.get(id) {
            Some(Node::Probe(p)) => Some(p),
            _ => None,
        }
    }

    fn device(&self, id: ComponentId) -> Option<&SimpleTarget> {
        match self.get(id) {
            Some(Node::Device(d)) => Some(d),
            _ => None,
        }
    }

    fn device_mut(&mut self, id: ComponentId) -> Option<&mut SimpleTarget> {
        match self.get_mut(id) {
            Some(Node::Device(d)) => Some(d),
            _ => None,
        }
    }
}

/// Which way the bench moves data, seen from the card.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BenchDirection {
    /// Host (or target) to card: DMA read.
    Read,
    /// Card to host (or target): DMA write.
    Write,
}

impl BenchDirection {
    /// `read` or `write`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            BenchDirection::Read => "read",
            BenchDirection::Write => "write",
        }
    }
}

/// What the DMA master talks to.
#[derive(Clone, Debug, PartialEq)]
pub enum BenchTarget {
    /// Host memory behind the host bridge (the system bus).
    HostMemory {
        /// Bridge parameters.
        bridge: BridgeParams,
        /// Host memory size \[bytes\].
        memory_bytes: u64,
    },
    /// A memory-like device (the local bus: the FPGA seen from the DP83820).
    Device {
        /// Its PCI timing.
        profile: TargetProfile,
        /// Its read latency [PCI clocks] from seeing a read to answering.
        read_latency: Cycles,
    },
}

/// Parameters of one `dma` run.
#[derive(Clone, Debug, PartialEq)]
pub struct DmaBenchParams {
    /// The bus.
    pub bus: BusParams,
    /// The DMA master (its `burst_bytes` is `--burst`).
    pub dma: DmaParams,
    /// What is on the other side.
    pub target: BenchTarget,
    /// `--direction`.
    pub direction: BenchDirection,
    /// `--bytes` (> 0).
    pub bytes: u64,
    /// Offset of the buffer within its first page \[bytes, < 4096\].
    pub offset: u64,
    /// Seed of the frame allocator and the data.
    pub seed: u64,
    /// Record trace spans and transitions.
    pub trace: bool,
    /// Keep the per-transaction log and build [`DmaBenchReport::accounting`].
    pub accounting: bool,
}

impl Default for DmaBenchParams {
    /// The published system: 1 MB read from a 256 MB host in 512-byte bursts.
    fn default() -> Self {
        Self {
            bus: BusParams::default(),
            dma: DmaParams::default(),
            target: BenchTarget::HostMemory {
                bridge: BridgeParams::default(),
                memory_bytes: 256 << 20,
            },
            direction: BenchDirection::Read,
            bytes: 1 << 20,
            offset: 0,
            seed: 1,
            trace: false,
            accounting: true,
        }
    }
}

/// One row of a burst's cycle accounting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountRow {
    /// First clock (relative to the start of the accounting window).
    pub from: u64,
    /// Clocks.
    pub clocks: u64,
    /// What the bus did.
    pub what: String,
}

/// The clock-by-clock accounting of one burst in steady state: from the clock after the
/// previous transaction's last clock to this burst's last clock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BurstAccount {
    /// The burst's bus tag (its index in the job).
    pub tag: u64,
    /// Bytes it moved.
    pub bytes: u64,
    /// Rows, contiguous, covering the window.
    pub rows: Vec<AccountRow>,
    /// Clocks in the window (sum of the rows).
    pub clocks: u64,
}

impl fmt::Display for BurstAccount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "burst {} ({} bytes): {} PCI clocks",
            self.tag, self.bytes, self.clocks
        )?;
        for r in &self.rows {
            writeln!(
                f,
                "  clk {:>4}..{:<4} {:>4}  {}",
                r.from,
                r.from + r.clocks - 1,
                r.clocks,
                r.what
            )?;
        }
        Ok(())
    }
}

/// Result of one `dma` run.
#[derive(Clone, Debug, PartialEq)]
pub struct DmaBenchReport {
    /// Direction.
    pub direction: BenchDirection,
    /// Bytes moved (all verified).
    pub bytes: u64,
    /// Burst size used \[bytes\].
    pub burst_bytes: u64,
    /// From the DMA master receiving the job to the end of its last data phase.
    pub elapsed: Duration,
    /// PCI clocks in `elapsed`.
    pub cycles: u64,
    /// `bytes / elapsed` [MB/s, 10^6 bytes].
    pub throughput_mb_s: f64,
    /// width x clock [MB/s].
    pub ceiling_mb_s: f64,
    /// Bursts issued.
    pub bursts: u32,
    /// Bus statistics at the end of the run.
    pub stats: BusStats,
    /// Host-bridge statistics (system bus).
    pub bridge: Option<BridgeStats>,
    /// Cycle accounting of one burst in steady state (if asked for).
    pub accounting: Option<BurstAccount>,
    /// Kernel events delivered.
    pub events: u64,
    /// Digest of the trace (0 unless tracing).
    pub trace_digest: u64,
}

const BUF_VA: u64 = 0x4000_0000;
const DEVICE_BASE: u64 = 0x8000_0000;
/// Largest buffer of the device-target bench \[bytes\].
const MAX_DEVICE_BYTES: u64 = 1 << 30;

/// Runs the DMA scenario (see the module doc).
///
/// # Errors
/// Bad parameters, or a run whose bytes do not arrive exactly (a model bug).
#[allow(clippy::too_many_lines)]
pub fn dma_throughput(p: &DmaBenchParams) -> Result<DmaBenchReport, PciError> {
    p.dma.validate()?;
    let domain = p.bus.clock_domain("pci")?;
    let period = domain.period();
    if p.bytes == 0 {
        return Err(PciError::BadParam {
            name: "bytes",
            why: "must be > 0".into(),
        });
    }
    if p.offset >= PAGE_SIZE {
        return Err(PciError::BadParam {
            name: "offset",
            why: "must be < 4096".into(),
        });
    }
    let room = match &p.target {
        BenchTarget::HostMemory { memory_bytes, .. } => *memory_bytes,
        BenchTarget::Device { .. } => MAX_DEVICE_BYTES,
    };
    if p.bytes.saturating_add(p.offset) > room {
        return Err(PciError::BadParam {
            name: "bytes",
            why: format!(
                "{} bytes at offset {} do not fit in {room} bytes",
                p.bytes, p.offset
            ),
        });
    }
    let len = usize::try_from(p.bytes).map_err(|_| PciError::BadParam {
        name: "bytes",
        why: "too large for this host".into(),
    })?;
    let mut kernel: Kernel<PciMsg> = Kernel::new(p.trace);
    let d = kernel.add_domain(domain);
    let bus_id = kernel.add_component("pci.bus", d);
    let dma_id = kernel.add_component("card.dma", d);
    let probe_id = kernel.add_component("card.engine", d);
    let mut bus = PciBus::new(p.bus.clone())?;
    let master = bus.add_master(DmaMaster::master_config("card.dma", dma_id, &p.dma))?;
    // The source bytes exist once: in the source memory for a read, in the job for a
    // write. They are checked against the same random stream regenerated in pieces, so
    // memory stays about twice the transfer (see `same_as_payload`).
    let mut payload = vec![0u8; len];
    payload_stream(p.seed).fill(&mut payload);

    let (mem, pages, pt, device_id) = match &p.target {
        BenchTarget::HostMemory {
            bridge,
            memory_bytes,
        } => {
            let mut mem = HostMemory::new(Bytes(*memory_bytes), p.seed)?;
            bus.attach_host_bridge(bridge.clone(), *memory_bytes)?;
            let mut pt = PageTable::new();
            let va = BUF_VA + p.offset;
            pt.map_range(va, p.bytes, &mut mem)?;
            if p.direction == BenchDirection::Read {
                pt.write(&mut mem, va, &payload)?;
            }
            let pages = pt.pages_of(va, p.bytes)?;
            (mem, pages, Some(pt), None)
        }
        BenchTarget::Device {
            profile,
            read_latency,
        } => {
            let dev_id = kernel.add_component("fpga.target", d);
            let size = usize::try_from(p.offset + p.bytes).unwrap_or(usize::MAX);
            bus.add_device_target(DEVICE_BASE, p.offset + p.bytes, dev_id, profile.clone())?;
            let mem = HostMemory::new(Bytes(PAGE_SIZE), p.seed)?;
            let pages = contiguous_pages(DEVICE_BASE + p.offset, p.bytes);
            (mem, pages, None, Some((dev_id, size, *read_latency)))
        }
    };
    if p.accounting {
        // Keep only the stretch of the transaction log around the middle burst, which
        // the accounting shows: the log of every burst would grow with the run.
        let middle = expected_bursts(&pages, p.bytes, p.dma.burst_bytes) / 2;
        bus.set_tenure_log_window(
            middle.saturating_sub(ACCOUNT_MARGIN),
            middle + ACCOUNT_MARGIN,
        );
    }
    let dma = DmaMaster::new(p.dma.clone(), bus_id, master, p.bus.width);
    let mut world = PciWorld::of(
        vec![
            Node::Bus(Box::new(bus)),
            Node::Dma(dma),
            Node::Probe(Probe::default()),
        ],
        mem,
        OnMisroute::Count,
    );
    if let Some((dev_id, size, read_latency)) = device_id {
        let mut dev = SimpleTarget::new(bus_id, DEVICE_BASE, size, read_latency, 0);
        if p.direction == BenchDirection::Read {
            let off = usize::try_from(p.offset).unwrap_or(0);
            dev.bytes_mut()[off..off + len].copy_from_slice(&payload);
        }
        world.place(dev_id, Node::Device(dev));
    }
    let direction = match p.direction {
        BenchDirection::Read => {
            drop(payload);
            DmaDirection::Read { len: p.bytes }
        }
        BenchDirection::Write => DmaDirection::Write { data: payload },
    };
    kernel.post(
        dma_id,
        Time::ZERO,
        PciMsg::DmaStart(DmaJob {
            tag: 1,
            reply_to: probe_id,
            direction,
            pages,
        }),
    );
    kernel.run_to_idle(&mut world);
    if let Some(m) = world.misroutes().first() {
        return Err(PciError::Scenario(format!(
            "a message reached the wrong component: {m}"
        )));
    }

    // Taken out of the probe, not cloned: its data is the whole transfer.
    let received = match world.get_mut(probe_id) {
        Some(Node::Probe(pr)) => std::mem::take(&mut pr.received),
        _ => Vec::new(),
    };
    let done = received
        .into_iter()
        .find_map(|(_, m)| match m {
            PciMsg::DmaDone(d) => Some(d),
            _ => None,
        })
        .ok_or_else(|| PciError::Scenario("the DMA job never finished".into()))?;
    if done.status != DmaStatus::Ok || done.bytes != p.bytes {
        return Err(PciError::Scenario(format!(
            "DMA ended with {:?} after {} of {} bytes",
            done.status, done.bytes, p.bytes
        )));
    }
    // Every byte where it belongs.
    match (p.direction, &pt, device_id) {
        (BenchDirection::Read, _, _) => {
            let same = same_as_payload(p.seed, len, |at, buf| {
                buf.copy_from_slice(&done.data[at..at + buf.len()]);
                Ok(())
            })?;
            if done.data.len() != len || !same {
                return Err(PciError::Scenario(
                    "bytes read differ from the source".into(),
                ));
            }
        }
        (BenchDirection::Write, Some(pt), _) => {
            let same = same_as_payload(p.seed, len, |at, buf| {
                pt.read(&world.store, BUF_VA + p.offset + at as u64, buf)
                    .map_err(PciError::from)
            })?;
            if !same {
                return Err(PciError::Scenario(
                    "host memory differs from the bytes written".into(),
                ));
            }
        }
        (BenchDirection::Write, None, Some((dev_id, _, _))) => {
            let off = usize::try_from(p.offset).unwrap_or(0);
            let ok = match world
                .device(dev_id)
                .and_then(|dv| dv.bytes().get(off..off + len))
            {
                Some(bytes) => same_as_payload(p.seed, len, |at, buf| {
                    buf.copy_from_slice(&bytes[at..at + buf.len()]);
                    Ok(())
                })?,
                None => false,
            };
            if !ok {
                return Err(PciError::Scenario(
                    "target memory differs from the bytes written".into(),
                ));
            }
        }
        (BenchDirection::Write, None, None) => {}
    }
    let elapsed = done.end - done.start;
    let bus = world
        .bus(bus_id)
        .ok_or_else(|| PciError::Scenario("bus missing".into()))?;
    #[allow(clippy::cast_precision_loss)]
    let throughput_mb_s = if elapsed.as_ps() == 0 {
        0.0
    } else {
        p.bytes as f64 * 1e6 / elapsed.as_ps() as f64
    };
    let accounting = if p.accounting {
        burst_account(bus.tenure_log(), u64::from(done.bursts / 2))
    } else {
        None
    };
    Ok(DmaBenchReport {
        direction: p.direction,
        bytes: p.bytes,
        burst_bytes: p.dma.burst_bytes,
        elapsed,
        cycles: elapsed.as_ps() / period.as_ps().max(1),
        throughput_mb_s,
        ceiling_mb_s: p.bus.ceiling_mb_s(),
        bursts: done.bursts,
        stats: bus.stats().clone(),
        bridge: bus.bridge().map(|b| b.stats().clone()),
        accounting,
        events: kernel.stats().events,
        trace_digest: kernel.trace().digest(),
    })
}

/// Bursts on either side of the middle one that the transaction log keeps for the
/// accounting (enough for its retries and the transaction before it).
const ACCOUNT_MARGIN: u64 = 4;

/// The random stream of the bench's bytes.
fn payload_stream(seed: u64) -> SplitMix64 {
    SplitMix64::derive(seed, "dma-bench.data")
}

/// How many bursts the DMA master cuts a job of `len` bytes on `pages` into.
fn expected_bursts(pages: &[u64], len: u64, burst_bytes: u64) -> u64 {
    crate::page_table::page_segments(pages, len)
        .map(|segs| {
            segs.iter()
                .map(|s| s.len.div_ceil(burst_bytes.max(1)))
                .sum()
        })
        .unwrap_or(0)
}

/// Whether the `len` bytes `read(offset, buf)` fills in, piece by piece, are the bench's
/// random stream (regenerated here, so the bench never holds a second copy).
fn same_as_payload(
    seed: u64,
    len: usize,
    mut read: impl FnMut(usize, &mut [u8]) -> Result<(), PciError>,
) -> Result<bool, PciError> {
    const PIECE: usize = 64 << 10; // a multiple of 8: the stream fills 8 bytes at a time
    let mut stream = payload_stream(seed);
    let (mut want, mut got) = (vec![0u8; PIECE], vec![0u8; PIECE]);
    let mut at = 0;
    while at < len {
        let n = PIECE.min(len - at);
        stream.fill(&mut want[..n]);
        read(at, &mut got[..n])?;
        if want[..n] != got[..n] {
            return Ok(false);
        }
        at += n;
    }
    Ok(true)
}

/// The cycle accounting of the request `tag` from a transaction log.
#[must_use]
pub fn burst_account(log: &[TenureRecord], tag: u64) -> Option<BurstAccount> {
    let first = log.iter().position(|r| r.tag == tag)?;
    let start = match first.checked_sub(1) {
        Some(i) => log[i].last_clock + 1,
        None => 0,
    };
    let mut rows = Vec::new();
    let mut at = start;
    let mut bytes = 0;
    let push = |rows: &mut Vec<AccountRow>, at: &mut u64, to: u64, what: String| {
        if to > *at {
            rows.push(AccountRow {
                from: *at - start,
                clocks: to - *at,
                what,
            });
            *at = to;
        }
    };
    for r in log[first..].iter().filter(|r| r.tag == tag) {
        push(
            &mut rows,
            &mut at,
            r.address_clock,
            "idle: turnaround, REQ# gap, arbitration".into(),
        );
        push(
            &mut rows,
            &mut at,
            r.address_clock + 1,
            format!("address phase ({})", r.command.name()),
        );
        match (r.first_data_clock, r.last_data_clock) {
            (Some(f), Some(l)) => {
                push(
                    &mut rows,
                    &mut at,
                    f,
                    "turnaround, DEVSEL#, initial wait states".into(),
                );
                let span = l + 1 - f;
                let what = if span == r.data_phases {
                    format!("{} data phases ({} bytes)", r.data_phases, r.bytes)
                } else {
                    format!(
                        "{} data phases + {} wait states ({} bytes)",
                        r.data_phases,
                        span - r.data_phases,
                        r.bytes
                    )
                };
                push(&mut rows, &mut at, l + 1, what);
                push(
                    &mut rows,
                    &mut at,
                    r.last_clock + 1,
                    format!("termination ({})", r.end.name()),
                );
            }
            _ => {
                let what = match r.end {
                    TenureEnd::Retry => {
                        "turnaround, DEVSEL#, STOP# (retry), FRAME# release".to_owned()
                    }
                    other => format!("no data ({})", other.name()),
                };
                push(&mut rows, &mut at, r.last_clock + 1, what);
            }
        }
        bytes += r.bytes;
    }
    Some(BurstAccount {
        tag,
        bytes,
        clocks: at - start,
        rows,
    })
}
