//! Feasibility: pairs of values that are each in range but together describe a system
//! the model cannot run (a frame larger than the buffer that must hold it, a table larger
//! than the memory that holds it). Each check names the key to change and why; the
//! binary exits with 2 before anything runs. Checks that depend on the run (a message
//! size against host memory) are [`ping_pong_fits`].

use super::schema::{AttLocation, SystemConfig};
use super::validate::Problem;
use nic_model::att::{AttParams, TableGeometry};
use via_abi::{ethernet, wire_header};

/// Bytes an Ethernet frame adds to the frame without FCS: the FCS (IEEE 802.3 §3.2.9).
const FCS_BYTES: u32 = 4;

/// The largest frame the card can build \[bytes, without FCS\]: Ethernet header, VIA
/// header and the engine's largest fragment payload (14 + 40 + 1460 = 1514).
pub const CARD_FRAME_BYTES: u32 =
    (ethernet::HEADER_LEN + wire_header::HEADER_LEN + wire_header::MAX_FRAGMENT_PAYLOAD) as u32;

/// The headers of one of the card's frames \[bytes\]: Ethernet 14 + VIA 40.
pub const FRAME_HEADERS: u32 = (ethernet::HEADER_LEN + wire_header::HEADER_LEN) as u32;

/// Bytes of one frame buffer (slot) in the GEC's buffer RAM: the power of two that holds
/// the card's largest frame with its FCS, 2048 (a smaller MTU leaves the slots as they
/// are; jumbo frames are not modelled).
#[must_use]
pub fn slot_bytes(_cfg: &SystemConfig) -> u32 {
    (CARD_FRAME_BYTES + FCS_BYTES).next_power_of_two()
}

/// Payload bytes per frame for the configured MTU: the MTU minus the Ethernet and VIA
/// headers (1460 at the standard 1514).
#[must_use]
pub fn fragment_payload(cfg: &SystemConfig) -> u32 {
    cfg.wire.mtu_bytes.saturating_sub(FRAME_HEADERS)
}

/// Where the card's BAR0 sits in the PCI memory space \[bus address\]: host memory must
/// end below it (the host bridge claims addresses below the top of memory).
pub const CARD_BAR0: u64 = 0xE000_0000;

/// Pages of control memory the ping-pong programs allocate besides their two buffers
/// (the 512-byte control region, and one page of slack for each buffer's alignment).
const PINGPONG_EXTRA_PAGES: u64 = 3;

fn problem(key: &str, reason: String) -> Problem {
    Problem {
        key: key.to_owned(),
        reason,
    }
}

/// The ATT's placement for `cfg`: on the card, the L2 pool fills the SDRAM after the L1
/// table (`card.sdram_mb` sets how many pages can be registered at once); in host
/// memory, the kernel agent's reserved block.
#[must_use]
pub fn att_params(cfg: &SystemConfig) -> AttParams {
    match cfg.card.att_location {
        AttLocation::Card => {
            let mut p = AttParams::default();
            p.sdram.capacity = sim_kernel::Bytes(sdram_bytes(cfg));
            p.table = TableGeometry {
                l2_entries: u32::try_from(
                    sdram_bytes(cfg).saturating_sub(u64::from(p.table.l2_base)) / 4,
                )
                .unwrap_or(u32::MAX),
                ..p.table
            };
            p
        }
        AttLocation::Host => AttParams::host_memory(),
    }
}

fn sdram_bytes(cfg: &SystemConfig) -> u64 {
    u64::from(cfg.card.sdram_mb) << 20
}

/// The first combination of values the model cannot run, if any.
///
/// # Errors
/// A [`Problem`] naming the key to change.
pub fn check(cfg: &SystemConfig) -> Result<(), Problem> {
    let mem = cfg.host_memory_bytes();
    if mem > CARD_BAR0 {
        return Err(problem(
            "host.memory_mb",
            format!(
                "{} MB of host memory would reach the card's BAR0 at {CARD_BAR0:#x}: at most {} MB fit below it",
                cfg.host.memory_mb,
                CARD_BAR0 >> 20
            ),
        ));
    }
    let att = att_params(cfg);
    match cfg.card.att_location {
        AttLocation::Card => {
            let need = u64::from(att.table.l2_base) + 4096;
            if sdram_bytes(cfg) < need {
                return Err(problem(
                    "card.sdram_mb",
                    format!(
                        "{} MB cannot hold the ATT: its L1 table ({} entries of 24 bytes) and the first 4 KB of its L2 pool need {need} bytes ({} MB)",
                        cfg.card.sdram_mb,
                        att.table.l1_entries,
                        need.div_ceil(1 << 20)
                    ),
                ));
            }
        }
        AttLocation::Host => {
            let end = att.table.l1_end().max(att.table.l2_end());
            if mem < end {
                return Err(problem(
                    "host.memory_mb",
                    format!(
                        "{} MB cannot hold the ATT in host memory (card.att_location = \"host\"): the kernel agent's table block ends at {end:#x} ({} MB)",
                        cfg.host.memory_mb,
                        end.div_ceil(1 << 20)
                    ),
                ));
            }
        }
    }
    frames(cfg)
}

