//! Unit tests of the configuration: the published preset, `--set`, validation, located
//! errors, the shown TOML round trip, and the source comment on every preset value.

use super::*;

fn published() -> SystemConfig {
    SystemConfig::from_preset(DEFAULT_PRESET).expect("the default preset is valid")
}

fn set(cfg: &SystemConfig, input: &str) -> Result<SystemConfig, ConfigError> {
    let mut c = cfg.clone();
    c.apply_set(input)?;
    Ok(c)
}

#[test]
fn the_published_preset_has_the_paper_values() {
    let c = published();
    assert_eq!(c.topology.nodes, 2);
    assert_eq!(c.host.cpu_clock_mhz, 800.0);
    assert_eq!(c.host.memory_mb, 256);
    assert_eq!(c.pci.system.width_bits, 32);
    assert_eq!(c.pci.system.clock_mhz, 33.0);
    assert_eq!(c.pci.system.burst_bytes, 512);
    assert_eq!(c.pci.local.burst_bytes, 512);
    assert_eq!(c.card.sdram_mb, 64);
    assert_eq!(c.card.att_location, AttLocation::Card);
    assert_eq!((c.mac.tx_fifo_bytes, c.mac.rx_fifo_bytes), (8192, 32768));
    assert_eq!(c.wire.mtu_bytes, 1514);
    assert_eq!(c.wire.min_ifg_bytes, 12);
}

#[test]
fn every_preset_loads_and_validates() {
    for p in PRESETS {
        SystemConfig::from_preset(p.name).unwrap_or_else(|e| panic!("{}: {e}", p.name));
    }
}

#[test]
fn clocks_become_whole_picosecond_periods() {
    let periods: Vec<(&str, u64)> = published()
        .clocks()
        .iter()
        .map(|c| (c.domain, c.period_ps().unwrap()))
        .collect();
    assert_eq!(
        periods,
        [
            ("host.cpu", 1250),
            ("pci.system", 30_303),
            ("pci.local", 30_303),
            ("card.core", 30_303),
            ("card.sdram", 10_000),
            ("wire.gmii", 8000),
        ]
    );
    let d = published().clocks()[1].clock_domain().unwrap();
    assert_eq!((d.name(), d.period().0), ("pci.system", 30_303));
}

#[test]
fn shown_toml_names_periods_and_round_trips() {
    for sets in [
        &[][..],
        &[
            "pci.system.clock_mhz=66",
            "card.att_location=host",
            "sim.seed=42",
        ][..],
        &[
            "pci.local.width_bits=64",
            "wire.cable_m=0.5",
            "sim.trace=true",
        ][..],
        &[
            "pci.system.park=none",
            "pci.bridge.read_mode=wait-states",
            "card.pci_target.devsel=slow",
            "mac.dma.write_invalidate=true",
            "card.local_target.read_latency_core_clocks=0",
        ][..],
    ] {
        let cfg = SystemConfig::load(&ConfigSource::default(), sets).unwrap();
        let text = cfg.to_toml().unwrap();
        let back = SystemConfig::from_toml_str(&text, "shown.toml").unwrap();
        assert_eq!(back, cfg, "{sets:?}");
        assert_eq!(back.to_toml().unwrap(), text);
    }
    let text = published().to_toml().unwrap();
    assert!(
        text.contains("clock_mhz = 33.0  # period 30303 ps\n"),
        "{text}"
    );
    assert!(
        text.contains("gmii_clock_mhz = 125.0  # period 8000 ps\n"),
        "{text}"
    );
}

#[test]
fn json_round_trips() {
    let cfg = published();
    let json = serde_json::to_string(&cfg).unwrap();
    assert_eq!(serde_json::from_str::<SystemConfig>(&json).unwrap(), cfg);
}

