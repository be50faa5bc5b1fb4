//! A master's completions and register writes run by its bus (`PciBus::handle_local`,
//! `master_fold`) against the messages they replace. The master reads and writes a
//! device target; on each completion, register write, wake-up of its own or poke from
//! outside it issues more requests, notes something to an observer in another clock
//! domain and wakes itself later, as a script of random bytes says; another master
//! writes its registers; pokes land on it at random instants (so that some
//! completions have an input queued before their place and go as messages). The fold
//! (untraced `Stepping::FastForward`) must give what the messages give, fast and per
//! clock: every input the master took with its instant, every note with its instant and
//! order, the target's writes, the bus counters and transaction log.

mod common;

use pci_model::{
    BusRequest, BusStats, Command, FoldPort, FoldRam, FoldedMaster, MasterConfig, MasterId, PciBus,
    PciMsg, Stepping, TargetProfile, TenureRecord, TransactionDone,
};
use proptest::prelude::*;
use sim_kernel::{ComponentId, Ctx, Cycles, EventKey, Kernel, Time, World};

const BUS: ComponentId = ComponentId(0);
const MASTER: ComponentId = ComponentId(1);
const TARGET: ComponentId = ComponentId(2);
const WRITER: ComponentId = ComponentId(3);
const OBSERVER: ComponentId = ComponentId(4);
const MEM: u64 = 0x1000_0000;
const REGS: u64 = 0x2000_0000;
/// Requests the master issues at most.
const LIMIT: u64 = 40;
/// Inputs after which the master wakes itself no more (a script whose bytes only wake
/// it would otherwise run for ever).
const STEPS: usize = 400;

#[derive(Clone, Debug)]
enum Msg {
    Pci(PciMsg),
    Poke,
    Wake(u64),
    Note(u64),
}

impl From<PciMsg> for Msg {
    fn from(m: PciMsg) -> Self {
        Msg::Pci(m)
    }
}

/// What the master does through: its own context, or the bus that runs it.
trait Out {
    fn now(&self) -> Time;
    fn request(&mut self, req: BusRequest);
    fn note(&mut self, n: u64);
    fn wake_at(&mut self, at: Time, n: u64);
}

impl Out for Ctx<'_, Msg> {
    fn now(&self) -> Time {
        Ctx::now(self)
    }
    fn request(&mut self, req: BusRequest) {
        self.send(BUS, PciMsg::Request(req).into());
    }
    fn note(&mut self, n: u64) {
        self.send_after(OBSERVER, Cycles(2), Msg::Note(n));
    }
    fn wake_at(&mut self, at: Time, n: u64) {
        Ctx::wake_at(self, at, Msg::Wake(n));
    }
}

impl Out for dyn FoldPort<Msg> + '_ {
    fn now(&self) -> Time {
        FoldPort::now(self)
    }
    fn request(&mut self, req: BusRequest) {
        FoldPort::request(self, req);
    }
    fn note(&mut self, n: u64) {
        self.send(OBSERVER, Cycles(2), Msg::Note(n));
    }
    fn wake_at(&mut self, at: Time, n: u64) {
        FoldPort::wake_at(self, at, Msg::Wake(n));
    }
}

/// What the master took, and when.
#[derive(Clone, Debug, PartialEq)]
enum Took {
    Done(u64, Vec<u8>),
    Write(u64, Vec<u8>),
    Poke,
    Wake(u64),
}

struct Master {
    script: Vec<u8>,
    step: usize,
    issued: u64,
    took: Vec<(Time, Took)>,
}

impl Master {
    /// Acts on one input as the script says.
    fn act(&mut self, took: Took, out: &mut (impl Out + ?Sized)) {
        let now = out.now();
        self.took.push((now, took));
        let d = self.script[self.step % self.script.len()];
        self.step += 1;
        for i in 0..u64::from(d & 3) {
            if self.issued >= LIMIT {
                break;
            }
            self.issued += 1;
            let tag = self.issued;
            let len = 4 * (1 + u64::from(d >> 5) + i);
            let addr = MEM + 64 * (tag % 16);
            let (command, data) = if d & 16 == 0 {
                (Command::MemoryRead, Vec::new())
            } else {
                let data = (0..len).map(|j| (tag * 13 + j) as u8).collect();
                (Command::MemoryWrite, data)
            };
            out.request(BusRequest {
                master: MasterId(0),
                tag,
                command,
                addr,
                len,
                data,
            });
        }
        if d & 4 != 0 {
            out.note(self.step as u64);
        }
        if d & 8 != 0 && self.issued < LIMIT && self.step < STEPS {
            let at = Time(now.0 + 7_000 * u64::from(1 + (d >> 4)));
            out.wake_at(at, self.step as u64);
        }
    }
}

impl FoldedMaster<Msg> for Master {
    fn completion(&mut self, done: TransactionDone, port: &mut dyn FoldPort<Msg>) {
        self.act(Took::Done(done.tag, done.data), port);
    }

