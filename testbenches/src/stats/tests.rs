//! The counter tables against their structs: each table lists every field its struct's
//! `Debug` output shows (so a new counter in a model fails here until it is described),
//! and a system's counter list has unique names, a unit and a description each.

use super::collect::*;
use super::*;

/// The field names of a struct, from its `Debug` output (`Name { a: 0, b: [] }`).
fn debug_fields(debug: &str) -> Vec<String> {
    let body = debug
        .split_once('{')
        .map(|(_, b)| b)
        .unwrap_or_default()
        .trim_end_matches('}');
    body.split(", ")
        .filter_map(|f| f.split_once(':').map(|(n, _)| n.trim().to_owned()))
        .collect()
}

#[test]
fn every_field_of_every_stats_struct_is_described() {
    let cases: Vec<(&str, String, &[&str])> = vec![
        (
            "BusStats",
            format!("{:?}", pci_model::BusStats::default()),
            BUS_FIELDS,
        ),
        (
            "MasterStats",
            format!("{:?}", pci_model::MasterStats::default()),
            MASTER_FIELDS,
        ),
        (
            "BridgeStats",
            format!("{:?}", pci_model::BridgeStats::default()),
            BRIDGE_FIELDS,
        ),
        (
            "DmaStats",
            format!("{:?}", pci_model::DmaStats::default()),
            DMA_FIELDS,
        ),
        (
            "CpuStats",
            format!("{:?}", host_driver::CpuStats::default()),
            CPU_FIELDS,
        ),
        (
            "AttStats",
            format!("{:?}", nic_model::att::AttStats::default()),
            ATT_FIELDS,
        ),
        (
            "GecStats",
            format!("{:?}", gige_mac::GecStats::default()),
            GEC_FIELDS,
        ),
        (
            "EngineStats",
            format!("{:?}", nic_model::engine::EngineStats::default()),
            ENGINE_FIELDS,
        ),
        (
            "BusSideStats",
            format!("{:?}", gige_mac::dp83820::BusSideStats::default()),
            MAC_BUS_FIELDS,
        ),
        (
            "MacSideStats",
            format!("{:?}", gige_mac::dp83820::MacSideStats::default()),
            MAC_SIDE_FIELDS,
        ),
        (
            "TxStats",
            format!("{:?}", gige_mac::TxStats::default()),
            GMII_TX_FIELDS,
        ),
        (
            "RxStats",
            format!("{:?}", gige_mac::RxStats::default()),
            GMII_RX_FIELDS,
        ),
        (
            "WireFaultStats",
            format!("{:?}", gige_mac::WireFaultStats::default()),
            WIRE_FAULT_FIELDS,
        ),
    ];
    for (name, debug, listed) in cases {
        let fields = debug_fields(&debug);
        assert!(!fields.is_empty(), "{name}: {debug}");
        for f in &fields {
            assert!(
                listed.contains(&f.as_str()),
                "{name}.{f} is a counter the stats tables do not describe (stats/collect.rs)"
            );
        }
        assert_eq!(
            fields.len(),
            listed.len(),
            "{name}: {fields:?} vs {listed:?}"
        );
    }
}

#[test]
fn the_catalogue_names_are_unique_and_described() {
    let cfg = SystemConfig::from_preset(crate::config::DEFAULT_PRESET).expect("default preset");
    let all = catalogue(&cfg).expect("builds");
    let mut names: Vec<&str> = all.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    let n = names.len();
    names.dedup();
    assert_eq!(names.len(), n, "unique names");
    assert!(all
        .iter()
        .all(|c| !c.unit.is_empty() && !c.description.is_empty()));
    for expected in [
        "n0.pci.system.retries",
        "n1.pci.system.bridge.delayed_reads",
        "n0.pci.system.card_dma.wait_for_grant_cycles",
        "n0.pci.local.dp83820.bytes",
        "n1.card.engine.doorbells",
        "n0.card.att.l1_reads",
        "n1.mac.side.pause_sent",
        "n0.mac.gmii.tx.busy",
        "n0.wire.faults.frames_lost",
        "n0.host.cpu.poll_iterations",
        "sim.events",
    ] {
        assert!(names.contains(&expected), "{expected} in {names:?}");
    }
}

#[test]
fn stats_files_by_extension() {
    assert_eq!(StatsFormat::of(Path::new("a.JSON")), Ok(StatsFormat::Json));
    assert_eq!(StatsFormat::of(Path::new("d/a.csv")), Ok(StatsFormat::Csv));
    assert!(StatsFormat::of(Path::new("a.txt")).is_err());
    let c = vec![Counter::new(
        "sim.events".into(),
        7,
        "events",
        "events, delivered",
    )];
    let text = render(StatsFormat::Csv, &c, None).expect("csv");
    assert!(text.starts_with("name,value,unit,description\n"), "{text}");
    assert!(
        text.contains("sim.events,7,events,\"events, delivered\""),
        "{text}"
    );
    let runs = vec![(4, c.clone())];
    let text = render(StatsFormat::Csv, &c, Some(&runs)).expect("csv");
    assert!(text.starts_with("size_bytes,name,value"), "{text}");
    let json: serde_json::Value =
        serde_json::from_str(&render(StatsFormat::Json, &c, Some(&runs)).expect("json")).unwrap();
    assert_eq!(json["counters"][0]["value"], 7);
    assert_eq!(json["runs"][0]["size_bytes"], 4);
}
