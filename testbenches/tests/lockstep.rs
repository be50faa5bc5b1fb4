//! Lockstep proof of the fast stepping (`sim.stepping = "fast"`) against the exact
//! reference (`"exact"`: every clock of both PCI buses stepped, every iteration of a
//! busy poll an event): the same ping-pong in both modes (the fast one traced and
//! untraced) must agree on everything
//! observable - every trace span and state transition with its time (not the order in
//! which they were recorded), every program
//! record, every byte of host memory and card buffer RAM at the end, and the counters of
//! the CPUs, engines, DMA masters, buses and GECs. Only the event count may differ.
//!
//! CI runs both operations at 4, 1460, 1461 and 4096 bytes on every preset and 65536
//! bytes on the default one, plus random configurations; `HVIA_LOCKSTEP_LONG=1 cargo
//! test --release -p testbenches --test lockstep` adds 65536 bytes on every preset and
//! more random cases. Twelve tests break a fast path by one clock on purpose (the poll
//! fast path; the PCI bus's untraced look-ahead for a device transaction and for a
//! delayed read's retry loop; a lazily committed DMA write; the local bus's answer to a
//! DP83820 read from the buffer RAM, the GEC read fold; Retry attempts applied as a
//! whole; a transaction applied whole; the clocks up to a parked master's address
//! phase applied at once; the card's DMA master folded into its system bus, its
//! requests landing late; the DP83820's completions run by its local bus; a translation
//! the card ATT computes ahead; the engine's inputs the GEC takes in the engine's
//! event), one breaks the bus's deferral of requests (every request deferred, not only
//! one behind another of its master's) and one puts the GEC write fold's stored writes
//! a hundred clocks late, and each checks that it is caught. The GEC's counters are compared with the reads its bus
//! answered for it added.
//!
//! MPI runs wait in `VipCQWait`, a poll over several words that the fast mode parks:
//! the same comparison on `hvia mpi pingpong`'s program at 4, 1460, 8192 (eager),
//! 8193 and 32768 bytes (synchronous), on `hvia mpi bcast`'s four-rank program
//! (barriers, broadcasts, an all-reduce behind the switch), on a wait that gives up at
//! its budget (the parked wait's deadline wake-up) and on random sizes, clocks, poll
//! costs and registration modes; a CQ wait woken one scan late is caught.

use host_driver::{CallExt, IterationRecord, ProgramError, ProgramReport, ProgramResult, Vipl};
use pci_model::Deferral;
use proptest::prelude::*;
use std::rc::Rc;
use testbenches::config::{ConfigSource, SimStepping, SystemConfig, PRESETS};
use testbenches::system::world::Comp;
use testbenches::system::{
    run_pingpong_adjusted, run_spmd_adjusted, Op, PingPongRun, PingPongSpec, System,
};
use via_abi::MacAddr;
use vmpi::programs::{mpi_bcast, mpi_pingpong, Bench};
use vmpi::{Comm, MpiConfig, MpiError, Rank, Source, Tag, TagSel};

/// Everything a run shows, in comparable form.
#[derive(Clone, Debug, PartialEq)]
struct Observed {
    one_way_ps: u64,
    records: Vec<String>,
    spans: Vec<sim_kernel::Span>,
    transitions: Vec<sim_kernel::Transition>,
    memories: Vec<(u64, u64)>,
    counters: Vec<String>,
}

fn observe(r: &PingPongRun) -> Observed {
    let records = r
        .initiator
        .iterations
        .iter()
        .chain(&r.responder.iterations)
        .map(|i| format!("{:?}", i))
        .collect();
    observe_system(&r.system, records, r.one_way.0)
}

