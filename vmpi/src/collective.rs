//! Who talks to whom in the collectives, as pure schedules, and the reductions they
//! apply.
//!
//! - Barrier: dissemination (Hensgen, Finkel and Manber 1988): in round `k` = 0, 1, ...
//!   while `2^k < p`, rank `r` sends to `(r + 2^k) mod p` and receives from
//!   `(r - 2^k) mod p`; after `ceil(log2 p)` rounds every rank has heard, directly or
//!   not, from every other.
//! - Bcast: binomial tree rooted at `root` (MPICH's algorithm): with ranks renumbered
//!   relative to the root, rank `v` receives from `v` minus its lowest set bit, then
//!   sends to `v + 2^k` for each `2^k` below that bit, largest first.
//! - Reduce: the same tree the other way: a rank receives from its children (smallest
//!   first), combines, and sends to its parent.
//! - Allreduce: Reduce to rank 0, then Bcast from it.
//!
//! Reductions are element-wise sums over little-endian `f64` or `i64` (the Pentium III's
//! byte order in memory, so the bytes are what the simulated host holds).

use crate::types::Rank;

/// One round of a dissemination barrier for `rank` of `size`: (send to, receive from).
#[must_use]
pub fn barrier_rounds(rank: Rank, size: u16) -> Vec<(Rank, Rank)> {
    let (r, p) = (u32::from(rank.0), u32::from(size));
    let mut out = Vec::new();
    let mut d = 1u32;
    while d < p {
        out.push((Rank(((r + d) % p) as u16), Rank(((r + p - d) % p) as u16)));
        d *= 2;
    }
    out
}

/// A rank's place in the binomial tree of a broadcast from `root`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeNode {
    /// The rank it receives from (none at the root).
    pub parent: Option<Rank>,
    /// The ranks it sends to, in sending order (largest subtree first).
    pub children: Vec<Rank>,
}

/// The binomial tree of `rank` for a collective rooted at `root` among `size` ranks.
#[must_use]
pub fn binomial(rank: Rank, root: Rank, size: u16) -> TreeNode {
    let p = u32::from(size);
    let v = (u32::from(rank.0) + p - u32::from(root.0) % p.max(1)) % p.max(1);
    let abs = |rel: u32| Rank(((rel + u32::from(root.0)) % p) as u16);
    // The lowest set bit of v bounds the subtree; the root's subtree spans all.
    let mut mask = 1u32;
    let mut parent = None;
    while mask < p {
        if v & mask != 0 {
            parent = Some(abs(v - mask));
            break;
        }
        mask <<= 1;
    }
    let mut children = Vec::new();
    let mut m = mask >> 1;
    while m > 0 {
        if v + m < p {
            children.push(abs(v + m));
        }
        m >>= 1;
    }
    TreeNode { parent, children }
}

/// The element type of a reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Datatype {
    /// `MPI_DOUBLE`.
    F64,
    /// `MPI_LONG_LONG` (`i64`), wrapping on overflow.
    I64,
}

impl Datatype {
    /// Size of one element \[bytes\].
    #[must_use]
    pub const fn size(self) -> usize {
        8
    }
}

