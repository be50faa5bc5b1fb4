//! [`SdramParams`]: every timing and geometry constant of the card SDRAM, with its unit
//! and source.
//!
//! The HVIA-GE paper publishes only the capacity (64 MB) and that the controller reads it
//! in burst mode. Everything else is an **assumption: a PC100-class SDRAM at 100 MHz,
//! CAS latency 2**, with values from the Micron MT48LC-series SDR SDRAM datasheets
//! (MT48LC8M16A2 / MT48LC16M16A2, speed grade -7E / -75, "PC100 2-2-2"), converted to
//! 10 ns cycles and rounded up:
//!
//! | name | value | unit | datasheet value | source |
//! |---|---|---|---|---|
//! | `t_rcd` | 2 | cycles | tRCD 15..20 ns | Micron MT48LC, -7E/-75 |
//! | `cas_latency` | 2 | cycles | CL2 at 100 MHz | Micron MT48LC, -7E (PC100 2-2-2) |
//! | `t_rp` | 2 | cycles | tRP 15..20 ns | Micron MT48LC, -7E/-75 |
//! | `t_ras` | 5 | cycles | tRAS min 37..44 ns | Micron MT48LC, -75 |
//! | `t_rrd` | 2 | cycles | tRRD 14..15 ns | Micron MT48LC |
//! | `t_wr` | 2 | cycles | tWR 1 CLK + 7..7.5 ns | Micron MT48LC |
//! | `t_rfc` | 7 | cycles | tRFC 66 ns | Micron MT48LC |
//! | `refresh_interval` | 1562 | cycles | 64 ms / 4096 rows = 15.625 us | Micron MT48LC (4K refresh), rounded down |
//! | `burst_len` | 8 | beats | BL 1/2/4/8/page programmable | assumption: BL8, sequential |
//! | `data_width` | 4 | bytes | x16 parts | assumption: two x16 parts side by side (32-bit bus) |
//! | `banks` | 4 | banks | 4 internal banks | Micron MT48LC |
//! | `row_bytes` | 4096 | bytes | - | assumption: 64 MiB / (4 banks x 4096 rows) = 4 KiB per row |
//! | `capacity` | 64 MiB | bytes | - | paper: 64 MB SDRAM |
//! | `turnaround` | 1 | cycles | DQM masking before write-after-read | assumption |
//!
//! Policy choices (documented in [`super::controller`]): open-page (a row stays open until
//! another row of its bank or a refresh needs the bank), addresses mapped row:bank:column
//! (column in the low bits, so a sequential stream moves to the next bank every row).

use sim_kernel::{Bytes, Cycles};

