//! Growing buffers in simulated host memory ([`Staging`]) that a superstep's outgoing
//! records are built in, and a pool that keeps the outgrown ones for reuse (the host
//! heap has no `free`). Every byte is stored by the simulated CPU: record headers with
//! stores, payloads with `memcpy` from the user's memory.

use vmpi::{Comm, MpiError};

/// A buffer being filled from its start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Staging {
    /// First byte \[process VA\] (0 until first used).
    pub va: u64,
    /// Capacity \[bytes\].
    pub cap: u64,
    /// Bytes filled.
    pub len: u64,
}

/// Buffers free for reuse (address, capacity).
#[derive(Debug, Default)]
pub struct Pool {
    free: Vec<(u64, u64)>,
}

impl Pool {
    /// A buffer of at least `len` bytes.
    ///
    /// # Errors
    /// `malloc` failing.
    pub async fn take(&mut self, comm: &mut Comm, len: u64) -> Result<(u64, u64), MpiError> {
        let len = len.max(64);
        if let Some(i) = self.free.iter().position(|&(_, c)| c >= len) {
            return Ok(self.free.swap_remove(i));
        }
        let cap = len.next_power_of_two();
        let va = comm
            .vipl()
            .malloc(cap, 64)
            .await
            .map_err(|error| MpiError::Vipl {
                call: "malloc",
                error,
            })?;
        Ok((va, cap))
    }

    /// Gives a buffer back.
    pub fn give(&mut self, buf: (u64, u64)) {
        if buf.0 != 0 {
            self.free.push(buf);
        }
    }
}

fn vipl_err(call: &'static str) -> impl FnOnce(host_driver::VipError) -> MpiError {
    move |error| MpiError::Vipl { call, error }
}

impl Staging {
    /// Makes room for `more` bytes, moving the contents to a larger buffer if needed.
    async fn reserve(
        &mut self,
        comm: &mut Comm,
        pool: &mut Pool,
        more: u64,
    ) -> Result<(), MpiError> {
        let need = self.len + more;
        if need <= self.cap {
            return Ok(());
        }
        let (va, cap) = pool.take(comm, need.max(2 * self.cap)).await?;
        if self.len > 0 {
            comm.vipl()
                .memcpy(va, self.va, self.len)
                .await
                .map_err(vipl_err("memcpy"))?;
        }
        pool.give((self.va, self.cap));
        self.va = va;
        self.cap = cap;
        Ok(())
    }

    /// Appends `bytes` (CPU stores).
    ///
    /// # Errors
    /// `malloc` or the store failing.
    pub async fn push(
        &mut self,
        comm: &mut Comm,
        pool: &mut Pool,
        bytes: &[u8],
    ) -> Result<u64, MpiError> {
        self.reserve(comm, pool, bytes.len() as u64).await?;
        let at = self.len;
        comm.vipl()
            .write_mem(self.va + at, bytes)
            .await
            .map_err(vipl_err("store"))?;
        self.len += bytes.len() as u64;
        Ok(at)
    }

    /// Appends `len` bytes copied from `src` (`memcpy`), then zeros up to a multiple of
    /// `align`.
    ///
    /// # Errors
    /// `malloc` or the copy failing.
    pub async fn push_copy(
        &mut self,
        comm: &mut Comm,
        pool: &mut Pool,
        src: u64,
        len: u64,
        align: u64,
    ) -> Result<u64, MpiError> {
        let padded = len.next_multiple_of(align.max(1));
        self.reserve(comm, pool, padded).await?;
        let at = self.len;
        if len > 0 {
            comm.vipl()
                .memcpy(self.va + at, src, len)
                .await
                .map_err(vipl_err("memcpy"))?;
        }
        if padded > len {
            let pad = vec![0u8; usize::try_from(padded - len).unwrap_or(0)];
            comm.vipl()
                .write_mem(self.va + at + len, &pad)
                .await
                .map_err(vipl_err("store"))?;
        }
        self.len += padded;
        Ok(at)
    }

    /// Overwrites bytes at `at` (already filled).
    ///
    /// # Errors
    /// The store failing.
    pub async fn patch(&mut self, comm: &mut Comm, at: u64, bytes: &[u8]) -> Result<(), MpiError> {
        comm.vipl()
            .write_mem(self.va + at, bytes)
            .await
            .map_err(vipl_err("store"))
    }
}
