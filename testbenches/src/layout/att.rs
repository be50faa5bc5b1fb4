//! `hvia layout att`: its options, and the ATT entries that registering the region they
//! describe writes into card SDRAM, built by via-abi's [`AttRegionRepr::build`]. Every
//! [`AttError`] becomes a [`LayoutError`] naming the option to fix. Printing is in
//! `att_out`.

use clap::Args;
use via_abi::att::{L2_ENTRY_LEN, PAGE_SIZE};
use via_abi::{AttError, AttRegionRepr, MemAttributes, ProtectionTag, RegionSpec};

use super::error::LayoutError;
use super::num::{parse_u16, parse_u32, parse_u64};
use crate::config::SystemConfig;

/// Default `--l2-pointer`, as text for clap (checked against [`DEFAULT_L2_POINTER`]).
const DEFAULT_L2_POINTER_TEXT: &str = "0x0018_1000";

/// Default SDRAM byte address of the L2 entries: the start of the L2 pool of a fresh card,
/// where its first registration puts them. It is the default card geometry of
/// `nic-model` (`TableGeometry::l2_base`, a design choice there): an L1 table of 65 536
/// entries at address 0 (1.5 MiB), then the next 4 KiB SDRAM row.
pub const DEFAULT_L2_POINTER: u32 = 0x0018_1000;

/// Options of `hvia layout att`. Numbers are decimal or `0x` hex (`_` may separate
/// digits).
#[derive(Debug, Args)]
#[command(
    after_help = "Numbers are decimal or 0x hex (_ may separate digits). Example: hvia layout att --va 0x0804a100 --len 10000 --pages 0x053a7100,0x01234000,0x07770000 --rdma-write"
)]
pub struct AttArgs {
    /// Start virtual address of the region.
    #[arg(long, value_name = "VA", value_parser = parse_u64)]
    pub va: u64,
    /// Length of the region in bytes, at least 1.
    #[arg(long, value_name = "BYTES", value_parser = parse_u64)]
    pub len: u64,
    /// Physical addresses, one per 4 KB page the region touches: P1 is where the region
    /// starts (same offset within its page as --va), the others are page bases.
    #[arg(
        long,
        value_name = "P1,P2,...",
        value_delimiter = ',',
        required = true,
        value_parser = parse_page
    )]
    pub pages: Vec<PageArg>,
    /// Protection tag stored in the L1 entry (0 is never issued by VipCreatePtag).
    #[arg(long, value_name = "TAG", default_value = "1", value_parser = parse_u16)]
    pub ptag: u16,
    /// Enable RDMA write into the region (attribute 0x2).
    #[arg(long)]
    pub rdma_write: bool,
    /// Enable RDMA read from the region (attribute 0x4).
    #[arg(long)]
    pub rdma_read: bool,
    /// SDRAM byte address of the first L2 entry (4-byte aligned); the default is the
    /// start of the L2 pool of a fresh card (after a 65 536-entry L1 table at 0).
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_L2_POINTER_TEXT, value_parser = parse_u32)]
    pub l2_pointer: u32,
    /// Memory handle generation stored in the L1 entry, 1..=4095.
    #[arg(long, value_name = "N", default_value = "1", value_parser = parse_u16)]
    pub generation: u16,
}

/// One address of `--pages`: its value and the text it was given as (for error excerpts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageArg {
    /// The physical address.
    pub pa: u64,
    /// The text given on the command line.
    pub text: String,
}

/// Parses one address of `--pages` (decimal or `0x` hex).
///
/// # Errors
/// As [`parse_u64`].
pub fn parse_page(text: &str) -> Result<PageArg, String> {
    Ok(PageArg {
        pa: parse_u64(text)?,
        text: text.to_owned(),
    })
}