/// What `sys` shows after a run whose programs recorded `records`.
fn observe_system(sys: &System, records: Vec<String>, one_way_ps: u64) -> Observed {
    let memories = sys
        .world
        .store
        .iter()
        .map(|n| {
            let ram = n
                .ram
                .read_vec(n.ram.layout().base, n.ram.layout().size())
                .expect("the whole buffer RAM");
            let mut h: u64 = 0xcbf2_9ce4_8422_2325;
            for b in ram {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
            (n.mem.content_digest(), h)
        })
        .collect();
    let counters = sys
        .world
        .iter()
        .filter_map(|(_, c)| match c {
            Comp::Cpu(_, c) => Some(format!("{:?}", c.stats())),
            Comp::Engine(_, e) => Some(format!("{:?}", e.stats())),
            // A component, or run by its system bus (untraced fast stepping).
            Comp::Dma(n, _) | Comp::FoldedDma(n) => sys.dma(*n).map(|d| format!("{:?}", d.stats())),
            Comp::SystemBus(_, b) | Comp::LocalBus(_, b) => Some(format!("{:?}", b.stats())),
            // With the reads its local bus answered from the buffer RAM for it.
            Comp::Gec(n) => sys.gec_stats(*n).map(|s| format!("{s:?}")),
            // A component, or lent to its local bus (untraced fast stepping).
            Comp::MacBus(n, _) | Comp::FoldedMacBus(n) => {
                sys.mac_bus(*n).map(|m| format!("{:?}", m.stats()))
            }
            // With its transmitter's counters (its gaps, `GmiiTx::set_lazy_gap`).
            Comp::MacSide(_, m) => Some(format!("{:?} {:?}", m.stats(), m.tx().stats())),
            // With its state and its SDRAM controller's (translations computed ahead,
            // `AttManager::set_ahead`).
            Comp::Att(_, a) => Some(format!(
                "{:?} {:?} {:?}",
                a.stats(),
                a.state(),
                a.sdram_controller()
            )),
            _ => None,
        })
        .collect();
    // The same spans and transitions at the same times; a lazily stepped bus records
    // them later in the run than one stepped clock by clock, so the order of recording
    // is not compared (each state machine's own transitions keep theirs: the sort is
    // stable). Machines of one component that change at the same instant are ordered by
    // name: the switch's per-port transmitters starting together record in the order
    // their frames were queued, which a lazily stepped bus may change.
    let trace = sys.kernel.trace();
    let mut spans = trace.spans().to_vec();
    spans.sort_by_key(|s| (s.start, s.end, s.component, s.domain, s.stage, s.msg));
    let mut transitions = trace.transitions().to_vec();
    transitions.sort_by_key(|t| (t.component, t.time, t.machine));
    Observed {
        one_way_ps,
        records,
        spans,
        transitions,
        memories,
        counters,
    }
}

/// Deliberate errors in the fast paths, for the tests that show they are caught.
#[derive(Clone, Copy, Debug, Default)]
struct Skew {
    /// A busy poll woken this many CPU cycles late.
    poll: u64,
    /// A bus woken this many clocks late for a device transaction's end (untraced).
    bus: u64,
    /// A parked poll over several words (`VipCQWait`) woken this many scans late.
    scan: u64,
    /// A local bus that sees the data of a read it answers from the buffer RAM itself
    /// (untraced) this many clocks late.
    fold: u64,
    /// A system bus woken this many clocks late for a delayed read's first attempt that
    /// moves data, as its untraced retry-loop look-ahead predicts it.
    read: u64,
    /// A lazily committed DMA write visible this many bus clocks late.
    commit: u64,
    /// Each delayed-read Retry attempt applied as a whole (untraced) holding REQ# off
    /// this many clocks too long.
    retry_run: u64,
    /// A transaction applied whole (untraced, on either bus) ending this many clocks
    /// late.
    whole: u64,
    /// The clocks up to an address phase applied at once (untraced, on either bus)
    /// starting the transaction this many clocks late.
    start: u64,
    /// Every request landing while the bus has a wake-up queued is queued without
    /// stepping up to it and without a new wake-up, not only those behind another of
    /// their master's (untraced, on either bus).
    defer_any: bool,
    /// The requests of the DMA master folded into its system bus (untraced) landing
    /// this many clocks late.
    dma_fold: u64,
    /// A DP83820 write the local bus stores in the buffer RAM itself (untraced) landing
    /// this many core clocks late.
    fold_write: u64,
    /// The DP83820's completions the local bus runs itself (untraced) taken this many
    /// clocks late.
    local_fold: u64,
    /// The answer of a translation the card ATT computes ahead (untraced) landing this
    /// many engine clocks late.
    att_ahead: u64,
    /// The engine's inputs the GEC takes in the engine's event (untraced) taken this
    /// many core clocks late.
    gec_input: u64,
}

/// Applies `skew` to every CPU and bus of `sys`.
fn break_fast_paths(sys: &mut System, skew: Skew) {
    for n in 0..sys.nodes.len() {
        if let Some(c) = sys.cpu_mut(n) {
            c.set_fast_poll_skew_cycles(skew.poll);
            c.set_fast_scan_skew_iterations(skew.scan);
        }
    }
    for (_, part) in sys.world.iter_mut() {
        if let Comp::SystemBus(_, b) | Comp::LocalBus(_, b) = part {
            b.set_untraced_skew_clocks(skew.bus);
            b.set_fold_skew_clocks(skew.fold);
            b.set_untraced_read_skew_clocks(skew.read);
            b.set_lazy_commit_skew_clocks(skew.commit);
            b.set_retry_run_skew_clocks(skew.retry_run);
            b.set_whole_skew_clocks(skew.whole);
            b.set_start_skew_clocks(skew.start);
            if skew.defer_any {
                b.set_deferral(Deferral::Any);
            }
            b.set_dma_fold_skew_clocks(skew.dma_fold);
            b.set_fold_write_skew_clocks(skew.fold_write);
            b.set_local_fold_skew_clocks(skew.local_fold);
        }
        if let Comp::Att(_, a) = part {
            a.set_ahead_skew_cycles(skew.att_ahead);
        }
    }
    for n in 0..sys.nodes.len() {
        if let Some(g) = sys.gec_mut(n) {
            g.set_input_skew_cycles(skew.gec_input);
        }
    }
}

fn run(
    cfg: &SystemConfig,
    op: Op,
    size: u32,
    stepping: SimStepping,
    skew: Skew,
    trace: bool,
) -> PingPongRun {
    let mut cfg = cfg.clone();
    cfg.sim.stepping = stepping;
    let spec = PingPongSpec {
        op,
        size,
        iterations: 2,
        warmup: 1,
        trace,
        recv_post: testbenches::system::RecvPost::Timed,
    };
    run_pingpong_adjusted(&cfg, spec, |sys| break_fast_paths(sys, skew))
        .unwrap_or_else(|e| panic!("{} {size} B {stepping:?}: {e}", op.name()))
}

/// Runs both modes, the fast one with and without a trace (without one, a bus is not
/// woken for phase changes that nothing records); `None` if they agree, else what
/// differs first.
fn disagreement(cfg: &SystemConfig, op: Op, size: u32, skew: Skew) -> Option<String> {
    let exact = run(cfg, op, size, SimStepping::Exact, Skew::default(), true);
    let a = observe(&exact);
    for trace in [true, false] {
        let fast = run(cfg, op, size, SimStepping::Fast, skew, trace);
        assert!(
            fast.stats.events <= exact.stats.events,
            "the fast mode takes more events ({} > {})",
            fast.stats.events,
            exact.stats.events
        );
        let b = observe(&fast);
        let mut a = a.clone();
        if !trace {
            assert!(b.spans.is_empty() && b.transitions.is_empty());
            a.spans.clear();
            a.transitions.clear();
        }
        if let Some(d) = difference(&a, &b) {
            let untraced = if trace { "" } else { " (untraced)" };
            return Some(format!("{} {size} B{untraced}: {d}", op.name()));
        }
    }
    None
}

/// What differs first between two observations, if anything.
fn difference(a: &Observed, b: &Observed) -> Option<String> {
    if a == b {
        return None;
    }
    let what = if a.one_way_ps != b.one_way_ps {
        format!("one-way {} ps vs {} ps", a.one_way_ps, b.one_way_ps)
    } else if a.records != b.records {
        "program records".to_owned()
    } else if a.spans != b.spans {
        let i = a.spans.iter().zip(&b.spans).position(|(x, y)| x != y);
        format!(
            "span {i:?}: {:?} vs {:?}",
            i.map(|i| &a.spans[i]),
            i.map(|i| &b.spans[i])
        )
    } else if a.transitions != b.transitions {
        let i = a
            .transitions
            .iter()
            .zip(&b.transitions)
            .position(|(x, y)| x != y);
        format!(
            "state transition {i:?} of {} / {}: {:?} vs {:?}",
            a.transitions.len(),
            b.transitions.len(),
            i.map(|i| &a.transitions[i]),
            i.map(|i| &b.transitions[i])
        )
    } else if a.memories != b.memories {
        "memory contents".to_owned()
    } else {
        let i = a.counters.iter().zip(&b.counters).position(|(x, y)| x != y);
        format!(
            "counters {:?} vs {:?}",
            i.map(|i| &a.counters[i]),
            i.map(|i| &b.counters[i])
        )
    };
    Some(what)
}

fn preset(name: &str) -> SystemConfig {
    SystemConfig::from_preset(name).expect("preset")
}

fn long() -> bool {
    std::env::var_os("HVIA_LOCKSTEP_LONG").is_some()
}

#[test]
fn fast_stepping_equals_exact_on_every_preset() {
    for p in PRESETS {
        let cfg = preset(p.name);
        let mut sizes = vec![4, 1460, 1461, 4096];
        if p.name == "hvia-ge" || long() {
            sizes.push(65536);
        }
        for op in [Op::RdmaWrite, Op::SendRecv] {
            for &size in &sizes {
                if let Some(d) = disagreement(&cfg, op, size, Skew::default()) {
                    panic!("{}: {d}", p.name);
                }
            }
        }
    }
}

#[test]
fn a_fast_path_off_by_one_clock_is_caught() {
    let cfg = preset("hvia-ge");
    let skew = Skew {
        poll: 1,
        ..Skew::default()
    };
    let d = disagreement(&cfg, Op::RdmaWrite, 4, skew);
    assert!(d.is_some(), "a poll woken one clock late went unnoticed");
}

/// Whether an RDMA-write ping-pong of `size` bytes with `skew` is caught: the comparison
/// finds a disagreement, or (in a debug build) the assertion that an output is never
/// emitted late fires.
fn caught(cfg: &SystemConfig, size: u32, skew: Skew) -> bool {
    let outcome = std::panic::catch_unwind(|| disagreement(cfg, Op::RdmaWrite, size, skew));
    !matches!(outcome, Ok(None))
}

/// A bus whose untraced look-ahead wakes it one clock late for the end of a device
/// transaction (the DP83820's reads and writes of the buffer RAM, the CPU's of the
/// card's registers) is caught: in a debug build by the assertion that an output is
/// never emitted late, in a release build by the comparison.
#[test]
fn a_bus_look_ahead_off_by_one_clock_is_caught() {
    let cfg = preset("hvia-ge");
    let skew = Skew {
        bus: 1,
        ..Skew::default()
    };
    assert!(
        caught(&cfg, 1460, skew),
        "a bus woken one clock late went unnoticed"
    );
}

/// A local bus that answers the DP83820's reads of the buffer RAM itself (untraced) and
/// sees their data one clock after `TargetReadData` would have landed is caught.
#[test]
fn a_gec_read_fold_off_by_one_clock_is_caught() {
    let cfg = preset("hvia-ge");
    let skew = Skew {
        fold: 1,
        ..Skew::default()
    };
    let d = disagreement(&cfg, Op::RdmaWrite, 1460, skew);
    assert!(
        d.is_some(),
        "a folded read seen one clock late went unnoticed"
    );
}

/// A system bus whose untraced look-ahead over a delayed read's retry loop wakes it one
/// clock after the attempt that moves data (the card's DMA reads of host memory) is
/// caught: in a debug build by the assertion that an output is never emitted late, in
/// a release build by the comparison.
#[test]
fn a_retry_loop_look_ahead_off_by_one_clock_is_caught() {
    let cfg = preset("hvia-ge");
    let skew = Skew {
        read: 1,
        ..Skew::default()
    };
    assert!(
        caught(&cfg, 1460, skew),
        "a bus woken one clock late for a delayed read went unnoticed"
    );
}

/// A lazily committed DMA write (untraced fast stepping) that becomes visible in host
/// memory one bus clock late is caught: the CPU sees the data late, or a watch notice
/// goes missing.
#[test]
fn a_lazy_commit_one_clock_late_is_caught() {
    let cfg = preset("hvia-ge");
    let skew = Skew {
        commit: 1,
        ..Skew::default()
    };
    assert!(
        caught(&cfg, 1460, skew),
        "a DMA write committed one clock late went unnoticed"
    );
}

/// Delayed-read Retry attempts applied as a whole (untraced fast stepping, the card's
/// DMA reads of host memory) that each hold REQ# off one clock too long are caught.
#[test]
fn a_retry_attempt_applied_one_clock_long_is_caught() {
    let cfg = preset("hvia-ge");
    let skew = Skew {
        retry_run: 1,
        ..Skew::default()
    };
    assert!(
        caught(&cfg, 1460, skew),
        "Retry attempts applied one clock long went unnoticed"
    );
}

/// Transactions applied whole (untraced fast stepping, both buses: the DP83820's and the
/// GEC's on the card's local bus, the card's DMA on the system bus) that end one clock
/// late are caught.
#[test]
fn a_transaction_applied_whole_one_clock_late_is_caught() {
    let cfg = preset("hvia-ge");
    let skew = Skew {
        whole: 1,
        ..Skew::default()
    };
    assert!(
        caught(&cfg, 1460, skew),
        "transactions applied whole one clock late went unnoticed"
    );
}

/// The clocks up to an address phase applied at once (untraced fast stepping, both
/// buses: a parked master's turnaround, idle clocks and start) that start the
/// transaction one clock late are caught.
#[test]
fn a_start_applied_one_clock_late_is_caught() {
    let cfg = preset("hvia-ge");
    let skew = Skew {
        start: 1,
        ..Skew::default()
    };
    assert!(
        caught(&cfg, 1460, skew),
        "starts applied one clock late went unnoticed"
    );
}

/// A bus that queues every request landing while it has a wake-up queued without
/// stepping up to it or computing a new wake-up (untraced fast stepping), instead of
/// only one behind another of its master's requests, is caught: a request that is not
/// behind another can start before the wake-up queued without it.
#[test]
fn a_request_deferred_though_not_behind_another_is_caught() {
    let cfg = preset("hvia-ge");
    let skew = Skew {
        defer_any: true,
        ..Skew::default()
    };
    assert!(
        caught(&cfg, 4096, skew),
        "requests deferred without a new wake-up went unnoticed"
    );
}

/// The card's DMA master folded into its system bus (untraced fast stepping) with its
/// requests landing one clock late is caught.
#[test]
fn a_folded_dma_master_one_clock_late_is_caught() {
    let cfg = preset("hvia-ge");
    let skew = Skew {
        dma_fold: 1,
        ..Skew::default()
    };
    assert!(
        caught(&cfg, 1460, skew),
        "a folded DMA master's requests one clock late went unnoticed"
    );
}

/// The DP83820's completions run by its local bus (untraced fast stepping), taken one
/// clock late, are caught (the one-way latency moves).
#[test]
fn a_folded_dp83820_completion_one_clock_late_is_caught() {
    let cfg = preset("hvia-ge");
    let skew = Skew {
        local_fold: 1,
        ..Skew::default()
    };
    assert!(
        caught(&cfg, 1460, skew),
        "a folded DP83820 completion one clock late went unnoticed"
    );
}

/// A translation the card ATT computes ahead (untraced) whose answer lands one engine
/// clock late is caught.
#[test]
fn a_translation_computed_ahead_one_clock_late_is_caught() {
    let cfg = preset("hvia-ge");
    let skew = Skew {
        att_ahead: 1,
        ..Skew::default()
    };
    assert!(
        caught(&cfg, 1460, skew),
        "a translation answered one clock late went unnoticed"
    );
}

/// The engine's transmit and release requests taken by the GEC in the engine's event
/// (untraced) a core clock late are caught.
#[test]
fn a_gec_input_taken_one_clock_late_is_caught() {
    let cfg = preset("hvia-ge");
    let skew = Skew {
        gec_input: 1,
        ..Skew::default()
    };
    assert!(
        caught(&cfg, 1460, skew),
        "a GEC input taken one clock late went unnoticed"
    );
}

/// A local bus that stores the DP83820's writes in the buffer RAM itself (untraced)
/// with their place 100 core clocks (0.8 us) late is caught. A place 1 to 10 clocks late
/// changes nothing a run shows (measured on 4 B to 64 KiB, 28 November 2026): nothing
/// reads a receive buffer that soon after the DP83820 writes it, so the harness cannot
/// see it; the clock-exact place is proven against the messages, with writes of another
/// component at every edge around it, in `pci-model/tests/ram_fold.rs` (where one clock
/// late is caught).
#[test]
fn a_gec_write_fold_a_hundred_clocks_late_is_caught() {
    let cfg = preset("hvia-ge");
    let skew = Skew {
        fold_write: 100,
        ..Skew::default()
    };
    assert!(
        caught(&cfg, 1460, skew),
        "a folded write stored 100 clocks late went unnoticed"
    );
}

/// `cfg` with the random clocks and poll cost of the property tests.
fn clocked(mut cfg: SystemConfig, cpu_mhz: f64, pci_mhz: f64, poll_cycles: u32) -> SystemConfig {
    cfg.host.cpu_clock_mhz = cpu_mhz;
    cfg.pci.system.clock_mhz = pci_mhz;
    cfg.host.costs.poll_iteration_cycles = poll_cycles;
    cfg
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if long() { 64 } else { 6 },
        .. ProptestConfig::default()
    })]

    /// Random sizes and clocks: the two modes agree.
    #[test]
    fn fast_stepping_equals_exact_on_random_configurations(
        size in 1u32..6000,
        send_recv in any::<bool>(),
        cpu_mhz in prop::sample::select(vec![400.0, 600.0, 800.0, 1000.0]),
        pci_mhz in prop::sample::select(vec![25.0, 33.0, 66.0]),
        poll_cycles in 4u32..40,
    ) {
        let cfg = clocked(preset("hvia-ge"), cpu_mhz, pci_mhz, poll_cycles);
        let op = if send_recv { Op::SendRecv } else { Op::RdmaWrite };
        prop_assert_eq!(disagreement(&cfg, op, size, Skew::default()), None);
    }
}

