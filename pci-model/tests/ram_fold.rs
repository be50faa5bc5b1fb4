//! The read and write folds of a RAM-backed device target (`PciBus::handle_ram`,
//! `ram_fold`) against the messages they replace: a master reads and writes a RAM
//! served by a target in another clock domain (the GEC's buffer RAM on the card's local
//! bus, in small), while a writer in the target's domain writes single bytes of it at
//! random instants and priorities, armed at random times before and after the
//! accesses' address phases (so that its writes land at the very instant the target
//! samples a read or takes a write, queued before and after the read's `TargetRead` or
//! the write's `TargetWrite` would be). Writes into the target's watched window stay
//! messages. The folds (untraced `Stepping::FastForward`) must give what the messages
//! give, per clock (`Stepping::PerClock`) and fast: every `TransactionDone` with its
//! time and bytes, every transaction of the log (clocks and data), the bus counters,
//! the RAM, and the target's read and write counts.

mod common;

use pci_model::{
    BusRequest, BusStats, Command, FoldRam, MasterConfig, MasterId, PciBus, PciMsg, PendingWrites,
    RamBacking, ReadSamples, Stepping, TargetProfile, TenureRecord, TransactionDone,
};
use proptest::prelude::*;
use sim_kernel::{ComponentId, Ctx, Cycles, Duration, EventKey, Kernel, Priority, Time, World};

const BASE: u64 = 0x1000_0000;
const SIZE: u64 = 2048;
const BUS: ComponentId = ComponentId(0);
const MASTER: ComponentId = ComponentId(1);
const TARGET: ComponentId = ComponentId(2);
const WRITER: ComponentId = ComponentId(3);
/// The target's watched window: the first 64 bytes (its writes stay messages).
const WATCH: u64 = 64;

#[derive(Clone, Debug)]
enum Msg {
    Pci(PciMsg),
    /// Writer: write `byte` at `addr` at instant `at` with priority `prio`.
    Arm {
        at: Time,
        prio: Priority,
        addr: u64,
        byte: u8,
    },
    Write {
        addr: u64,
        byte: u8,
    },
}

impl From<PciMsg> for Msg {
    fn from(m: PciMsg) -> Self {
        Msg::Pci(m)
    }
}

/// The RAM, copy-on-write for the bus's samples (as `gige_mac::BufferRam` keeps it).
struct Ram {
    bytes: Vec<u8>,
    samples: ReadSamples,
    writes: PendingWrites,
}

impl Ram {
    fn copy(bytes: &[u8], addr: u64, len: u64) -> Vec<u8> {
        let from = usize::try_from(addr - BASE).unwrap();
        bytes[from..from + usize::try_from(len).unwrap()].to_vec()
    }

    fn write(&mut self, key: EventKey, addr: u64, data: &[u8]) {
        self.samples.set_now(key);
        let bytes = &self.bytes;
        self.samples
            .before_write(addr, data.len() as u64, |a, n| Self::copy(bytes, a, n));
        let from = usize::try_from(addr - BASE).unwrap();
        self.bytes[from..from + data.len()].copy_from_slice(data);
    }
}

impl FoldRam for Ram {
    fn sample(&mut self, at: EventKey, addr: u64, len: u64) -> u64 {
        self.samples.add(at, addr, len)
    }

    fn take_sample(&mut self, id: u64) -> Option<Vec<u8>> {
        let bytes = &self.bytes;
        self.samples.take(id, |a, n| Self::copy(bytes, a, n))
    }

    fn write_at(&mut self, at: EventKey, addr: u64, data: Vec<u8>) {
        self.writes.push(at, addr, data);
    }

    fn pass(&mut self, now: EventKey) {
        while let Some((at, addr, data)) = self.writes.pop_before(now) {
            self.write(at, addr, &data);
        }
    }
}

