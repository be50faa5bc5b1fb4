//! `hvia layout`: the bytes HVIA-GE keeps in host memory and card SDRAM, field by field.
//!
//! - `hvia layout descriptor`: a VI descriptor (VIA 1.0) encoded from fields, or decoded
//!   from `--decode HEX`, with its format check;
//! - `hvia layout att --va V --len L --pages P1,P2,...`: the ATT level-1 entry and
//!   level-2 entries that registering that region writes into card SDRAM.
//!
//! Layout knowledge (field names, byte ranges, encodings) comes from `via-abi` only;
//! this module turns it into rows (`table`, `csv`) and the JSON of the CLI contract.
//! Bad input is a [`LayoutError`] that names the option; the binary exits with 2.
//!
//! Files: `descriptor` and `att` (options, building the layout), `descriptor_out` and
//! `att_out` (what is printed), `rows` (table/CSV rows), `num` (numbers and hex),
//! `error` ([`LayoutError`]).

mod att;
mod att_out;
mod descriptor;
mod descriptor_out;
mod error;
pub(crate) mod num;
mod rows;

pub use att::{AttArgs, DEFAULT_L2_POINTER};
pub use descriptor::{DescriptorArgs, OpArg, QueueArg};
pub use error::LayoutError;

use clap::Subcommand;
use serde::ser::{Serialize, SerializeMap, Serializer};
use std::ops::Range;

use crate::config::SystemConfig;
use crate::report::Format;

/// The subcommands of `hvia layout`.
#[derive(Debug, Subcommand)]
pub enum LayoutCommand {
    /// A VI descriptor encoded from fields, or decoded with --decode HEX: every field, its
    /// byte range and its bytes.
    Descriptor(DescriptorArgs),
    /// The ATT L1 entry and L2 entries that registering a region writes into card SDRAM.
    Att(AttArgs),
}

/// Runs `hvia layout ...` and returns what to print.
///
/// # Errors
/// A [`LayoutError`] naming the option with bad input.
pub fn run(cmd: &LayoutCommand, format: Format, cfg: &SystemConfig) -> Result<String, LayoutError> {
    match cmd {
        LayoutCommand::Descriptor(args) => {
            let d = descriptor::describe(args)?;
            Ok(match format {
                Format::Table => descriptor_out::text(&d),
                Format::Csv => rows::csv_rows(&descriptor_out::rows(&d)),
                Format::Json => to_json(&descriptor_out::json(&d))?,
            })
        }
        LayoutCommand::Att(args) => {
            let region = att::build(args, cfg)?;
            Ok(match format {
                Format::Table => att_out::text(&region),
                Format::Csv => rows::csv_rows(&att_out::rows(&region)),
                Format::Json => to_json(&att_out::json(&region))?,
            })
        }
    }
}

fn to_json(value: &impl Serialize) -> Result<String, LayoutError> {
    serde_json::to_string_pretty(value)
        .map(|s| s + "\n")
        .map_err(|e| LayoutError::new("--format", "json", e.to_string()))
}

/// Named ranges in layout order, serialized as a JSON object `{ name: [start, end] }`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Ranges(pub Vec<(String, Range<usize>)>);

impl Ranges {
    /// The ranges of a via-abi field table.
    #[must_use]
    pub fn from_fields(fields: &[via_abi::FieldInfo]) -> Self {
        Ranges(
            fields
                .iter()
                .map(|f| (f.name.to_owned(), f.range.clone()))
                .collect(),
        )
    }
}

impl Serialize for Ranges {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, range) in &self.0 {
            map.serialize_entry(name, &[range.start, range.end])?;
        }
        map.end()
    }
}
