//! `hvia layout descriptor` and `hvia layout att` as users and scripts see them: the bytes
//! printed are the bytes in host memory / card SDRAM (checked against bytes written by
//! hand from the layout tables), encode -> decode round trips, the JSON keys of the CLI
//! contract, and exit status 2 naming the option for every kind of malformed input.

use serde_json::Value;
use std::process::{Command, Output};

fn hvia(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hvia"))
        .args(args)
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1")
        .output()
        .expect("hvia runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("utf-8")
}

/// Runs `args`, expects success, returns stdout.
fn ok(args: &[&str]) -> String {
    let o = hvia(args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o.stderr));
    text(&o.stdout)
}

/// Runs `args` with `--format json`, expects success, returns the parsed output.
/// The JSON `args` print, without the `run` metadata (its start instant differs from run
/// to run).
fn json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["--format", "json"]);
    let mut v: Value = serde_json::from_str(&ok(&all)).expect("valid JSON");
    if let Some(o) = v.as_object_mut() {
        o.remove("run");
    }
    v
}

/// Runs `args`, expects exit status 2 without a panic and nothing on stdout; returns stderr.
fn bad(args: &[&str]) -> String {
    let o = hvia(args);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(o.stdout.is_empty(), "{args:?} printed to stdout");
    err
}

/// Keys of a JSON object.
fn keys(v: &Value) -> Vec<&str> {
    v.as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect()
}

/// A 64-byte RDMA write descriptor written by hand from the VIA 1.0 tables of
/// hardware.md (little-endian): control segment, address segment, one data segment.
const RDMA_WRITE_HEX: &str = "0x\
    40 00 00 10 00 00 00 00 \
    02 00 10 00 \
    02 00 \
    0d 00 \
    00 00 00 00 \
    be ba fe ca \
    dc 05 00 00 \
    01 00 02 00 \
    00 20 00 00 ff 7f 00 00 \
    05 00 30 00 \
    00 00 00 00 \
    00 a1 04 08 00 00 00 00 \
    01 00 10 00 \
    dc 05 00 00";
// Field by field:
//   0..8    next VA          0x0000_0000_1000_0040
//   8..12   next handle      0x0010_0002 (L1 index 2, generation 1)
//   12..14  segment count    2 (address + data)
//   14..16  control          0x000d = RDMA write (1) | immediate (0x4) | queue fence (0x8)
//   16..20  reserved         0
//   20..24  immediate data   0xcafe_babe
//   24..28  total length     1500
//   28..32  status           0x0002_0001 = done, completed op 2 (RDMA write)
//   32..40  remote VA        0x0000_7fff_0000_2000
//   40..44  remote handle    0x0030_0005
//   44..48  reserved         0
//   48..56  local VA         0x0804_a100
//   56..60  local handle     0x0010_0001
//   60..64  segment length   1500

#[test]
fn hand_written_rdma_write_decodes_to_its_fields() {
    let v = json(&["layout", "descriptor", "--decode", RDMA_WRITE_HEX]);
    let f = &v["fields"];
    assert_eq!(f["next_va"], "0x0000000010000040");
    assert_eq!(f["next_handle"], "0x00100002");
    assert_eq!(f["seg_count"], 2);
    assert_eq!(f["control"], "0x000d");
    assert_eq!(f["immediate"], "0xcafebabe");
    assert_eq!(f["length"], 1500);
    assert_eq!(f["status"], "0x00020001");
    let seg = &f["segments"];
    assert_eq!(seg.as_array().unwrap().len(), 2);
    assert_eq!(seg[0]["kind"], "address");
    assert_eq!(seg[0]["remote_va"], "0x00007fff00002000");
    assert_eq!(seg[0]["remote_handle"], "0x00300005");
    assert_eq!(
        seg[0]["ranges"]["remote_handle"],
        serde_json::json!([40, 44])
    );
    assert_eq!(seg[1]["kind"], "data");
    assert_eq!(seg[1]["local_va"], "0x000000000804a100");
    assert_eq!(seg[1]["local_handle"], "0x00100001");
    assert_eq!(seg[1]["length"], 1500);
    assert_eq!(seg[1]["ranges"]["length"], serde_json::json!([60, 64]));
    assert_eq!(v["op"], "rdma-write");
    assert_eq!(v["size_bytes"], 64);
    assert_eq!(v["validation"]["format_error"], false);
    assert_eq!(v["validation"]["error_status"], "0x00000000");
    // The hex printed is the input, byte for byte.
    let digits: String = RDMA_WRITE_HEX[2..].split_whitespace().collect();
    assert_eq!(v["hex"], digits);

    let table = ok(&["layout", "descriptor", "--decode", RDMA_WRITE_HEX]);
    assert!(
        table.contains("control                    14..16  0x000d              0d 00                    rdma-write, immediate, queue fence\n"),
        "{table}"
    );
    assert!(
        table.contains(
            "status                     28..32  0x00020001          01 00 02 00              done, op rdma-write\n"
        ),
        "{table}"
    );
    assert!(table.contains("format: ok on the send queue"), "{table}");
}