#[test]
fn flatten_lists_every_value_by_key() {
    let flat = published().flatten().unwrap();
    assert!(flat.contains(&("pci.system.clock_mhz".into(), "33.0".into())));
    assert!(flat.contains(&("card.att_location".into(), "card".into())));
    assert!(flat.contains(&("pci.bridge.read_mode".into(), "delayed".into())));
    assert!(flat.contains(&("pci.system.park".into(), "last-master".into())));
    assert!(flat.contains(&("faults.direction".into(), "both".into())));
    assert_eq!(flat.len(), 119);
    assert_eq!(flat[0], ("sim.seed".into(), "1".into()));
    assert!(flat.contains(&("topology.switch".into(), "none".into())));
    assert!(flat.contains(&("card.engine.rdma_read".into(), "false".into())));
    assert_eq!(flat[101], ("faults.link_down_for_us".into(), "0".into()));
    assert_eq!(flat[103], ("faults.reorder".into(), "0.0".into()));
    assert_eq!(flat[104], ("faults.reorder_hold_us".into(), "20".into()));
    assert_eq!(flat[108], ("faults.att_flip_bit".into(), "0".into()));
    assert_eq!(flat[109], ("faults.pci_abort".into(), "none".into()));
    assert_eq!(flat[113], ("via.reliability".into(), "unreliable".into()));
}

#[test]
fn set_reads_toml_values_and_bare_words() {
    let c = set(&published(), "pci.system.clock_mhz=66").unwrap();
    assert_eq!(c.pci.system.clock_mhz, 66.0);
    let c = set(&c, "pci.system.clock_mhz = 66.666").unwrap();
    assert_eq!(c.pci.system.clock_mhz, 66.666);
    let c = set(&c, "card.att_location=host").unwrap();
    assert_eq!(c.card.att_location, AttLocation::Host);
    let c = set(&c, "card.att_location=\"card\"").unwrap();
    assert_eq!(c.card.att_location, AttLocation::Card);
    let c = set(&c, "sim.trace=true").unwrap();
    assert!(c.sim.trace);
}

#[test]
fn set_errors_name_the_key_and_leave_the_config_unchanged() {
    let base = published();
    for (input, key, words) in [
        (
            "pci.system.clock_mhz=abc",
            "pci.system.clock_mhz",
            "expected f64",
        ),
        (
            "pci.system.width_bits=32.5",
            "pci.system.width_bits",
            "expected u32",
        ),
        ("topology.nodes=-2", "topology.nodes", "expected u32"),
        (
            "card.att_location=disk",
            "card.att_location",
            "`card` or `host`",
        ),
        ("sim.trace=1", "sim.trace", "expected a boolean"),
        (
            "pci.bridge.devsel=quick",
            "pci.bridge.devsel",
            "expected one of `fast`, `medium`, `slow`",
        ),
        (
            "pci.bridge.read_mode=eager",
            "pci.bridge.read_mode",
            "`delayed` or `wait-states`",
        ),
        (
            "pci.system.park=first",
            "pci.system.park",
            "`last-master` or `none`",
        ),
        (
            "card.dma.write_invalidate=yes",
            "card.dma.write_invalidate",
            "expected a boolean",
        ),
        ("no.such.key=1", "no.such.key", "unknown config key"),
        ("pci.system=1", "pci.system", "is a table"),
    ] {
        let mut c = base.clone();
        let err = c.apply_set(input).unwrap_err();
        assert_eq!(err.key(), Some(key), "{input}");
        let text = err.to_string();
        assert!(
            text.contains(key) && text.contains(words),
            "{input}: {text}"
        );
        assert_eq!(c, base, "{input} changed the config");
    }
    let err = set(&base, "pci.system.clock_mhz").unwrap_err();
    assert!(matches!(err, ConfigError::SetSyntax { .. }), "{err:?}");
}

