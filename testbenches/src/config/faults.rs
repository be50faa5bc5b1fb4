//! `[faults]` mapped onto `gige_mac::fault`: the parameters and the seed of each
//! direction's wire faults.

use super::schema::PciAbort;
use super::schema::SystemConfig;
use gige_mac::fault::{LinkDown, WireFaultParams};
use nic_model::att::AttBitFlip;
use pci_model::{AbortKind, AbortRange};
use sim_kernel::time::PS_PER_US;
use sim_kernel::{Duration, SplitMix64, Time};

impl SystemConfig {
    /// The faults on the wire node `from` sends into (`from` = 0: direction 0-to-1): the
    /// random ones if `faults.direction` names that direction, the link-down window
    /// always (a link is down both ways).
    #[must_use]
    pub fn wire_fault_params(&self, from: usize) -> WireFaultParams {
        let f = &self.faults;
        let random = f.direction.applies_from(from);
        let link_down = (f.link_down_at_us > 0 && f.link_down_for_us > 0).then(|| LinkDown {
            at: Time(f.link_down_at_us.saturating_mul(PS_PER_US)),
            duration: Duration(f.link_down_for_us.saturating_mul(PS_PER_US)),
        });
        WireFaultParams {
            frame_loss: if random { f.frame_loss } else { 0.0 },
            bit_error_rate: if random { f.bit_error_rate } else { 0.0 },
            link_down,
            duplicate: if random { f.duplicate } else { 0.0 },
            reorder: if random { f.reorder } else { 0.0 },
            reorder_hold: Duration(f.reorder_hold_us.saturating_mul(PS_PER_US)),
        }
    }

    /// The ATT bit flip of node `n`'s card, if `faults.att_flip_at_us` schedules one there.
    #[must_use]
    pub fn att_bit_flip(&self, n: usize) -> Option<AttBitFlip> {
        let f = &self.faults;
        (f.att_flip_at_us > 0 && usize::try_from(f.att_flip_node).ok() == Some(n)).then(|| {
            AttBitFlip {
                at: Time(f.att_flip_at_us.saturating_mul(PS_PER_US)),
                entry: f.att_flip_entry,
                bit: u16::try_from(f.att_flip_bit).unwrap_or(u16::MAX),
            }
        })
    }

    /// The range node `n`'s host bridge aborts, if `faults.pci_abort` puts one there
    /// (`None` also for a range validation refuses).
    #[must_use]
    pub fn pci_abort_range(&self, n: usize) -> Option<AbortRange> {
        let f = &self.faults;
        let kind = match f.pci_abort {
            PciAbort::None => return None,
            PciAbort::Target => AbortKind::Target,
            PciAbort::Master => AbortKind::Master,
        };
        if usize::try_from(f.pci_abort_node).ok() != Some(n) {
            return None;
        }
        AbortRange::new(f.pci_abort_start, f.pci_abort_bytes, kind).ok()
    }

    /// The seed of the random stream of the wire node `from` sends into, derived from
    /// `sim.seed` and the direction (`wire.0-to-1`, `wire.1-to-0`), unrelated to every
    /// other stream of the run.
    #[must_use]
    pub fn wire_fault_seed(&self, from: usize) -> u64 {
        let label = format!("wire.{from}-to-{}", 1 - from.min(1));
        SplitMix64::derive(self.sim.seed, &label).next_u64()
    }
}

#[cfg(test)]
mod tests {
    use super::super::SystemConfig;

    fn cfg(sets: &[&str]) -> SystemConfig {
        let mut c = SystemConfig::from_preset("hvia-ge").unwrap();
        for s in sets {
            c.apply_set(s).unwrap();
        }
        c.validate().unwrap();
        c
    }

    #[test]
    fn no_preset_has_a_fault() {
        for p in super::super::PRESETS {
            let c = SystemConfig::from_preset(p.name).unwrap();
            assert!(c.wire_fault_params(0).is_off(), "{}", p.name);
            assert!(c.wire_fault_params(1).is_off(), "{}", p.name);
        }
    }

