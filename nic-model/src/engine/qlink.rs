//! The queue link read: how the doorbell unit finds the descriptor of a doorbell without
//! `HEAD`. The doorbell only says that a new transaction exists on a VI's queue; the
//! descriptor is the one the queue's tail (the last descriptor the engine took from it)
//! links to through its Next address and Next handle (VIA 1.0 control segment bytes
//! 0..12), which the provider wrote before ringing. The unit translates the tail's VA
//! (`LocalRead`, the VI's tag), reads the 12 bytes by DMA and dispatches the doorbell
//! with the descriptor found. The dispatcher is busy (`linking`) meanwhile, so doorbells
//! keep their order, and the VI's window reports the post as pending until it is taken.
//! Spans (the doorbell's trace id): `queue link translate`, `queue link DMA read`.
//!
//! **A link already read** (`follow_read_links`). The engine reads every descriptor it
//! takes, and a descriptor's first 12 bytes are its Next link. The provider writes a new
//! descriptor's Next as zero before ringing it and links the following descriptor into
//! it before ringing that one, so when a read of the tail (the send's descriptor read,
//! the receive post check, a receive descriptor's read on arrival) finds its Next
//! already non-zero, that is the link of the queue's next post, unless it names the tail
//! itself (a completed descriptor posted again is linked into itself by its own post,
//! as the ping-pong does; the post after it may be another descriptor, so such a link
//! is not kept). Otherwise the unit keeps it with
//! the tail ([`Tail`](super::unit::doorbell::Tail)) and the next doorbell without `HEAD`
//! is dispatched with it at once: no translation of the tail, no DMA, no span (the
//! dispatch continues from the `doorbell` span). The descriptor the link names is
//! checked as any other: its own translation (handle, protection tag, bounds) comes
//! first on its path, so a stale or forged handle fails there as it would after a read.
//! A tail read while its Next was still zero keeps nothing: that post's link is read
//! as before. Counted in `doorbell_links_known`. The rule relies on no other list
//! linking into a descriptor while it is on this one: the host library forgets a
//! queue's last descriptor once it is posted on another queue (descriptor pools shared
//! by VIs), so that queue's next post names its descriptor (`HEAD`) instead.
//!
//! A link that cannot be followed (no tail known, a null Next address, a tail that no
//! longer translates, a failed DMA) is a provider error: counted (`doorbell_unlinked`,
//! `doorbell_link_failures`), traced as an error, and the post is not taken.

use super::io::{span, Io};
use super::unit::doorbell::{tail_key, DoorbellState, Entry, LinkRead, LINK_LEN};
use super::unit::outstanding::{pages_for, AttFor, DmaFor};
use super::Engine;
use crate::att::{AccessKind, Piece, TranslateError};
use gige_mac::BufferRam;
use pci_model::{DmaDone, DmaStatus};
use sim_kernel::Time;
use via_abi::MemHandle;

/// Why a queue link could not be followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LinkError {
    /// No tail known, or its Next address is null.
    Unlinked,
    /// The tail does not translate, or the read failed.
    Unreadable,
}

impl Engine {
    /// Starts finding doorbell `e`'s descriptor through its queue's tail.
    pub(crate) fn start_link_read(
        &mut self,
        e: Entry,
        mark: Time,
        io: &mut Io,
        ram: &mut BufferRam,
    ) {
        let tail = tail_key(&e).and_then(|k| self.doorbells.tails.get(&k).copied());
        // May miss: no earlier descriptor of this queue was taken (host input): the post
        // fails, counted in `doorbell_unlinked`.
        let Some(tail) = tail else {
            return self.link_failed(e, LinkError::Unlinked, io, ram);
        };
        // Only kept with `follow_read_links` (`DoorbellUnit::descriptor_read`).
        if let Some((va, handle)) = tail.next {
            tracing::debug!(target: "nic::doorbell", vi = e.vi, queue = ?e.rec.queue, va, rec_va = e.rec.desc_va, tail_va = tail.va, "queue link known from the tail's read");
            let mut e = e;
            e.rec.desc_va = va;
            e.rec.desc_handle = handle;
            self.stats.doorbell_links_known += 1;
            return self.dispatch(e, mark, io, ram);
        }
        let (va, handle) = (tail.va, tail.handle);
        let ptag = self.vis.ptag(e.vi);
        self.doorbells.link = Some(LinkRead { entry: e, mark });
        self.doorbells.fsm.set(DoorbellState::Linking, io);
        self.outstanding.translate(
            io,
            AttFor::DoorbellLink,
            e.msg,
            handle,
            va,
            LINK_LEN,
            AccessKind::LocalRead,
            ptag,
        );
    }