/// Timing and geometry of the card SDRAM (one rank). All timings are in cycles of the
/// SDRAM clock domain (`card.sdram`, 100 MHz in the default preset, so 1 cycle = 10 ns).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SdramParams {
    /// ACTIVE to READ/WRITE delay (tRCD) \[cycles\]. Default 2 (20 ns); assumption:
    /// PC100 SDRAM, Micron MT48LC series -7E/-75, tRCD 15..20 ns.
    pub t_rcd: Cycles,
    /// CAS latency: READ command to first data beat (CL) \[cycles\]. Default 2; assumption:
    /// PC100 SDRAM at CL2 (Micron MT48LC -7E is CL2 at 100 MHz).
    pub cas_latency: Cycles,
    /// PRECHARGE command period: PRECHARGE to ACTIVE of the same bank (tRP) \[cycles\].
    /// Default 2 (20 ns); assumption: Micron MT48LC series, tRP 15..20 ns.
    pub t_rp: Cycles,
    /// ACTIVE to PRECHARGE minimum (tRAS) \[cycles\]. Default 5 (50 ns); assumption:
    /// Micron MT48LC series -75, tRAS 44 ns.
    pub t_ras: Cycles,
    /// ACTIVE to ACTIVE of different banks (tRRD) \[cycles\]. Default 2 (20 ns);
    /// assumption: Micron MT48LC series, tRRD 14..15 ns.
    pub t_rrd: Cycles,
    /// Write recovery: last write data beat to PRECHARGE (tWR) \[cycles\]. Default 2;
    /// assumption: Micron MT48LC series, tWR = 1 CLK + 7..7.5 ns.
    pub t_wr: Cycles,
    /// AUTO REFRESH period: the SDRAM is busy this long after a REFRESH (tRFC) \[cycles\].
    /// Default 7 (70 ns); assumption: Micron MT48LC series, tRFC 66 ns.
    pub t_rfc: Cycles,
    /// Average interval between AUTO REFRESH commands (tREFI) \[cycles\]. Default 1562:
    /// 64 ms / 4096 rows = 15.625 us = 1562.5 cycles at 100 MHz, rounded down so refresh
    /// is never late; assumption: Micron MT48LC 4K-refresh parts.
    pub refresh_interval: Cycles,
    /// Burst length of every READ and WRITE \[beats\]; 1, 2, 4 or 8. Default 8;
    /// assumption: the paper says the controller reads in burst mode, not which length.
    pub burst_len: u32,
    /// Width of the data bus \[bytes per beat\], 1..=8. Default 4 (32 bits); assumption:
    /// two x16 parts side by side, matching the FPGA's 32-bit internal word.
    pub data_width: Bytes,
    /// Internal banks \[banks\]. Default 4; Micron MT48LC series.
    pub banks: u32,
    /// Bytes in one row of one bank across the whole data bus \[bytes\]. Default 4096;
    /// assumption: 64 MiB / (4 banks x 4096 rows).
    pub row_bytes: Bytes,
    /// Capacity \[bytes\]. Default 64 MiB; paper: 64 MB SDRAM on the card.
    pub capacity: Bytes,
    /// Idle cycles on the data bus between the last beat of a read burst and the first
    /// beat of a write (DQM masking) \[cycles\]. Default 1; assumption.
    pub turnaround: Cycles,
}

impl Default for SdramParams {
    /// The PC100 CL2 preset of the table in the module docs.
    fn default() -> Self {
        Self {
            t_rcd: Cycles(2),
            cas_latency: Cycles(2),
            t_rp: Cycles(2),
            t_ras: Cycles(5),
            t_rrd: Cycles(2),
            t_wr: Cycles(2),
            t_rfc: Cycles(7),
            refresh_interval: Cycles(1562),
            burst_len: 8,
            data_width: Bytes(4),
            banks: 4,
            row_bytes: Bytes(4096),
            capacity: Bytes(64 << 20),
            turnaround: Cycles(1),
        }
    }
}

