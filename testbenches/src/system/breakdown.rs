//! The per-clock latency breakdown: turns the trace spans recorded during one message's
//! one-way trip into contiguous stages that tile its latency exactly.
//!
//! Components record spans for the work they do and for the time a message waits in
//! them. Spans overlap (a CPU call contains the doorbell write it makes; a PCI
//! transaction runs while the engine waits for it), so the breakdown picks, for every
//! instant of the window, the *innermost* activity: among the spans covering the instant,
//! the one that started last (ties: the one that ends first, then the one recorded
//! first). Consecutive instants with the same pick form one stage. An instant no span
//! covers becomes a stage named `unattributed` (a gap in some component's spans; the
//! tests of the full system assert there is none).
//!
//! The stages are contiguous by construction, and their durations add up to
//! `end - start` exactly (a property test checks both).

use sim_kernel::{ClockDomain, Cycles, Time};
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

/// One recorded span, with names resolved (input of [`tile`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedSpan {
    /// Stage name, e.g. `descriptor DMA read`.
    pub stage: String,
    /// Component name, e.g. `n0.card`.
    pub component: String,
    /// Index of the clock domain in the domain list given to [`tile`].
    pub domain: usize,
    /// First instant.
    pub start: Time,
    /// End (exclusive).
    pub end: Time,
}

/// One stage of a breakdown.
#[derive(Clone, Debug, PartialEq)]
pub struct Stage {
    /// What happened.
    pub name: String,
    /// Who did it.
    pub component: String,
    /// The clock domain it was clocked in (empty for `unattributed`).
    pub domain: String,
    /// First instant.
    pub start: Time,
    /// End (exclusive); the next stage starts here.
    pub end: Time,
    /// Edges of its domain inside `[start, end)`.
    pub cycles: Cycles,
}

/// The stage name of an instant no span covers.
pub const UNATTRIBUTED: &str = "unattributed";

