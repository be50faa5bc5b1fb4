//! Typed ids of the engine's bookkeeping (one newtype per id space, so that a send
//! context's id can never be used to look up a received message). Every id is handed out
//! by the unit that owns its table, counting up from 1; ids are never reused, so a map
//! keyed by them iterates in creation order.

use std::fmt;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub u64);

        impl $name {
            /// The id after this one.
            #[must_use]
            pub fn next(self) -> Self {
                Self(self.0 + 1)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

id_type!(
    /// A send descriptor in flight (a `SendCtx` of the send path).
    SendId,
    "send#"
);
id_type!(
    /// A message being received (an `RxMessage` of the receive path).
    RxId,
    "rx#"
);
id_type!(
    /// A status write in flight (a `StatusJob` of completion).
    JobId,
    "job#"
);
id_type!(
    /// A DMA job the engine has outstanding at the card's DMA master (the tag of
    /// `pci_model::DmaJob`).
    DmaTag,
    "dma#"
);
id_type!(
    /// A VI command written to `VI_CMD` (its asynchronous result names the command it
    /// answers: the registers unit counts them, the VI table keeps the one a connect
    /// waits on).
    ViCmdSeq,
    "cmd#"
);
id_type!(
    /// Generation of a word mover's scheduled wake-up (older ones are stale).
    MoverGen,
    "gen#"
);
id_type!(
    /// Generation of the retransmission timer's scheduled wake-up (older ones are stale).
    RetxGen,
    "retx#"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_count_up_and_print_their_space() {
        let a = SendId::default().next();
        assert_eq!(a, SendId(1));
        assert_eq!(a.next().to_string(), "send#2");
        assert_eq!(RxId(7).to_string(), "rx#7");
    }
}