    fn target_write(&mut self, addr: u64, data: &[u8], port: &mut dyn FoldPort<Msg>) {
        self.act(Took::Write(addr, data.to_vec()), port);
    }
}

/// No RAM-backed target here: the RAM folds have nothing to do.
struct NoRam;

impl FoldRam for NoRam {
    fn sample(&mut self, _: EventKey, _: u64, _: u64) -> u64 {
        0
    }
    fn take_sample(&mut self, _: u64) -> Option<Vec<u8>> {
        None
    }
    fn write_at(&mut self, _: EventKey, _: u64, _: Vec<u8>) {}
    fn pass(&mut self, _: EventKey) {}
}

struct Sim {
    bus: PciBus,
    fold: bool,
    master: Master,
    writes: Vec<(Time, u64, Vec<u8>)>,
    notes: Vec<(Time, u64)>,
}

impl World<Msg> for Sim {
    fn deliver(&mut self, to: ComponentId, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        match (to, msg) {
            (BUS, Msg::Pci(m)) if self.fold => {
                self.bus
                    .handle_local(m, ctx, &mut NoRam, Some(&mut self.master));
            }
            (BUS, Msg::Pci(m)) => self.bus.handle(m, ctx, None),
            (MASTER, Msg::Pci(PciMsg::TransactionDone(d))) => {
                self.master.act(Took::Done(d.tag, d.data), ctx);
            }
            (MASTER, Msg::Pci(PciMsg::TargetWrite { addr, data })) => {
                self.master.act(Took::Write(addr, data), ctx);
            }
            (MASTER, Msg::Poke) => self.master.act(Took::Poke, ctx),
            (MASTER, Msg::Wake(n)) => self.master.act(Took::Wake(n), ctx),
            (TARGET, Msg::Pci(PciMsg::TargetWrite { addr, data })) => {
                self.writes.push((ctx.now(), addr, data));
            }
            (TARGET, Msg::Pci(PciMsg::TargetRead { tag, addr, len, .. })) => {
                let data = (0..len).map(|j| (addr + j) as u8).collect();
                let at = ctx.my_domain().edge_after(ctx.now(), Cycles(3));
                ctx.send_at(BUS, at, PciMsg::TargetReadData { tag, data }.into());
            }
            (WRITER, Msg::Pci(PciMsg::TransactionDone(_))) => {}
            (OBSERVER, Msg::Note(n)) => self.notes.push((ctx.now(), n)),
            (to, msg) => panic!("{to:?} does not take {msg:?}"),
        }
    }
}

#[derive(Debug, PartialEq)]
struct Outcome {
    took: Vec<(Time, Took)>,
    writes: Vec<(Time, u64, Vec<u8>)>,
    notes: Vec<(Time, u64)>,
    stats: BusStats,
    log: Vec<TenureRecord>,
}

/// One run: the master's script, the register writes' arrival times [ps] and the
/// pokes' [ps]; to the end, or cut at `cut` [ps] (every event at or before it run) with
/// the bus settled there, as a system run ends. Returns what it did and how many
/// completions and register writes the bus ran itself, and how many it sent.
fn run(
    (stepping, fold, skew): (Stepping, bool, u64),
    (script, reg_writes, pokes): (&[u8], &[u64], &[u64]),
    cut: Option<u64>,
) -> (Outcome, (u64, u64)) {
    let parts = [
        ("bus", false),
        ("master", false),
        ("target", true),
        ("writer", false),
        ("observer", true),
    ];
    let (mut k, params): (Kernel<Msg>, _) = common::pci_and_core(stepping, 125.0, &parts);
    let mut bus = PciBus::new(params).unwrap();
    bus.set_tenure_log(true);
    for (name, component) in [("master", MASTER), ("writer", WRITER)] {
        bus.add_master(MasterConfig {
            name: name.into(),
            component,
            latency_timer: Cycles(32),
            supports_64bit: false,
            recovery: Cycles(1),
        })
        .unwrap();
    }
    bus.add_device_target(MEM, 4096, TARGET, TargetProfile::default())
        .unwrap();
    bus.add_device_target(REGS, 256, MASTER, TargetProfile::default())
        .unwrap();
    bus.fold_master_completions(MasterId(0)).unwrap();
    bus.set_local_fold_skew_clocks(skew);
    let mut sim = Sim {
        bus,
        fold,
        master: Master {
            script: script.to_vec(),
            step: 0,
            issued: 0,
            took: Vec::new(),
        },
        writes: Vec::new(),
        notes: Vec::new(),
    };
    // The master starts with a poke; the writer writes a register word at each time.
    k.post(MASTER, Time(0), Msg::Poke);
    for (i, &at) in reg_writes.iter().enumerate() {
        let req = BusRequest {
            master: MasterId(1),
            tag: 1000 + i as u64,
            command: Command::MemoryWrite,
            addr: REGS + 4 * (i as u64 % 8),
            len: 4,
            data: vec![i as u8, 1, 2, 3],
        };
        k.post(BUS, Time(at), Msg::Pci(PciMsg::Request(req)));
    }
    for &at in pokes {
        k.post(MASTER, Time(at), Msg::Poke);
    }
    if let Some(t) = cut {
        k.run_until(&mut sim, Time(t));
        sim.bus.settle(&mut k, BUS, Time(t), None);
    } else {
        k.run_to_idle(&mut sim);
    }
    let folded = sim.bus.folded_completions();
    let outcome = Outcome {
        took: sim.master.took,
        writes: sim.writes,
        notes: sim.notes,
        stats: sim.bus.stats().clone(),
        log: sim.bus.tenure_log().to_vec(),
    };
    (outcome, folded)
}

