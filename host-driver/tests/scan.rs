//! The poll over several words (`Vipl::poll_any`, what `VipCQWait` runs) parked
//! (`fast_poll`) against stepped load by load: host-memory writes at every CPU edge and
//! between edges across several scans (a load at the write's own instant must not see
//! it), a write that changes a line without ending the poll (the poll parks again), a
//! deadline with writes before, at and after the scan that gives up; the outcome, every
//! time the program sees afterwards, the CPU counters and the cache's LRU order (the
//! loads after the poll evict by it) must be the same. A wake-up one scan late is
//! caught.
//!
//! The writer stands in for the host bridge: it writes host memory in a LATE-priority
//! event and sends every watcher `PciMsg::WatchedWrite`, as the PCI bus does when it
//! commits a posted DMA write.

use host_driver::{
    CacheParams, CallExt, HostCpu, HostCpuParams, HostMsg, PollCond, PollTarget, ProgramReport,
    ProgramResult, Timeout,
};
use pci_model::{HostMemory, PciMsg};
use sim_kernel::{
    Bytes, ClockDomain, ComponentId, Ctx, Cycles, Duration, Kernel, OnMisroute, Priority, RunLimit,
    Time, Wiring,
};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// The writer's period \[ps\]: a tenth of the CPU's 1.25 ns, so writes land between
/// CPU edges too.
const WRITER_PS: u64 = 125;
/// The CPU's period \[ps\] (800 MHz).
const CPU_PS: u64 = 1250;
/// Offsets of the polled words in the page (three lines), and of two more lines the
/// program loads afterwards.
const TARGETS: [u64; 3] = [0, 64, 128];
const OTHERS: [u64; 2] = [192, 256];

#[derive(Clone, Debug)]
enum TMsg {
    Pci(PciMsg),
    Host(HostMsg),
    /// To the writer: write `data` at physical address `pa` (`commit`: now, at LATE
    /// priority; else wake up for it one writer clock later at LATE priority).
    Write {
        pa: u64,
        data: Vec<u8>,
        commit: bool,
    },
}

impl From<PciMsg> for TMsg {
    fn from(m: PciMsg) -> Self {
        TMsg::Pci(m)
    }
}
impl From<HostMsg> for TMsg {
    fn from(m: HostMsg) -> Self {
        TMsg::Host(m)
    }
}

enum Part {
    Cpu(Box<HostCpu>),
    Writer,
}

impl sim_kernel::Part<TMsg, HostMemory> for Part {
    fn take(&mut self, msg: TMsg, ctx: &mut Ctx<'_, TMsg>, mem: &mut HostMemory) -> Option<TMsg> {
        match (self, msg) {
            (Part::Cpu(c), TMsg::Pci(m)) => c.on_pci(m, ctx, mem),
            (Part::Cpu(c), TMsg::Host(m)) => c.on_host(m, ctx, mem),
            (
                Part::Writer,
                TMsg::Write {
                    pa,
                    data,
                    commit: false,
                },
            ) => {
                let m = TMsg::Write {
                    pa,
                    data,
                    commit: true,
                };
                ctx.wake_after_with(Cycles(1), Priority::LATE, m);
            }
            (
                Part::Writer,
                TMsg::Write {
                    pa,
                    data,
                    commit: true,
                },
            ) => {
                mem.write(pa, &data).expect("inside memory");
                for who in mem.take_hits() {
                    ctx.send(who, PciMsg::WatchedWrite { at: ctx.now() }.into());
                }
            }
            (_, m) => return Some(m),
        }
        None
    }
}

/// One scenario: the writes (offset in the page, bytes, time after the poll started)
/// and the poll's deadline after its start.
#[derive(Clone, Debug, Default)]
struct Scenario {
    writes: Vec<(u64, Vec<u8>, Duration)>,
    deadline: Option<Duration>,
}

/// What a run shows.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Seen {
    log: Vec<String>,
    stats: String,
}

/// Where the poll starts and the page's physical address (from a run without writes).
#[derive(Clone, Copy, Debug)]
struct Layout {
    start: Time,
    page_pa: u64,
}