#[test]
fn encoded_descriptors_decode_to_the_same_fields() {
    let cases: &[&[&str]] = &[
        &[],
        &[
            "--op",
            "rdma-write",
            "--next-va",
            "0x1000_0040",
            "--next-handle",
            "0x00100002",
            "--immediate",
            "0xcafebabe",
            "--fence",
            "--status",
            "0x20001",
            "--remote-va",
            "0x7fff00002000",
            "--remote-handle",
            "0x00300005",
            "--segment",
            "0x0804a100:0x00100001:1500",
        ],
        &[
            "--op",
            "send",
            "--segment",
            "0x1000:0x100001:10",
            "--segment",
            "4096:1048577:20",
            "--length",
            "7",
        ],
        &[
            "--op",
            "rdma-read",
            "--segment",
            "1:2:3",
            "--segment",
            "4:5:6",
        ],
        &["--control", "0x8013", "--immediate", "9"],
    ];
    for extra in cases {
        let mut args = vec!["layout", "descriptor"];
        args.extend_from_slice(extra);
        let encoded = json(&args);
        let hex = encoded["hex"].as_str().unwrap().to_owned();
        assert_eq!(
            hex.len(),
            2 * encoded["size_bytes"].as_u64().unwrap() as usize
        );
        let decoded = json(&["layout", "descriptor", "--decode", &hex]);
        assert_eq!(decoded, encoded, "{extra:?}");
        // CSV and table carry the same hex.
        let mut csv_args = args.clone();
        csv_args.extend(["--format", "csv"]);
        let csv = ok(&csv_args);
        let joined: String = csv
            .lines()
            .skip(1)
            .map(|l| l.rsplit(',').next().unwrap())
            .collect();
        assert_eq!(joined, hex, "{extra:?}: {csv}");
        assert!(ok(&args).contains(&format!("hex: {hex}\n")));
    }
}

#[test]
fn encode_defaults_and_options() {
    // Default: RDMA write, one 4-byte data segment, total length = sum of segments.
    let v = json(&["layout", "descriptor"]);
    assert_eq!(v["fields"]["control"], "0x0001");
    assert_eq!(v["fields"]["seg_count"], 2);
    assert_eq!(v["fields"]["length"], 4);
    let v = json(&[
        "layout",
        "descriptor",
        "--op",
        "send",
        "--segment",
        "0:0:100",
        "--segment",
        "0:0:0x20",
    ]);
    assert_eq!(v["fields"]["length"], 132);
    assert_eq!(v["fields"]["seg_count"], 2);
    assert_eq!(v["fields"]["segments"][0]["kind"], "data");
    assert_eq!(v["size_bytes"], 64);
    // --immediate sets the immediate bit; --control replaces the whole word.
    let v = json(&["layout", "descriptor", "--immediate", "1"]);
    assert_eq!(v["fields"]["control"], "0x0005");
    let v = json(&[
        "layout",
        "descriptor",
        "--control",
        "0x2",
        "--immediate",
        "1",
    ]);
    assert_eq!(v["fields"]["control"], "0x0002");
    assert_eq!(v["op"], "rdma-read");
}