// MPI: a process waiting for a message sits in `VipCQWait`, a poll over the head status
// of every work queue tied to its completion queue (`Op::PollAny`), which the fast mode
// parks until a write into one of those lines or the wait's deadline.

/// The MPI programs the lockstep tests run.
#[derive(Clone, Debug)]
enum MpiCase {
    /// `hvia mpi pingpong`'s program between two ranks at these sizes (eager up to the
    /// 8 KiB limit, synchronous above it).
    PingPong(Vec<u32>),
    /// `hvia mpi bcast`'s program (barriers, binomial broadcasts, an all-reduce) on
    /// four ranks behind the store-and-forward switch.
    Bcast4(Vec<u32>),
    /// Two ranks: a 16 KiB synchronous message, then a receive nothing matches, which
    /// gives up after the wait budget (200 us here): a parked wait's deadline wake-up.
    GiveUp,
}

impl MpiCase {
    fn nodes(&self) -> u32 {
        match self {
            MpiCase::Bcast4(_) => 4,
            MpiCase::PingPong(_) | MpiCase::GiveUp => 2,
        }
    }
}

fn mpi_preset(nodes: u32) -> SystemConfig {
    let n = format!("topology.nodes={nodes}");
    let mut sets = vec![n.as_str()];
    if nodes > 2 {
        sets.push("topology.switch=store-and-forward");
    }
    SystemConfig::load(&ConfigSource::Preset("hvia-ge".into()), &sets).expect("valid")
}

