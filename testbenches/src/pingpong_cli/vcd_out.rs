//! `--vcd FILE`: a run as a VCD waveform (GTKWave, Surfer), in picoseconds of simulated
//! time, one scope per part of a dotted name (`hvia.n0.card.engine`):
//!
//! - the component state machines, from the trace's transitions: a `string` variable
//!   per machine (dots within a machine's name become `_`) holding the state's name; its
//!   value at time 0 is the state its first transition left;
//! - the signals of both PCI buses of each node, of each GMII and the card SDRAM's
//!   table accesses (`vcd_signals`): `hvia.n0.pci.system.FRAME#`, `hvia.n1.gmii.RXD`,
//!   `hvia.n0.card.sdram.access`, ...
//!
//! `--vcd-scope` keeps only the wires under the listed scopes (`n0.pci.system,n1.gmii`).

use std::collections::BTreeMap;
use std::io::{self, Write};
use vcd::{IdCode, TimescaleUnit, Value, VarType};

use super::vcd_signals::{Kind, Signals, Val};
use crate::system::System;

/// A state, scope or machine name as one VCD token: white space and dots (which some
/// viewers read as hierarchy) become `_`; never empty.
fn token(s: &str) -> String {
    let t: String = s
        .chars()
        .map(|c| {
            if c.is_whitespace() || c == '.' {
                '_'
            } else {
                c
            }
        })
        .collect();
    if t.is_empty() {
        "_".to_owned()
    } else {
        t
    }
}

/// Whether the wire at dotted `scope` is kept by the `--vcd-scope` list (empty: all).
pub(super) fn in_scopes(scope: &str, keep: &[String]) -> bool {
    keep.is_empty()
        || keep.iter().any(|k| {
            scope == k
                || scope
                    .strip_prefix(k.as_str())
                    .is_some_and(|r| r.starts_with('.'))
        })
}

/// A wire of the file: what it shows.
enum Source {
    /// A state machine (component id, machine name), with its initial state.
    Machine(u32, &'static str, &'static str),
    /// A signal of [`Signals`] (its index).
    Signal(usize),
}

/// A value change to write.
enum Change<'a> {
    Str(&'a str),
    Sig(Val, Kind),
}

/// The bits of `v` for a vector wire, without leading zeros (VCD extends with 0).
fn bits(v: u64) -> Vec<Value> {
    let n = 64 - v.leading_zeros().min(63);
    (0..n)
        .rev()
        .map(|i| {
            if v >> i & 1 == 1 {
                Value::V1
            } else {
                Value::V0
            }
        })
        .collect()
}

