//! LU decomposition (`A = L U`, `L` unit lower triangular) of an `n x n` matrix on an
//! `s x t` grid of processes with BSPlib, right-looking, as in Bisseling's BSPedupack
//! but without pivoting: the matrix is made strictly diagonally dominant
//! ([`lu_matrix`]), for which elimination without pivoting is stable, so the result can
//! be compared with a direct computation on the host ([`lu_reference`]).
//!
//! **Distribution.** 2D cyclic: element `(i, j)` lives on process `(i mod s) * t +
//! (j mod t)`, at local row `i / s`, column `j / t`, row-major `f64` in host memory.
//!
//! **Stage k** (two supersteps):
//! 1. the owner of `a_kk` puts it into the `pivot` area of every process of its grid
//!    column; the owners of row `k` put their part of it (columns `> k`) into the `urow`
//!    area of every process of their grid column; sync;
//! 2. the owners of column `k` compute `l_ik = a_ik / a_kk` for their rows `> k`, keep
//!    them in place and put them into the `lcol` area of every process of their grid
//!    row; sync;
//!
//! then every process updates its part of the trailing matrix, `a_ij -= l_ik * a_kj`.
//! The CPU pays the loads and stores of what it touches and `FLOP_CYCLES` per
//! multiply-add or division.

use super::{bsp_err, vipl_err};
use crate::bsp::{Bsp, BspConfig};
use host_driver::{IterationRecord, ProgramError, ProgramReport, ProgramResult, Vipl};
use sim_kernel::Cycles;
use std::cell::RefCell;
use std::rc::Rc;
use via_abi::MacAddr;
use vmpi::Rank;

/// CPU cycles per multiply-add (or division) of the elimination besides its loads and
/// stores (assumption: the Pentium III's x87 unit issues an `FMUL` every 2 cycles and an
/// `FADD` every cycle, so a dependent-free multiply-add runs at about 2 cycles; a
/// division takes longer, but there are only `n` per stage).
pub const FLOP_CYCLES: u64 = 2;

/// What the LU program does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LuParams {
    /// Matrix order.
    pub n: u32,
    /// Grid rows.
    pub s: u16,
    /// Grid columns.
    pub t: u16,
}

/// Where the processes leave the factored matrix (row-major, `n * n`, `L` below the
/// diagonal, `U` on and above), for the harness to check.
pub type LuSink = Rc<RefCell<Vec<f64>>>;

/// Element `(i, j)` of the test matrix of order `n`: a fixed pseudo-random value in
/// `[0, 1)` plus `n` on the diagonal (strictly diagonally dominant).
#[must_use]
pub fn lu_matrix(n: u32, i: u32, j: u32) -> f64 {
    let mut x = u64::from(i) << 32 | u64::from(j);
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    let u = (x >> 11) as f64 / (1u64 << 53) as f64;
    if i == j {
        u + f64::from(n)
    } else {
        u
    }
}

/// The same factorization on the host, in the same order of operations.
#[must_use]
pub fn lu_reference(n: u32) -> Vec<f64> {
    let m = n as usize;
    let mut a: Vec<f64> = (0..m * m)
        .map(|x| lu_matrix(n, (x / m) as u32, (x % m) as u32))
        .collect();
    for k in 0..m {
        let piv = a[k * m + k];
        for i in k + 1..m {
            a[i * m + k] /= piv;
        }
        for i in k + 1..m {
            let l = a[i * m + k];
            for j in k + 1..m {
                a[i * m + j] -= l * a[k * m + j];
            }
        }
    }
    a
}

/// Count of the indices `>= from` in `0..n` that are `== r (mod s)`, and the local
/// index of the first of them.
fn local_from(n: u32, s: u32, r: u32, from: u32) -> (u32, u32) {
    let first_local = if from <= r { 0 } else { (from - r).div_ceil(s) };
    let count = n.saturating_sub(r).div_ceil(s).saturating_sub(first_local);
    (first_local, count)
}

fn f64s(bytes: &[u8]) -> Vec<f64> {
    bytes
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .collect()
}

