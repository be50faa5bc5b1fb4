//! `--vcd FILE`: the state machines of a run as a VCD waveform (GTKWave, Surfer).
//!
//! One wire per component state machine, from the trace's transitions: a `string`
//! variable named after the machine, in a scope per part of the component's name
//! (`hvia.n0.card.engine.tx`; dots within a machine's name become `_`), holding the state's name. Its value at time 0 is the state
//! its first transition left; times are in picoseconds of simulated time.

use std::collections::BTreeMap;
use std::io::{self, Write};
use vcd::{IdCode, TimescaleUnit, VarType};

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

/// Writes the transitions of `sys` to `out`; returns the number of wires.
///
/// # Errors
/// The writer fails.
pub(super) fn write(out: &mut impl Write, sys: &System) -> io::Result<usize> {
    let k = &sys.kernel;
    let transitions = k.trace().transitions();
    // Wires sorted by component name, then machine; each with its initial state.
    let mut wires: BTreeMap<(String, &'static str), (u32, &'static str)> = BTreeMap::new();
    for t in transitions {
        let name = k.component_name(t.component).to_owned();
        wires
            .entry((name, t.machine))
            .or_insert((t.component.0, t.from));
    }

    let mut w = vcd::Writer::new(out);
    w.comment("hvia-sim: component state machines (one string wire each)")?;
    w.timescale(1, TimescaleUnit::PS)?;
    w.add_module("hvia")?;
    let mut open: Vec<String> = Vec::new();
    let mut ids: BTreeMap<(u32, &'static str), IdCode> = BTreeMap::new();
    let mut initial: Vec<(IdCode, &'static str)> = Vec::new();
    for ((name, machine), (comp, from)) in &wires {
        let path: Vec<String> = name.split('.').map(token).collect();
        let common = open.iter().zip(&path).take_while(|(a, b)| a == b).count();
        for _ in common..open.len() {
            w.upscope()?;
        }
        open.truncate(common);
        for part in &path[common..] {
            w.add_module(part)?;
            open.push(part.clone());
        }
        let id = w.add_var(VarType::String, 1, &token(machine), None)?;
        ids.insert((*comp, machine), id);
        initial.push((id, from));
    }
    for _ in 0..open.len() {
        w.upscope()?;
    }
    w.upscope()?;
    w.enddefinitions()?;

    w.timestamp(0)?;
    for (id, state) in initial {
        w.change_string(id, &token(state))?;
    }
    let mut order: Vec<usize> = (0..transitions.len()).collect();
    order.sort_by_key(|&i| (transitions[i].time, i));
    let mut now = 0;
    for i in order {
        let t = &transitions[i];
        if t.time.as_ps() != now {
            now = t.time.as_ps();
            w.timestamp(now)?;
        }
        if let Some(&id) = ids.get(&(t.component.0, t.machine)) {
            w.change_string(id, &token(t.to))?;
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
}
