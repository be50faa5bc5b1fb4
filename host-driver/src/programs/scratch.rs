//! The instrumentation buffers of a ping-pong program: the message it writes and the
//! message it checks, every iteration (not part of the modelled program: its memory is
//! the host memory).
//!
//! With `touch_data` off the payload is written and checked by instrumentation at no
//! simulated cost. It goes through host memory a [`CHUNK`] at a time, each piece of the
//! pattern made as it is needed ([`pattern_chunk_into`]): a 1 MiB message is then
//! written once and read once, where making it whole, copying it in, and reading it
//! back whole into a second buffer to compare with a third moved the megabyte about
//! eight times through the simulating machine's memory (the 1 MiB ping-pong on one
//! thread ran 5.5 % faster for this, README "Simulation speed"). The bytes written, the bytes
//! compared and the errors are those of the whole-message way: no chunk costs
//! simulated time or an event, a fault anywhere wins over a mismatch (every chunk is
//! read), and a mismatch names the first differing byte of the message. With
//! `touch_data` on, the costed loads and stores take the whole message as before.

use super::{compare, fill, flag, pattern_chunk_into, pattern_into, Direction};
use crate::program::ProgramError;
use crate::vipl::Vipl;
use crate::VipResult;

/// Bytes of a message written or read by one instrumentation access: a piece and the
/// bytes read back fit the simulating machine's L2 cache, and few accesses are made
/// (each costs a page-table walk and a look at the cache model; 16 KiB measured
/// slower, 128 KiB the same).
const CHUNK: u32 = 64 * 1024;

/// `[off, off + n)` of each piece of a `len`-byte range (none for an empty one).
fn chunks(len: u32) -> impl Iterator<Item = (u32, u32)> {
    (0..len.div_ceil(CHUNK)).map(move |c| {
        let off = c * CHUNK;
        (off, (len - off).min(CHUNK))
    })
}

/// The buffers a ping-pong program reuses every iteration: a piece of the message it
/// writes or expects, the bytes it reads back, and the whole message for costed access.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    piece: Vec<u8>,
    got: Vec<u8>,
    whole: Vec<u8>,
}

impl Scratch {
    /// Writes the message `pattern(i, dir, len)` at `va`: costed stores if `touch`,
    /// else instrumentation for all but the last byte and a costed store of the flag.
    pub(crate) async fn fill(
        &mut self,
        vipl: &Vipl,
        va: u64,
        (i, dir, len): (u32, Direction, u32),
        touch: bool,
    ) -> VipResult<()> {
        if touch || len == 0 {
            let mut whole = std::mem::take(&mut self.whole);
            pattern_into(&mut whole, i, dir, len);
            self.whole = fill(vipl, va, whole, touch).await?;
            return Ok(());
        }
        let body = len - 1;
        if body == 0 {
            // As the whole-message way: an empty instrumentation write first.
            self.piece = vipl.poke_owned(va, Vec::new()).await?;
        }
        for (off, n) in chunks(body) {
            let mut piece = std::mem::take(&mut self.piece);
            pattern_chunk_into(&mut piece, i, dir, len, off, n);
            self.piece = vipl.poke_owned(va + u64::from(off), piece).await?;
        }
        vipl.write_mem(va + u64::from(body), &[flag(i)]).await
    }

    /// Compares the buffer at `va` with `pattern(i, dir, len)` (costed loads if
    /// `touch`, else instrumentation); returns the bytes verified.
    pub(crate) async fn verify(
        &mut self,
        vipl: &Vipl,
        va: u64,
        (i, dir, len): (u32, Direction, u32),
        touch: bool,
    ) -> Result<u64, ProgramError> {
        let failed = |error| ProgramError::Vipl {
            call: "verify",
            error,
        };
        if touch {
            pattern_into(&mut self.whole, i, dir, len);
            let got = vipl.read_mem(va, u64::from(len)).await.map_err(failed)?;
            return compare(&got, &self.whole, i);
        }
        if len == 0 {
            // As the whole-message way: an empty read, which can still fault.
            self.got = vipl
                .peek_into(va, 0, std::mem::take(&mut self.got))
                .await
                .map_err(failed)?;
            return Ok(0);
        }
        let mut first: Option<ProgramError> = None;
        for (off, n) in chunks(len) {
            let got = vipl
                .peek_into(
                    va + u64::from(off),
                    u64::from(n),
                    std::mem::take(&mut self.got),
                )
                .await
                .map_err(failed)?;
            if first.is_none() {
                pattern_chunk_into(&mut self.piece, i, dir, len, off, n);
                first = mismatch(&got, &self.piece, i, off).err();
            }
            self.got = got;
        }
        first.map_or(Ok(u64::from(len)), Err)
    }
}

/// [`compare`] of the piece of a message at `off`, its offsets the message's.
fn mismatch(got: &[u8], expected: &[u8], i: u32, off: u32) -> Result<u64, ProgramError> {
    compare(got, expected, i).map_err(|e| match e {
        ProgramError::DataMismatch {
            iteration,
            offset,
            expected,
            found,
        } => ProgramError::DataMismatch {
            iteration,
            offset: offset + u64::from(off),
            expected,
            found,
        },
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use super::super::pattern;
    use super::*;

    #[test]
    fn the_chunks_cover_the_range_once_in_order() {
        for len in [
            0,
            1,
            CHUNK - 1,
            CHUNK,
            CHUNK + 1,
            3 * CHUNK,
            1 << 20,
            1_000_003,
        ] {
            let mut at = 0;
            for (off, n) in chunks(len) {
                assert_eq!(off, at, "len {len}");
                assert!(n > 0 && n <= CHUNK);
                at += n;
            }
            assert_eq!(at, len);
        }
    }

    /// A byte that differs is named with its offset in the message, whichever chunk
    /// holds it; a matching piece verifies its length.
    #[test]
    fn a_mismatch_names_the_message_offset() {
        let len = 3 * CHUNK + 5;
        let whole = pattern(4, Direction::Pong, len);
        let mut piece = Vec::new();
        for (off, n) in chunks(len) {
            pattern_chunk_into(&mut piece, 4, Direction::Pong, len, off, n);
            let got = &whole[off as usize..(off + n) as usize];
            assert_eq!(mismatch(got, &piece, 4, off).unwrap(), u64::from(n));
            let mut bad = got.to_vec();
            let k = n as usize / 2;
            bad[k] ^= 0x40;
            match mismatch(&bad, &piece, 4, off) {
                Err(ProgramError::DataMismatch {
                    iteration,
                    offset,
                    expected,
                    found,
                }) => {
                    assert_eq!(iteration, 4);
                    assert_eq!(offset, u64::from(off) + k as u64);
                    assert_eq!(expected, whole[offset as usize]);
                    assert_eq!(found, whole[offset as usize] ^ 0x40);
                }
                other => panic!("{other:?}"),
            }
        }
    }
}
