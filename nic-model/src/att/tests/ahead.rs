//! Translations computed ahead (`AttManager::set_ahead`) against the manager that wakes
//! for every SDRAM read: random registrations, translations (good and refused) and
//! deregistrations sent by a client on another clock at random gaps, so that requests
//! reach the manager before, at and after each place of a translation in flight; runs
//! cut at random instants and event budgets. Every answer arrives at the same instant
//! and in the same order, and the manager ends with the same counters, state, table and
//! controller. A one-cycle-late answer is caught.

use crate::att::{AccessKind, AttManager, AttParams, RegionRequest};
use crate::msg::{NicMsg, ReqId};
use proptest::prelude::*;
use sim_kernel::{ClockDomain, ComponentId, Ctx, Kernel, MsgId, RunLimit, SplitMix64, Time, World};
use via_abi::{MemHandle, ProtectionTag};

const ATT: ComponentId = ComponentId(0);
const CLIENT: ComponentId = ComponentId(1);

#[derive(Clone, Debug, PartialEq, Eq)]
enum Msg {
    Nic(NicMsg),
    /// To the client: send request `i` of the script.
    Go(usize),
}

impl From<NicMsg> for Msg {
    fn from(m: NicMsg) -> Self {
        Msg::Nic(m)
    }
}

/// A request of the script.
#[derive(Clone, Debug)]
enum Req {
    Register(RegionRequest),
    /// Translate in the region registered `k`-th (by the setup or the script), at
    /// `offset` for `len` bytes; a stale or out-of-bounds request is refused.
    Translate {
        k: usize,
        offset: u64,
        len: u64,
        access: AccessKind,
    },
    Deregister(usize),
}

struct Sys {
    att: AttManager,
    script: Vec<Req>,
    /// Handles registered so far, in order.
    handles: Vec<MemHandle>,
    /// Every message the client got, with its instant.
    log: Vec<(Time, NicMsg)>,
    next_req: u64,
}

impl Sys {
    fn request(&mut self, i: usize) -> NicMsg {
        self.next_req += 1;
        let req = ReqId(self.next_req);
        match self.script[i].clone() {
            Req::Register(region) => NicMsg::AttRegister {
                req,
                region,
                reply_to: CLIENT,
            },
            Req::Translate {
                k,
                offset,
                len,
                access,
            } => {
                let handle = self
                    .handles
                    .get(k)
                    .copied()
                    .unwrap_or(MemHandle(0x0010_0001));
                NicMsg::AttTranslate {
                    req,
                    msg: MsgId(req.0),
                    handle,
                    va: 0x1000_0000 + offset,
                    len,
                    access,
                    ptag: ProtectionTag(1),
                    reply_to: CLIENT,
                }
            }
            Req::Deregister(k) => NicMsg::AttDeregister {
                req,
                handle: self.handles.get(k).copied().unwrap_or(MemHandle(0)),
                reply_to: CLIENT,
            },
        }
    }
}

impl World<Msg> for Sys {
    fn deliver(&mut self, to: ComponentId, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        match (to, msg) {
            (ATT, Msg::Nic(m)) => self.att.handle(m, ctx),
            (CLIENT, Msg::Go(i)) => {
                let m = self.request(i);
                ctx.send(ATT, m.into());
            }
            (CLIENT, Msg::Nic(m)) => {
                if let NicMsg::AttRegistered { result: Ok(h), .. } = &m {
                    self.handles.push(*h);
                }
                self.log.push((ctx.now(), m));
            }
            (to, m) => panic!("{m:?} to {to}"),
        }
    }
}

/// A region of `pages` pages at the fixed VA (every region has the same VA: handles
/// tell them apart), RDMA write enabled or not.
fn region(pages: u64, rdma: bool, seed: u64) -> RegionRequest {
    let mut r = SplitMix64::new(seed);
    let frames = (0..pages).map(|_| (1 + r.below(60_000)) * 4096).collect();
    let mut region = RegionRequest::with_defaults(0x1000_0000, pages * 4096, frames);
    region.enable_rdma_write = rdma;
    region
}

/// What a run ends with: every answer with its instant, the manager's counters,
/// state, table allocation and SDRAM controller, and the events delivered.
type Outcome = (Vec<(Time, NicMsg)>, String, u64);

