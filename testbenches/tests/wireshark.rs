//! The Wireshark dissector `tools/wireshark/hvia.lua` against real captures: `hvia
//! breakdown --size 64 --pcap` is decoded by tshark with the dissector, and every field
//! of every VIA frame must equal what `via_abi` reads from the same bytes; hand-made
//! frames (a go-back Nak, an error Ack, malformed headers) must get their expert info;
//! `--pcap-fcs` must give tshark the frames' FCS.
//!
//! Without tshark the dissector is not checked and a notice says so, so that `cargo test
//! --workspace` passes on a machine with only Rust; CI installs tshark and sets
//! `HVIA_REQUIRE_TSHARK=1`, under which a missing tshark fails the test.

use gige_mac::pcap::{parse, FcsMode, PcapRecord, PcapWriter};
use sim_kernel::Time;
use std::path::{Path, PathBuf};
use std::process::Command;
use via_abi::wire_header::{WireHeader, HEADER_LEN};

/// The fields the test reads, in the order of each tshark row.
const FIELDS: [&str; 15] = [
    "hvia.version",
    "hvia.op",
    "hvia.flags",
    "hvia.dst_vi",
    "hvia.src_vi",
    "hvia.seq",
    "hvia.msg_len",
    "hvia.frag_offset",
    "hvia.frag_len",
    "hvia.remote_va",
    "hvia.remote_handle",
    "hvia.immediate",
    "hvia.payload_len",
    "hvia.payload",
    "hvia.malformed",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

fn dissector() -> PathBuf {
    root().join("tools/wireshark/hvia.lua")
}

/// Whether tshark runs. Without it the dissector is not checked (a notice says so), so
/// that `cargo test --workspace` passes on a machine with only Rust; with
/// `HVIA_REQUIRE_TSHARK=1` (which `.ci/run` sets after installing it) its absence fails
/// the test.
fn have_tshark() -> bool {
    let found = Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("HVIA_REQUIRE_TSHARK").is_none_or(|v| v != "1"),
            "tshark is not installed but HVIA_REQUIRE_TSHARK=1: install it (Debian/Ubuntu: \
             apt-get install tshark)"
        );
        eprintln!(
            "tshark is not installed: the Wireshark dissector is not checked \
             (apt-get install tshark; HVIA_REQUIRE_TSHARK=1 makes this a failure)"
        );
    }
    found
}