struct Sim {
    bus: PciBus,
    fold: bool,
    ram: Ram,
    latency: u64,
    target_reads: u64,
    target_writes: u64,
    dones: Vec<(Time, TransactionDone)>,
}

impl World<Msg> for Sim {
    fn deliver(&mut self, to: ComponentId, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        match (to, msg) {
            (BUS, Msg::Pci(m)) if self.fold => self.bus.handle_ram(m, ctx, &mut self.ram),
            (BUS, Msg::Pci(m)) => self.bus.handle(m, ctx, None),
            // As `Gec::target_write`: stored at this event.
            (TARGET, Msg::Pci(PciMsg::TargetWrite { addr, data })) => {
                self.target_writes += 1;
                self.ram.pass(ctx.event_key());
                self.ram.write(ctx.event_key(), addr, &data);
            }
            (MASTER, Msg::Pci(PciMsg::TransactionDone(d))) => self.dones.push((ctx.now(), d)),
            // As `Gec::target_read`: the RAM's bytes now, the data `latency` clocks later.
            (TARGET, Msg::Pci(PciMsg::TargetRead { tag, addr, len, .. })) => {
                self.target_reads += 1;
                self.ram.pass(ctx.event_key());
                let n = len.min(BASE + SIZE - addr);
                let data = Ram::copy(&self.ram.bytes, addr, n);
                let at = ctx
                    .my_domain()
                    .edge_after(ctx.now(), Cycles(self.latency.max(1)));
                ctx.send_at(BUS, at, PciMsg::TargetReadData { tag, data }.into());
            }
            (
                WRITER,
                Msg::Arm {
                    at,
                    prio,
                    addr,
                    byte,
                },
            ) => {
                let d = ctx.my_domain();
                let n = (at.0.saturating_sub(ctx.now().0) / d.period().0).max(1);
                ctx.wake_after_with(Cycles(n), prio, Msg::Write { addr, byte });
            }
            (WRITER, Msg::Write { addr, byte }) => {
                self.ram.pass(ctx.event_key());
                self.ram.write(ctx.event_key(), addr, &[byte]);
            }
            (to, msg) => panic!("{to:?} does not take {msg:?}"),
        }
    }
}

/// One request of the master: arrival time [ps], offset into the RAM, length, and
/// whether it writes (its bytes follow from its index) or reads.
type Access = (u64, u64, u64, bool);
/// One write: arming time [ps], write time [ps], priority (0..3), offset.
type Write = (u64, u64, u8, u64);

#[derive(Debug, PartialEq)]
struct Outcome {
    dones: Vec<(Time, TransactionDone)>,
    log: Vec<TenureRecord>,
    stats: BusStats,
    ram: Vec<u8>,
    target_reads: u64,
    target_writes: u64,
}