/// Tiles `[start, end)` with the innermost span at every instant (see the module doc).
/// `domains[i]` is the clock domain of spans with `domain == i`.
#[must_use]
pub fn tile(spans: &[NamedSpan], domains: &[ClockDomain], start: Time, end: Time) -> Vec<Stage> {
    if end <= start {
        return Vec::new();
    }
    // Spans clipped to the window, keeping their original start for the pick.
    let live: Vec<(usize, &NamedSpan)> = spans
        .iter()
        .enumerate()
        .filter(|(_, s)| s.end > start && s.start < end && s.end > s.start)
        .collect();
    let mut cuts: Vec<Time> = vec![start, end];
    for (_, s) in &live {
        cuts.push(s.start.max(start));
        cuts.push(s.end.min(end));
    }
    cuts.sort_unstable();
    cuts.dedup();

    // Sweep line: the spans covering the current instant, ordered by the pick rule
    // (latest start, then earliest end, then first recorded); the first one wins.
    let mut by_start = live.clone();
    by_start.sort_by_key(|(i, s)| (s.start, *i));
    let mut next = 0;
    let mut active: BTreeSet<(Reverse<Time>, Time, usize)> = BTreeSet::new();
    let mut ending: BinaryHeap<Reverse<(Time, Reverse<Time>, usize)>> = BinaryHeap::new();

    let mut stages: Vec<Stage> = Vec::new();
    let mut last_pick: Option<usize> = None;
    for w in cuts.windows(2) {
        let (a, b) = (w[0], w[1]);
        while let Some((i, s)) = by_start.get(next).filter(|(_, s)| s.start <= a) {
            active.insert((Reverse(s.start), s.end, *i));
            ending.push(Reverse((s.end, Reverse(s.start), *i)));
            next += 1;
        }
        while let Some(Reverse((e, st, i))) =
            ending.peek().copied().filter(|Reverse((e, _, _))| *e <= a)
        {
            ending.pop();
            active.remove(&(st, e, i));
        }
        let pick = active.first().map(|(_, _, i)| *i);
        match (pick, last_pick, stages.last_mut()) {
            (p, q, Some(st)) if p == q => st.end = b,
            _ => {
                let stage = match pick {
                    Some(i) => {
                        let s = &spans[i];
                        Stage {
                            name: s.stage.clone(),
                            component: s.component.clone(),
                            domain: domains
                                .get(s.domain)
                                .map_or_else(String::new, |d| d.name().to_string()),
                            start: a,
                            end: b,
                            cycles: Cycles(0),
                        }
                    }
                    None => Stage {
                        name: UNATTRIBUTED.to_string(),
                        component: String::new(),
                        domain: String::new(),
                        start: a,
                        end: b,
                        cycles: Cycles(0),
                    },
                };
                stages.push(stage);
            }
        }
        last_pick = pick;
    }
    for st in &mut stages {
        if let Some(d) = domains.iter().find(|d| d.name() == st.domain) {
            st.cycles = d.edges_in(st.start, st.end);
        }
    }
    stages
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn span(stage: &str, start: u64, end: u64) -> NamedSpan {
        NamedSpan {
            stage: stage.into(),
            component: "c".into(),
            domain: 0,
            start: Time(start),
            end: Time(end),
        }
    }

    fn domains() -> Vec<ClockDomain> {
        vec![ClockDomain::from_mhz("d", 100.0).unwrap()]
    }

    #[test]
    fn innermost_activity_wins_and_gaps_are_named() {
        // outer [0, 100) contains inner [20, 50); nothing covers [100, 120); last [120, 150).
        let spans = [
            span("outer", 0, 100),
            span("inner", 20, 50),
            span("last", 120, 200),
        ];
        let st = tile(&spans, &domains(), Time(0), Time(150));
        let names: Vec<(&str, u64, u64)> = st
            .iter()
            .map(|s| (s.name.as_str(), s.start.0, s.end.0))
            .collect();
        assert_eq!(
            names,
            vec![
                ("outer", 0, 20),
                ("inner", 20, 50),
                ("outer", 50, 100),
                (UNATTRIBUTED, 100, 120),
                ("last", 120, 150)
            ]
        );
        // Times are in ps: [0, 20 ps) holds one edge of the 10 ns domain, the one at 0.
        assert_eq!(st[0].cycles, Cycles(1));
        assert_eq!(st[3].domain, "");
    }

    proptest! {
        /// Stages are contiguous, start and end at the window, and add up exactly.
        #[test]
        fn stages_tile_the_window(
            raw in prop::collection::vec((0u64..1_000, 1u64..400), 0..40),
            w0 in 0u64..500,
            len in 1u64..1_000,
        ) {
            let spans: Vec<NamedSpan> = raw
                .iter()
                .enumerate()
                .map(|(i, (s, l))| span(&format!("s{}", i % 5), *s, s + l))
                .collect();
            let (a, b) = (Time(w0), Time(w0 + len));
            let st = tile(&spans, &domains(), a, b);
            prop_assert_eq!(st.first().map(|s| s.start), Some(a));
            prop_assert_eq!(st.last().map(|s| s.end), Some(b));
            let mut total = 0;
            for w in st.windows(2) {
                prop_assert_eq!(w[0].end, w[1].start);
            }
            for s in &st {
                prop_assert!(s.end > s.start);
                total += s.end.0 - s.start.0;
            }
            prop_assert_eq!(total, len);
        }
    }
}

/// A latency breakdown of one one-way message in steady state.
#[derive(Clone, Debug, PartialEq)]
pub struct Breakdown {
    /// The operation.
    pub op: super::Op,
    /// Message size \[bytes\].
    pub size_bytes: u32,
    /// When the message's trip began (the initiator's VipPostSend call).
    pub start: Time,
    /// When it ended (the responder saw it: its poll or receive wait succeeded).
    pub end: Time,
    /// Contiguous stages tiling `[start, end)`.
    pub stages: Vec<Stage>,
}

