//! `--vcd` at signal level, read back with the `vcd` crate: both PCI buses of both nodes
//! have their signals; rebuilding the bus transactions from FRAME#, IRDY#, TRDY#, AD and
//! C/BE# clock by clock, the receiving node's memory writes include one per RDMA-write
//! frame whose data phases carry the frame's 64 payload bytes in order (the payload as
//! the pcap has it); GMII TXD carries the frames; the file is the same in the exact and
//! fast stepping modes; `--vcd-scope` keeps only what it names.

use std::collections::BTreeMap;
use std::io::BufReader;
use std::path::PathBuf;
use std::process::Command;
use vcd::{Command as Vc, IdCode, Value};

fn scratch(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name)
}

fn hvia(args: &[&str]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_hvia"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("hvia runs");
    out
}

fn ok(args: &[&str]) {
    let o = hvia(args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A vector's value (x and z read as 0), left-extended with zeros.
fn num(v: &[Value]) -> u64 {
    v.iter()
        .fold(0, |acc, b| (acc << 1) | u64::from(*b == Value::V1))
}

/// Every value change of the file: per id, (time, value bits).
struct Wave {
    header: vcd::Header,
    changes: BTreeMap<IdCode, Vec<(u64, Vec<Value>)>>,
}

fn read(path: &PathBuf) -> Wave {
    let mut p = vcd::Parser::new(BufReader::new(std::fs::File::open(path).expect("vcd")));
    let header = p.parse_header().expect("header");
    let mut changes: BTreeMap<IdCode, Vec<(u64, Vec<Value>)>> = BTreeMap::new();
    let mut now = 0;
    for c in p {
        match c.expect("command") {
            Vc::Timestamp(t) => now = t,
            Vc::ChangeScalar(id, v) => changes.entry(id).or_default().push((now, vec![v])),
            Vc::ChangeVector(id, v) => changes
                .entry(id)
                .or_default()
                .push((now, v.iter().collect())),
            _ => {}
        }
    }
    Wave { header, changes }
}

impl Wave {
    fn id(&self, path: &[&str]) -> Option<IdCode> {
        self.header.find_var(path).map(|v| v.code)
    }

    /// The value of `id` at `t` (after the changes at `t`).
    fn at(&self, id: IdCode, t: u64) -> Vec<Value> {
        let list = &self.changes[&id];
        let i = list.partition_point(|c| c.0 <= t);
        i.checked_sub(1)
            .map_or(vec![Value::X], |i| list[i].1.clone())
    }
}

/// The memory-write transactions of one bus, each as its data bytes, from the signals
/// sampled at every rising CLK edge.
fn writes(w: &Wave, scope: &[&str]) -> Vec<Vec<u8>> {
    let id = |n: &str| {
        let mut p = vec!["hvia"];
        p.extend(scope);
        p.push(n);
        w.id(&p).unwrap_or_else(|| panic!("{p:?} in the file"))
    };
    let (clk, frame, irdy, trdy, ad, cbe) = (
        id("CLK"),
        id("FRAME#"),
        id("IRDY#"),
        id("TRDY#"),
        id("AD"),
        id("C/BE#"),
    );
    let mut out = Vec::new();
    let mut cur: Option<(u64, Vec<u8>)> = None;
    let mut prev_frame = 1;
    for &(t, ref v) in &w.changes[&clk] {
        if num(v) != 1 {
            continue;
        }
        let f = num(&w.at(frame, t));
        if f == 0 && prev_frame == 1 {
            // An address phase: C/BE# holds the command.
            if let Some((0b0111, data)) = cur.take() {
                out.push(data);
            }
            cur = Some((num(&w.at(cbe, t)), Vec::new()));
        } else if num(&w.at(irdy, t)) == 0 && num(&w.at(trdy, t)) == 0 {
            if let Some((_, data)) = cur.as_mut() {
                let word = num(&w.at(ad, t));
                let enables = num(&w.at(cbe, t));
                for lane in 0..4 {
                    if enables >> lane & 1 == 0 {
                        data.push((word >> (8 * lane)) as u8);
                    }
                }
            }
        }
        prev_frame = f;
    }
    if let Some((0b0111, data)) = cur {
        out.push(data);
    }
    out
}

#[test]
fn a_payload_dma_write_carries_the_bytes_in_order() {
    let (wave, pcap) = (scratch("sig-64.vcd"), scratch("sig-64.pcap"));
    ok(&[
        "breakdown",
        "--size",
        "64",
        "--vcd",
        wave.to_str().unwrap(),
        "--pcap",
        pcap.to_str().unwrap(),
    ]);
    let w = read(&wave);
    // The SDRAM command bus of each card: the translations' table reads open a row and
    // read bursts; NOP between commands.
    for n in ["n0", "n1"] {
        let id = w
            .id(&["hvia", n, "card", "sdram", "CMD"])
            .expect("SDRAM CMD wire");
        let mut p = vcd::Parser::new(BufReader::new(std::fs::File::open(&wave).unwrap()));
        p.parse_header().unwrap();
        let cmds: Vec<String> = p
            .filter_map(|c| match c.unwrap() {
                Vc::ChangeString(i, s) if i == id => Some(s),
                _ => None,
            })
            .collect();
        for want in ["ACTIVATE", "READ", "NOP"] {
            assert!(cmds.iter().any(|c| c == want), "{n}: {want} in {cmds:?}");
        }
        assert!(w.id(&["hvia", n, "card", "sdram", "BA"]).is_some());
    }
    // The FIFO fills: integer wires that rise with the message and drain back to 0.
    for (path, peak) in [
        (["hvia", "n0", "card", "engine", "send_fifo"], 64),
        (["hvia", "n1", "card", "engine", "recv_fifo"], 64),
        (["hvia", "n1", "dp83820", "mac", "rx_fifo"], 64),
    ] {
        let id = w.id(&path).unwrap_or_else(|| panic!("{path:?} missing"));
        let values: Vec<u64> = w.changes[&id].iter().map(|(_, v)| num(v)).collect();
        assert!(values.iter().any(|&v| v >= peak), "{path:?}: {values:?}");
        assert_eq!(values.last(), Some(&0), "{path:?} drains: {values:?}");
    }
    for n in ["n0", "n1"] {
        for bus in ["system", "local"] {
            for sig in [
                "CLK", "FRAME#", "IRDY#", "TRDY#", "DEVSEL#", "STOP#", "AD", "C/BE#", "PAR",
            ] {
                assert!(
                    w.id(&["hvia", n, "pci", bus, sig]).is_some(),
                    "{n}.pci.{bus}.{sig}"
                );
            }
        }
        for sig in ["TX_EN", "TXD", "RX_DV", "RXD"] {
            assert!(w.id(&["hvia", n, "gmii", sig]).is_some(), "{n}.gmii.{sig}");
        }
    }
    assert!(w
        .id(&["hvia", "n1", "pci", "system", "REQ#_card_dma"])
        .is_some());
    // The card SDRAM's table accesses.
    let sdram = w
        .id(&["hvia", "n1", "card", "sdram", "access"])
        .expect("sdram wire");
    let text = std::fs::read_to_string(&wave).expect("vcd");
    let code = sdram.to_string();
    assert!(
        text.contains(&format!("satt_L1_read {code}\n")),
        "an L1 read on n1's SDRAM"
    );
    assert!(w
        .id(&["hvia", "n0", "pci", "local", "GNT#_dp83820"])
        .is_some());
    // The payloads node 0 sent to node 1 in RDMA-write frames (after 54 header bytes).
    let frames = gige_mac::pcap::parse(&std::fs::read(&pcap).expect("pcap")).expect("pcap");
    let n1 = [0x02, 0x48, 0x56, 0x49, 0x41, 0x02];
    let payloads: Vec<Vec<u8>> = frames
        .iter()
        .filter(|f| f.data[..6] == n1 && f.data[12..14] == [0x88, 0xB5] && f.data[15] == 2)
        .map(|f| f.data[54..54 + 64].to_vec())
        .collect();
    assert_eq!(
        payloads.len(),
        3,
        "two warm-up round trips and the measured one"
    );
    let written = writes(&w, &["n1", "pci", "system"]);
    for p in &payloads {
        assert!(
            written.iter().any(|d| d == p),
            "a write on n1's system bus carries {p:02x?}; writes: {written:02x?}"
        );
    }
    // The frames' bytes are on node 0's TXD while TX_EN is on.
    let (en, txd) = (
        w.id(&["hvia", "n0", "gmii", "TX_EN"]).unwrap(),
        w.id(&["hvia", "n0", "gmii", "TXD"]).unwrap(),
    );
    let starts: Vec<u64> = w.changes[&en]
        .iter()
        .filter(|c| num(&c.1) == 1)
        .map(|c| c.0)
        .collect();
    assert!(!starts.is_empty());
    assert_eq!(num(&w.at(txd, starts[0])), 0x55, "preamble");
}

#[test]
fn the_waveform_is_the_same_in_both_stepping_modes_and_scopes_filter() {
    let (fast, exact) = (scratch("sig-fast.vcd"), scratch("sig-exact.vcd"));
    ok(&["breakdown", "--size", "64", "--vcd", fast.to_str().unwrap()]);
    ok(&[
        "breakdown",
        "--size",
        "64",
        "--set",
        "sim.stepping=exact",
        "--vcd",
        exact.to_str().unwrap(),
    ]);
    assert!(
        std::fs::read(&fast).unwrap() == std::fs::read(&exact).unwrap(),
        "the exact and fast modes give the same file"
    );
    let part = scratch("sig-part.vcd");
    ok(&[
        "breakdown",
        "--vcd",
        part.to_str().unwrap(),
        "--vcd-scope",
        "n1.pci.system,n0.gmii",
    ]);
    let w = read(&part);
    assert!(w.id(&["hvia", "n1", "pci", "system", "AD"]).is_some());
    assert!(w.id(&["hvia", "n0", "gmii", "TXD"]).is_some());
    assert!(w.id(&["hvia", "n0", "pci", "system", "AD"]).is_none());
    assert!(w.id(&["hvia", "n1", "card", "engine", "tx"]).is_none());
    for bad in ["n7.pci", "n0.pcix", ""] {
        let o = hvia(&[
            "breakdown",
            "--vcd",
            part.to_str().unwrap(),
            "--vcd-scope",
            bad,
        ]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(String::from_utf8_lossy(&o.stderr).contains("--vcd-scope"));
    }
    let o = hvia(&["breakdown", "--vcd-scope", "n0"]);
    assert_eq!(o.status.code(), Some(2), "--vcd-scope needs --vcd");
}
