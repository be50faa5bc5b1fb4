//! Flow events and counter tracks of `--perfetto`, derived from the trace spans.
//!
//! **Flows** (`"ph": "s"` / `"t"` / `"f"`, one id per message): each VipPostSend of a
//! program is linked, in time order, to every span the message leaves on both cards
//! (engine, ATT, GEC, DP83820, under the engine's message id that the frame carries to
//! the far card) and to the far program's detection (its `poll` or `VipRecvWait` of the
//! same iteration): in ui.perfetto.dev a click on the post leads along the doorbell, the
//! DMA reads, the wire and the remote DMA write to the detection. A flow event binds to
//! the innermost slice at its instant: the post's first instant, the middle of each
//! card span, the detection's last instant.
//!
//! **Counters** (`"ph": "C"`): the FIFO fills the components record as levels (the
//! engine's `send_fifo` and `recv_fifo`, the DP83820's `rx_fifo`, bytes); per PCI bus
//! its utilisation (percent of each interval
//! covered by a bus phase: address, data, wait, retry), and per card the descriptors in
//! flight (send messages from their doorbell to the engine's last span of them on the
//! sending card, the status write). Byte-level FIFO fill levels are not in the trace and
//! are not drawn.

use serde_json::{json, Value};
use std::collections::BTreeMap;

use sim_kernel::{ComponentId, Span, Time};

/// Where each span was placed: its process (node) and thread (component lane).
pub(super) type Placement = Vec<(u64, u64)>;

/// Component kinds that carry an engine message id in their spans.
const CARRIERS: [&str; 5] = [
    ".card.engine",
    ".card.att",
    ".card.gec",
    ".dp83820.bus",
    ".dp83820.mac",
];

#[allow(clippy::cast_precision_loss)]
fn us(t: u64) -> f64 {
    t as f64 / 1e6
}

/// The middle of a span \[ps\] (where a flow event binds to it).
fn mid(s: &Span) -> u64 {
    s.start.as_ps() + (s.end.as_ps().saturating_sub(s.start.as_ps())) / 2
}

/// The node of a component name `nN.…`.
fn node(name: &str) -> Option<u64> {
    name.strip_prefix('n')?.split('.').next()?.parse().ok()
}

/// The flow events of every message of the run.
pub(super) fn flows(
    spans: &[Span],
    name: &dyn Fn(ComponentId) -> String,
    at: &Placement,
) -> Vec<Value> {
    let names: BTreeMap<u32, String> = spans
        .iter()
        .map(|s| (s.component.0, name(s.component)))
        .collect();
    let comp = |s: &Span| names.get(&s.component.0).map_or("", String::as_str);
    let is_cpu = |s: &Span| comp(s).ends_with(".host.cpu");
    let mut out = Vec::new();
    let mut id: u64 = 0;
    for (pi, post) in spans.iter().enumerate() {
        if !is_cpu(post) || post.stage != "VipPostSend" {
            continue;
        }
        let Some(n) = node(comp(post)) else { continue };
        // The card's doorbell step of this post: the first on this node's engine in it.
        let Some(bell) = spans
            .iter()
            .filter(|s| {
                s.stage == "doorbell"
                    && comp(s) == format!("n{n}.card.engine")
                    && s.start >= post.start
                    && s.start <= post.end
            })
            .min_by_key(|s| s.start)
        else {
            continue;
        };
        let m = bell.msg;
        let mut chain: Vec<usize> = spans
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                s.msg == m && s.start >= post.start && CARRIERS.iter().any(|c| comp(s).ends_with(c))
            })
            .map(|(i, _)| i)
            .collect();
        chain.sort_by_key(|&i| (mid(&spans[i]), i));
        let last = chain.last().map_or(post.end, |&i| spans[i].start);
        // The far program's detection of the same iteration.
        let detect = spans
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                is_cpu(s)
                    && node(comp(s)).is_some_and(|k| k != n)
                    && s.msg == post.msg
                    && (s.stage == "poll" || s.stage == "VipRecvWait")
                    && s.end > last
            })
            .min_by_key(|(_, s)| s.end)
            .map(|(i, _)| i);
        let Some(detect) = detect else { continue };
        let mut steps = vec![pi];
        steps.extend(chain);
        steps.push(detect);
        id += 1;
        let count = steps.len();
        for (k, &i) in steps.iter().enumerate() {
            let s = &spans[i];
            let ph = match k {
                0 => "s",
                k if k + 1 == count => "f",
                _ => "t",
            };
            // The post binds at its first instant (before the calls nested in it), the
            // detection at its last (its slice starts before the data lands), every
            // step between in its middle.
            let ts = if k == 0 {
                s.start.as_ps()
            } else if k + 1 == count {
                s.end.as_ps().saturating_sub(1).max(s.start.as_ps())
            } else {
                mid(s)
            };
            let (pid, tid) = at[i];
            let mut e = json!({"ph": ph, "id": id, "name": "message", "cat": "message",
                "ts": us(ts), "pid": pid, "tid": tid,
                "args": {"msg": format!("{:#x}", m.0), "iteration": post.msg.0}});
            if ph == "f" {
                e["bp"] = json!("e");
            }
            out.push(e);
        }
    }
    out
}

