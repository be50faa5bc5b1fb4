//! The probe of `hvia bsp probe`: the BSP cost parameters measured the way BSPlib's
//! `bspprobe` does, and the fitting of its records.
//!
//! **Probe.** `empty` supersteps with no communication give `L` (their mean length).
//! Then for each `h` in `hs`, `reps` supersteps of a total exchange: every process puts
//! `h / (p - 1)` bytes (rounded down to whole 8-byte words) into every other process, an
//! `h`-relation. A straight-line least-squares fit of superstep length against `h`
//! gives `g` (its slope, per byte) and an intercept. Process 0's records are the
//! measurement (every superstep ends for all at the same barrier).

use super::{bsp_err, vipl_err};
use crate::bsp::{Bsp, BspConfig};
use host_driver::{IterationRecord, ProgramError, ProgramReport, ProgramResult, Vipl};
use via_abi::MacAddr;
use vmpi::Rank;

/// What the probe measures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeParams {
    /// Empty supersteps timed for `L`.
    pub empty: u32,
    /// `h` values \[bytes sent and received per process\].
    pub hs: Vec<u32>,
    /// Supersteps timed per `h`.
    pub reps: u32,
}

impl Default for ProbeParams {
    fn default() -> Self {
        ProbeParams {
            empty: 8,
            hs: vec![4096, 16_384, 65_536],
            reps: 3,
        }
    }
}

/// The probe on process `rank`. Records: one per timed superstep, `bytes` = its `h`
/// (0 for the empty ones), `verified_bytes` = the bytes this process received in it and
/// checked.
///
/// # Errors
/// The first BSP call that fails; a byte that differs.
pub async fn bsp_probe(
    vipl: Vipl,
    rank: Rank,
    macs: Vec<MacAddr>,
    cfg: BspConfig,
    p: ProbeParams,
) -> ProgramResult {
    let mut b = Bsp::begin(vipl, rank, macs, cfg).await.map_err(bsp_err)?;
    let n = u64::from(b.nprocs());
    let me = u64::from(b.pid());
    let hmax = u64::from(p.hs.iter().copied().max().unwrap_or(0));
    let share_max = (hmax / n.saturating_sub(1).max(1)).max(8);
    let v = b.comm().vipl();
    let src = v.malloc(share_max, 64).await.map_err(vipl_err("malloc"))?;
    let area_len = share_max * n;
    let area = v.malloc(area_len, 64).await.map_err(vipl_err("malloc"))?;
    b.push_reg(area, area_len).await.map_err(bsp_err)?;
    b.sync().await.map_err(bsp_err)?;
    let setup_done = b.comm().vipl().now();
    let mut records = Vec::new();
    let mut index = 0u32;
    for _ in 0..p.empty {
        let start = b.comm().vipl().now();
        b.sync().await.map_err(bsp_err)?;
        let end = b.comm().vipl().now();
        records.push(IterationRecord {
            index,
            bytes: 0,
            start,
            end,
            verified_bytes: 0,
            warmup: false,
        });
        index += 1;
    }
    for &h in &p.hs {
        let share = (u64::from(h) / n.saturating_sub(1).max(1)) / 8 * 8;
        let share32 = u32::try_from(share).unwrap_or(u32::MAX);
        for rep in 0..p.reps {
            let mine: Vec<u8> = (0..share)
                .map(|k| (k as u8) ^ (me as u8).wrapping_mul(37) ^ (rep as u8))
                .collect();
            b.comm()
                .vipl()
                .poke(src, &mine)
                .await
                .map_err(vipl_err("poke"))?;
            let start = b.comm().vipl().now();
            for q in (0..b.nprocs()).filter(|&q| u64::from(q) != me) {
                b.put(q, src, area, me * share_max, share32)
                    .await
                    .map_err(bsp_err)?;
            }
            b.sync().await.map_err(bsp_err)?;
            let end = b.comm().vipl().now();
            let mut verified = 0;
            for q in (0..n).filter(|&q| q != me) {
                let got = b
                    .comm()
                    .vipl()
                    .peek(area + q * share_max, share)
                    .await
                    .map_err(vipl_err("peek"))?;
                let want = (0..share).map(|k| (k as u8) ^ (q as u8).wrapping_mul(37) ^ (rep as u8));
                if !got.iter().copied().eq(want) {
                    return Err(ProgramError::Protocol("a probe put's bytes differ"));
                }
                verified += share;
            }
            records.push(IterationRecord {
                index,
                bytes: h,
                start,
                end,
                verified_bytes: verified,
                warmup: false,
            });
            index += 1;
        }
    }
    let v = b.end().await.map_err(bsp_err)?;
    Ok(ProgramReport {
        program: "bsp-probe",
        iterations: records,
        setup_done,
        finished: v.now(),
    })
}

/// BSP cost parameters from a probe's records.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BspCost {
    /// Mean length of an empty superstep \[ns\].
    pub l_ns: f64,
    /// Slope of superstep length against `h` \[ns per byte\].
    pub g_ns_per_byte: f64,
    /// Intercept of that fit \[ns\] (`L` seen by supersteps that communicate).
    pub intercept_ns: f64,
}

/// Fits [`BspCost`] to probe records (`bytes` 0: empty supersteps).
#[must_use]
pub fn fit(records: &[IterationRecord]) -> BspCost {
    let ns = |r: &IterationRecord| (r.end - r.start).0 as f64 / 1e3;
    let empty: Vec<f64> = records.iter().filter(|r| r.bytes == 0).map(ns).collect();
    let l_ns = if empty.is_empty() {
        0.0
    } else {
        empty.iter().sum::<f64>() / empty.len() as f64
    };
    let pts: Vec<(f64, f64)> = records
        .iter()
        .filter(|r| r.bytes > 0)
        .map(|r| (f64::from(r.bytes), ns(r)))
        .collect();
    let m = pts.len() as f64;
    let (sx, sy) = pts.iter().fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    let sxx: f64 = pts.iter().map(|(x, _)| (x - sx / m).powi(2)).sum();
    let sxy: f64 = pts.iter().map(|(x, y)| (x - sx / m) * (y - sy / m)).sum();
    let g = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    BspCost {
        l_ns,
        g_ns_per_byte: g,
        intercept_ns: if m > 0.0 { sy / m - g * sx / m } else { 0.0 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim_kernel::Time;

    fn rec(bytes: u32, ns: u64) -> IterationRecord {
        IterationRecord {
            index: 0,
            bytes,
            start: Time(1_000),
            end: Time(1_000 + ns * 1_000),
            verified_bytes: 0,
            warmup: false,
        }
    }

    #[test]
    fn fit_recovers_a_line() {
        let r = vec![
            rec(0, 100),
            rec(0, 120),
            rec(1000, 2_000 + 1000 * 8),
            rec(2000, 2_000 + 2000 * 8),
            rec(4000, 2_000 + 4000 * 8),
        ];
        let c = fit(&r);
        assert!((c.l_ns - 110.0).abs() < 1e-9);
        assert!((c.g_ns_per_byte - 8.0).abs() < 1e-9);
        assert!((c.intercept_ns - 2_000.0).abs() < 1e-6);
        assert_eq!(fit(&[]).g_ns_per_byte, 0.0);
    }
}