#[test]
fn validation_names_the_key_and_the_limit() {
    for (input, key, words) in [
        (
            "pci.system.width_bits=48",
            "pci.system.width_bits",
            "32 or 64",
        ),
        (
            "pci.local.burst_bytes=500",
            "pci.local.burst_bytes",
            "power of two",
        ),
        (
            "pci.system.burst_bytes=8192",
            "pci.system.burst_bytes",
            "power of two",
        ),
        (
            "pci.system.clock_mhz=0",
            "pci.system.clock_mhz",
            "at least 1",
        ),
        (
            "pci.system.clock_mhz=-33",
            "pci.system.clock_mhz",
            "at least 1",
        ),
        (
            "wire.gmii_clock_mhz=0.5",
            "wire.gmii_clock_mhz",
            "runs for hours",
        ),
        (
            "pci.system.clock_mhz=nan",
            "pci.system.clock_mhz",
            "out of range",
        ),
        (
            "pci.system.clock_mhz=inf",
            "pci.system.clock_mhz",
            "out of range",
        ),
        ("pci.system.clock_mhz=200", "pci.system.clock_mhz", "66.67"),
        ("pci.local.clock_mhz=100", "pci.local.clock_mhz", "PCI-X"),
        (
            "pci.bridge.memory_read_latency_ns=20000",
            "pci.bridge.memory_read_latency_ns",
            "10 us",
        ),
        (
            "pci.bridge.memory_stream_mb_s=0",
            "pci.bridge.memory_stream_mb_s",
            "between 1",
        ),
        (
            "pci.bridge.cache_line_bytes=24",
            "pci.bridge.cache_line_bytes",
            "power of two",
        ),
        (
            "pci.bridge.mrm_prefetch_bytes=8192",
            "pci.bridge.mrm_prefetch_bytes",
            "4 KB",
        ),
        (
            "pci.bridge.posted_write_buffer_bytes=4",
            "pci.bridge.posted_write_buffer_bytes",
            "64-bit data phase",
        ),
        (
            "pci.bridge.cpu_write_buffer_entries=0",
            "pci.bridge.cpu_write_buffer_entries",
            "between 1",
        ),
        (
            "card.dma.latency_timer_cycles=300",
            "card.dma.latency_timer_cycles",
            "8 bits",
        ),
        (
            "card.dma.max_outstanding=0",
            "card.dma.max_outstanding",
            "between 1 and 16",
        ),
        (
            "mac.dma.cache_line_bytes=3",
            "mac.dma.cache_line_bytes",
            "power of two",
        ),
        (
            "card.pci_target.write_wait_states=15",
            "card.pci_target.write_wait_states",
            "16th clock",
        ),
        (
            "card.local_target.max_write_burst_bytes=3",
            "card.local_target.max_write_burst_bytes",
            "multiple of 8",
        ),
        (
            "card.local_target.read_latency_core_clocks=65",
            "card.local_target.read_latency_core_clocks",
            "between 0 and 64",
        ),
        ("host.cpu_clock_mhz=1e9", "host.cpu_clock_mhz", "at most"),
        ("topology.nodes=1", "topology.nodes", "at least 2"),
        ("topology.nodes=4", "topology.nodes", "switch"),
        ("topology.nodes=65", "topology.nodes", "at most 64"),
        (
            "topology.switch_buffer_bytes=1000",
            "topology.switch_buffer_bytes",
            "one largest frame",
        ),
        (
            "topology.switch_pause_low_bytes=32768",
            "topology.switch_pause_low_bytes",
            "below topology.switch_pause_high_bytes",
        ),
        (
            "topology.switch_pause_high_bytes=0",
            "topology.switch_pause_high_bytes",
            "between 1",
        ),
        (
            "topology.switch_pause_quanta=0",
            "topology.switch_pause_quanta",
            "resume",
        ),
        (
            "topology.switch_pause_quanta=65536",
            "topology.switch_pause_quanta",
            "16-bit",
        ),
        (
            "topology.switch_latency_ns=0",
            "topology.switch_latency_ns",
            "8",
        ),
        ("host.memory_mb=0", "host.memory_mb", "between 1 and 4096"),
        ("card.sdram_mb=0", "card.sdram_mb", "between"),
        ("mac.rx_fifo_bytes=0", "mac.rx_fifo_bytes", "between 64"),
        ("wire.mtu_bytes=20000", "wire.mtu_bytes", "9014"),
        ("wire.cable_m=-1", "wire.cable_m", "100 m"),
        ("wire.min_ifg_bytes=0", "wire.min_ifg_bytes", "at least 12"),
        (
            "faults.frame_loss=1.5",
            "faults.frame_loss",
            "between 0 and 1",
        ),
        (
            "faults.frame_loss=-0.1",
            "faults.frame_loss",
            "between 0 and 1",
        ),
        ("faults.frame_loss=nan", "faults.frame_loss", "out of range"),
        (
            "faults.bit_error_rate=0.002",
            "faults.bit_error_rate",
            "between 0 and 0.001",
        ),
        (
            "faults.link_down_at_us=10",
            "faults.link_down_for_us",
            "needs both",
        ),
        (
            "faults.link_down_for_us=10",
            "faults.link_down_at_us",
            "needs both",
        ),
        (
            "faults.link_down_at_us=2000000000",
            "faults.link_down_at_us",
            "1000 s",
        ),
        (
            "faults.duplicate=1.5",
            "faults.duplicate",
            "between 0 and 1",
        ),
        ("faults.reorder=-1", "faults.reorder", "between 0 and 1"),
        ("faults.reorder=nan", "faults.reorder", "out of range"),
        (
            "faults.reorder_hold_us=2000000000",
            "faults.reorder_hold_us",
            "1000 s",
        ),
        ("faults.att_flip_bit=192", "faults.att_flip_bit", "0 to 191"),
        (
            "faults.pci_abort_node=2",
            "faults.pci_abort_node",
            "not a node",
        ),
        (
            "faults.pci_abort=target",
            "faults.pci_abort_bytes",
            "4 KB pages",
        ),
        (
            "faults.att_flip_node=2",
            "faults.att_flip_node",
            "not a node",
        ),
        (
            "faults.att_flip_entry=65536",
            "faults.att_flip_entry",
            "0 to 65535",
        ),
        (
            "faults.att_flip_at_us=2000000000",
            "faults.att_flip_at_us",
            "1000 s",
        ),
    ] {
        let cfg = set(&published(), input).expect(input);
        let err = cfg.validate().unwrap_err();
        assert_eq!(err.key(), Some(key), "{input}");
        let text = err.to_string();
        assert!(text.starts_with(&format!("{key}: ")), "{input}: {text}");
        assert!(text.contains(words), "{input}: {text}");
    }
    let err = SystemConfig::load(
        &ConfigSource::default(),
        &["pci.system.width_bits=64", "pci.system.burst_bytes=4"],
    )
    .unwrap_err();
    assert!(err.to_string().contains("one 64-bit data phase"), "{err}");
}