fn run(
    stepping: Stepping,
    fold: bool,
    (core_mhz, latency, lt): (f64, u64, u64),
    accesses: &[Access],
    writes: &[Write],
    (cut, write_skew): (Option<u64>, u64),
) -> (Outcome, u64) {
    let parts = [
        ("bus", false),
        ("master", false),
        ("target", true),
        ("writer", true),
    ];
    let (mut k, params): (Kernel<Msg>, _) = common::pci_and_core(stepping, core_mhz, &parts);
    let mut bus = PciBus::new(params).unwrap();
    bus.set_tenure_log(true);
    let m = bus
        .add_master(MasterConfig {
            name: "master".into(),
            component: MASTER,
            latency_timer: Cycles(lt),
            supports_64bit: false,
            recovery: Cycles(0),
        })
        .unwrap();
    let t = bus
        .add_device_target(BASE, SIZE, TARGET, TargetProfile::default())
        .unwrap();
    let backing = RamBacking {
        start: BASE,
        end: BASE + SIZE,
        read_latency: Cycles(latency),
        watch: (BASE, BASE + WATCH),
    };
    bus.set_ram_backed(t, backing).unwrap();
    bus.set_fold_write_skew_clocks(write_skew);
    let bytes = (0..SIZE).map(|i| (i * 7 + 3) as u8).collect();
    let mut sim = Sim {
        bus,
        fold,
        ram: Ram {
            bytes,
            samples: ReadSamples::default(),
            writes: PendingWrites::default(),
        },
        latency,
        target_reads: 0,
        target_writes: 0,
        dones: Vec::new(),
    };
    for (i, &(at, off, len, write)) in accesses.iter().enumerate() {
        let (command, data) = if write {
            let data = (0..len).map(|j| (i as u64 * 31 + j) as u8 | 1).collect();
            (Command::MemoryWrite, data)
        } else {
            (Command::MemoryRead, Vec::new())
        };
        let req = BusRequest {
            master: MasterId(m.0),
            tag: i as u64,
            command,
            addr: BASE + off,
            len,
            data,
        };
        k.post(BUS, Time(at), Msg::Pci(PciMsg::Request(req)));
    }
    let prios = [Priority::EARLY, Priority::NORMAL, Priority::LATE];
    for (i, &(arm, at, p, off)) in writes.iter().enumerate() {
        let msg = Msg::Arm {
            at: Time(at),
            prio: prios[usize::from(p % 3)],
            addr: BASE + off,
            byte: 0x80 | (i as u8 & 0x7F),
        };
        k.post(WRITER, Time(arm), msg);
    }
    // Run to the end, or cut at an instant (every event at or before it run), and
    // settle the bus there, as a system run ends.
    let until = match cut {
        Some(t) => {
            k.run_until(&mut sim, Time(t));
            Time(t)
        }
        None => {
            k.run_to_idle(&mut sim);
            Time(1 << 60)
        }
    };
    if fold {
        sim.bus.settle_ram(&mut k, BUS, until, &mut sim.ram);
    } else {
        sim.bus.settle(&mut k, BUS, until, None);
    }
    if cut.is_none() {
        assert!(
            sim.ram.writes.is_empty(),
            "a stored write left after a drained run"
        );
    }
    let events = k.stats().events;
    let folded = sim.bus.fold_stats();
    let outcome = Outcome {
        dones: sim.dones,
        log: sim.bus.tenure_log().to_vec(),
        stats: sim.bus.stats().clone(),
        ram: sim.ram.bytes,
        target_reads: sim.target_reads + folded.reads,
        target_writes: sim.target_writes + folded.writes,
    };
    (outcome, events)
}

fn check(
    clocks: (f64, u64, u64),
    accesses: &[Access],
    writes: &[Write],
) -> Result<(), TestCaseError> {
    check_cut(clocks, accesses, writes, None)
}