/// The program of [`MpiCase::GiveUp`]: its record is the unmatched receive's wait.
async fn give_up(v: Vipl, rank: Rank, macs: Vec<MacAddr>, cfg: MpiConfig) -> ProgramResult {
    let mut c = Comm::init(v, rank, macs, cfg).await?;
    let n: u32 = 16 * 1024;
    let buf = c.vipl().malloc(u64::from(n), 64).await.call("malloc")?;
    let peer = Rank(1 - rank.0);
    if rank == Rank(0) {
        c.send(buf, n, peer, Tag(1)).await?;
    } else {
        c.recv(buf, n, Source::Rank(peer), TagSel::Tag(Tag(1)))
            .await?;
    }
    let start = c.vipl().now();
    let e = c
        .recv(buf, 4, Source::Rank(peer), TagSel::Tag(Tag(2)))
        .await;
    if !matches!(e, Err(MpiError::Stalled { .. })) {
        return Err(ProgramError::Protocol(
            "an unmatched receive did not give up",
        ));
    }
    let gave_up = IterationRecord {
        index: 0,
        bytes: 4,
        start,
        end: c.vipl().now(),
        verified_bytes: 0,
        warmup: false,
    };
    let v = c.finalize().await?;
    Ok(ProgramReport {
        program: "give-up",
        iterations: vec![gave_up],
        finished: v.now(),
        ..ProgramReport::default()
    })
}