/// Runs `script`, request `i` sent by the client at `gaps[..=i]` summed (client cycles
/// of 15 ns), after `setup` regions registered; the run cut at `stops` (ns; odd: a
/// budget of that many events).
fn run(
    ahead: bool,
    skew: u64,
    script: &[Req],
    gaps: &[u64],
    stops: &[u64],
) -> (Outcome, AttManager) {
    let mut k: Kernel<Msg> = Kernel::new(false);
    let sdram = k.add_domain(ClockDomain::from_mhz("card.sdram", 100.0).expect("ok"));
    let core = k.add_domain(ClockDomain::from_mhz("core", 66.666_666_666).expect("ok"));
    assert_eq!(k.add_component("att", sdram), ATT);
    assert_eq!(k.add_component("client", core), CLIENT);
    let mut att = AttManager::new(AttParams::default(), None).expect("valid");
    att.set_ahead(ahead);
    att.set_ahead_skew_cycles(skew);
    let period = k.domain(k.component_domain(CLIENT)).period().as_ps();
    let mut t = 0;
    for (i, g) in gaps.iter().enumerate().take(script.len()) {
        t += g;
        k.post(CLIENT, Time(t * period), Msg::Go(i));
    }
    let mut w = Sys {
        att,
        script: script.to_vec(),
        handles: Vec::new(),
        log: Vec::new(),
        next_req: 0,
    };
    for &s in stops {
        if s % 2 == 1 {
            k.run(
                &mut w,
                RunLimit {
                    until: Time::MAX,
                    max_events: s,
                },
            );
        } else {
            k.run_until(&mut w, Time(s * 1000));
        }
    }
    k.run_to_idle(&mut w);
    let a = &w.att;
    let state = format!(
        "{:?} {:?} {:?} {:?} {:?}",
        a.stats(),
        a.state(),
        a.table(),
        a.sdram_controller(),
        (0..8).map(|i| a.read_entry(i)).collect::<Vec<_>>()
    );
    ((w.log, state, k.stats().events), w.att)
}

fn req_strategy() -> impl Strategy<Value = Req> {
    prop_oneof![
        6 => (0usize..6, 0u64..20_000, 1u64..9_000, 0u8..4).prop_map(|(k, offset, len, a)| {
            let access = [
                AccessKind::RdmaWrite,
                AccessKind::LocalRead,
                AccessKind::LocalWrite,
                AccessKind::RdmaRead,
            ][usize::from(a)];
            Req::Translate { k, offset, len, access }
        }),
        1 => (1u64..6, any::<bool>(), any::<u64>()).prop_map(|(p, rdma, s)| Req::Register(region(p, rdma, s))),
        1 => (0usize..6).prop_map(Req::Deregister),
    ]
}

/// Two registrations first (so most translations find a region), then the script.
fn with_setup(mut script: Vec<Req>, mut gaps: Vec<u64>) -> (Vec<Req>, Vec<u64>) {
    script.splice(
        0..0,
        [
            Req::Register(region(5, true, 1)),
            Req::Register(region(3, true, 2)),
        ],
    );
    gaps.splice(0..0, [0, 40]);
    gaps.resize(script.len(), 7);
    (script, gaps)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Computed ahead or woken for, the manager answers the same at the same instants.
    #[test]
    fn translations_computed_ahead_answer_as_the_woken_manager(
        script in prop::collection::vec(req_strategy(), 1..30),
        gaps in prop::collection::vec(prop_oneof![0u64..4, 0u64..30, 30u64..200], 1..30),
        mut stops in prop::collection::vec(0u64..3_000, 0..4),
    ) {
        stops.sort_unstable();
        let (script, gaps) = with_setup(script, gaps);
        let (reference, _) = run(false, 0, &script, &gaps, &stops);
        let (ahead, _) = run(true, 0, &script, &gaps, &stops);
        prop_assert_eq!(&reference.0, &ahead.0);
        prop_assert_eq!(&reference.1, &ahead.1);
    }
}

/// The runs above compute translations ahead, take them back at both places, and
/// deliver fewer events for it.
#[test]
fn translations_are_computed_ahead_and_taken_back_at_both_places() {
    let mut counts = [0u64; 3];
    let mut events = [0u64; 2];
    for s in 0..40u64 {
        let mut r = SplitMix64::new(s);
        let script: Vec<Req> = (0..20)
            .map(|_| Req::Translate {
                k: r.below(2) as usize,
                offset: r.below(16_000),
                len: 1 + r.below(8_000),
                access: AccessKind::RdmaWrite,
            })
            .collect();
        let gaps: Vec<u64> = (0..20).map(|_| r.below(25)).collect();
        let (script, gaps) = with_setup(script, gaps);
        let (reference, _) = run(false, 0, &script, &gaps, &[]);
        let (ahead, att) = run(true, 0, &script, &gaps, &[]);
        assert_eq!(reference.0, ahead.0);
        let c = att.ahead_counts();
        counts[0] += c.computed;
        counts[1] += c.taken_back_first;
        counts[2] += c.taken_back_second;
        events[0] += reference.2;
        events[1] += ahead.2;
    }
    assert!(
        counts.iter().all(|&c| c > 0),
        "computed, taken back: {counts:?}"
    );
    assert!(events[1] < events[0], "events: {events:?}");
}

/// An answer computed ahead that lands one cycle late is caught.
#[test]
fn an_answer_one_cycle_late_is_caught() {
    let script = vec![Req::Translate {
        k: 0,
        offset: 100,
        len: 64,
        access: AccessKind::RdmaWrite,
    }];
    let (script, gaps) = with_setup(script, vec![200]);
    let (reference, _) = run(false, 0, &script, &gaps, &[]);
    let (skewed, _) = run(true, 1, &script, &gaps, &[]);
    assert_ne!(reference.0, skewed.0);
}