    fn link_span(&mut self, stage: &'static str, io: &mut Io) {
        if let Some(l) = self.doorbells.link.as_mut() {
            span(io, l.entry.msg, stage, &mut l.mark);
        }
    }

    /// The ATT answered for the tail's link.
    pub(crate) fn doorbell_link_translated(
        &mut self,
        result: Result<Vec<Piece>, TranslateError>,
        io: &mut Io,
        ram: &mut BufferRam,
    ) {
        self.link_span("queue link translate", io);
        let pages = result
            .ok()
            .and_then(|pieces| pages_for(&pieces, 0, LINK_LEN));
        match pages {
            Some(pages) => self
                .outstanding
                .dma_read(io, DmaFor::DoorbellLink, pages, LINK_LEN),
            None => self.link_ended(Err(LinkError::Unreadable), io, ram),
        }
    }

    /// The DMA read of the tail's link ended.
    pub(crate) fn doorbell_link_read(&mut self, done: &DmaDone, io: &mut Io, ram: &mut BufferRam) {
        self.link_span("queue link DMA read", io);
        if done.status != DmaStatus::Ok || done.data.len() as u64 != LINK_LEN {
            self.stats.dma_failures += u64::from(done.status != DmaStatus::Ok);
            return self.link_ended(Err(LinkError::Unreadable), io, ram);
        }
        let mut va = [0u8; 8];
        va.copy_from_slice(&done.data[..8]);
        let mut handle = [0u8; 4];
        handle.copy_from_slice(&done.data[8..12]);
        let next = (
            u64::from_le_bytes(va),
            MemHandle(u32::from_le_bytes(handle)),
        );
        let r = if next.0 == 0 {
            Err(LinkError::Unlinked)
        } else {
            Ok(next)
        };
        self.link_ended(r, io, ram);
    }

    /// The link read ended: dispatch the doorbell with the descriptor found, or fail it.
    fn link_ended(
        &mut self,
        r: Result<(u64, MemHandle), LinkError>,
        io: &mut Io,
        ram: &mut BufferRam,
    ) {
        self.doorbells.fsm.set(DoorbellState::Idle, io);
        let Some(LinkRead { mut entry, mark }) = self.doorbells.link.take() else {
            debug_assert!(false, "queue link answer with no link read running");
            self.stats.bookkeeping_misses += 1;
            return self.kick_doorbells(io, ram);
        };
        self.stats.doorbell_links_read += 1;
        match r {
            Ok((va, handle)) => {
                entry.rec.desc_va = va;
                entry.rec.desc_handle = handle;
                self.dispatch(entry, mark, io, ram);
            }
            Err(e) => self.link_failed(entry, e, io, ram),
        }
        self.kick_doorbells(io, ram);
    }

    /// Doorbell `e`'s descriptor cannot be found: counted, traced, not taken.
    fn link_failed(&mut self, e: Entry, why: LinkError, io: &mut Io, ram: &mut BufferRam) {
        match why {
            LinkError::Unlinked => self.stats.doorbell_unlinked += 1,
            LinkError::Unreadable => self.stats.doorbell_link_failures += 1,
        }
        tracing::error!(target: "nic::doorbell", vi = e.vi, queue = ?e.rec.queue, ?why,
            "doorbell without HEAD whose descriptor cannot be found through the queue's link: post not taken");
        self.doorbells.taken(e.vi);
        self.kick_doorbells(io, ram);
    }
}