/// Writes the transitions of `sys` and the signals `sig` under the scopes `keep` to
/// `out`; returns the number of wires.
///
/// # Errors
/// The writer fails.
pub(super) fn write(
    out: &mut impl Write,
    sys: &System,
    sig: &Signals,
    keep: &[String],
) -> io::Result<usize> {
    let k = &sys.kernel;
    let transitions = k.trace().transitions();
    // Wires by scope, then name.
    let mut wires: BTreeMap<(String, String), Source> = BTreeMap::new();
    for t in transitions {
        let name = k.component_name(t.component).to_owned();
        if in_scopes(&name, keep) {
            wires
                .entry((name, token(t.machine)))
                .or_insert(Source::Machine(t.component.0, t.machine, t.from));
        }
    }
    for (i, w) in sig.wires.iter().enumerate() {
        if in_scopes(&w.scope, keep) {
            wires.insert((w.scope.clone(), w.name.clone()), Source::Signal(i));
        }
    }

    let mut w = vcd::Writer::new(out);
    w.comment("hvia-sim: state machines (string wires) and PCI / GMII signals")?;
    w.timescale(1, TimescaleUnit::PS)?;
    w.add_module("hvia")?;
    let mut open: Vec<String> = Vec::new();
    let mut machines: BTreeMap<(u32, &'static str), IdCode> = BTreeMap::new();
    let mut signals: BTreeMap<usize, IdCode> = BTreeMap::new();
    let mut initial: Vec<(IdCode, &'static str)> = Vec::new();
    for ((scope, name), src) in &wires {
        let path: Vec<String> = scope.split('.').map(token).collect();
        let common = open.iter().zip(&path).take_while(|(a, b)| a == b).count();
        for _ in common..open.len() {
            w.upscope()?;
        }
        open.truncate(common);
        for part in &path[common..] {
            w.add_module(part)?;
            open.push(part.clone());
        }
        match src {
            Source::Machine(comp, machine, from) => {
                let id = w.add_var(VarType::String, 1, name, None)?;
                machines.insert((*comp, machine), id);
                initial.push((id, from));
            }
            Source::Signal(i) => {
                let id = match sig.wires[*i].kind {
                    Kind::Bit => w.add_var(VarType::Wire, 1, name, None)?,
                    Kind::Vector(n) => w.add_var(VarType::Wire, n, name, None)?,
                    Kind::Text => w.add_var(VarType::String, 1, name, None)?,
                };
                signals.insert(*i, id);
            }
        }
    }
    for _ in 0..open.len() {
        w.upscope()?;
    }
    w.upscope()?;
    w.enddefinitions()?;

    // Every change, in time order; ties: machines by component, each component's own
    // order kept (the order between components at one instant depends on how the
    // simulation stepped, not on what happened), then signals as made.
    let mut all: Vec<((u64, u32, usize), IdCode, Change<'_>)> = Vec::new();
    for (i, t) in transitions.iter().enumerate() {
        if let Some(&id) = machines.get(&(t.component.0, t.machine)) {
            all.push(((t.time.as_ps(), t.component.0, i), id, Change::Str(t.to)));
        }
    }
    for (i, c) in sig.changes.iter().enumerate() {
        if let Some(&id) = signals.get(&c.wire) {
            let kind = sig.wires[c.wire].kind;
            all.push(((c.t, u32::MAX, i), id, Change::Sig(c.val, kind)));
        }
    }
    all.sort_by_key(|c| c.0);

    w.timestamp(0)?;
    for (id, state) in initial {
        w.change_string(id, &token(state))?;
    }
    let mut now = 0;
    for ((t, _, _), id, change) in all {
        if t != now {
            now = t;
            w.timestamp(now)?;
        }
        match change {
            Change::Str(s) => w.change_string(id, &token(s))?,
            Change::Sig(Val::Num(v), Kind::Bit) => {
                w.change_scalar(id, if v == 0 { Value::V0 } else { Value::V1 })?;
            }
            Change::Sig(Val::Z, Kind::Bit) => w.change_scalar(id, Value::Z)?,
            Change::Sig(Val::Num(v), Kind::Vector(_)) => w.change_vector(id, bits(v))?,
            Change::Sig(Val::Z, Kind::Vector(_)) => w.change_vector(id, [Value::Z])?,
            Change::Sig(Val::Text(s), _) => w.change_string(id, &token(s))?,
            Change::Sig(Val::Num(v), Kind::Text) => w.change_string(id, &v.to_string())?,
            Change::Sig(Val::Z, Kind::Text) => w.change_string(id, "z")?,
        }
    }
    w.flush()?;
    Ok(wires.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_have_no_spaces() {
        assert_eq!(token("wait ack"), "wait_ack");
        assert_eq!(token(""), "_");
        assert_eq!(token("idle"), "idle");
        assert_eq!(token("dp83820.rx"), "dp83820_rx");
    }

    #[test]
    fn scopes_match_at_dots() {
        let keep = vec!["n0.pci".to_owned()];
        assert!(in_scopes("n0.pci.system", &keep));
        assert!(in_scopes("n0.pci", &keep));
        assert!(!in_scopes("n0.pcix", &keep));
        assert!(!in_scopes("n1.pci.system", &keep));
        assert!(in_scopes("anything", &[]));
        assert_eq!(bits(0), vec![Value::V0]);
        assert_eq!(bits(5), vec![Value::V1, Value::V0, Value::V1]);
    }
}