/// Runs `case` on `cfg` (its node count set) in `stepping`, with `skew`.
fn run_mpi(
    cfg: &SystemConfig,
    case: &MpiCase,
    stepping: SimStepping,
    skew: Skew,
    trace: bool,
) -> (Observed, u64) {
    let mut cfg = cfg.clone();
    cfg.sim.stepping = stepping;
    let mpi = cfg.mpi_config();
    let adjust = |sys: &mut System| break_fast_paths(sys, skew);
    let bench = |sizes: &[u32]| Bench {
        sizes: sizes.to_vec(),
        iterations: 1,
        warmup: 1,
    };
    let run = match case {
        MpiCase::PingPong(sizes) => {
            let b = bench(sizes);
            run_spmd_adjusted(&cfg, trace, adjust, move |v, rank, macs| {
                mpi_pingpong(v, rank, macs, mpi, b.clone(), Rc::default())
            })
        }
        MpiCase::Bcast4(sizes) => {
            let b = bench(sizes);
            run_spmd_adjusted(&cfg, trace, adjust, move |v, rank, macs| {
                mpi_bcast(v, rank, macs, mpi, b.clone(), Rc::default())
            })
        }
        MpiCase::GiveUp => {
            let short = MpiConfig {
                progress_timeout: sim_kernel::Duration::from_ns(200_000),
                ..mpi
            };
            run_spmd_adjusted(&cfg, trace, adjust, move |v, rank, macs| {
                give_up(v, rank, macs, short)
            })
        }
    };
    let (reports, sys) = run.unwrap_or_else(|e| panic!("{case:?} {stepping:?}: {e}"));
    let records = reports.iter().map(|r| format!("{r:?}")).collect();
    let events = sys.kernel.stats().events;
    (observe_system(&sys, records, 0), events)
}