/// Both switch kinds validate, with any node count up to 64, and the switch's keys reach
/// the published preset with their sourced values.
#[test]
fn a_cut_through_switch_is_accepted() {
    for kind in ["cut-through", "store-and-forward"] {
        let cfg = set(&published(), &format!("topology.switch={kind}")).unwrap();
        let cfg = set(&cfg, "topology.nodes=64").unwrap();
        cfg.validate().expect(kind);
    }
    let t = published().topology;
    assert_eq!(
        (
            t.switch_buffer_bytes,
            t.switch_flow_control,
            t.switch_pause_high_bytes,
            t.switch_pause_low_bytes,
            t.switch_pause_quanta
        ),
        (65_536, true, 32_768, 16_384, 65_535)
    );
    // A port buffer must hold one largest frame (1514 + FCS).
    let small = set(&published(), "topology.switch_buffer_bytes=1517").unwrap();
    assert_eq!(
        small.validate().unwrap_err().key(),
        Some("topology.switch_buffer_bytes")
    );
    set(&published(), "topology.switch_buffer_bytes=1518")
        .unwrap()
        .validate()
        .expect("one 1518-byte frame fits");
}

#[test]
fn range_errors_point_at_the_last_set_of_the_key() {
    let ok = ["pci.system.burst_bytes=3", "pci.system.burst_bytes=256"];
    SystemConfig::load(&ConfigSource::default(), &ok).unwrap();
    let bad = ["pci.system.burst_bytes=256", "pci.system.burst_bytes=3"];
    let err = SystemConfig::load(&ConfigSource::default(), &bad).unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("--set `pci.system.burst_bytes=3`: pci.system.burst_bytes: "),
        "{text}"
    );
}

fn replace_line(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "{from}");
    text.replacen(from, to, 1)
}

