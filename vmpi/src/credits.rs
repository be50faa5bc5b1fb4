//! Flow control of the eager buffers ([`Credits`], one per peer): a sender may only send
//! into receive buffers the receiver has posted for it, so a fast sender cannot overrun a
//! slow receiver (on an unreliable VI a send with no posted receive is dropped; on a
//! reliable one it breaks the connection, VIA 1.0 section 2.5).
//!
//! Each process posts `buffers` receive descriptors per peer, and starts with as many
//! credits towards each peer. Every message consumes one credit at the sender and one
//! buffer at the receiver. When the receiver has reposted a buffer it owes the sender a
//! credit; owed credits ride on the next message to that peer (the header's `credits`
//! field), or, once `threshold` are owed and nothing else is going that way, in a
//! `Credit` message of their own.
//!
//! No deadlock: a data or protocol message never takes the last credit, which is kept
//! for a `Credit` message, so two processes that each wait for credits from the other
//! can always tell each other. A `Credit` message consumes a buffer too, so it is owed
//! back; with `threshold >= 2` that one credit never triggers another `Credit` message
//! on its own, so credit messages cannot ping-pong forever.

/// Why credit parameters are refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CreditError {
    /// Fewer than 3 buffers per peer (one for data, one reserved, one in flight).
    #[error("eager buffers per peer must be at least 3, not {0}")]
    TooFewBuffers(u16),
    /// The return threshold is outside 2 ..= buffers - 1.
    #[error("credit return threshold {threshold} must be within 2 ..= {max}")]
    Threshold {
        /// Given.
        threshold: u16,
        /// Largest allowed.
        max: u16,
    },
}

/// The credit state towards one peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Credits {
    /// Credits this process may spend sending to the peer.
    available: u16,
    /// Buffers reposted for the peer whose credits were not sent back yet.
    owed: u16,
    /// `owed` at which a `Credit` message goes out on its own.
    threshold: u16,
}

impl Credits {
    /// The state at start: `buffers` credits towards the peer, none owed.
    ///
    /// # Errors
    /// [`CreditError`] for fewer than 3 buffers or a threshold outside 2 ..= buffers - 1.
    pub fn new(buffers: u16, threshold: u16) -> Result<Credits, CreditError> {
        if buffers < 3 {
            return Err(CreditError::TooFewBuffers(buffers));
        }
        if !(2..buffers).contains(&threshold) {
            return Err(CreditError::Threshold {
                threshold,
                max: buffers - 1,
            });
        }
        Ok(Credits {
            available: buffers,
            owed: 0,
            threshold,
        })
    }

    /// Credits available.
    #[must_use]
    pub fn available(&self) -> u16 {
        self.available
    }

    /// Credits owed to the peer.
    #[must_use]
    pub fn owed(&self) -> u16 {
        self.owed
    }

    /// Spends a credit for a data or protocol message, if one besides the reserved last
    /// is left; returns the owed credits to piggy-back (now no longer owed).
    pub fn take_for_message(&mut self) -> Option<u16> {
        (self.available > 1).then(|| {
            self.available -= 1;
            std::mem::take(&mut self.owed)
        })
    }

    /// Spends a credit, if one besides the reserved last is left, for a message that
    /// cannot carry credits (an RDMA write with immediate data): owed credits stay owed.
    pub fn spend(&mut self) -> Option<()> {
        (self.available > 1).then(|| self.available -= 1)
    }

    /// Spends a credit (the reserved last one too) for a `Credit` message, if credits
    /// are owed and one is left; returns the owed credits it carries.
    pub fn take_for_credit_message(&mut self) -> Option<u16> {
        (self.available > 0 && self.owed > 0).then(|| {
            self.available -= 1;
            std::mem::take(&mut self.owed)
        })
    }

    /// Whether enough is owed that a `Credit` message should go now.
    #[must_use]
    pub fn credit_message_due(&self) -> bool {
        self.owed >= self.threshold
    }

    /// A message from the peer returned `n` credits.
    pub fn returned(&mut self, n: u16) {
        self.available = self.available.saturating_add(n);
    }

    /// A buffer of the peer's was reposted: one more credit owed.
    pub fn reposted(&mut self) {
        self.owed = self.owed.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_last_credit_is_kept_for_a_credit_message() {
        let mut c = Credits::new(3, 2).expect("valid");
        assert_eq!(c.take_for_message(), Some(0));
        assert_eq!(c.take_for_message(), Some(0));
        assert_eq!(c.take_for_message(), None, "the last one is reserved");
        assert_eq!(c.take_for_credit_message(), None, "nothing owed");
        c.reposted();
        assert!(!c.credit_message_due());
        c.reposted();
        assert!(c.credit_message_due());
        assert_eq!(c.take_for_credit_message(), Some(2));
        assert_eq!((c.available(), c.owed()), (0, 0));
        c.returned(2);
        c.reposted();
        assert_eq!(c.take_for_message(), Some(1), "owed credits ride along");
        assert_eq!(c.owed(), 0);
        assert_eq!(Credits::new(2, 2), Err(CreditError::TooFewBuffers(2)));
        assert_eq!(
            Credits::new(8, 8),
            Err(CreditError::Threshold {
                threshold: 8,
                max: 7
            })
        );
        assert_eq!(
            Credits::new(8, 1).unwrap_err().to_string(),
            "credit return threshold 1 must be within 2 ..= 7"
        );
    }

    proptest! {
        /// Two processes exchanging messages, with receivers that repost at random
        /// moments: a receiver never holds more unconsumed messages from a peer than it
        /// posted buffers, and credits are conserved (available at A + in flight to A +
        /// owed by B + buffers of B full = buffers).
        #[test]
        fn a_sender_never_overruns_the_buffers(
            (buffers, thr) in (3u16..10).prop_flat_map(|b| (Just(b), 2u16..b)),
            steps in proptest::collection::vec((0u8..4, any::<bool>()), 1..200)
        ) {
            // side 0 and 1; what is in flight to each side: credits carried.
            let mut c = [Credits::new(buffers, thr).expect("ok"); 2];
            let mut in_flight: [Vec<u16>; 2] = [Vec::new(), Vec::new()];
            let mut full = [0u16; 2]; // buffers holding an unconsumed message
            for (what, side) in steps {
                let me = usize::from(side);
                let peer = 1 - me;
                match what {
                    0 => if let Some(n) = c[me].take_for_message() { in_flight[peer].push(n) },
                    1 => {
                        if c[me].credit_message_due() {
                            if let Some(n) = c[me].take_for_credit_message() {
                                in_flight[peer].push(n);
                            }
                        }
                    }
                    2 => if !in_flight[me].is_empty() {
                        let n = in_flight[me].remove(0);
                        c[me].returned(n);
                        full[me] += 1;
                        prop_assert!(full[me] <= buffers, "overrun");
                    },
                    _ => if full[me] > 0 { full[me] -= 1; c[me].reposted(); },
                }
                for s in 0..2 {
                    let carried: u16 = in_flight[s].iter().sum();
                    let sum = c[s].available() + in_flight[1 - s].len() as u16
                        + full[1 - s] + c[1 - s].owed() + carried;
                    prop_assert_eq!(sum, buffers);
                }
            }
        }
    }
}