/// [`disagreement`] for an MPI case: both modes, the fast one traced and untraced.
fn mpi_disagreement(cfg: &SystemConfig, case: &MpiCase, skew: Skew) -> Option<String> {
    assert_eq!(
        cfg.topology.nodes,
        case.nodes(),
        "{case:?} on its node count"
    );
    let (a, exact_events) = run_mpi(cfg, case, SimStepping::Exact, Skew::default(), true);
    for trace in [true, false] {
        let (b, events) = run_mpi(cfg, case, SimStepping::Fast, skew, trace);
        assert!(
            events <= exact_events,
            "the fast mode takes more events ({events} > {exact_events})"
        );
        let mut a = a.clone();
        if !trace {
            assert!(b.spans.is_empty() && b.transitions.is_empty());
            a.spans.clear();
            a.transitions.clear();
        }
        if let Some(d) = difference(&a, &b) {
            let untraced = if trace { "" } else { " (untraced)" };
            return Some(format!("{case:?}{untraced}: {d}"));
        }
    }
    None
}

#[test]
fn fast_stepping_equals_exact_on_mpi_pingpong() {
    let limit = MpiConfig::default().eager_limit;
    assert_eq!(limit, 8192, "the sizes below straddle the eager limit");
    let case = MpiCase::PingPong(vec![4, 1460, 8192, 8193, 32768]);
    if let Some(d) = mpi_disagreement(&mpi_preset(2), &case, Skew::default()) {
        panic!("{d}");
    }
}