impl Breakdown {
    /// `end - start` \[ns\]: the one-way latency of this message (the ping-pong report's
    /// one-way latency is half a round trip; for RDMA write the two differ only by clock
    /// phases, for send/recv the round trip also holds the initiator's VipPostRecv for
    /// the pong, half of which is in the ping-pong's one-way figure and none in this).
    #[must_use]
    pub fn one_way_ns(&self) -> f64 {
        (self.end - self.start).as_ns_f64()
    }
}

/// Runs a traced ping-pong (two warm-up round trips, one measured) and breaks down the
/// measured message's trip from the initiator to the responder.
///
/// # Errors
/// The run fails, or its trace lacks the spans that delimit the trip.
pub fn measure(
    cfg: &crate::config::SystemConfig,
    op: super::Op,
    size: u32,
) -> Result<Breakdown, super::RunError> {
    measure_run(cfg, op, size).map(|(bd, _)| bd)
}

/// [`measure`], also returning the run it broke down (its system keeps the trace and
/// every component's counters).
///
/// # Errors
/// As [`measure`].
pub fn measure_run(
    cfg: &crate::config::SystemConfig,
    op: super::Op,
    size: u32,
) -> Result<(Breakdown, super::PingPongRun), super::RunError> {
    let spec = super::PingPongSpec {
        op,
        size,
        iterations: 1,
        warmup: 2,
        trace: true,
        recv_post: crate::system::RecvPost::Timed,
    };
    let run = super::run_pingpong(cfg, spec)?;
    let sys = &run.system;
    let k = &sys.kernel;
    let it = run
        .initiator
        .iterations
        .iter()
        .rfind(|r| !r.warmup)
        .ok_or_else(|| missing("the initiator recorded no measured iteration"))?;
    let msg = sim_kernel::MsgId(u64::from(it.index));
    // Who sees the message arrive: the responder; for an RDMA read the initiator, whose
    // read completes when its data has landed.
    let waiter = match op {
        super::Op::RdmaWrite | super::Op::SendRecv => sys.nodes[1].cpu,
        super::Op::RdmaRead => sys.nodes[0].cpu,
    };
    // The trip begins with the initiator's VipPostSend: in a send/recv round trip the
    // initiator first posts the receive for the pong (on the clock, see
    // host_driver::programs::sendrecv), which is not part of the ping's trip.
    let initiator = sys.nodes[0].cpu;
    let start = k
        .trace()
        .spans()
        .iter()
        .filter(|s| {
            s.component == initiator
                && s.msg == msg
                && s.stage == "VipPostSend"
                && s.start >= it.start
        })
        .map(|s| s.start)
        .min()
        .unwrap_or(it.start);
    // The responder sees the message when its wait for iteration `index` ends (the
    // initiator its RDMA read, when VipSendWait returns the read's completion).
    let wait_stage = match op {
        super::Op::RdmaWrite => "poll",
        super::Op::SendRecv => "VipRecvWait",
        super::Op::RdmaRead => "VipSendWait",
    };
    let end = k
        .trace()
        .spans()
        .iter()
        .filter(|s| s.component == waiter && s.msg == msg && s.stage == wait_stage && s.end > start)
        .map(|s| s.end)
        .min()
        .ok_or_else(|| {
            missing("no wait span of the receiving program for the measured iteration")
        })?;
    let spans = select_path(sys, msg, (waiter, wait_stage), op, start, end)?;
    let stages = tile(&spans, k.domains(), start, end);
    let bd = Breakdown {
        op,
        size_bytes: size,
        start,
        end,
        stages,
    };
    Ok((bd, run))
}

fn missing(what: &str) -> super::RunError {
    super::RunError::Program {
        node: 0,
        reason: format!("breakdown: {what}"),
    }
}