#[test]
fn file_errors_carry_line_column_and_key() {
    let text = published().to_toml().unwrap();
    let line_of =
        |t: &str, needle: &str| t.lines().position(|l| l.starts_with(needle)).unwrap() + 1;
    let cases = [
        (
            replace_line(&text, "seed = 1\n", "seed = 1\nsede = 2\n"),
            "sede = 2",
            1,
            "sim.sede: unknown field `sede`",
        ),
        (
            replace_line(&text, "clock_mhz = 33.0", "clock_mhz = \"fast\""),
            "clock_mhz = \"fast\"",
            13,
            "pci.system.clock_mhz: invalid type: string \"fast\", expected f64",
        ),
        (
            replace_line(&text, "width_bits = 32", "width_bits = 48"),
            "width_bits = 48",
            14,
            "pci.system.width_bits: 48 is not allowed",
        ),
        (
            replace_line(&text, "nodes = 2", "nodes = "),
            "nodes = ",
            9,
            "invalid string; expected",
        ),
    ];
    for (doc, line, column, words) in cases {
        let err = SystemConfig::from_toml_str(&doc, "what-if.toml").unwrap_err();
        let want = format!("what-if.toml:{}:{column}: ", line_of(&doc, line));
        let msg = err.to_string();
        assert!(msg.starts_with(&want), "want {want}, got {msg}");
        assert!(msg.contains(words), "{msg}");
    }
    let doc = text.replace("burst_bytes = 512\n", "");
    let msg = SystemConfig::from_toml_str(&doc, "f.toml")
        .unwrap_err()
        .to_string();
    assert!(msg.contains("missing field `burst_bytes`"), "{msg}");
}

#[test]
fn unknown_presets_and_files_are_errors() {
    let err = SystemConfig::from_preset("nope").unwrap_err().to_string();
    assert!(
        err.contains("unknown preset `nope`") && err.contains("hvia-ge"),
        "{err}"
    );
    let err = SystemConfig::load(
        &ConfigSource::File("/no/such/file.toml".into()),
        &[] as &[&str],
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("/no/such/file.toml"), "{err}");
}

/// Every `key = value` line of every preset names its source: on the line itself or in
/// the comment block directly above it. A `calibrated:` value must also name the
/// published figure it was fitted to.
#[test]
fn every_preset_value_names_its_source() {
    const TAGS: [&str; 6] = [
        "paper:",
        "datasheet:",
        "standard:",
        "assumption:",
        "setting:",
        "calibrated:",
    ];
    for p in PRESETS {
        let lines: Vec<&str> = p.text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let code = line.split('#').next().unwrap_or("").trim();
            if code.is_empty() || code.starts_with('[') {
                continue;
            }
            let mut context = vec![*line];
            context.extend(
                lines[..i]
                    .iter()
                    .rev()
                    .take_while(|l| l.trim_start().starts_with('#'))
                    .copied(),
            );
            assert!(
                context.iter().any(|l| TAGS.iter().any(|t| l.contains(t))),
                "{}:{}: `{line}` names no source",
                p.file,
                i + 1
            );
            if line.contains("calibrated:") {
                assert!(
                    line.contains("fitted to"),
                    "{}:{}: a calibrated value must say which target it was fitted to",
                    p.file,
                    i + 1
                );
            }
        }
    }
}

mod props {
    use super::*;
    use proptest::prelude::*;

    const KEYS: [&str; 12] = [
        "pci.system.clock_mhz",
        "pci.system.park",
        "pci.bridge.read_mode",
        "card.dma.max_outstanding",
        "card.local_target.read_latency_core_clocks",
        "pci.system.width_bits",
        "pci.local.burst_bytes",
        "card.att_location",
        "sim.seed",
        "wire.cable_m",
        "topology.nodes",
        "no.such.key",
    ];

    proptest! {
        /// No `--set` string makes the library panic, and whatever it accepts and
        /// validates shows as TOML that parses back to the same configuration.
        #[test]
        fn arbitrary_sets_never_panic(raw in "\\PC*", key in 0..KEYS.len(), value in "\\PC{0,12}") {
            let base = published();
            for input in [raw.clone(), format!("{}={value}", KEYS[key])] {
                let mut cfg = base.clone();
                if cfg.apply_set(&input).is_ok() {
                    if cfg.validate().is_ok() {
                        let text = cfg.to_toml().unwrap();
                        prop_assert_eq!(SystemConfig::from_toml_str(&text, "t").unwrap(), cfg);
                    }
                } else {
                    prop_assert_eq!(&cfg, &base);
                }
                let _ = SystemConfig::load(&ConfigSource::default(), &[input.as_str()]);
            }
        }

        /// Numbers of any size in any key are type- or range-checked, never a panic.
        #[test]
        fn arbitrary_numbers_never_panic(key in 0..KEYS.len(), n in any::<i64>(), f in any::<f64>()) {
            for input in [format!("{}={n}", KEYS[key]), format!("{}={f:?}", KEYS[key])] {
                let _ = SystemConfig::load(&ConfigSource::default(), &[input.as_str()]);
            }
        }
    }
}