#[test]
fn fast_stepping_equals_exact_on_a_four_rank_collective() {
    let case = MpiCase::Bcast4(vec![4, 5000]);
    if let Some(d) = mpi_disagreement(&mpi_preset(4), &case, Skew::default()) {
        panic!("{d}");
    }
}

/// A wait that parks still gives up at its deadline, at the same instant in both modes.
#[test]
fn a_parked_mpi_wait_gives_up_at_its_deadline_in_both_modes() {
    if let Some(d) = mpi_disagreement(&mpi_preset(2), &MpiCase::GiveUp, Skew::default()) {
        panic!("{d}");
    }
}

#[test]
fn a_completion_queue_wait_woken_one_scan_late_is_caught() {
    let skew = Skew {
        scan: 1,
        ..Skew::default()
    };
    let d = mpi_disagreement(&mpi_preset(2), &MpiCase::PingPong(vec![4]), skew);
    assert!(d.is_some(), "a CQ wait woken one scan late went unnoticed");
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if long() { 24 } else { 4 },
        .. ProptestConfig::default()
    })]

    /// Random MPI message sizes and clocks (CPU edges that fall between the bus's, so a
    /// write's notice lands up to a clock after the load that first sees it): the two
    /// modes agree.
    #[test]
    fn fast_stepping_equals_exact_on_random_mpi_configurations(
        size in 1u32..20000,
        cpu_mhz in prop::sample::select(vec![400.0, 600.0, 800.0, 1000.0]),
        pci_mhz in prop::sample::select(vec![25.0, 33.0, 66.0]),
        poll_cycles in 4u32..40,
        cache in any::<bool>(),
    ) {
        let mut cfg = clocked(mpi_preset(2), cpu_mhz, pci_mhz, poll_cycles);
        if cache {
            cfg.mpi.registration = testbenches::config::MpiRegistration::Cache;
        }
        let d = mpi_disagreement(&cfg, &MpiCase::PingPong(vec![size]), Skew::default());
        prop_assert_eq!(d, None);
    }
}
