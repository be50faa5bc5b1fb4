//! Collectives over the point-to-point protocol, in their own context (a collective
//! never matches a user receive): `MPI_Barrier` (dissemination), `MPI_Bcast` (binomial
//! tree), `MPI_Reduce` (the tree the other way, `MPI_SUM` on `f64` / `i64`),
//! `MPI_Allreduce` (Reduce to rank 0, then Bcast). Each call takes the next collective
//! number as its tag, so consecutive collectives cannot mix even where the schedules
//! would allow it. The sums run on the simulated CPU: the operands are loaded and the
//! result stored through the cache model, plus `reduce_cycles_per_element`.

use super::{Call, Comm, MpiError};
use crate::collective::{barrier_rounds, binomial, sum_into, Datatype};
use crate::types::{Context, Rank, Source, Tag, TagSel};
use sim_kernel::Cycles;

/// CPU cycles per element of a sum besides its loads and stores (assumption: the
/// Pentium III issues one x87 `FADD` or two integer adds per cycle with a 3-cycle
/// latency; a loop of dependent-free element sums runs at about 2 cycles per element
/// with its loop overhead).
pub const REDUCE_CYCLES_PER_ELEMENT: u64 = 2;

impl Comm {
    fn next_coll_tag(&mut self) -> Tag {
        let t = Tag(i32::try_from(self.coll_seq % (i32::MAX as u64)).unwrap_or(0));
        self.coll_seq += 1;
        t
    }

    /// A scratch buffer of at least `len` bytes (reused: the heap has no `free`).
    async fn scratch(&mut self, len: u64) -> Result<(u64, u64), MpiError> {
        let len = len.max(1);
        if let Some(i) = self.scratch_free.iter().position(|&(_, n)| n >= len) {
            return Ok(self.scratch_free.swap_remove(i));
        }
        let va = self.vipl.malloc(len, 64).await.call("malloc")?;
        Ok((va, len))
    }

    /// `MPI_Barrier`.
    ///
    /// # Errors
    /// What the progress met.
    pub async fn barrier(&mut self) -> Result<(), MpiError> {
        let tag = self.next_coll_tag();
        for (to, from) in barrier_rounds(self.rank, self.size) {
            let c = Context::WORLD_COLLECTIVE;
            let s = self.isend_in(0, 0, to, tag, c).await?;
            let r = self
                .irecv_in(0, 0, Source::Rank(from), TagSel::Tag(tag), c)
                .await?;
            self.waitall(&[s, r]).await?;
        }
        Ok(())
    }

    /// `MPI_Bcast` of `len` bytes at `buf` from `root`.
    ///
    /// # Errors
    /// A root outside the world; what the progress met.
    pub async fn bcast(&mut self, buf: u64, len: u32, root: Rank) -> Result<(), MpiError> {
        if root.0 >= self.size {
            return Err(MpiError::Argument("MPI_Bcast: root outside the world"));
        }
        let tag = self.next_coll_tag();
        let c = Context::WORLD_COLLECTIVE;
        let node = binomial(self.rank, root, self.size);
        if let Some(p) = node.parent {
            let r = self
                .irecv_in(buf, len, Source::Rank(p), TagSel::Tag(tag), c)
                .await?;
            self.wait(r).await?;
        }
        let mut sends = Vec::with_capacity(node.children.len());
        for ch in node.children {
            sends.push(self.isend_in(buf, len, ch, tag, c).await?);
        }
        self.waitall(&sends).await?;
        Ok(())
    }

    /// `MPI_Reduce` with `MPI_SUM` of `count` elements of `dt` at `send` into `recv`
    /// at `root` (`recv` is not touched elsewhere).
    ///
    /// # Errors
    /// A root outside the world; what the progress met.
    pub async fn reduce(
        &mut self,
        send: u64,
        recv: u64,
        count: u32,
        dt: Datatype,
        root: Rank,
    ) -> Result<(), MpiError> {
        if root.0 >= self.size {
            return Err(MpiError::Argument("MPI_Reduce: root outside the world"));
        }
        let bytes = u64::from(count) * dt.size() as u64;
        let len = u32::try_from(bytes).map_err(|_| MpiError::Argument("MPI_Reduce: too large"))?;
        let tag = self.next_coll_tag();
        let c = Context::WORLD_COLLECTIVE;
        let node = binomial(self.rank, root, self.size);
        let acc = self.scratch(bytes).await?;
        let tmp = self.scratch(bytes).await?;
        let mut sum = self.vipl.read_mem(send, bytes).await.call("load")?;
        for &ch in node.children.iter().rev() {
            let r = self
                .irecv_in(tmp.0, len, Source::Rank(ch), TagSel::Tag(tag), c)
                .await?;
            self.wait(r).await?;
            let x = self.vipl.read_mem(tmp.0, bytes).await.call("load")?;
            let n = sum_into(dt, &mut sum, &x) as u64;
            self.vipl
                .compute(Cycles(n * REDUCE_CYCLES_PER_ELEMENT))
                .await;
        }
        let out = if node.parent.is_some() { acc.0 } else { recv };
        self.vipl.write_mem(out, &sum).await.call("store")?;
        if let Some(p) = node.parent {
            let s = self.isend_in(acc.0, len, p, tag, c).await?;
            self.wait(s).await?;
        }
        self.scratch_free.push(acc);
        self.scratch_free.push(tmp);
        Ok(())
    }

    /// `MPI_Allreduce` with `MPI_SUM`: Reduce to rank 0, then Bcast from it.
    ///
    /// # Errors
    /// As [`Comm::reduce`] and [`Comm::bcast`].
    pub async fn allreduce(
        &mut self,
        send: u64,
        recv: u64,
        count: u32,
        dt: Datatype,
    ) -> Result<(), MpiError> {
        self.reduce(send, recv, count, dt, Rank(0)).await?;
        let len = u32::try_from(u64::from(count) * dt.size() as u64)
            .map_err(|_| MpiError::Argument("MPI_Allreduce: too large"))?;
        self.bcast(recv, len, Rank(0)).await
    }
}