#[test]
fn malformed_descriptors_decode_with_a_format_error() {
    // Reserved control bit 15 set in the hand-written descriptor.
    let hex = RDMA_WRITE_HEX.replacen("0d 00", "0d 80", 1);
    let v = json(&["layout", "descriptor", "--decode", &hex]);
    assert_eq!(v["fields"]["control"], "0x800d");
    assert_eq!(v["validation"]["format_error"], true);
    assert_eq!(v["validation"]["error_status"], "0x00000002");
    assert_eq!(
        v["validation"]["faults"][0],
        "reserved control bits set: 0x8000"
    );
    let table = ok(&["layout", "descriptor", "--decode", &hex]);
    assert!(
        table.contains(
            "format: ERROR on the send queue, completes with status 0x00000002 (format error)"
        ),
        "{table}"
    );
    // Total length inconsistent with the data segments.
    let v = json(&["layout", "descriptor", "--length", "5"]);
    assert_eq!(v["validation"]["format_error"], true);
    assert!(v["validation"]["faults"][0]
        .as_str()
        .unwrap()
        .contains("total length 5 != sum of data segment lengths 4"));
    // An RDMA write on the receive queue.
    let v = json(&["layout", "descriptor", "--queue", "receive"]);
    assert_eq!(v["validation"]["queue"], "receive");
    assert_eq!(v["validation"]["format_error"], true);
    // Trailing bytes are ignored and counted.
    let v = json(&[
        "layout",
        "descriptor",
        "--decode",
        &format!("{RDMA_WRITE_HEX} ff ff"),
    ]);
    assert_eq!(v["trailing_bytes"], 2);
    assert_eq!(v["size_bytes"], 64);
}

#[test]
fn descriptor_json_has_the_contract_keys() {
    let raw = ok(&["layout", "descriptor", "--format", "json"]);
    assert!(raw.starts_with("{\n  \"hex\": \""), "{raw}");
    let v = json(&["layout", "descriptor"]);
    let top = keys(&v);
    assert!(top.contains(&"hex") && top.contains(&"fields"), "{top:?}");
    let fields = keys(&v["fields"]);
    for key in [
        "next_va",
        "next_handle",
        "seg_count",
        "control",
        "immediate",
        "length",
        "status",
        "segments",
    ] {
        assert!(fields.contains(&key), "{key}: {fields:?}");
    }
    assert!(v["fields"]["seg_count"].is_u64() && v["fields"]["length"].is_u64());
    for key in ["next_va", "next_handle", "control", "immediate", "status"] {
        assert!(
            v["fields"][key].as_str().unwrap().starts_with("0x"),
            "{key}"
        );
    }
    assert_eq!(v["ranges"]["status"], serde_json::json!([28, 32]));
}

#[test]
fn descriptor_csv_is_one_row_per_field() {
    let csv = ok(&[
        "layout",
        "descriptor",
        "--decode",
        RDMA_WRITE_HEX,
        "--format",
        "csv",
    ]);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "field,range,value,hex");
    assert_eq!(lines.len(), 1 + 8 + 3 + 3, "{csv}");
    assert!(lines.contains(&"control,14..16,0x000d,0d00"), "{csv}");
    assert!(lines.contains(&"length,24..28,1500,dc050000"), "{csv}");
    assert!(
        lines.contains(&"segments[1].local_va,48..56,0x000000000804a100,00a1040800000000"),
        "{csv}"
    );
}

#[test]
fn bad_descriptor_input_exits_2_naming_the_option() {
    let err = bad(&["layout", "descriptor", "--decode", "0x00zz"]);
    assert!(err.contains("--decode") && err.contains("`z`"), "{err}");
    assert!(err.contains("not a hex digit"), "{err}");
    let err = bad(&["layout", "descriptor", "--decode", "000"]);
    assert!(
        err.contains("--decode: odd number of hex digits (3)"),
        "{err}"
    );
    let err = bad(&["layout", "descriptor", "--decode", "00 00 00 00"]);
    assert!(
        err.contains("--decode: 4 bytes is too short for a VI descriptor"),
        "{err}"
    );
    let err = bad(&[
        "layout",
        "descriptor",
        "--decode",
        &RDMA_WRITE_HEX[..RDMA_WRITE_HEX.len() - 12],
    ]);
    assert!(
        err.contains("--decode: 60 bytes is too short: its segment count 2 needs 64 bytes"),
        "{err}"
    );
    let err = bad(&["layout", "descriptor", "--decode", ""]);
    assert!(err.contains("--decode: no hex digits"), "{err}");
    let err = bad(&["layout", "descriptor", "--op", "send", "--remote-va", "1"]);
    assert!(err.contains("--remote-va"), "{err}");
    let err = bad(&["layout", "descriptor", "--segment", "1:2"]);
    assert!(
        err.contains("--segment") && err.contains("VA:HANDLE:LEN"),
        "{err}"
    );
    let err = bad(&["layout", "descriptor", "--segment", "1:2:0x1_0000_0000"]);
    assert!(err.contains("--segment") && err.contains("LEN"), "{err}");
    let err = bad(&["layout", "descriptor", "--next-va", "12abc"]);
    assert!(err.contains("--next-va"), "{err}");
    let err = bad(&["layout", "descriptor", "--control", "0x10000"]);
    assert!(
        err.contains("--control") && err.contains("at most 0xffff"),
        "{err}"
    );
    let err = bad(&[
        "layout",
        "descriptor",
        "--segment",
        "0:0:0xffffffff",
        "--segment",
        "0:0:1",
    ]);
    assert!(
        err.contains("--segment") && err.contains("--length"),
        "{err}"
    );
    let err = bad(&["layout", "descriptor", "--decode", "00", "--op", "send"]);
    assert!(err.contains("--decode") && err.contains("--op"), "{err}");
    bad(&["layout", "descriptor", "--op", "write"]);
    bad(&["layout", "descriptor", "--control", "1", "--op", "send"]);
    bad(&["layout"]);
    bad(&["layout", "descriptor", "--set", "no.such.key=1"]);
}