/// Runs tshark with the dissector on `pcap`, printing `fields` per frame; one row of
/// tab-separated values per frame. `extra` goes before the field options.
fn tshark(pcap: &Path, extra: &[&str], fields: &[&str]) -> Vec<Vec<String>> {
    let script = format!("lua_script:{}", dissector().display());
    let mut cmd = Command::new("tshark");
    cmd.args(["-n", "-X", &script, "-r"])
        .arg(pcap)
        .args(extra)
        .args(["-T", "fields", "-E", "separator=/t", "-E", "occurrence=a"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("tshark runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "tshark failed: {err}");
    assert!(
        !err.contains("Lua: Error") && !err.contains("lua_script"),
        "dissector error: {err}"
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect()
}

/// A tshark number: decimal or `0x` hex.
fn num(s: &str) -> u64 {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    }
    .unwrap_or_else(|_| panic!("not a number: {s:?}"))
}

/// What via_abi reads from a frame, as the test's row of numbers (payload as hex).
fn expected(rec: &PcapRecord) -> (Vec<u64>, String) {
    let h = WireHeader::new_checked(&rec.data[14..]).expect("a complete VIA frame");
    let nums = vec![
        u64::from(h.version()),
        u64::from(h.op().raw()),
        u64::from(h.flags().bits()),
        u64::from(h.dst_vi()),
        u64::from(h.src_vi()),
        u64::from(h.seq()),
        u64::from(h.msg_len()),
        u64::from(h.frag_offset()),
        u64::from(h.frag_len()),
        h.remote_va(),
        u64::from(h.remote_handle().raw()),
        u64::from(h.immediate()),
        u64::from(h.frag_len()),
    ];
    let hex = h.payload().iter().map(|b| format!("{b:02x}")).collect();
    (nums, hex)
}

fn scratch(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name)
}

fn hvia(args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_hvia"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("hvia runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn tshark_decodes_every_field_of_a_breakdown_capture() {
    if !have_tshark() {
        return;
    }
    let pcap = scratch("wireshark-64.pcap");
    let p = pcap.to_str().expect("utf-8 path");
    hvia(&["breakdown", "--size", "64", "--pcap", p, "--format", "json"]);
    let records = parse(&std::fs::read(&pcap).expect("pcap")).expect("pcap file");
    let via: Vec<&PcapRecord> = records
        .iter()
        .filter(|r| r.data.get(12..14) == Some(&[0x88, 0xB5][..]))
        .collect();
    assert!(via.len() >= 6, "connections and ping-pongs: {}", via.len());
    let rows = tshark(&pcap, &[], &FIELDS);
    assert_eq!(rows.len(), records.len(), "one row per frame");
    let mut data_rows = 0;
    for (rec, row) in records.iter().zip(&rows) {
        if rec.data.get(12..14) != Some(&[0x88, 0xB5][..]) {
            assert!(row.iter().all(String::is_empty), "not VIA: {row:?}");
            continue;
        }
        let (nums, payload) = expected(rec);
        let got: Vec<u64> = row[..13].iter().map(|s| num(s)).collect();
        assert_eq!(got, nums, "{row:?}");
        assert_eq!(row[13].replace(':', ""), payload, "payload bytes");
        assert!(row[14].is_empty(), "well-formed: {row:?}");
        if nums[1] == 2 && nums[6] == 64 {
            data_rows += 1;
        }
    }
    assert!(data_rows >= 6, "64-byte RDMA writes decoded: {data_rows}");

    // The acceptance command's three fields, one row per VIA frame.
    let rows = tshark(&pcap, &[], &["hvia.op", "hvia.dst_vi", "hvia.msg_len"]);
    let decoded = rows.iter().filter(|r| !r[0].is_empty()).count();
    assert_eq!(decoded, via.len());
    // The display filter works on the field names.
    let rdma = tshark(&pcap, &["-Y", "hvia.op == 2"], &["hvia.msg_len"]);
    assert!(
        !rdma.is_empty() && rdma.iter().all(|r| r[0] == "64"),
        "{rdma:?}"
    );
}

/// A 60-byte frame (Ethernet + VIA header + payload, padded) from a header's 40 bytes.
fn frame(header: [u8; HEADER_LEN], payload: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x88, 0xB5];
    f.extend(header);
    f.extend(payload);
    f.resize(f.len().max(60), 0);
    f
}

fn header(op: u8, flags: u8, seq: u32, msg_len: u32, frag_len: u16, imm: u32) -> [u8; 40] {
    let mut h = [0u8; 40];
    h[0] = 1;
    h[1] = op;
    h[2] = flags;
    h[4..6].copy_from_slice(&3u16.to_be_bytes());
    h[6..8].copy_from_slice(&4u16.to_be_bytes());
    h[8..12].copy_from_slice(&seq.to_be_bytes());
    h[12..16].copy_from_slice(&msg_len.to_be_bytes());
    h[20..22].copy_from_slice(&frag_len.to_be_bytes());
    h[36..40].copy_from_slice(&imm.to_be_bytes());
    h
}

#[test]
fn control_frames_and_malformed_headers_get_expert_info() {
    if !have_tshark() {
        return;
    }
    let mut bad_version = header(2, 0x03, 1, 4, 4, 0);
    bad_version[0] = 2;
    let mut reserved = header(2, 0x03, 1, 4, 4, 0);
    reserved[3] = 1;
    let frames = [
        // 0: a go-back Nak: the receiver expects seq 41.
        frame(header(8, 0x03, 41, 0, 0, 0), &[]),
        // 1: an error Ack (RDMA protection error).
        frame(header(7, 0x03, 7, 0, 0, 0x80), &[]),
        // 2: a connect request: discriminator 0x1234, reliable delivery, MTU 1514.
        frame(
            header(3, 0x03, 0, 8, 8, 0),
            &[0, 0, 0x12, 0x34, 1, 0, 0x05, 0xEA],
        ),
        // 3: a VIA header cut short.
        frame(header(2, 0x03, 1, 4, 4, 0), &[])[..14 + 20].to_vec(),
        // 4: version 2.
        frame(bad_version, &[1, 2, 3, 4]),
        // 5: FIRST missing on the first fragment.
        frame(header(2, 0x02, 1, 4, 4, 0), &[1, 2, 3, 4]),
        // 6: an undefined operation.
        frame(header(9, 0x03, 1, 4, 4, 0), &[1, 2, 3, 4]),
        // 7: frag_len 100 in a 60-byte frame (6 bytes after the header).
        frame(header(2, 0x03, 1, 100, 100, 0), &[1, 2, 3, 4]),
        // 8: a reserved byte set.
        frame(reserved, &[1, 2, 3, 4]),
    ];
    let pcap = scratch("wireshark-handmade.pcap");
    let mut w = PcapWriter::new(Vec::new(), FcsMode::Keep).expect("header");
    for (i, f) in frames.iter().enumerate() {
        w.write_frame(Time(i as u64 * 1_000_000), f).expect("frame");
    }
    std::fs::write(&pcap, w.finish().expect("bytes")).expect("write pcap");
    // Written without an FCS, so read with the plain Ethernet link type.
    let mut bytes = std::fs::read(&pcap).expect("pcap");
    bytes[20..24].copy_from_slice(&1u32.to_le_bytes());
    std::fs::write(&pcap, bytes).expect("rewrite");

    let rows = tshark(
        &pcap,
        &[],
        &[
            "hvia.op",
            "hvia.nak.expected_seq",
            "hvia.ack.positive",
            "hvia.connect.discriminator",
            "hvia.connect.reliability",
            "hvia.connect.mtu",
            "hvia.malformed",
            "_ws.expert.message",
        ],
    );
    assert_eq!(rows.len(), frames.len());
    let expert = |i: usize| rows[i][7].clone();
    assert_eq!(rows[0][1], "41");
    assert!(expert(0).contains("resend from seq 41"), "{:?}", rows[0]);
    assert!(rows[0][6].is_empty(), "a Nak is not malformed");
    assert!(
        rows[1][2] == "0" || rows[1][2] == "False",
        "error Ack: {:?}",
        rows[1]
    );
    assert!(expert(1).contains("RDMA protection error"), "{:?}", rows[1]);
    assert_eq!(num(&rows[2][3]), 0x1234);
    assert_eq!((rows[2][4].as_str(), rows[2][5].as_str()), ("1", "1514"));
    for (i, text) in [
        (3, "20 of 40 header bytes"),
        (4, "version 2"),
        (5, "FIRST flag disagrees"),
        (6, "operation 9"),
        (7, "6 of 100 payload bytes"),
    ] {
        assert!(
            rows[i][6] == "1" || rows[i][6] == "True",
            "frame {i} malformed: {:?}",
            rows[i]
        );
        assert!(expert(i).contains(text), "frame {i}: {:?}", rows[i]);
    }
    assert!(
        expert(8).contains("Reserved field is not zero"),
        "{:?}",
        rows[8]
    );
    let malformed = tshark(&pcap, &["-Y", "hvia.malformed"], &["hvia.op"]);
    assert_eq!(malformed.len(), 5);
}

#[test]
fn pcap_fcs_keeps_the_fcs_for_wireshark() {
    if !have_tshark() {
        return;
    }
    let pcap = scratch("wireshark-fcs.pcap");
    let p = pcap.to_str().expect("utf-8 path");
    hvia(&["breakdown", "--size", "4", "--pcap", p, "--pcap-fcs"]);
    let records = parse(&std::fs::read(&pcap).expect("pcap")).expect("pcap file");
    let rows = tshark(
        &pcap,
        &["-o", "eth.check_fcs:TRUE"],
        &["eth.fcs", "eth.fcs.status", "hvia.op"],
    );
    assert_eq!(rows.len(), records.len());
    for (rec, row) in records.iter().zip(&rows) {
        let n = rec.data.len();
        // tshark prints the FCS bytes in wire order.
        let fcs = u32::from_be_bytes(rec.data[n - 4..].try_into().expect("4 bytes"));
        assert_eq!(num(&row[0]), u64::from(fcs), "{row:?}");
        assert_eq!(row[1], "1", "FCS good: {row:?}");
    }
}