/// The counter tracks: bus utilisation per interval, descriptors in flight per card.
pub(super) fn counters(spans: &[Span], name: &dyn Fn(ComponentId) -> String) -> Vec<Value> {
    let mut by_comp: BTreeMap<u32, Vec<&Span>> = BTreeMap::new();
    for s in spans {
        by_comp.entry(s.component.0).or_default().push(s);
    }
    let end = spans.iter().map(|s| s.end.as_ps()).max().unwrap_or(0);
    // About 2000 intervals per run, at least 1 us each.
    let bucket = (end / 2000).max(1_000_000);
    let mut out = Vec::new();
    for (&c, list) in &by_comp {
        let cname = name(ComponentId(c));
        let Some(pid) = node(&cname) else { continue };
        if cname.ends_with(".pci.system") || cname.ends_with(".pci.local") {
            out.extend(utilisation(&cname, pid, list, bucket, end));
        }
        if cname.ends_with(".card.engine") {
            out.extend(in_flight(&cname, pid, spans, c));
        }
    }
    out
}

/// The levels the components recorded (FIFO fills), a counter track each:
/// `n0.card.engine send_fifo (bytes)`.
pub(super) fn levels(
    levels: &[sim_kernel::Level],
    name: &dyn Fn(ComponentId) -> String,
) -> Vec<Value> {
    levels
        .iter()
        .filter_map(|l| {
            let cname = name(l.component);
            let pid = node(&cname)?;
            Some(
                json!({"ph": "C", "name": format!("{cname} {} ({})", l.name, l.unit),
                "pid": pid, "ts": us(l.time.as_ps()), "args": {"fill": l.value}}),
            )
        })
        .collect()
}

/// Busy percent of each interval of `bucket` ps on one bus.
fn utilisation(cname: &str, pid: u64, list: &[&Span], bucket: u64, end: u64) -> Vec<Value> {
    let mut iv: Vec<(u64, u64)> = list
        .iter()
        .map(|s| (s.start.as_ps(), s.end.as_ps()))
        .filter(|(a, b)| b > a)
        .collect();
    iv.sort_unstable();
    // Merge into disjoint busy intervals.
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (a, b) in iv {
        match merged.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    let mut out = Vec::new();
    let mut j = 0;
    let mut t = 0;
    while t < end {
        let (lo, hi) = (t, (t + bucket).min(end));
        while merged.get(j).is_some_and(|&(_, b)| b <= lo) {
            j += 1;
        }
        let busy: u64 = merged[j..]
            .iter()
            .take_while(|&&(a, _)| a < hi)
            .map(|&(a, b)| b.min(hi) - a.max(lo))
            .sum();
        #[allow(clippy::cast_precision_loss)]
        let pct = 100.0 * busy as f64 / (hi - lo) as f64;
        out.push(
            json!({"ph": "C", "name": format!("{cname} utilisation (%)"), "pid": pid,
            "ts": us(lo), "args": {"busy": (pct * 100.0).round() / 100.0}}),
        );
        t = hi;
    }
    out
}

/// Send descriptors in flight on one card: from each of its messages' doorbell to the
/// end of its last span on this engine.
fn in_flight(cname: &str, pid: u64, spans: &[Span], engine: u32) -> Vec<Value> {
    let mut life: BTreeMap<u64, (Time, Time)> = BTreeMap::new();
    let mine: Vec<&Span> = spans.iter().filter(|s| s.component.0 == engine).collect();
    let started: Vec<u64> = mine
        .iter()
        .filter(|s| s.stage == "doorbell")
        .map(|s| s.msg.0)
        .collect();
    for s in &mine {
        if started.contains(&s.msg.0) {
            let e = life.entry(s.msg.0).or_insert((s.start, s.end));
            e.0 = e.0.min(s.start);
            e.1 = e.1.max(s.end);
        }
    }
    let mut changes: BTreeMap<u64, i64> = BTreeMap::new();
    for (a, b) in life.values() {
        *changes.entry(a.as_ps()).or_default() += 1;
        *changes.entry(b.as_ps()).or_default() -= 1;
    }
    let mut level: i64 = 0;
    changes
        .into_iter()
        .map(|(t, d)| {
            level += d;
            json!({"ph": "C", "name": format!("{cname} descriptors in flight"), "pid": pid,
                "ts": us(t), "args": {"descriptors": level}})
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utilisation_of_merged_intervals() {
        let s = |a: u64, b: u64| Span {
            msg: sim_kernel::MsgId(0),
            stage: "pci.data",
            component: ComponentId(0),
            domain: sim_kernel::DomainId(0),
            start: Time(a),
            end: Time(b),
        };
        let spans = [s(0, 500_000), s(250_000, 750_000), s(1_500_000, 2_000_000)];
        let refs: Vec<&Span> = spans.iter().collect();
        let c = utilisation("n0.pci.system", 0, &refs, 1_000_000, 2_000_000);
        assert_eq!(c.len(), 2);
        assert_eq!(c[0]["args"]["busy"], 75.0);
        assert_eq!(c[1]["args"]["busy"], 50.0);
        assert_eq!(c[1]["ts"], 1.0);
    }
}
