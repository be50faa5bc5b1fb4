//! The registry of presets embedded in the binary: `configs/<name>.toml`, one line each.

use super::error::ConfigError;

/// An embedded preset: a whole system configuration in TOML.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preset {
    /// The name given to `--preset`.
    pub name: &'static str,
    /// One line saying what system it describes.
    pub description: &'static str,
    /// Its path in the repository (used as the origin in error messages).
    pub file: &'static str,
    /// Its TOML text.
    pub text: &'static str,
}

/// Declares the preset in `configs/<name>.toml`.
macro_rules! preset {
    ($name:literal, $description:literal) => {
        Preset {
            name: $name,
            description: $description,
            file: concat!("configs/", $name, ".toml"),
            text: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../configs/",
                $name,
                ".toml"
            )),
        }
    };
}

/// The preset used when neither `--preset` nor `--config` is given.
pub const DEFAULT_PRESET: &str = "hvia-ge";

/// Every embedded preset, the default first.
pub const PRESETS: &[Preset] = &[
    preset!(
        "hvia-ge",
        "the published HVIA-GE system: 2 Pentium III 800 MHz nodes, PCI 32-bit/33 MHz, back to back"
    ),
    preset!(
        "hvia-ge-64-66",
        "what-if: system and local PCI at 64 bits / 66 MHz, the FPGA core following the PCI clock"
    ),
    preset!(
        "att-in-host",
        "what-if: the ATT in host memory, read by the card with DMA (the software-VIA way)"
    ),
    preset!(
        "burst-128",
        "what-if: 128-byte DMA bursts on the system and local PCI buses"
    ),
    preset!(
        "rdma-read",
        "what-if: RDMA read in the card's engine (VIA 1.0 optional), reliable-delivery VIs"
    ),
];

/// The embedded preset called `name`.
///
/// # Errors
/// [`ConfigError::UnknownPreset`] listing the available names.
pub fn find(name: &str) -> Result<&'static Preset, ConfigError> {
    PRESETS
        .iter()
        .find(|p| p.name == name)
        .ok_or_else(|| ConfigError::UnknownPreset {
            name: name.to_owned(),
            available: PRESETS
                .iter()
                .map(|p| p.name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_comes_first_and_names_are_unique() {
        assert_eq!(PRESETS[0].name, DEFAULT_PRESET);
        for (i, p) in PRESETS.iter().enumerate() {
            assert!(
                PRESETS[..i].iter().all(|q| q.name != p.name),
                "{} twice",
                p.name
            );
            assert!(!p.description.contains('\n'));
        }
    }

    #[test]
    fn unknown_names_list_the_available_ones() {
        let err = find("nope").unwrap_err().to_string();
        assert!(err.contains("`nope`") && err.contains("hvia-ge"), "{err}");
        assert_eq!(find("hvia-ge").unwrap().file, "configs/hvia-ge.toml");
    }
}