/// [`check`] for a run cut at `cut` (ps; `None`: run to the end).
fn check_cut(
    clocks: (f64, u64, u64),
    accesses: &[Access],
    writes: &[Write],
    cut: Option<u64>,
) -> Result<(), TestCaseError> {
    let (reference, _) = run(
        Stepping::PerClock,
        false,
        clocks,
        accesses,
        writes,
        (cut, 0),
    );
    let (messages, message_events) = run(
        Stepping::FastForward,
        false,
        clocks,
        accesses,
        writes,
        (cut, 0),
    );
    let (folded, fold_events) = run(
        Stepping::FastForward,
        true,
        clocks,
        accesses,
        writes,
        (cut, 0),
    );
    prop_assert!(
        messages == reference,
        "messages differ from per-clock stepping"
    );
    prop_assert!(
        folded == reference,
        "the folds differ from per-clock stepping"
    );
    if cut.is_some() {
        return Ok(());
    }
    prop_assert_eq!(reference.dones.len(), accesses.len());
    // Every read folds (two messages fewer), and every write outside the watched
    // window (one).
    let folds = accesses
        .iter()
        .filter(|&&(_, off, _, write)| !write || off >= WATCH)
        .count();
    prop_assert!(fold_events + folds as u64 <= message_events);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Random reads (some past the initial latency limit: Retried, then a delayed
    /// completion) and writes (some into the watched window), random target clocks and
    /// latencies, and the writer's writes at and around the instants the target samples
    /// a read or takes a write; runs to the end and cut at a random instant.
    #[test]
    fn folded_reads_and_writes_equal_the_messages(
        core_mhz in prop::sample::select(vec![33.0, 50.0, 100.0, 125.0, 133.0]),
        latency in 0u64..40,
        lt in prop::sample::select(vec![8u64, 16, 64]),
        accesses in prop::collection::vec(
            (0u64..3_000_000, 0u64..SIZE - 64, 1u64..64, prop::bool::ANY),
            1..6,
        ),
        writes in prop::collection::vec((0u64..3_200_000, 0u64..3_400_000, 0u8..3, 0u64..SIZE), 0..60),
        cut in 0u64..4_000_000,
    ) {
        check((core_mhz, latency, lt), &accesses, &writes)?;
        check_cut((core_mhz, latency, lt), &accesses, &writes, Some(cut))?;
    }
}

/// Writes at every core edge of a read's sampling instant and around it, armed before
/// and after its address phase, at every priority: the same bytes as the messages.
#[test]
fn writes_at_the_sampling_instant_are_ordered_as_the_messages() {
    // The read's address phase is clock 2 (request at edge 0, GNT# in 1); the target
    // (100 MHz) samples it at the first core edge at or after bus edge 3 (90.9 ns).
    let reads = [(0, 16, 8, false)];
    let mut writes = Vec::new();
    let period = Duration::from_ns(10).0;
    for (i, arm) in [0u64, 30_303, 60_606, 65_000, 80_000]
        .into_iter()
        .enumerate()
    {
        for at in [80_000u64, 90_000, 100_000, 110_000] {
            for p in 0..3 {
                let off = 16 + ((i as u64 + at / period + u64::from(p)) % 8);
                writes.push((arm, at, p, off));
            }
        }
    }
    check((100.0, 2, 64), &reads, &writes).unwrap();
}

/// The writer's writes at each core edge around the instant a master's write lands at
/// the target, armed before and after the write's address phase, at every priority:
/// the folded write stores its bytes at the message's place (the same RAM). With its
/// place a target clock late (`set_fold_write_skew_clocks`, a deliberately broken fold)
/// the RAM differs where the writer writes at the edges in between: the test can fail.
#[test]
fn writes_at_a_folded_write_s_instant_are_ordered_as_the_messages() {
    let accesses = [(0, 128, 8, true)];
    let period = Duration::from_ns(10).0;
    let clocks = (100.0, 2, 64);
    let mut caught = 0;
    for k in 0..40u64 {
        let mut writes = Vec::new();
        for arm in [0u64, 45_000, 95_000] {
            for p in 0..3u8 {
                writes.push((arm, k * period, p, 128 + u64::from(p) + arm / 45_000 * 3));
            }
        }
        check(clocks, &accesses, &writes).unwrap();
        let (reference, _) = run(
            Stepping::PerClock,
            false,
            clocks,
            &accesses,
            &writes,
            (None, 0),
        );
        let (late, _) = run(
            Stepping::FastForward,
            true,
            clocks,
            &accesses,
            &writes,
            (None, 1),
        );
        caught += usize::from(late.ram != reference.ram);
    }
    assert!(caught > 0, "a write stored a clock late went unseen");
}

/// A run cut while a folded write or read is on its way (its message not delivered
/// yet) counts and stores what the messages' run does: every cut in 1 ns steps across
/// a write and a read.
#[test]
fn a_run_cut_while_a_folded_message_is_on_its_way_counts_as_the_messages() {
    let accesses = [(0, 128, 8, true), (200_000, 256, 8, false)];
    for ns in 100..400u64 {
        check_cut((100.0, 2, 64), &accesses, &[], Some(ns * 1000)).unwrap();
    }
}