fn params(fast: bool, skew: u64) -> HostCpuParams {
    HostCpuParams {
        fast_poll: fast,
        fast_scan_skew_iterations: skew,
        // One set of four ways: the three polled lines and one more fit; a fifth line
        // evicts the least recently used, so the LRU order the poll leaves shows.
        cache: CacheParams {
            line_bytes: 32,
            size_bytes: 128,
            ways: 4,
        },
        ..HostCpuParams::default()
    }
}

async fn program(
    mut v: host_driver::Vipl,
    deadline: Option<Duration>,
    log: Rc<RefCell<Vec<String>>>,
    start_at: Rc<Cell<Time>>,
) -> ProgramResult {
    let page = v.malloc(4096, 4096).await.call("malloc")?;
    let targets = TARGETS
        .iter()
        .map(|&o| PollTarget {
            va: page + o,
            cond: PollCond::AnyBits32(1),
        })
        .collect();
    let start = v.now();
    start_at.set(start);
    let timeout = deadline.map_or(Timeout::Infinite, Timeout::After);
    let deadline = match timeout {
        Timeout::Infinite => None,
        Timeout::After(d) => Some(start + d),
    };
    let r = v.poll_any(targets, deadline).await;
    log.borrow_mut().push(format!("{r:?} at {}", v.now()));
    log.borrow_mut().push(format!("started {start}"));
    for o in OTHERS.iter().chain(&TARGETS) {
        let b = v.read_mem(page + o, 4).await.call("load")?;
        log.borrow_mut().push(format!("{o}: {b:?} at {}", v.now()));
    }
    Ok(ProgramReport {
        program: "scan",
        finished: v.now(),
        ..ProgramReport::default()
    })
}

/// Runs the program with `sc`'s writes; `layout` places them (`None`: no writes).
fn run(fast: bool, skew: u64, sc: &Scenario, layout: Option<Layout>) -> (Seen, Layout) {
    let mut k: Kernel<TMsg> = Kernel::new(false);
    let cpu_d = k.add_domain(ClockDomain::new("host.cpu", Duration(CPU_PS), Duration(0)).unwrap());
    let w_d = k.add_domain(ClockDomain::new("writer", Duration(WRITER_PS), Duration(0)).unwrap());
    let cpu_id = k.add_component("cpu", cpu_d);
    let writer: ComponentId = k.add_component("writer", w_d);
    let mut w = Wiring::new(
        HostMemory::new(Bytes(1 << 20), 5).unwrap(),
        OnMisroute::Panic,
    );
    let mut cpu = HostCpu::new(params(fast, skew), writer);
    let log: Rc<RefCell<Vec<String>>> = Rc::default();
    let start: Rc<Cell<Time>> = Rc::default();
    let (l, s) = (log.clone(), start.clone());
    let deadline = sc.deadline;
    cpu.load(move |v| program(v, deadline, l, s));
    w.place(cpu_id, Part::Cpu(Box::new(cpu)));
    w.place(writer, Part::Writer);
    k.post(cpu_id, Time::ZERO, HostMsg::Start.into());
    if let Some(lay) = layout {
        for (off, data, after) in &sc.writes {
            // Posted one writer clock early: the writer commits at LATE priority.
            let at = Time(lay.start.0 + after.0 - WRITER_PS);
            let m = TMsg::Write {
                pa: lay.page_pa + off,
                data: data.clone(),
                commit: false,
            };
            k.post(writer, at, m);
        }
    }
    k.run(
        &mut w,
        RunLimit {
            until: Time(1_000_000_000),
            max_events: 10_000_000,
        },
    );
    let Some(Part::Cpu(cpu)) = w.get(cpu_id) else {
        panic!("no CPU")
    };
    assert!(
        matches!(cpu.outcome(), Some(Ok(_))),
        "the program ends: {:?}",
        cpu.outcome()
    );
    let layout = Layout {
        start: start.get(),
        page_pa: cpu.page_table().translate(0x4000_0000).expect("mapped"),
    };
    let seen = Seen {
        log: log.borrow().clone(),
        stats: format!("{:?}", cpu.stats()),
    };
    (seen, layout)
}