fn bytes(xs: &[f64]) -> Vec<u8> {
    xs.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Puts `len` bytes at `src` into `area` at `offset` on each process of `pids`.
async fn put_to(
    b: &mut Bsp,
    pids: impl Iterator<Item = u32>,
    src: u64,
    area: u64,
    offset: u64,
    len: u32,
) -> Result<(), ProgramError> {
    for q in pids {
        let pid = u16::try_from(q).map_err(|_| ProgramError::Protocol("process id"))?;
        b.put(pid, src, area, offset, len).await.map_err(bsp_err)?;
    }
    Ok(())
}

/// LU on process `rank` of an `s x t` grid. One record: the factorization's span
/// (after distribution and a sync, to the last stage's update). Every process writes
/// its part of the result into `sink`.
///
/// # Errors
/// A grid that does not match the world; the first BSP call that fails.
pub async fn bsp_lu(
    vipl: Vipl,
    rank: Rank,
    macs: Vec<MacAddr>,
    cfg: BspConfig,
    p: LuParams,
    sink: LuSink,
) -> ProgramResult {
    let mut b = Bsp::begin(vipl, rank, macs, cfg).await.map_err(bsp_err)?;
    let (s, t) = (u32::from(p.s), u32::from(p.t));
    if s * t != u32::from(b.nprocs()) || p.n == 0 {
        return Err(ProgramError::Protocol("the grid does not match the world"));
    }
    let n = p.n;
    let me = u32::from(b.pid());
    let (ps, pt) = (me / t, me % t);
    let nr = local_from(n, s, ps, 0).1;
    let nc = local_from(n, t, pt, 0).1;
    let row_bytes = u64::from(nc) * 8;
    let v = b.comm().vipl();
    let a = v
        .malloc((u64::from(nr) * row_bytes).max(8), 64)
        .await
        .map_err(vipl_err("malloc"))?;
    let pivot = v.malloc(8, 64).await.map_err(vipl_err("malloc"))?;
    let urow = v
        .malloc(row_bytes.max(8), 64)
        .await
        .map_err(vipl_err("malloc"))?;
    let lcol = v
        .malloc((u64::from(nr) * 8).max(8), 64)
        .await
        .map_err(vipl_err("malloc"))?;
    let tmp = v
        .malloc((u64::from(nr) * 8).max(8), 64)
        .await
        .map_err(vipl_err("malloc"))?;
    // The local part of A, written by the program (costed stores).
    for li in 0..nr {
        let row: Vec<f64> = (0..nc)
            .map(|lj| lu_matrix(n, li * s + ps, lj * t + pt))
            .collect();
        b.comm()
            .vipl()
            .write_mem(a + u64::from(li) * row_bytes, &bytes(&row))
            .await
            .map_err(vipl_err("store"))?;
    }
    b.push_reg(pivot, 8).await.map_err(bsp_err)?;
    b.push_reg(urow, row_bytes.max(8)).await.map_err(bsp_err)?;
    b.push_reg(lcol, (u64::from(nr) * 8).max(8))
        .await
        .map_err(bsp_err)?;
    b.sync().await.map_err(bsp_err)?;
    let setup_done = b.comm().vipl().now();
    let start = setup_done;
    for k in 0..n {
        let (kr, kc) = (k % s, k % t);
        // Stage k, superstep 1: the pivot and row k down the grid columns.
        if ps == kr && pt == kc {
            let at = a + u64::from(k / s) * row_bytes + u64::from(k / t) * 8;
            let column = (0..s).map(|q| q * t + pt);
            put_to(&mut b, column, at, pivot, 0, 8).await?;
        }
        let (c0, cn) = local_from(n, t, pt, k + 1);
        if ps == kr && cn > 0 {
            let at = a + u64::from(k / s) * row_bytes + u64::from(c0) * 8;
            let column = (0..s).map(|q| q * t + pt);
            put_to(&mut b, column, at, urow, u64::from(c0) * 8, cn * 8).await?;
        }
        b.sync().await.map_err(bsp_err)?;
        // Superstep 2: the multipliers along the grid rows.
        let (r0, rn) = local_from(n, s, ps, k + 1);
        if pt == kc && rn > 0 {
            let piv = f64s(
                &b.comm()
                    .vipl()
                    .read_mem(pivot, 8)
                    .await
                    .map_err(vipl_err("load"))?,
            )
            .first()
            .copied()
            .unwrap_or(1.0);
            let lc = u64::from(k / t);
            let mut ls = Vec::with_capacity(rn as usize);
            for li in r0..r0 + rn {
                let at = a + u64::from(li) * row_bytes + lc * 8;
                let x = f64s(
                    &b.comm()
                        .vipl()
                        .read_mem(at, 8)
                        .await
                        .map_err(vipl_err("load"))?,
                );
                let l = x.first().copied().unwrap_or(0.0) / piv;
                b.comm()
                    .vipl()
                    .write_mem(at, &l.to_le_bytes())
                    .await
                    .map_err(vipl_err("store"))?;
                ls.push(l);
            }
            b.comm()
                .vipl()
                .compute(Cycles(u64::from(rn) * FLOP_CYCLES))
                .await;
            b.comm()
                .vipl()
                .write_mem(tmp, &bytes(&ls))
                .await
                .map_err(vipl_err("store"))?;
            let row = (0..t).map(|q| ps * t + q);
            put_to(&mut b, row, tmp, lcol, u64::from(r0) * 8, rn * 8).await?;
        }
        b.sync().await.map_err(bsp_err)?;
        // The update of the local trailing matrix.
        if rn > 0 && cn > 0 {
            let v = b.comm().vipl();
            let ls = f64s(
                &v.read_mem(lcol + u64::from(r0) * 8, u64::from(rn) * 8)
                    .await
                    .map_err(vipl_err("load"))?,
            );
            let us = f64s(
                &v.read_mem(urow + u64::from(c0) * 8, u64::from(cn) * 8)
                    .await
                    .map_err(vipl_err("load"))?,
            );
            for (li, l) in (r0..r0 + rn).zip(&ls) {
                let at = a + u64::from(li) * row_bytes + u64::from(c0) * 8;
                let mut row = f64s(
                    &v.read_mem(at, u64::from(cn) * 8)
                        .await
                        .map_err(vipl_err("load"))?,
                );
                for (x, u) in row.iter_mut().zip(&us) {
                    *x -= l * u;
                }
                v.write_mem(at, &bytes(&row))
                    .await
                    .map_err(vipl_err("store"))?;
            }
            v.compute(Cycles(u64::from(rn) * u64::from(cn) * FLOP_CYCLES))
                .await;
        }
    }
    let end = b.comm().vipl().now();
    // Hand the result to the harness (instrumentation; the sink is not held across an
    // await, the other processes share it).
    let mut rows = Vec::with_capacity(nr as usize);
    for li in 0..nr {
        let at = a + u64::from(li) * row_bytes;
        rows.push(f64s(
            &b.comm()
                .vipl()
                .peek(at, row_bytes)
                .await
                .map_err(vipl_err("peek"))?,
        ));
    }
    {
        let m = n as usize;
        let mut out = sink.borrow_mut();
        if out.len() != m * m {
            *out = vec![f64::NAN; m * m];
        }
        for (li, row) in rows.into_iter().enumerate() {
            for (lj, x) in row.into_iter().enumerate() {
                let i = li * s as usize + ps as usize;
                let j = lj * t as usize + pt as usize;
                out[i * m + j] = x;
            }
        }
    }
    let v = b.end().await.map_err(bsp_err)?;
    Ok(ProgramReport {
        program: "bsp-lu",
        iterations: vec![IterationRecord {
            index: 0,
            bytes: n,
            start,
            end,
            verified_bytes: 0,
            warmup: false,
        }],
        setup_done,
        finished: v.now(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_index_ranges() {
        // n = 7, s = 2: rows of grid row 1 are 1, 3, 5; from 4 on: 5 (local 2).
        assert_eq!(local_from(7, 2, 1, 0), (0, 3));
        assert_eq!(local_from(7, 2, 1, 4), (2, 1));
        assert_eq!(local_from(7, 2, 0, 7), (4, 0));
        assert_eq!(local_from(1, 2, 1, 0), (0, 0));
    }

    #[test]
    fn reference_factors_reproduce_the_matrix() {
        let n = 12u32;
        let m = n as usize;
        let f = lu_reference(n);
        for i in 0..m {
            for j in 0..m {
                let mut x = 0.0;
                for k in 0..=i.min(j) {
                    let l = if k == i { 1.0 } else { f[i * m + k] };
                    x += l * f[k * m + j];
                }
                assert!((x - lu_matrix(n, i as u32, j as u32)).abs() < 1e-9);
            }
        }
    }
}