impl AttArgs {
    /// The memory attributes to store: always valid, plus the enabled RDMA directions.
    #[must_use]
    pub fn attributes(&self) -> MemAttributes {
        let mut a = MemAttributes::VALID;
        a.set(MemAttributes::ENABLE_RDMA_WRITE, self.rdma_write);
        a.set(MemAttributes::ENABLE_RDMA_READ, self.rdma_read);
        a
    }

    /// `--pages` as given (comma-separated) and the byte range of each address in it.
    fn pages_text(&self) -> (String, Vec<std::ops::Range<usize>>) {
        let mut text = String::new();
        let mut spans = Vec::with_capacity(self.pages.len());
        for (i, page) in self.pages.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            let start = text.len();
            text.push_str(&page.text);
            spans.push(start..text.len());
        }
        (text, spans)
    }
}

/// The ATT entries for `args`, checked against the card and host of `cfg`.
///
/// # Errors
/// A [`LayoutError`] naming the option (or config key) with bad input.
pub fn build(args: &AttArgs, cfg: &SystemConfig) -> Result<AttRegionRepr, LayoutError> {
    let pages: Vec<u64> = args.pages.iter().map(|p| p.pa).collect();
    let spec = RegionSpec {
        va: args.va,
        len: args.len,
        pages: &pages,
        attributes: args.attributes(),
        ptag: ProtectionTag(args.ptag),
        generation: args.generation,
        l2_pointer: args.l2_pointer,
    };
    let region = AttRegionRepr::build(&spec).map_err(|e| att_error(args, e))?;
    let entries = region.l2.len() as u64;
    let end = u64::from(args.l2_pointer) + entries * L2_ENTRY_LEN as u64;
    let sdram = u64::from(cfg.card.sdram_mb) << 20;
    if end > sdram {
        return Err(LayoutError::new(
            "--l2-pointer",
            &format!("{:#x}", args.l2_pointer),
            format!(
                "the L2 entries at {:#x}..{end:#x} ({entries} x {L2_ENTRY_LEN} bytes) do not fit the card's {} MB SDRAM (card.sdram_mb)",
                args.l2_pointer, cfg.card.sdram_mb
            ),
        ));
    }
    Ok(region)
}