/// The spans on the measured message's one-way path, with names resolved:
///
/// - the initiator CPU's spans for iteration `msg` up to the doorbell (VipPostSend and
///   what it contains), not its completion wait nor its wait for the reply;
/// - every card, local-bus and MAC span tagged with the engine's id of the message (the
///   id of the sender engine's first `doorbell` span after `start`; the frame carries it
///   across the wire to the receiving card);
/// - system-bus transactions nested in a selected span of the same node (they carry bus
///   tags, not message ids);
/// - the responder's wait for iteration `msg` (RDMA read: the initiator's VipSendWait),
///   clipped to begin where the last other selected span ends: the time from the data
///   landing (RDMA read: the status write) to the program seeing it.
fn select_path(
    sys: &super::System,
    msg: sim_kernel::MsgId,
    (waiter, wait_stage): (sim_kernel::ComponentId, &str),
    op: super::Op,
    start: Time,
    end: Time,
) -> Result<Vec<NamedSpan>, super::RunError> {
    let k = &sys.kernel;
    let all = k.trace().spans();
    let initiator = sys.nodes[0].cpu;
    let responder = sys.nodes[1].cpu;
    let off_path_stages = off_path_stages(op);
    let sender_engine = sys.nodes[0].engine;
    let node_of = |c: sim_kernel::ComponentId| -> Option<usize> {
        sys.nodes.iter().position(|n| n.components().contains(&c))
    };
    // The host's doorbell for this iteration; the engine's doorbell span that follows it
    // names the engine's id of the message (an earlier one can belong to a receive post).
    let host_doorbell_end = all
        .iter()
        .filter(|s| {
            s.component == initiator && s.msg == msg && s.stage == "doorbell" && s.start >= start
        })
        .map(|s| s.end)
        .max()
        .ok_or_else(|| missing("no doorbell span of the initiator for the measured iteration"))?;
    let engine_msg = all
        .iter()
        .filter(|s| {
            s.component == sender_engine && s.stage == "doorbell" && s.start >= host_doorbell_end
        })
        .min_by_key(|s| s.start)
        .map(|s| s.msg)
        .ok_or_else(|| missing("no sender engine doorbell span after the post"))?;
    let buses: Vec<sim_kernel::ComponentId> = sys
        .nodes
        .iter()
        .flat_map(|n| [n.system_bus, n.local_bus])
        .collect();
    let tagged = |s: &sim_kernel::Span| s.msg == engine_msg && !buses.contains(&s.component);
    let mut picked: Vec<&sim_kernel::Span> = all
        .iter()
        .filter(|s| {
            if s.component == initiator {
                s.msg == msg && matches!(s.stage, "VipPostSend" | "doorbell")
            } else if s.component == responder {
                false
            } else {
                tagged(s) && !off_path_stages.contains(&s.stage)
            }
        })
        .collect();
    let off_path: Vec<&sim_kernel::Span> = all
        .iter()
        .filter(|s| tagged(s) && off_path_stages.contains(&s.stage))
        .collect();
    let picked_cover = Cover::new(picked.iter().copied(), node_of);
    let off_path_cover = Cover::new(off_path.iter().copied(), node_of);
    // The doorbell's posted writes cross the system bus after the CPU has moved on: from
    // the CPU's doorbell span to the engine's.
    let host_doorbell = picked
        .iter()
        .find(|s| s.component == initiator && s.stage == "doorbell")
        .map(|s| s.start);
    let engine_doorbell = picked
        .iter()
        .find(|s| s.component == sender_engine && s.stage == "doorbell")
        .map(|s| s.start);
    let sender_bus = sys.nodes[0].system_bus;
    let bus_spans: Vec<&sim_kernel::Span> = all
        .iter()
        .filter(|b| buses.contains(&b.component))
        .filter(|b| !off_path_cover.contains(node_of(b.component), b))
        .filter(|b| {
            let in_doorbell_flight = b.component == sender_bus
                && host_doorbell.is_some_and(|h| b.start >= h)
                && engine_doorbell.is_some_and(|e| b.end <= e);
            let local_tagged =
                b.msg == engine_msg && !sys.nodes.iter().any(|n| n.system_bus == b.component);
            let nested = picked_cover.contains(node_of(b.component), b);
            in_doorbell_flight || local_tagged || nested
        })
        .collect();
    picked.extend(bus_spans);
    let mut flight = None;
    if let (Some(h), Some(e)) = (host_doorbell, engine_doorbell) {
        if let Some(bus_span) = all.iter().find(|b| b.component == sender_bus) {
            // Between the CPU posting the doorbell and the engine decoding it, the write
            // sits in the bridge's posting buffer or crosses the bus (nested spans show
            // the bus phases).
            flight = Some(NamedSpan {
                stage: "doorbell posted write".to_string(),
                component: k.component_name(sender_bus).to_string(),
                domain: usize::from(bus_span.domain.0),
                start: h,
                end: e,
            });
        }
    }
    let last = picked
        .iter()
        .map(|s| s.end)
        .filter(|e| *e <= end)
        .max()
        .unwrap_or(start);
    let mut out: Vec<NamedSpan> = picked
        .iter()
        .map(|s| NamedSpan {
            stage: s.stage.to_string(),
            component: k.component_name(s.component).to_string(),
            domain: usize::from(s.domain.0),
            start: s.start,
            end: s.end,
        })
        .collect();
    out.extend(flight);
    if let Some(w) = all
        .iter()
        .find(|s| s.component == waiter && s.msg == msg && s.stage == wait_stage && s.end == end)
    {
        out.push(NamedSpan {
            stage: format!("{wait_stage} detection"),
            component: k.component_name(waiter).to_string(),
            domain: usize::from(w.domain.0),
            start: last.max(w.start),
            end,
        });
    }
    Ok(out)
}

