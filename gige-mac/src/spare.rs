//! [`SpareBuffers`]: the byte buffers of frames that are done with, kept for the next
//! frames, so a model that builds frame after frame allocates none once warm (the
//! DP83820 MAC's transmit assembly, the card engine's TX runs).

/// How many buffers are kept: a component has only a few frames in the making at once
/// (the DP83820 assembles one or two while its wire sends another; the engine fills a
/// few TX slots), and one more past that goes to the thread's spare buffers
/// ([`sim_kernel::spare`]), so a burst cannot leave this pool holding more memory. Not
/// a model number: it changes allocations, never a result.
const KEPT: usize = 4;

/// Byte buffers kept for reuse (see the module doc).
#[derive(Clone, Debug, Default)]
pub struct SpareBuffers {
    bufs: Vec<Vec<u8>>,
}

impl SpareBuffers {
    /// An empty buffer: a kept one (with its capacity) if there is one.
    #[must_use]
    pub fn take(&mut self) -> Vec<u8> {
        self.bufs.pop().unwrap_or_default()
    }

    /// Keeps `buf`, emptied, for a later frame; if enough are kept already, it goes to
    /// the thread's spare buffers ([`sim_kernel::spare`]), where the components that
    /// make such buffers for others (the bus, the buffer RAM) take them again.
    pub fn keep(&mut self, mut buf: Vec<u8>) {
        if self.bufs.len() < KEPT {
            buf.clear();
            self.bufs.push(buf);
        } else {
            sim_kernel::spare::give_bytes(buf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_buffers_come_back_empty_with_their_capacity_and_the_pool_is_bounded() {
        let mut s = SpareBuffers::default();
        assert!(s.take().is_empty(), "a new one when none is kept");
        for _ in 0..KEPT + 2 {
            s.keep(vec![7; 1500]);
        }
        assert_eq!(s.bufs.len(), KEPT, "the ones past the bound go elsewhere");
        let b = s.take();
        assert!(b.is_empty() && b.capacity() >= 1500);
        assert_eq!(s.bufs.len(), KEPT - 1);
    }
}