/// The [`LayoutError`] for an [`AttError`]: which option to fix, and how.
fn att_error(args: &AttArgs, err: AttError) -> LayoutError {
    let len = args.len.to_string();
    let (pages, spans) = args.pages_text();
    let span = |i: usize| spans.get(i).cloned().unwrap_or(0..pages.len());
    let region = format!("--va {:#x} --len {}", args.va, args.len);
    match err {
        AttError::ZeroLength => {
            LayoutError::new("--len", &len, "a region must be at least 1 byte long")
        }
        AttError::AddressOverflow { va, len: l } => LayoutError::new(
            "--len",
            &len,
            format!("{va:#x} + {l} bytes runs past the 64-bit address space"),
        ),
        AttError::TooManyPages { pages: n } => LayoutError::new(
            "--len",
            &len,
            format!(
                "the region touches {n} pages, more than an L1 entry can hold (at most {})",
                via_abi::L1Repr::MAX_PAGE_COUNT
            ),
        ),
        AttError::PageListLength { expected, got } => LayoutError::new(
            "--pages",
            &pages,
            format!("{got} addresses given, but the region {region} touches {expected} pages"),
        )
        .help(format!(
            "give {expected}: the region's physical start (page offset {:#x}, as --va), then one 4 KB page base per further page",
            args.va % PAGE_SIZE
        )),
        AttError::FirstPageOffset {
            pa,
            pa_offset,
            va_offset,
        } => LayoutError::new(
            "--pages",
            &pages,
            format!(
                "the first address {pa:#x} has offset {pa_offset:#x} within its page, but --va has {va_offset:#x}"
            ),
        )
        .at(span(0))
        .help("P1 is the physical address of the region's first byte: same offset within its page as --va"),
        AttError::UnalignedPage { index, pa } => LayoutError::new(
            "--pages",
            &pages,
            format!("address {} ({pa:#x}) is not the base of a 4 KB page", index + 1),
        )
        .at(span(index))
        .help("every address after the first is a page base (a multiple of 0x1000)"),
        AttError::PhysAddrTooWide { index, pa } => LayoutError::new(
            "--pages",
            &pages,
            format!(
                "address {} ({pa:#x}) does not fit the 32-bit L2 entry (32-bit PCI addressing)",
                index + 1
            ),
        )
        .at(span(index)),
        AttError::InvalidGeneration(g) => LayoutError::new(
            "--generation",
            &g.to_string(),
            "must be 1..=4095 (12 bits of the memory handle; 0 is never issued)",
        ),
        AttError::UnalignedL2Pointer(p) => LayoutError::new(
            "--l2-pointer",
            &format!("{p:#x}"),
            "must be 4-byte aligned (L2 entries are 32-bit words)",
        ),
        AttError::L2TableOverflow {
            l2_pointer,
            entries,
        } => LayoutError::new(
            "--l2-pointer",
            &format!("{l2_pointer:#x}"),
            format!("{entries} L2 entries from {l2_pointer:#x} run past the 32-bit SDRAM address space"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use crate::layout::LayoutCommand;
    use clap::Parser;

    fn att_args(args: &[&str]) -> AttArgs {
        let argv = ["hvia", "layout", "att"].iter().chain(args);
        match Cli::try_parse_from(argv)
            .expect("valid command line")
            .command
        {
            Some(Command::Layout(LayoutCommand::Att(a))) => a,
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn every_att_error_names_an_option() {
        let args = att_args(&["--va", "0x100", "--len", "5000", "--pages", "0x100, 0x1001"]);
        let cases = [
            (AttError::ZeroLength, "--len", None),
            (AttError::AddressOverflow { va: 1, len: 2 }, "--len", None),
            (AttError::TooManyPages { pages: 1 << 21 }, "--len", None),
            (
                AttError::PageListLength {
                    expected: 3,
                    got: 2,
                },
                "--pages",
                None,
            ),
            (
                AttError::FirstPageOffset {
                    pa: 0x100,
                    pa_offset: 0x100,
                    va_offset: 0,
                },
                "--pages",
                Some(0..5),
            ),
            (
                AttError::UnalignedPage {
                    index: 1,
                    pa: 0x1001,
                },
                "--pages",
                Some(6..13),
            ),
            (
                AttError::PhysAddrTooWide {
                    index: 1,
                    pa: 1 << 40,
                },
                "--pages",
                Some(6..13),
            ),
            (AttError::InvalidGeneration(0), "--generation", None),
            (AttError::UnalignedL2Pointer(2), "--l2-pointer", None),
            (
                AttError::L2TableOverflow {
                    l2_pointer: 4,
                    entries: 2,
                },
                "--l2-pointer",
                None,
            ),
        ];
        for (err, option, span) in cases {
            let e = att_error(&args, err);
            assert_eq!((e.option, e.span()), (option, span), "{err:?}");
        }
    }

    #[test]
    fn l2_table_past_4_gib_is_an_l2_pointer_error() {
        let args = att_args(&[
            "--va",
            "0",
            "--len",
            "8192",
            "--pages",
            "0,0x1000",
            "--l2-pointer",
            "0xfffffffc",
        ]);
        let e = build(
            &args,
            &SystemConfig::from_preset(crate::config::DEFAULT_PRESET).expect("preset"),
        )
        .unwrap_err();
        assert_eq!(e.option, "--l2-pointer");
    }

    #[test]
    fn default_l2_pointer_is_the_l2_pool_of_a_fresh_card() {
        assert_eq!(parse_u32(DEFAULT_L2_POINTER_TEXT), Ok(DEFAULT_L2_POINTER));
        let geometry = nic_model::att::TableGeometry::default();
        assert_eq!(DEFAULT_L2_POINTER, geometry.l2_base);
    }
}