/// The L1 entry of a 3-page region, written by hand from the documented L1 layout
/// (via-abi `att`): 6000 bytes at VA 0x4000_0F00, so 0x100 bytes in the first page,
/// one whole page, and 6000 - 256 - 4096 = 1648 = 0x670 bytes in the last page.
const L1_HEX: &str = concat!(
    "000f004000000000", // 0..8    start VA 0x4000_0F00
    "00101800",         // 8..12   L2 pointer 0x0018_1000 (the default)
    "0300f066",         // 12..16  page word: 3 pages (19:0) | (0x670 - 1) << 20 = 0x66F0_0003
    "0001",             // 16..18  first page size 0x100
    "0700",             // 18..20  attributes: valid | RDMA write | RDMA read
    "2200",             // 20..22  protection tag 0x22
    "0500",             // 22..24  generation 5
);
/// Its L2 entries: the region's physical start, then two page bases.
const L2_HEX: &str = concat!("003f1200", "00604500", "00907800");

const ATT_ARGS: &[&str] = &[
    "layout",
    "att",
    "--va",
    "0x4000_0F00",
    "--len",
    "6000",
    "--pages",
    "0x0012_3F00,0x0045_6000,0x0078_9000",
    "--rdma-write",
    "--rdma-read",
    "--ptag",
    "0x22",
    "--generation",
    "5",
];

#[test]
fn att_bytes_of_a_three_page_region_match_the_layout() {
    let v = json(ATT_ARGS);
    assert_eq!(v["l1_hex"], L1_HEX);
    assert_eq!(v["l2_hex"], L2_HEX);
    let l1 = &v["l1"];
    assert_eq!(l1["start_va"], "0x0000000040000f00");
    assert_eq!(l1["page_count"], 3);
    assert_eq!(l1["first_page_size"], 256);
    assert_eq!(l1["attributes"], "0x0007");
    assert_eq!(l1["l2_pointer"], "0x00181000");
    assert_eq!(
        v["l2"],
        serde_json::json!(["0x00123f00", "0x00456000", "0x00789000"])
    );
    assert_eq!(v["region_len"], 6000);
    // Every key of the contract is there.
    for key in ["l1", "l2", "l1_hex", "l2_hex"] {
        assert!(keys(&v).contains(&key), "{key}");
    }
    for key in [
        "start_va",
        "page_count",
        "first_page_size",
        "attributes",
        "l2_pointer",
    ] {
        assert!(keys(l1).contains(&key), "{key}");
    }

    // CSV: each L1 field's hex is its slice of the 24 bytes.
    let mut csv_args = ATT_ARGS.to_vec();
    csv_args.extend(["--format", "csv"]);
    let csv = ok(&csv_args);
    assert!(csv.starts_with("field,range,value,hex\n"), "{csv}");
    for line in csv.lines().skip(1) {
        let cells: Vec<&str> = line.split(',').collect();
        let (name, range, hex) = (cells[0], cells[1], cells[3]);
        let (start, end) = range.split_once("..").unwrap();
        let (start, end): (usize, usize) = (start.parse().unwrap(), end.parse().unwrap());
        let source = if name.starts_with("l2[") {
            L2_HEX
        } else {
            L1_HEX
        };
        assert_eq!(hex, &source[2 * start..2 * end], "{line}");
    }
    assert!(csv.contains("\npage_count,12..16,3,0300f066\n"), "{csv}");
    assert!(
        csv.contains("\nl2[2].phys_addr,8..12,0x00789000,00907800\n"),
        "{csv}"
    );

    let table = ok(ATT_ARGS);
    assert!(
        table.contains("first_page_size  16..18  256                 00 01"),
        "{table}"
    );
    assert!(table.contains(&format!("l1_hex: {L1_HEX}\n")), "{table}");
    assert!(table.contains(&format!("l2_hex: {L2_HEX}\n")), "{table}");
}