fn layout() -> Layout {
    let (_, lay) = run(false, 0, &Scenario::default().with_deadline(1_000), None);
    lay
}

impl Scenario {
    fn with_deadline(mut self, cycles: u64) -> Self {
        self.deadline = Some(Duration(cycles * CPU_PS));
        self
    }
}

/// The two modes agree on `sc`; returns the exact run's log.
fn agree(sc: &Scenario, lay: Layout) -> Vec<String> {
    let (exact, _) = run(false, 0, sc, Some(lay));
    let (fast, _) = run(true, 0, sc, Some(lay));
    assert_eq!(exact, fast, "fast and exact differ for {sc:?}");
    exact.log
}

fn done_bit() -> Vec<u8> {
    vec![1, 0, 0, 0]
}

/// Write times from `from` to `to` CPU cycles after the poll's start: at every edge
/// and mid-cycle, and at every writer clock of the first cycle.
fn times(from: u64, to: u64) -> impl Iterator<Item = Duration> {
    (1..10)
        .map(move |i| Duration(from * CPU_PS + i * WRITER_PS))
        .chain((from..=to).flat_map(|c| [Duration(c * CPU_PS), Duration(c * CPU_PS + CPU_PS / 2)]))
}

/// The first scan misses all three lines (3 x (112 + 1) cycles) and pays its
/// iteration (10): the poll parks 349 cycles after its start; then a scan is three hit
/// loads of 4 cycles and the iteration, 22 cycles.
const PARKS: u64 = 349;

#[test]
fn a_write_into_any_polled_line_wakes_the_first_load_that_sees_it() {
    let lay = layout();
    let mut found = std::collections::BTreeSet::new();
    for &target in &TARGETS {
        for at in times(PARKS - 10, PARKS + 80) {
            let sc = Scenario {
                writes: vec![(target, done_bit(), at)],
                deadline: None,
            };
            let log = agree(&sc, lay);
            found.insert(log[0].clone());
        }
    }
    // Each target found in each of the five scans the write times reach.
    assert_eq!(found.len(), 15, "{found:?}");
}

#[test]
fn a_write_that_does_not_end_the_poll_parks_it_again() {
    let lay = layout();
    for at in times(PARKS - 10, PARKS + 60) {
        // Another word of the first line changes (a miss, no done bit), then the done
        // bit of the last target comes three scans later.
        let sc = Scenario {
            writes: vec![
                (TARGETS[0] + 8, vec![7], at),
                (TARGETS[2], done_bit(), at + Duration(66 * CPU_PS)),
            ],
            deadline: None,
        };
        let log = agree(&sc, lay);
        assert!(log[0].contains("found: Some(2)"), "{log:?}");
    }
}

#[test]
fn a_parked_poll_gives_up_at_its_deadline_whatever_the_writes() {
    let lay = layout();
    // The deadline 400 cycles after the start: the scan that gives up is the third
    // parked one, its check at 349 + 2 x 22 + 12 = 405 cycles.
    let quiet = agree(&Scenario::default().with_deadline(400), lay);
    assert!(quiet[0].contains("Timeout"), "{quiet:?}");
    let mut outcomes = std::collections::BTreeSet::new();
    for at in times(PARKS - 10, PARKS + 80) {
        let sc = Scenario {
            writes: vec![(TARGETS[1], done_bit(), at)],
            deadline: Some(Duration(400 * CPU_PS)),
        };
        let log = agree(&sc, lay);
        outcomes.insert(log[0].contains("Timeout"));
    }
    assert_eq!(outcomes.len(), 2, "writes before and after the give-up");
}

#[test]
fn a_fast_path_woken_one_scan_late_is_caught() {
    let lay = layout();
    let sc = Scenario {
        writes: vec![(TARGETS[1], done_bit(), Duration((PARKS + 30) * CPU_PS))],
        deadline: None,
    };
    let (exact, _) = run(false, 0, &sc, Some(lay));
    let (fast, _) = run(true, 0, &sc, Some(lay));
    let (skewed, _) = run(true, 1, &sc, Some(lay));
    assert_eq!(exact, fast);
    assert_ne!(exact, skewed, "a wake-up one scan late went unnoticed");
}
