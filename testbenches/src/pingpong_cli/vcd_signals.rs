//! The signal-level wires of `--vcd`, rebuilt from records that are the same in the
//! exact and the fast stepping modes:
//!
//! - **PCI** (scope `nN.pci.system`, `nN.pci.local`), from each bus's transaction log
//!   (`pci_model::TenureRecord`: clocks of the address phase, DEVSEL#, the first and last
//!   data phases and the last busy clock, how it ended, the bytes moved): `CLK`, `FRAME#`,
//!   `IRDY#`, `TRDY#`, `DEVSEL#`, `STOP#`, `AD` (the address in the address phase, each
//!   data phase's bytes, little-endian lanes), `C/BE#` (the command, then the byte
//!   enables, active low), `PAR` (even parity of AD\[31:0\] and C/BE#\[3:0\], one clock
//!   later), and `REQ#` / `GNT#` per master. Values hold from the clock edge on. Derived,
//!   not sampled: a burst whose data phases are not back to back shows its phases from
//!   the first on and the last in its own clock (the wait states before it); `REQ#` and
//!   `GNT#` are shown from the clock before the master's address phase (a wait for the
//!   grant is in the `wait_for_grant_cycles` counter, not here); `STOP#` is on in the
//!   last clock of a Retry, Disconnect or target abort.
//! - **GMII** (scope `nN.gmii`), from the transmitters' capture: `TX_EN` / `TXD` (7
//!   preamble bytes, the SFD, the frame with its FCS, one byte per GMII clock), and the
//!   far node's `RX_DV` / `RXD`: the same bytes one PHY + cable + PHY delay later (the
//!   `phy+cable+phy` span of the frame), wire faults not shown.
//!
//! - **SDRAM** (scope `nN.card.sdram`): the command bus from the controller's command
//!   log, `CMD` (ACTIVATE, READ, WRITE, PRECHARGE, PRECHARGE_ALL, AUTO_REFRESH, NOP
//!   between), `BA` and `A` (the row an ACTIVATE opens), at the SDRAM clock's edges; and
//!   from the ATT manager's spans a string wire `access` holding the table access in
//!   progress (`att_L1_read`, `att_L2_write`, ...) or `idle`.
//!
//! - **FIFO fills** (scope of the component: `nN.card.engine` `send_fifo`, `recv_fifo`;
//!   `nN.dp83820.mac` `rx_fifo`), from the levels the components record when traced: an
//!   integer wire each, in bytes.

use gige_mac::gmii::Captured;
use pci_model::{PciBus, TenureEnd, TenureRecord};

use crate::system::{Comp, System};

/// A wire's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// A 1-bit wire.
    Bit,
    /// A vector of this many bits.
    Vector(u32),
    /// A string (a name per value).
    Text,
}

/// One signal: its scope path (`n0.pci.system`), name and type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Wire {
    pub scope: String,
    pub name: String,
    pub kind: Kind,
}

/// A value: a number (a bit is 0 or 1) or high impedance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Val {
    Num(u64),
    Z,
    Text(&'static str),
}

/// A value change at `t` ps of wire `wire`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Change {
    pub t: u64,
    pub wire: usize,
    pub val: Val,
}

/// Wires and their changes.
#[derive(Default)]
pub(super) struct Signals {
    pub wires: Vec<Wire>,
    pub changes: Vec<Change>,
}

impl Signals {
    fn wire(&mut self, scope: &str, name: &str, kind: Kind) -> usize {
        self.wires.push(Wire {
            scope: scope.to_owned(),
            name: name.to_owned(),
            kind,
        });
        self.wires.len() - 1
    }

    fn set(&mut self, t: u64, wire: usize, val: Val) {
        self.changes.push(Change { t, wire, val });
    }
}

/// Turns on the transaction logs the PCI wires are rebuilt from (before the run).
pub(super) fn enable(sys: &mut System) {
    for id in sys.nodes.clone() {
        if let Some(Comp::Att(_, a)) = sys.world.get_mut(id.att) {
            a.log_sdram_commands();
        }
        for bus in [id.system_bus, id.local_bus] {
            if let Some(Comp::SystemBus(_, b) | Comp::LocalBus(_, b)) = sys.world.get_mut(bus) {
                b.set_tenure_log(true);
            }
        }
    }
}