/// The card's frames against the MTU, its frame buffers and the DP83820's FIFOs.
fn frames(cfg: &SystemConfig) -> Result<(), Problem> {
    let mtu = cfg.wire.mtu_bytes;
    if mtu > CARD_FRAME_BYTES {
        return Err(problem(
            "wire.mtu_bytes",
            format!(
                "{mtu} bytes: jumbo frames are not modelled; the card's engine fragments into at most {} payload bytes a frame, {CARD_FRAME_BYTES} bytes with the Ethernet and VIA headers",
                wire_header::MAX_FRAGMENT_PAYLOAD
            ),
        ));
    }
    let frame = mtu + FCS_BYTES;
    if cfg.mac.tx_fifo_bytes < frame {
        return Err(problem(
            "mac.tx_fifo_bytes",
            format!(
                "{} bytes cannot hold one frame ({frame} bytes with FCS): the DP83820 transmits store and forward, a whole frame from its TX FIFO",
                cfg.mac.tx_fifo_bytes
            ),
        ));
    }
    if cfg.mac.rx_fifo_bytes < frame {
        return Err(problem(
            "mac.rx_fifo_bytes",
            format!(
                "{} bytes cannot hold one received frame ({frame} bytes with FCS)",
                cfg.mac.rx_fifo_bytes
            ),
        ));
    }
    Ok(())
}

/// Whether a ping-pong of `size`-byte messages fits the configured system: both buffers
/// in host memory, and their pages in the ATT's L2 pool.
///
/// # Errors
/// A [`Problem`] naming the key that limits it.
pub fn ping_pong_fits(cfg: &SystemConfig, size: u32) -> Result<(), Problem> {
    let pages = u64::from(size).div_ceil(4096);
    let need = 2 * pages + PINGPONG_EXTRA_PAGES;
    let frames = cfg.host_memory_bytes() / 4096;
    let reserved = match cfg.card.att_location {
        AttLocation::Card => 0,
        AttLocation::Host => {
            let t = att_params(cfg).table;
            t.l1_end().max(t.l2_end()).div_ceil(4096) - u64::from(t.l1_base) / 4096
        }
    };
    if need + reserved > frames {
        return Err(problem(
            "host.memory_mb",
            format!(
                "{} MB of host memory cannot hold a {size}-byte ping-pong: each node needs {need} pages of 4 KB (a send and a receive buffer and its control region){}",
                cfg.host.memory_mb,
                if reserved > 0 {
                    format!(" besides the {reserved} pages of the ATT")
                } else {
                    String::new()
                }
            ),
        ));
    }
    let l2 = u64::from(att_params(cfg).table.l2_entries);
    if 2 * (pages + 1) + 1 > l2 {
        return Err(problem(
            "card.sdram_mb",
            format!(
                "the ATT's L2 pool of {l2} entries cannot register both {size}-byte buffers ({} pages)",
                2 * (pages + 1) + 1
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(sets: &[&str]) -> SystemConfig {
        let mut c = SystemConfig::from_preset("hvia-ge").unwrap();
        for s in sets {
            c.apply_set(s).unwrap();
        }
        c
    }

    #[test]
    fn the_presets_are_feasible() {
        for p in crate::config::PRESETS {
            let c = SystemConfig::from_preset(p.name).unwrap();
            assert_eq!(check(&c), Ok(()), "{}", p.name);
            assert_eq!(ping_pong_fits(&c, 16 << 20), Ok(()), "{}", p.name);
        }
    }

    #[test]
    fn each_check_names_its_key() {
        for (set, key) in [
            ("host.memory_mb=4096", "host.memory_mb"),
            ("card.sdram_mb=1", "card.sdram_mb"),
            ("wire.mtu_bytes=9014", "wire.mtu_bytes"),
            ("mac.tx_fifo_bytes=1024", "mac.tx_fifo_bytes"),
            ("mac.rx_fifo_bytes=1024", "mac.rx_fifo_bytes"),
        ] {
            let p = check(&cfg(&[set])).unwrap_err();
            assert_eq!(p.key, key, "{set}: {}", p.reason);
        }
        let c = cfg(&["card.att_location=\"host\"", "host.memory_mb=16"]);
        assert_eq!(check(&c).unwrap_err().key, "host.memory_mb");
    }

    #[test]
    fn the_l2_pool_follows_the_sdram_size() {
        let small = att_params(&cfg(&["card.sdram_mb=2"])).table.l2_entries;
        let big = att_params(&cfg(&[])).table.l2_entries;
        assert_eq!(big, ((64 << 20) - 0x0018_1000) / 4, "the published 64 MB");
        assert_eq!(small, ((2 << 20) - 0x0018_1000) / 4);
    }

    #[test]
    fn message_sizes_against_memory() {
        let c = cfg(&["host.memory_mb=1"]);
        assert_eq!(ping_pong_fits(&c, 4), Ok(()));
        assert_eq!(
            ping_pong_fits(&c, 1 << 20).unwrap_err().key,
            "host.memory_mb"
        );
        let c = cfg(&["card.sdram_mb=2"]);
        assert_eq!(ping_pong_fits(&c, 16 << 20), Ok(()));
    }
}