#[test]
fn att_defaults_and_l2_pointer() {
    let v = json(&[
        "layout", "att", "--va", "0x1000", "--len", "4096", "--pages", "0x9000",
    ]);
    assert_eq!(v["l1"]["attributes"], "0x0001", "valid only");
    assert_eq!(v["l1"]["page_count"], 1);
    assert_eq!(v["l1"]["first_page_size"], 4096);
    assert_eq!(v["l1"]["generation"], 1);
    assert_eq!(v["l1"]["ptag"], "0x0001");
    let v = json(&[
        "layout",
        "att",
        "--va",
        "1",
        "--len",
        "1",
        "--pages",
        "0x9001",
        "--l2-pointer",
        "0x40",
    ]);
    assert_eq!(v["l1"]["l2_pointer"], "0x00000040");
    assert_eq!(v["l1"]["first_page_size"], 4095);
}

#[test]
fn bad_att_input_exits_2_naming_the_option() {
    let att = |extra: &[&str]| {
        let mut args = vec!["layout", "att"];
        args.extend_from_slice(extra);
        bad(&args)
    };
    let err = att(&["--va", "0x1000", "--len", "0", "--pages", "0x1000"]);
    assert!(
        err.contains("--len: a region must be at least 1 byte long"),
        "{err}"
    );
    let err = att(&[
        "--va",
        "0x40000f00",
        "--len",
        "6000",
        "--pages",
        "0x123f00,0x456000",
    ]);
    assert!(
        err.contains(
            "--pages: 2 addresses given, but the region --va 0x40000f00 --len 6000 touches 3 pages"
        ),
        "{err}"
    );
    let err = att(&["--va", "0x1000", "--len", "10", "--pages", "0x1000,0x2000"]);
    assert!(
        err.contains("--pages: 2 addresses given") && err.contains("1 pages"),
        "{err}"
    );
    let err = att(&["--va", "0x40000f00", "--len", "10", "--pages", "0x123000"]);
    assert!(
        err.contains("--pages: the first address 0x123000 has offset 0x0"),
        "{err}"
    );
    let err = att(&[
        "--va",
        "0x40000f00",
        "--len",
        "6000",
        "--pages",
        "0x123f00,0x456010,0x789000",
    ]);
    assert!(
        err.contains("--pages: address 2 (0x456010) is not the base of a 4 KB page"),
        "{err}"
    );
    assert!(err.contains("0x123f00,0x456010,0x789000"), "excerpt: {err}");
    let err = att(&["--va", "0", "--len", "1", "--pages", "0x100000000"]);
    assert!(err.contains("--pages") && err.contains("32"), "{err}");
    let err = att(&[
        "--va",
        "0",
        "--len",
        "1",
        "--pages",
        "0",
        "--generation",
        "0",
    ]);
    assert!(err.contains("--generation"), "{err}");
    let err = att(&[
        "--va",
        "0",
        "--len",
        "1",
        "--pages",
        "0",
        "--generation",
        "4096",
    ]);
    assert!(err.contains("--generation"), "{err}");
    let err = att(&[
        "--va",
        "0",
        "--len",
        "1",
        "--pages",
        "0",
        "--l2-pointer",
        "2",
    ]);
    assert!(
        err.contains("--l2-pointer: must be 4-byte aligned"),
        "{err}"
    );
    let err = att(&[
        "--va",
        "0",
        "--len",
        "1",
        "--pages",
        "0",
        "--l2-pointer",
        "0x4000000",
    ]);
    assert!(
        err.contains("--l2-pointer") && err.contains("card.sdram_mb"),
        "{err}"
    );
    let err = att(&["--va", "0xffffffffffffffff", "--len", "2", "--pages", "0"]);
    assert!(err.contains("--len") && err.contains("64-bit"), "{err}");
    let err = att(&["--va", "0", "--len", "0x1_0000_0000_0000", "--pages", "0"]);
    assert!(err.contains("--len") && err.contains("pages"), "{err}");
    let err = att(&["--va", "0x1g", "--len", "1", "--pages", "0"]);
    assert!(err.contains("--va"), "{err}");
    let err = att(&["--va", "0", "--len", "1", "--pages", "0,,1"]);
    assert!(err.contains("--pages"), "{err}");
    let err = att(&["--va", "0", "--len", "1"]);
    assert!(err.contains("--pages"), "{err}");
}