/// Why a set of [`SdramParams`] cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SdramParamsError {
    /// Burst length must be 1, 2, 4 or 8 beats (SDR SDRAM mode register).
    #[error("SDRAM burst length {0} is not 1, 2, 4 or 8 beats")]
    BurstLen(u32),
    /// Data width must be 1..=8 bytes and divide the row size.
    #[error("SDRAM data width {0} bytes is not 1..=8 or does not divide the row")]
    DataWidth(u64),
    /// The geometry does not add up: banks and row size must be non-zero and the capacity
    /// a non-zero whole number of rows in every bank, at most 4 GiB (32-bit addresses).
    #[error("SDRAM geometry does not add up: {0}")]
    Geometry(&'static str),
    /// CAS latency, tRCD, tRFC and the refresh interval must be at least one cycle, and
    /// the refresh interval longer than tRP + tRFC.
    #[error("SDRAM timing {0} is out of range")]
    Timing(&'static str),
}

impl SdramParams {
    /// Checks the parameters (see [`SdramParamsError`]).
    ///
    /// # Errors
    /// The first rule broken.
    pub fn validate(&self) -> Result<(), SdramParamsError> {
        if !matches!(self.burst_len, 1 | 2 | 4 | 8) {
            return Err(SdramParamsError::BurstLen(self.burst_len));
        }
        let w = self.data_width.0;
        if !(1..=8).contains(&w) || self.row_bytes.0 % w != 0 {
            return Err(SdramParamsError::DataWidth(w));
        }
        if self.banks == 0 || self.row_bytes.0 == 0 {
            return Err(SdramParamsError::Geometry("banks and row size must be > 0"));
        }
        let stripe = self.row_bytes.0.saturating_mul(u64::from(self.banks));
        if self.capacity.0 == 0 || self.capacity.0 % stripe != 0 {
            return Err(SdramParamsError::Geometry(
                "capacity must be a non-zero multiple of banks x row size",
            ));
        }
        if self.capacity.0 > 1 << 32 {
            return Err(SdramParamsError::Geometry("capacity above 4 GiB"));
        }
        if self.cas_latency.0 == 0 {
            return Err(SdramParamsError::Timing("cas_latency"));
        }
        if self.t_rcd.0 == 0 {
            return Err(SdramParamsError::Timing("t_rcd"));
        }
        if self.t_rfc.0 == 0 {
            return Err(SdramParamsError::Timing("t_rfc"));
        }
        if self.refresh_interval.0 <= self.t_rp.0 + self.t_rfc.0 {
            return Err(SdramParamsError::Timing("refresh_interval"));
        }
        Ok(())
    }

    /// Bytes moved by one burst: `burst_len * data_width` (32 by default) \[bytes\].
    #[must_use]
    pub fn burst_bytes(&self) -> u64 {
        u64::from(self.burst_len).saturating_mul(self.data_width.0)
    }

    /// Bank of byte address `addr` (row:bank:column mapping).
    #[must_use]
    pub fn bank_of(&self, addr: u64) -> u32 {
        let b = (addr / self.row_bytes.0.max(1)) % u64::from(self.banks.max(1));
        // b < banks, which is a u32.
        u32::try_from(b).unwrap_or(0)
    }

    /// Row (within its bank) of byte address `addr` (row:bank:column mapping).
    #[must_use]
    pub fn row_of(&self, addr: u64) -> u64 {
        addr / self.row_bytes.0.max(1) / u64::from(self.banks.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid_and_maps_row_bank_column() {
        let p = SdramParams::default();
        assert_eq!(p.validate(), Ok(()));
        assert_eq!(p.burst_bytes(), 32);
        assert_eq!(
            p.capacity.0 / (u64::from(p.banks) * p.row_bytes.0),
            4096,
            "rows"
        );
        assert_eq!((p.bank_of(0), p.row_of(0)), (0, 0));
        assert_eq!((p.bank_of(0x0FFF), p.row_of(0x0FFF)), (0, 0));
        assert_eq!((p.bank_of(0x1000), p.row_of(0x1000)), (1, 0));
        assert_eq!((p.bank_of(0x3000), p.row_of(0x3000)), (3, 0));
        assert_eq!((p.bank_of(0x4000), p.row_of(0x4000)), (0, 1));
        assert_eq!(p.row_of((64 << 20) - 1), 4095);
    }

    #[test]
    fn bad_params_are_errors() {
        let ok = SdramParams::default();
        let cases = [
            SdramParams {
                burst_len: 3,
                ..ok.clone()
            },
            SdramParams {
                data_width: Bytes(0),
                ..ok.clone()
            },
            SdramParams {
                banks: 0,
                ..ok.clone()
            },
            SdramParams {
                capacity: Bytes(4096 * 4 + 1),
                ..ok.clone()
            },
            SdramParams {
                capacity: Bytes(1 << 33),
                ..ok.clone()
            },
            SdramParams {
                cas_latency: Cycles(0),
                ..ok.clone()
            },
            SdramParams {
                refresh_interval: Cycles(9),
                ..ok.clone()
            },
        ];
        for c in cases {
            assert!(c.validate().is_err(), "{c:?}");
        }
    }
}
