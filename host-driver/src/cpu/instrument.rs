//! The CPU's instrumentation ops on test messages ([`Op::PokeMessage`],
//! [`Op::CheckMessage`]): a ping-pong program writes and checks its whole message every
//! iteration at no simulated cost, and these do it through host memory a [`PIECE`] at a
//! time, each piece of the pattern made as it is needed, instead of the program making
//! the whole message, copying it in, reading it back whole and comparing it with a
//! third buffer (which moved a 1 MiB message through the simulating machine's memory
//! about eight times, about 7 % of a 1 MiB ping-pong's wall time).
//!
//! Each is exactly the whole-message op it stands for: [`Op::Poke`] of the message's
//! bytes (the range refused before anything is written unless it is wholly mapped, the
//! cache model's held lines refreshed once for the range) and [`Op::Peek`] of its
//! length followed by a comparison (the range is checked whole first, so a fault
//! anywhere wins over a differing byte; the first differing byte is reported with its
//! offset in the message). One op each, as before: the CPU's `ops` counter is unchanged.
//!
//! [`Op::PokeMessage`]: crate::ops::Op::PokeMessage
//! [`Op::CheckMessage`]: crate::ops::Op::CheckMessage
//! [`Op::Poke`]: crate::ops::Op::Poke
//! [`Op::Peek`]: crate::ops::Op::Peek

use super::HostCpu;
use crate::pattern::{first_difference, Message};
use pci_model::{HostMemory, MemError};

/// Bytes of a message made, written or read at a time: a piece and the bytes read back
/// fit the simulating machine's L2 cache (16 KiB pieces measured slower, 128 KiB the
/// same).
const PIECE: u32 = 64 * 1024;

/// A differing byte: its offset in the message, the message's byte, the byte found.
pub(super) type Difference = (u64, u8, u8);

/// `[off, off + n)` of each piece of `[0, len)`, in order.
fn pieces(len: u32) -> impl Iterator<Item = (u32, u32)> {
    (0..len.div_ceil(PIECE)).map(move |p| {
        let off = p * PIECE;
        (off, (len - off).min(PIECE))
    })
}

/// The address of the piece at `off` of the `len`-byte range at `va`.
fn piece_at(va: u64, off: u32, len: u32) -> Result<u64, MemError> {
    va.checked_add(u64::from(off)).ok_or(MemError::Overflow {
        addr: va,
        len: u64::from(len),
    })
}

impl HostCpu {
    /// [`Op::PokeMessage`](crate::ops::Op::PokeMessage): the first `len` bytes of `msg`
    /// at `va` (`Vipl::poke_message` refuses a `len` past the message's end).
    pub(super) fn poke_message(
        &mut self,
        mem: &mut HostMemory,
        va: u64,
        msg: Message,
        len: u64,
    ) -> Result<(), MemError> {
        debug_assert!(len <= u64::from(msg.len), "a poke past the message's end");
        let len = u32::try_from(len).unwrap_or(u32::MAX).min(msg.len);
        if len == 0 {
            return self.poke(mem, va, &[]);
        }
        // Wholly mapped, or nothing written: what the single write of a `Poke` checks.
        self.page_table.pieces(va, u64::from(len))?;
        let mut piece = std::mem::take(&mut self.piece);
        for (off, n) in pieces(len) {
            msg.piece_into(&mut piece, off, n);
            self.page_table
                .write(mem, piece_at(va, off, len)?, &piece)?;
        }
        self.piece = piece;
        self.refresh_cached(mem, va, u64::from(len))
    }

    /// [`Op::CheckMessage`](crate::ops::Op::CheckMessage): `msg` against memory at `va`;
    /// the first differing byte, if any.
    pub(super) fn check_message(
        &mut self,
        mem: &HostMemory,
        va: u64,
        msg: Message,
    ) -> Result<Option<Difference>, MemError> {
        let mut got = std::mem::take(&mut self.got);
        let mut piece = std::mem::take(&mut self.piece);
        let outcome = self.compare_pieces(mem, va, msg, &mut got, &mut piece);
        self.got = got;
        self.piece = piece;
        outcome
    }

    fn compare_pieces(
        &self,
        mem: &HostMemory,
        va: u64,
        msg: Message,
        got: &mut Vec<u8>,
        piece: &mut Vec<u8>,
    ) -> Result<Option<Difference>, MemError> {
        if msg.len == 0 {
            // The read of no bytes a `Peek` makes, which can still fault.
            self.read_va_into(mem, va, 0, got)?;
            return Ok(None);
        }
        // Wholly mapped, or a fault: what the single read of a `Peek` checks.
        self.page_table.pieces(va, u64::from(msg.len))?;
        for (off, n) in pieces(msg.len) {
            self.read_va_into(mem, piece_at(va, off, msg.len)?, n as usize, got)?;
            msg.piece_into(piece, off, n);
            if let Some(d) = difference(got, piece, off) {
                return Ok(Some(d));
            }
        }
        Ok(None)
    }
}

/// The first byte where `got` differs from `expected`, with its offset in the message
/// (`off` being the piece's).
fn difference(got: &[u8], expected: &[u8], off: u32) -> Option<Difference> {
    let k = first_difference(got, expected)?;
    Some((
        u64::from(off) + k as u64,
        expected.get(k).copied().unwrap_or(0),
        got.get(k).copied().unwrap_or(0),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pieces_cover_the_range_once_in_order() {
        for len in [
            0,
            1,
            PIECE - 1,
            PIECE,
            PIECE + 1,
            3 * PIECE,
            1 << 20,
            1_000_003,
        ] {
            let mut at = 0;
            for (off, n) in pieces(len) {
                assert_eq!(off, at, "len {len}");
                assert!(n > 0 && n <= PIECE);
                at += n;
            }
            assert_eq!(at, len);
        }
    }

    #[test]
    fn a_difference_is_named_by_its_message_offset() {
        assert_eq!(difference(&[1, 2, 3], &[1, 2, 3], 7), None);
        assert_eq!(difference(&[1, 9, 3], &[1, 2, 3], 7), Some((8, 2, 9)));
        assert_eq!(difference(&[1, 2], &[1, 2, 3], 0), Some((2, 3, 0)), "short");
    }
}