/// Card stages that run beside the message's path, not on it: the sender's completion
/// (the MAC's write-back, the GEC's report, waiting for the acknowledgement, the status
/// write into the host descriptor).
const OFF_PATH_STAGES: &[&str] = &[
    "status write",
    "tx complete",
    "gec tx done",
    "tx write-back",
    "ack wait",
];

/// The off-path stages of `op`: for an RDMA read the status write into the initiator's
/// descriptor is the end of the path (its VipSendWait sees it), not beside it.
fn off_path_stages(op: super::Op) -> &'static [&'static str] {
    match op {
        super::Op::RdmaWrite | super::Op::SendRecv => OFF_PATH_STAGES,
        super::Op::RdmaRead => &OFF_PATH_STAGES[1..],
    }
}

/// The spans of a set, per node, sorted by start with a running maximum of their ends:
/// "does a span of this node contain `[b.start, b.end)`?" in O(log n).
struct Cover {
    by_node: std::collections::BTreeMap<Option<usize>, (Vec<Time>, Vec<Time>)>,
}

impl Cover {
    fn new<'a>(
        spans: impl Iterator<Item = &'a sim_kernel::Span>,
        node_of: impl Fn(sim_kernel::ComponentId) -> Option<usize>,
    ) -> Self {
        let mut lists: std::collections::BTreeMap<Option<usize>, Vec<(Time, Time)>> =
            std::collections::BTreeMap::new();
        for s in spans {
            lists
                .entry(node_of(s.component))
                .or_default()
                .push((s.start, s.end));
        }
        let by_node = lists
            .into_iter()
            .map(|(node, mut v)| {
                v.sort_unstable();
                let starts = v.iter().map(|(s, _)| *s).collect();
                let max_ends = v
                    .iter()
                    .scan(Time::ZERO, |m, (_, e)| {
                        *m = (*m).max(*e);
                        Some(*m)
                    })
                    .collect();
                (node, (starts, max_ends))
            })
            .collect();
        Self { by_node }
    }

    /// Whether a span of `node` starts at or before `b.start` and ends at or after `b.end`.
    fn contains(&self, node: Option<usize>, b: &sim_kernel::Span) -> bool {
        let Some((starts, max_ends)) = self.by_node.get(&node) else {
            return false;
        };
        let n = starts.partition_point(|s| *s <= b.start);
        n > 0 && max_ends[n - 1] >= b.end
    }
}