    #[test]
    fn direction_picks_the_transmitters_and_the_window_is_both_ways() {
        let c = cfg(&[
            "faults.frame_loss=0.5",
            "faults.bit_error_rate=1e-5",
            "faults.direction=1-to-0",
            "faults.link_down_at_us=10",
            "faults.link_down_for_us=3",
        ]);
        let (a, b) = (c.wire_fault_params(0), c.wire_fault_params(1));
        assert_eq!((a.frame_loss, a.bit_error_rate), (0.0, 0.0));
        assert_eq!((b.frame_loss, b.bit_error_rate), (0.5, 1e-5));
        for p in [a, b] {
            let d = p.link_down.unwrap();
            assert_eq!((d.at.0, d.duration.0), (10_000_000, 3_000_000));
        }
        let both = cfg(&["faults.frame_loss=0.5"]);
        assert_eq!(both.wire_fault_params(0).frame_loss, 0.5);
        assert_eq!(both.wire_fault_params(1).frame_loss, 0.5);
    }

    #[test]
    fn an_att_flip_goes_to_its_node_only_and_needs_the_card_table() {
        let c = cfg(&[
            "faults.att_flip_at_us=20",
            "faults.att_flip_node=1",
            "faults.att_flip_entry=2",
            "faults.att_flip_bit=176",
        ]);
        assert_eq!(c.att_bit_flip(0), None);
        let f = c.att_bit_flip(1).unwrap();
        assert_eq!((f.at.0, f.entry, f.bit), (20_000_000, 2, 176));
        assert_eq!(cfg(&[]).att_bit_flip(0), None, "0 us: never");
        let mut host = SystemConfig::from_preset("hvia-ge").unwrap();
        host.apply_set("card.att_location=host").unwrap();
        host.apply_set("faults.att_flip_at_us=20").unwrap();
        let err = host.validate().unwrap_err();
        assert_eq!(err.key(), Some("faults.att_flip_at_us"));
        assert!(err.to_string().contains("card SDRAM"), "{err}");
    }

    #[test]
    fn a_pci_abort_range_is_whole_pages_of_host_memory_on_its_node() {
        let c = cfg(&[
            "faults.pci_abort=master",
            "faults.pci_abort_node=1",
            "faults.pci_abort_start=0x3000",
            "faults.pci_abort_bytes=8192",
        ]);
        assert_eq!(c.pci_abort_range(0), None);
        let r = c.pci_abort_range(1).unwrap();
        assert_eq!(
            (r.start(), r.end(), r.kind()),
            (0x3000, 0x5000, pci_model::AbortKind::Master)
        );
        assert_eq!(cfg(&[]).pci_abort_range(0), None);
        for (sets, key, words) in [
            (
                &[
                    "faults.pci_abort=target",
                    "faults.pci_abort_start=100",
                    "faults.pci_abort_bytes=4096",
                ][..],
                "faults.pci_abort_start",
                "multiple of 4096",
            ),
            (
                &[
                    "faults.pci_abort=target",
                    "faults.pci_abort_start=0",
                    "faults.pci_abort_bytes=100",
                ][..],
                "faults.pci_abort_bytes",
                "4 KB pages",
            ),
            (
                &[
                    "faults.pci_abort=target",
                    "faults.pci_abort_start=0x10000000",
                    "faults.pci_abort_bytes=4096",
                ][..],
                "faults.pci_abort_bytes",
                "past the end of host memory",
            ),
        ] {
            let mut c = SystemConfig::from_preset("hvia-ge").unwrap();
            for s in sets {
                c.apply_set(s).unwrap();
            }
            let err = c.validate().unwrap_err();
            assert_eq!(err.key(), Some(key), "{sets:?}");
            assert!(err.to_string().contains(words), "{sets:?}: {err}");
        }
    }

    #[test]
    fn seeds_differ_by_direction_and_follow_sim_seed() {
        let c = cfg(&[]);
        let d = cfg(&["sim.seed=2"]);
        assert_ne!(c.wire_fault_seed(0), c.wire_fault_seed(1));
        assert_ne!(c.wire_fault_seed(0), d.wire_fault_seed(0));
        assert_eq!(c.wire_fault_seed(1), cfg(&[]).wire_fault_seed(1));
    }
}