/// `acc[i] += x[i]` element by element (`MPI_SUM`); a trailing partial element is left
/// alone. Returns the elements combined.
pub fn sum_into(dt: Datatype, acc: &mut [u8], x: &[u8]) -> usize {
    let mut n = 0;
    for (a, b) in acc.chunks_exact_mut(8).zip(x.chunks_exact(8)) {
        let mut ab = [0u8; 8];
        ab.copy_from_slice(a);
        let mut bb = [0u8; 8];
        bb.copy_from_slice(b);
        let out = match dt {
            Datatype::F64 => (f64::from_le_bytes(ab) + f64::from_le_bytes(bb)).to_le_bytes(),
            Datatype::I64 => i64::from_le_bytes(ab)
                .wrapping_add(i64::from_le_bytes(bb))
                .to_le_bytes(),
        };
        a.copy_from_slice(&out);
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn barrier_of_five_takes_three_rounds_of_doubling_distance() {
        assert_eq!(
            barrier_rounds(Rank(1), 5),
            vec![(Rank(2), Rank(0)), (Rank(3), Rank(4)), (Rank(0), Rank(2))]
        );
        assert!(barrier_rounds(Rank(0), 1).is_empty());
    }

    #[test]
    fn binomial_tree_of_eight_from_root_two() {
        // Relative ranks: 0 -> 4, 2, 1; 4 -> 6, 5; 2 -> 3; 6 -> 7.
        assert_eq!(
            binomial(Rank(2), Rank(2), 8),
            TreeNode {
                parent: None,
                children: vec![Rank(6), Rank(4), Rank(3)]
            }
        );
        assert_eq!(
            binomial(Rank(6), Rank(2), 8),
            TreeNode {
                parent: Some(Rank(2)),
                children: vec![Rank(0), Rank(7)]
            }
        );
        assert_eq!(
            binomial(Rank(1), Rank(2), 8),
            TreeNode {
                parent: Some(Rank(0)),
                children: vec![]
            }
        );
    }

    #[test]
    fn sums_of_doubles_and_longs() {
        let mut acc: Vec<u8> = [1.5f64, -2.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let x: Vec<u8> = [0.25f64, 4.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(sum_into(Datatype::F64, &mut acc, &x), 2);
        assert_eq!(&acc[..8], &1.75f64.to_le_bytes());
        assert_eq!(&acc[8..], &2.0f64.to_le_bytes());
        let mut acc = i64::MAX.to_le_bytes().to_vec();
        sum_into(Datatype::I64, &mut acc, &1i64.to_le_bytes());
        assert_eq!(acc, i64::MIN.to_le_bytes().to_vec(), "wraps");
    }

    proptest! {
        /// Every rank but the root has one parent, the parent lists it as a child, and
        /// the tree reaches every rank from the root.
        #[test]
        fn binomial_trees_span_every_rank(size in 1u16..70, root in 0u16..70) {
            let root = Rank(root % size);
            let nodes: Vec<TreeNode> = (0..size).map(|r| binomial(Rank(r), root, size)).collect();
            let mut reached = vec![false; usize::from(size)];
            let mut stack = vec![root];
            while let Some(r) = stack.pop() {
                prop_assert!(!reached[usize::from(r.0)], "reached twice");
                reached[usize::from(r.0)] = true;
                for &c in &nodes[usize::from(r.0)].children {
                    prop_assert_eq!(nodes[usize::from(c.0)].parent, Some(r));
                    stack.push(c);
                }
            }
            prop_assert!(reached.iter().all(|&x| x));
            prop_assert_eq!(nodes[usize::from(root.0)].parent, None);
        }

        /// Round k's send of rank r is round k's receive of its target, and after all
        /// rounds each rank has (transitively) heard from all.
        #[test]
        fn dissemination_reaches_everyone(size in 1u16..70) {
            let n = usize::from(size);
            let mut heard: Vec<Vec<bool>> = (0..n).map(|i| (0..n).map(|j| i == j).collect()).collect();
            let rounds: Vec<_> = (0..size).map(|r| barrier_rounds(Rank(r), size)).collect();
            let n_rounds = rounds.first().map_or(0, Vec::len);
            for k in 0..n_rounds {
                let before = heard.clone();
                for (r, mine) in rounds.iter().enumerate() {
                    let (to, _) = mine[k];
                    prop_assert_eq!(rounds[usize::from(to.0)][k].1, Rank(r as u16));
                    for j in 0..n {
                        if before[r][j] { heard[usize::from(to.0)][j] = true; }
                    }
                }
            }
            prop_assert!(heard.iter().all(|h| h.iter().all(|&x| x)));
        }
    }
}