/// Every signal of `sys` (after a run with [`enable`]) and of the captured frames.
pub(super) fn collect(sys: &System, frames: &[Captured]) -> Signals {
    let mut s = Signals::default();
    for (_, comp) in sys.world.iter() {
        match comp {
            Comp::SystemBus(n, b) => pci(&mut s, &format!("n{n}.pci.system"), b),
            Comp::LocalBus(n, b) => pci(&mut s, &format!("n{n}.pci.local"), b),
            _ => {}
        }
    }
    gmii(&mut s, sys, frames);
    sdram(&mut s, sys);
    levels(&mut s, sys);
    s
}

/// A level's wire and its (time ps, value) changes, the first (0, 0).
type LevelWire = (usize, Vec<(u64, u64)>);

/// The levels components record (FIFO fills: the engine's Send and Recv FIFOs, the
/// DP83820's RX FIFO), an integer wire each, 0 at the start. Of several values recorded
/// at one instant only the last is kept: the state at that instant, the same whether
/// the run stepped every clock or not.
fn levels(s: &mut Signals, sys: &System) {
    let k = &sys.kernel;
    let mut last: std::collections::BTreeMap<(u32, &'static str), LevelWire> =
        std::collections::BTreeMap::new();
    for l in k.trace().levels() {
        let entry = last.entry((l.component.0, l.name)).or_insert_with(|| {
            let wire = s.wire(k.component_name(l.component), l.name, Kind::Vector(32));
            (wire, vec![(0, 0)])
        });
        let t = l.time.as_ps();
        match entry.1.last_mut() {
            Some(prev) if prev.0 == t => prev.1 = l.value,
            _ => entry.1.push((t, l.value)),
        }
    }
    for (wire, values) in last.into_values() {
        for (t, v) in values {
            s.set(t, wire, Val::Num(v));
        }
    }
}

/// The SDRAM command bus of each card: `CMD` (the command issued in each cycle, `NOP`
/// between), `BA` (its bank) and `A` (the row an ACTIVATE opens), from the controller's
/// command log, at the SDRAM clock's edges.
fn sdram_commands(s: &mut Signals, sys: &System, n: usize, att: sim_kernel::ComponentId) {
    use nic_model::sdram::SdramCmd;
    let Some(Comp::Att(_, a)) = sys.world.get(att) else {
        return;
    };
    let Some(ctrl) = a.sdram_controller() else {
        return;
    };
    let d = sys.kernel.domain(sys.kernel.component_domain(att));
    let edge = |k: u64| d.phase().0 + k * d.period().0;
    let scope = format!("n{n}.card.sdram");
    let (cmd, ba, addr) = (
        s.wire(&scope, "CMD", Kind::Text),
        s.wire(&scope, "BA", Kind::Vector(2)),
        s.wire(&scope, "A", Kind::Vector(13)),
    );
    s.set(0, cmd, Val::Text("NOP"));
    let mut log: Vec<_> = ctrl.command_log().to_vec();
    log.sort_by_key(|r| r.cycle);
    for (i, r) in log.iter().enumerate() {
        let t = edge(r.cycle);
        let (name, bank, row) = match r.cmd {
            SdramCmd::Activate { bank, row } => ("ACTIVATE", Some(bank), Some(row)),
            SdramCmd::Read { bank } => ("READ", Some(bank), None),
            SdramCmd::Write { bank } => ("WRITE", Some(bank), None),
            SdramCmd::Precharge { bank } => ("PRECHARGE", Some(bank), None),
            SdramCmd::PrechargeAll => ("PRECHARGE_ALL", None, None),
            SdramCmd::Refresh => ("AUTO_REFRESH", None, None),
        };
        s.set(t, cmd, Val::Text(name));
        if let Some(b) = bank {
            s.set(t, ba, Val::Num(u64::from(b)));
        }
        if let Some(r) = row {
            s.set(t, addr, Val::Num(r));
        }
        // One command a cycle: NOP from the next edge unless the next command is there.
        if log.get(i + 1).is_none_or(|next| next.cycle > r.cycle + 1) {
            s.set(edge(r.cycle + 1), cmd, Val::Text("NOP"));
        }
    }
}

/// The ATT manager's table accesses, one string wire per card.
fn sdram(s: &mut Signals, sys: &System) {
    let k = &sys.kernel;
    for (n, id) in sys.nodes.clone().iter().enumerate() {
        sdram_commands(s, sys, n, id.att);
        let wire = s.wire(&format!("n{n}.card.sdram"), "access", Kind::Text);
        s.set(0, wire, Val::Text("idle"));
        let mut spans: Vec<_> = k
            .trace()
            .spans()
            .iter()
            .filter(|sp| sp.component == id.att)
            .collect();
        spans.sort_by_key(|sp| (sp.start, sp.end));
        for sp in spans {
            s.set(sp.start.as_ps(), wire, Val::Text(sp.stage));
            s.set(sp.end.as_ps(), wire, Val::Text("idle"));
        }
    }
}

/// The clock `k` starts at.
fn at(b: &PciBus, k: u64) -> u64 {
    b.edge(k).as_ps()
}

/// Data-phase clocks of a record: the first ones back to back, the last in its own clock.
fn data_clocks(r: &TenureRecord) -> Vec<u64> {
    match (r.first_data_clock, r.last_data_clock) {
        (Some(f), Some(l)) if r.data_phases > 0 => {
            let n = r.data_phases;
            let mut v: Vec<u64> = (0..n.saturating_sub(1)).map(|i| f + i).collect();
            v.push(if n == 1 { f } else { l });
            v
        }
        _ => Vec::new(),
    }
}

/// The PCI wires of one bus.
#[allow(clippy::too_many_lines)]
fn pci(s: &mut Signals, scope: &str, b: &PciBus) {
    let log = b.tenure_log();
    let width = log.first().map_or(4, |r| r.phase_bytes.clamp(4, 8));
    let bits = u32::try_from(width * 8).unwrap_or(32);
    let lanes = u32::try_from(width).unwrap_or(4);
    let clk = s.wire(scope, "CLK", Kind::Bit);
    let frame = s.wire(scope, "FRAME#", Kind::Bit);
    let irdy = s.wire(scope, "IRDY#", Kind::Bit);
    let trdy = s.wire(scope, "TRDY#", Kind::Bit);
    let devsel = s.wire(scope, "DEVSEL#", Kind::Bit);
    let stop = s.wire(scope, "STOP#", Kind::Bit);
    let ad = s.wire(scope, "AD", Kind::Vector(bits));
    let cbe = s.wire(scope, "C/BE#", Kind::Vector(lanes));
    let par = s.wire(scope, "PAR", Kind::Bit);
    let masters: Vec<(usize, usize)> = b
        .stats()
        .per_master
        .iter()
        .map(|m| {
            let name = m.name.replace(['.', '-'], "_");
            (
                s.wire(scope, &format!("REQ#_{name}"), Kind::Bit),
                s.wire(scope, &format!("GNT#_{name}"), Kind::Bit),
            )
        })
        .collect();
    // Idle bus: control lines pulled up, AD and C/BE# floating.
    for w in [frame, irdy, trdy, devsel, stop, par] {
        s.set(0, w, Val::Num(1));
    }
    s.set(0, ad, Val::Z);
    s.set(0, cbe, Val::Z);
    for &(req, gnt) in &masters {
        s.set(0, req, Val::Num(1));
        s.set(0, gnt, Val::Num(1));
    }
    let mask = if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let mut last_clock = 0;
    for r in log {
        let a = r.address_clock;
        let l = r.last_clock;
        last_clock = last_clock.max(l + 2);
        let dclk = data_clocks(r);
        let frame_end = match (r.end, r.last_data_clock) {
            (TenureEnd::Completed, Some(ld)) => ld,
            _ => l,
        }
        .max(a + 1);
        if let Some(&(req, gnt)) = masters.get(usize::from(r.master)) {
            let from = a.saturating_sub(1);
            s.set(at(b, from), req, Val::Num(0));
            s.set(at(b, from), gnt, Val::Num(0));
            s.set(at(b, frame_end), req, Val::Num(1));
            s.set(at(b, a + 1), gnt, Val::Num(1));
        }
        s.set(at(b, a), frame, Val::Num(0));
        s.set(at(b, frame_end), frame, Val::Num(1));
        s.set(at(b, a + 1), irdy, Val::Num(0));
        s.set(at(b, l + 1), irdy, Val::Num(1));
        if let Some(d) = r.devsel_clock {
            s.set(at(b, d.min(l)), devsel, Val::Num(0));
            s.set(at(b, l + 1), devsel, Val::Num(1));
        }
        if matches!(
            r.end,
            TenureEnd::Retry | TenureEnd::Disconnect | TenureEnd::TargetAbort
        ) {
            s.set(at(b, l), stop, Val::Num(0));
            s.set(at(b, l + 1), stop, Val::Num(1));
        }
        // Address phase: AD the address, C/BE# the command; PAR one clock later.
        let addr = r.addr & mask;
        let cmd = u64::from(r.command.code());
        s.set(at(b, a), ad, Val::Num(addr));
        s.set(at(b, a), cbe, Val::Num(cmd));
        s.set(at(b, a + 1), par, Val::Num(parity(addr, cmd)));
        let off = r.addr % width;
        for (j, &c) in dclk.iter().enumerate() {
            let mut word = 0u64;
            let mut enables = (1u64 << lanes) - 1; // active low: all off
            for lane in 0..width {
                let idx = (j as u64 * width + lane).checked_sub(off);
                if let Some(&byte) = idx.and_then(|i| r.data.get(usize::try_from(i).ok()?)) {
                    word |= u64::from(byte) << (8 * lane);
                    enables &= !(1u64 << lane);
                }
            }
            s.set(at(b, c), trdy, Val::Num(0));
            s.set(at(b, c + 1), trdy, Val::Num(1));
            s.set(at(b, c), ad, Val::Num(word));
            s.set(at(b, c), cbe, Val::Num(enables));
            s.set(at(b, c + 1), par, Val::Num(parity(word, enables)));
        }
        s.set(at(b, l + 1), ad, Val::Z);
        s.set(at(b, l + 1), cbe, Val::Z);
    }
    // The clock, over the whole run's transactions.
    let half = b.edge(1).as_ps().saturating_sub(b.edge(0).as_ps()) / 2;
    for k in 0..=last_clock {
        s.set(at(b, k), clk, Val::Num(1));
        s.set(at(b, k) + half, clk, Val::Num(0));
    }
}

/// Even parity of AD\[31:0\] and C/BE#\[3:0\].
fn parity(ad: u64, cbe: u64) -> u64 {
    u64::from(((ad & 0xFFFF_FFFF).count_ones() + (cbe & 0xF).count_ones()) % 2)
}

/// GMII TX of every node and RX of the far node, from the captured frames.
fn gmii(s: &mut Signals, sys: &System, frames: &[Captured]) {
    let k = &sys.kernel;
    let Some(period) = k
        .domains()
        .iter()
        .find(|d| d.name() == "gmii")
        .map(|d| d.period().as_ps())
    else {
        return;
    };
    // One PHY + cable + PHY delay, from the trace (the same for every frame).
    let delay = k
        .trace()
        .spans()
        .iter()
        .find(|sp| sp.stage == "phy+cable+phy")
        .map_or(0, |sp| sp.end.as_ps().saturating_sub(sp.start.as_ps()));
    let nodes = sys.nodes.len();
    let mut tx = Vec::new();
    for n in 0..nodes {
        let scope = format!("n{n}.gmii");
        let w = (
            s.wire(&scope, "TX_EN", Kind::Bit),
            s.wire(&scope, "TXD", Kind::Vector(8)),
            s.wire(&scope, "RX_DV", Kind::Bit),
            s.wire(&scope, "RXD", Kind::Vector(8)),
        );
        for x in [w.0, w.2] {
            s.set(0, x, Val::Num(0));
        }
        for x in [w.1, w.3] {
            s.set(0, x, Val::Num(0));
        }
        tx.push(w);
    }
    for f in frames {
        let src = f.frame.bytes().get(6..12).unwrap_or_default();
        let Some(n) = sys.macs.iter().position(|m| m.0 == src) else {
            continue;
        };
        let far = (n + 1) % nodes.max(1);
        let bytes: Vec<u8> = [0x55u8; 7]
            .into_iter()
            .chain([0xD5])
            .chain(f.frame.bytes().iter().copied())
            .collect();
        let start = f.at.as_ps();
        // The far RXD carries the same bytes, `delay` later.
        let rx_start = start + delay;
        for (en, d, t0) in [(tx[n].0, tx[n].1, start), (tx[far].2, tx[far].3, rx_start)] {
            s.set(t0, en, Val::Num(1));
            for (i, &byte) in bytes.iter().enumerate() {
                s.set(t0 + period * i as u64, d, Val::Num(u64::from(byte)));
            }
            let end = t0 + period * bytes.len() as u64;
            s.set(end, en, Val::Num(0));
            s.set(end, d, Val::Num(0));
        }
    }
}