fn check(script: &[u8], reg_writes: &[u64], pokes: &[u64]) -> Result<u64, TestCaseError> {
    Ok(check_cut(script, reg_writes, pokes, None)?.0)
}

/// [`check`] for runs cut at `cut` [ps] (`None`: to the end).
fn check_cut(
    script: &[u8],
    reg_writes: &[u64],
    pokes: &[u64],
    cut: Option<u64>,
) -> Result<(u64, u64), TestCaseError> {
    let case = (script, reg_writes, pokes);
    let (reference, _) = run((Stepping::PerClock, false, 0), case, cut);
    let (messages, none) = run((Stepping::FastForward, false, 0), case, cut);
    let (folded, n) = run((Stepping::FastForward, true, 0), case, cut);
    prop_assert_eq!(none.0, 0, "folded without the master lent");
    prop_assert_eq!(&messages, &reference, "fast stepping with messages");
    prop_assert_eq!(&folded, &reference, "the fold");
    Ok(n)
}

fn times() -> impl Strategy<Value = Vec<u64>> {
    prop::collection::vec(0u64..3_000_000, 0..12)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn folded_completions_equal_the_messages(
        script in prop::collection::vec(any::<u8>(), 1..24),
        reg_writes in times(),
        pokes in times(),
    ) {
        check(&script, &reg_writes, &pokes)?;
    }
}

/// A busy script, with pokes at every 30 ns edge around one stretch: the bus folds
/// most completions and sends the others (an input of the master's queued before their
/// place), and every run equals the messages.
#[test]
fn pokes_at_every_edge_around_completions_are_ordered_as_the_messages() {
    let script = [0x13, 0x5a, 0x2e, 0x91, 0x07, 0xc6, 0x3b];
    let writes = [200_000, 900_000];
    let mut total = 0;
    for start in (0..60).map(|i| 100_000 + i * 30_000) {
        let pokes: Vec<u64> = (0..4).map(|i| start + i * 30_000).collect();
        total += check(&script, &writes, &pokes).expect("equal");
    }
    assert!(total > 100, "the bus ran only {total} completions itself");
}

/// Runs cut at every nanosecond across a stretch of completions: a run ends only
/// where the reference's master has taken what the fold's has (the bus folds a
/// completion only when the run reaches its place, `Ctx::horizon`: some cuts fall
/// between a completion's end and its place, and there it is sent).
#[test]
fn a_run_cut_anywhere_leaves_the_master_where_the_messages_leave_it() {
    let script = [0x13, 0x5a, 0x2e, 0x91, 0x07, 0xc6, 0x3b];
    let (_, sent_uncut) = check_cut(&script, &[200_000], &[], None).expect("equal");
    let (mut total, mut cut_short) = (0, 0);
    for cut in (150_000..450_000).step_by(1_000) {
        let (n, sent) = check_cut(&script, &[200_000], &[], Some(cut)).expect("equal");
        total += n;
        cut_short += u64::from(sent > sent_uncut);
    }
    assert!(total > 100, "the bus ran only {total} completions itself");
    assert!(
        cut_short > 0,
        "no cut fell between a completion's end and its place"
    );
}

/// The fold's completions taken one clock late are caught.
#[test]
fn a_folded_completion_one_clock_late_is_caught() {
    let script = [0x13, 0x5a, 0x2e, 0x91, 0x07, 0xc6, 0x3b];
    let case: (&[u8], &[u64], &[u64]) = (&script, &[200_000], &[]);
    let (reference, _) = run((Stepping::FastForward, false, 0), case, None);
    let (late, (n, _)) = run((Stepping::FastForward, true, 1), case, None);
    assert!(n > 0);
    assert_ne!(late, reference, "a fold one clock late went unnoticed");
}

/// A script that issues nothing and only wakes the master ends (it once ran until
/// memory ran out).
#[test]
fn a_script_that_only_wakes_the_master_ends() {
    check(&[8], &[], &[]).unwrap();
}
