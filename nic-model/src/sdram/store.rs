//! [`SdramStore`]: the card SDRAM's bytes (64 MiB by default), sparse, bounds-checked.
//!
//! Real bytes, no timing: the [`SdramController`](super::SdramController) says *when* an
//! access happens, the store holds *what* is there. Memory is allocated in 4 KiB chunks on
//! first write; bytes never written read as zero (SDRAM contents after power-up are
//! undefined; zero is the model's choice, and a zeroed ATT entry never translates).

/// Size of one allocation chunk \[bytes\].
const CHUNK: u64 = 4096;

/// An access that does not fit inside the SDRAM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("SDRAM access of {len} bytes at {addr:#x} runs past the end of the {size}-byte SDRAM")]
pub struct SdramError {
    /// First byte address of the access.
    pub addr: u64,
    /// Length of the access \[bytes\].
    pub len: u64,
    /// Capacity of the SDRAM \[bytes\].
    pub size: u64,
}

/// The bytes of the card SDRAM.
#[derive(Clone, Debug)]
pub struct SdramStore {
    size: u64,
    /// The chunks up to the last one written (a chunk past the end reads as zero): a
    /// card that keeps its tables in the first megabytes pays for a table of those, not
    /// of all 16,384 chunks of 64 MiB, when a system is built and dropped.
    chunks: Vec<Option<Box<[u8]>>>,
}

impl SdramStore {
    /// A store of `size` bytes, all reading as zero.
    #[must_use]
    pub fn new(size: u64) -> Self {
        Self {
            size,
            chunks: Vec::new(),
        }
    }

    /// Capacity \[bytes\].
    #[must_use]
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Bytes of memory actually allocated (written chunks) \[bytes\].
    #[must_use]
    pub fn allocated(&self) -> u64 {
        let n = self.chunks.iter().filter(|c| c.is_some()).count() as u64;
        n * CHUNK
    }

    fn check(&self, addr: u64, len: u64) -> Result<(), SdramError> {
        match addr.checked_add(len) {
            Some(end) if end <= self.size => Ok(()),
            _ => Err(SdramError {
                addr,
                len,
                size: self.size,
            }),
        }
    }

    /// Copies `buf.len()` bytes starting at `addr` into `buf`.
    ///
    /// # Errors
    /// The range runs past the end of the SDRAM (nothing is copied).
    pub fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), SdramError> {
        self.check(addr, buf.len() as u64)?;
        let mut done = 0usize;
        while done < buf.len() {
            let a = addr + done as u64;
            let (chunk, off) = (a / CHUNK, a % CHUNK);
            let n = usize::try_from((CHUNK - off).min((buf.len() - done) as u64)).unwrap_or(0);
            let dst = &mut buf[done..done + n];
            match self.chunk(chunk) {
                Some(src) => {
                    let o = usize::try_from(off).unwrap_or(0);
                    dst.copy_from_slice(&src[o..o + n]);
                }
                None => dst.fill(0),
            }
            done += n;
        }
        Ok(())
    }

    /// Reads `len` bytes at `addr` into a new vector.
    ///
    /// # Errors
    /// The range runs past the end of the SDRAM.
    pub fn read_vec(&self, addr: u64, len: usize) -> Result<Vec<u8>, SdramError> {
        let mut v = vec![0u8; len];
        self.read(addr, &mut v)?;
        Ok(v)
    }

    /// Writes `data` starting at `addr`.
    ///
    /// # Errors
    /// The range runs past the end of the SDRAM (nothing is written).
    pub fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), SdramError> {
        self.check(addr, data.len() as u64)?;
        let mut done = 0usize;
        while done < data.len() {
            let a = addr + done as u64;
            let (chunk, off) = (a / CHUNK, a % CHUNK);
            let n = usize::try_from((CHUNK - off).min((data.len() - done) as u64)).unwrap_or(0);
            let o = usize::try_from(off).unwrap_or(0);
            if let Some(dst) = self.chunk_mut(chunk) {
                dst[o..o + n].copy_from_slice(&data[done..done + n]);
            }
            done += n;
        }
        Ok(())
    }

    fn chunk(&self, index: u64) -> Option<&[u8]> {
        let i = usize::try_from(index).ok()?;
        self.chunks.get(i)?.as_deref()
    }

    /// Chunk `index` (inside the SDRAM: `write` checks the range first), allocated on
    /// first write.
    fn chunk_mut(&mut self, index: u64) -> Option<&mut [u8]> {
        let i = usize::try_from(index).ok()?;
        if i >= self.chunks.len() && index < self.size.div_ceil(CHUNK) {
            self.chunks.resize_with(i + 1, || None);
        }
        let slot = self.chunks.get_mut(i)?;
        let c = slot.get_or_insert_with(|| vec![0u8; CHUNK as usize].into_boxed_slice());
        Some(&mut c[..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn unwritten_bytes_read_zero_and_writes_stick() {
        let mut s = SdramStore::new(64 << 20);
        assert_eq!(s.read_vec(0x1234, 4), Ok(vec![0; 4]));
        assert_eq!(s.allocated(), 0);
        s.write(0x0FFE, &[1, 2, 3, 4]).expect("in range");
        assert_eq!(s.allocated(), 2 * 4096, "a write across a chunk boundary");
        assert_eq!(s.read_vec(0x0FFD, 6), Ok(vec![0, 1, 2, 3, 4, 0]));
    }

    #[test]
    fn out_of_range_is_an_error() {
        let mut s = SdramStore::new(64 << 20);
        let end = 64 << 20;
        assert_eq!(s.read_vec(end - 4, 4).map(|v| v.len()), Ok(4));
        let e = SdramError {
            addr: end - 3,
            len: 4,
            size: end,
        };
        assert_eq!(s.read_vec(end - 3, 4), Err(e));
        assert_eq!(s.write(end - 3, &[0; 4]), Err(e));
        assert!(s.write(u64::MAX, &[0; 2]).is_err());
        assert_eq!(s.allocated(), 0, "a refused write writes nothing");
        assert_eq!(
            e.to_string(),
            "SDRAM access of 4 bytes at 0x3fffffd runs past the end of the 67108864-byte SDRAM"
        );
    }

    proptest! {
        #[test]
        fn behaves_like_a_flat_array(ops in proptest::collection::vec(
            (0u64..20_000, 0usize..6000, any::<u64>()), 1..20)) {
            let mut s = SdramStore::new(20_000);
            let mut flat = vec![0u8; 20_000];
            for (addr, len, seed) in &ops {
                let mut data = vec![0u8; *len];
                sim_kernel::SplitMix64::new(*seed).fill(&mut data);
                let fits = addr + data.len() as u64 <= 20_000;
                prop_assert_eq!(s.write(*addr, &data).is_ok(), fits);
                if fits {
                    let a = *addr as usize;
                    flat[a..a + data.len()].copy_from_slice(&data);
                }
            }
            prop_assert_eq!(s.read_vec(0, 20_000), Ok(flat));
        }
    }
}
