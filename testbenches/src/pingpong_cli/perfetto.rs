//! `--perfetto FILE`: every trace span of a run as Chrome trace-event JSON, which
//! ui.perfetto.dev and chrome://tracing open.
//!
//! One complete (`"ph": "X"`) event per span: `name` is the stage, `cat` the clock
//! domain, `ts`/`dur` in microseconds of simulated time (ps precision), `pid` the node
//! (from the component's `nN.` prefix), `tid` the component's id, `args` the message id.
//! Metadata events name the processes (`node N`) and threads (the component names).
//! Slices on one thread must nest; a span that overlaps another of its component without
//! nesting goes to an extra lane of that component (`tid` = id + 1000 x lane, named
//! `component #lane`). Flow events link each message's spans from the sender's
//! VipPostSend to the receiver's detection, and counter tracks show bus utilisation and
//! descriptors in flight (`perfetto_flow`).

use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{self, Write};

use crate::system::System;
use sim_kernel::{Span, Time};

/// Thread ids per lane: lane `l` of component `c` is `c + LANE_STRIDE * l`.
const LANE_STRIDE: u64 = 1000;

/// The node of a component named `nN.…` (0 for any other name).
fn node_of(name: &str) -> u64 {
    name.strip_prefix('n')
        .and_then(|rest| rest.split('.').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[allow(clippy::cast_precision_loss)]
fn us(t: u64) -> f64 {
    t as f64 / 1e6
}

/// Assigns each span (indices into `spans`, all of one component) a lane so that the
/// spans of a lane nest. Returns the lane of each index.
fn lanes(spans: &[Span], idx: &[usize]) -> Vec<(usize, u64)> {
    let mut order = idx.to_vec();
    order.sort_by_key(|&i| (spans[i].start, std::cmp::Reverse(spans[i].end), i));
    // Per lane: the ends of the spans still open at the current start (a stack).
    let mut open: Vec<Vec<Time>> = Vec::new();
    let mut out = Vec::with_capacity(order.len());
    for i in order {
        let s = &spans[i];
        let mut lane = None;
        for (l, stack) in open.iter_mut().enumerate() {
            while stack.last().is_some_and(|&e| e <= s.start) {
                stack.pop();
            }
            if stack.last().is_none_or(|&e| e >= s.end) {
                stack.push(s.end);
                lane = Some(l);
                break;
            }
        }
        let lane = lane.unwrap_or_else(|| {
            open.push(vec![s.end]);
            open.len() - 1
        });
        out.push((i, lane as u64));
    }
    out
}

/// The whole document (`traceEvents`, `displayTimeUnit`).
#[derive(Serialize)]
struct Doc {
    #[serde(rename = "traceEvents")]
    trace_events: Vec<Value>,
    #[serde(rename = "displayTimeUnit")]
    display_time_unit: &'static str,
}

/// Writes the trace of `sys` to `out`; returns the number of span events.
///
/// # Errors
/// The writer fails.
pub(super) fn write(out: &mut impl Write, sys: &System) -> io::Result<usize> {
    let k = &sys.kernel;
    let spans = k.trace().spans();
    let mut by_comp: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, s) in spans.iter().enumerate() {
        by_comp.entry(s.component.0).or_default().push(i);
    }
    let mut events = Vec::with_capacity(spans.len() + 2 * by_comp.len());
    let mut at: super::perfetto_flow::Placement = vec![(0, 0); spans.len()];
    let mut nodes: Vec<u64> = Vec::new();
    for (&comp, idx) in &by_comp {
        let name = k.component_name(sim_kernel::ComponentId(comp));
        let pid = node_of(name);
        if !nodes.contains(&pid) {
            nodes.push(pid);
            events.push(json!({"ph": "M", "name": "process_name", "pid": pid,
                "args": {"name": format!("node {pid}")}}));
        }
        let mut named_lanes: Vec<u64> = Vec::new();
        for (i, lane) in lanes(spans, idx) {
            let s = &spans[i];
            let tid = u64::from(comp) + LANE_STRIDE * lane;
            at[i] = (pid, tid);
            if !named_lanes.contains(&lane) {
                named_lanes.push(lane);
                let thread = if lane == 0 {
                    name.to_owned()
                } else {
                    format!("{name} #{lane}")
                };
                events.push(json!({"ph": "M", "name": "thread_name", "pid": pid,
                    "tid": tid, "args": {"name": thread}}));
                events.push(json!({"ph": "M", "name": "thread_sort_index", "pid": pid,
                    "tid": tid, "args": {"sort_index": tid}}));
            }
            events.push(json!({
                "name": s.stage,
                "cat": k.domain(s.domain).name(),
                "ph": "X",
                "ts": us(s.start.as_ps()),
                "dur": us(s.end.as_ps().saturating_sub(s.start.as_ps())),
                "pid": pid,
                "tid": tid,
                "args": {"msg": format!("{:#x}", s.msg.0)},
            }));
        }
    }
    let name = |id| k.component_name(id).to_owned();
    events.extend(super::perfetto_flow::flows(spans, &name, &at));
    events.extend(super::perfetto_flow::counters(spans, &name));
    events.extend(super::perfetto_flow::levels(k.trace().levels(), &name));
    let doc = Doc {
        trace_events: events,
        display_time_unit: "ns",
    };
    serde_json::to_writer(&mut *out, &doc)?;
    out.write_all(b"\n")?;
    Ok(spans.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim_kernel::{ComponentId, DomainId, MsgId};

    fn span(start: u64, end: u64) -> Span {
        Span {
            msg: MsgId(0),
            stage: "s",
            component: ComponentId(0),
            domain: DomainId(0),
            start: Time(start),
            end: Time(end),
        }
    }

    #[test]
    fn overlapping_spans_get_lanes_nested_ones_do_not() {
        // [0,100) holds [10,20) and [20,30); [50,150) overlaps [0,100) without nesting.
        let spans = [
            span(0, 100),
            span(10, 20),
            span(20, 30),
            span(50, 150),
            span(150, 160),
        ];
        let mut got = lanes(&spans, &[0, 1, 2, 3, 4]);
        got.sort_unstable();
        assert_eq!(got, vec![(0, 0), (1, 0), (2, 0), (3, 1), (4, 0)]);
    }

    #[test]
    fn nodes_come_from_names() {
        assert_eq!(node_of("n1.card.engine"), 1);
        assert_eq!(node_of("n12.x"), 12);
        assert_eq!(node_of("switch"), 0);
    }
}
