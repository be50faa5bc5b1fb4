//! Point-to-point calls: `MPI_Isend`, `MPI_Irecv`, `MPI_Wait`, `MPI_Test`,
//! `MPI_Waitall`, `MPI_Send`, `MPI_Recv`. Buffers are process virtual addresses (from
//! `malloc` on the simulated host); datatypes are bytes.

use super::{Comm, MpiError};
use crate::p2p::{RecvId, RecvStatus, SendId};
use crate::types::{Context, Envelope, Pattern, Rank, Source, Tag, TagSel};

/// A non-blocking operation (`MPI_Request`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Request {
    /// An `MPI_Isend`.
    Send(SendId),
    /// An `MPI_Irecv`.
    Recv(RecvId),
}

impl Comm {
    /// `MPI_Isend` of `len` bytes at `buf` to `dst` with `tag`.
    ///
    /// # Errors
    /// A rank outside the world or this process, a negative tag; what the progress made
    /// meanwhile met.
    pub async fn isend(
        &mut self,
        buf: u64,
        len: u32,
        dst: Rank,
        tag: Tag,
    ) -> Result<Request, MpiError> {
        self.isend_in(buf, len, dst, tag, Context::WORLD).await
    }

    /// [`Comm::isend`] in context `ctx` (a library built on this one, e.g. BSPlib, keeps
    /// its traffic in a context of its own).
    ///
    /// # Errors
    /// As [`Comm::isend`].
    pub async fn isend_in(
        &mut self,
        buf: u64,
        len: u32,
        dst: Rank,
        tag: Tag,
        ctx: Context,
    ) -> Result<Request, MpiError> {
        self.vipl.compute(self.vipl.costs().vipl_call).await;
        let id = self.p2p.isend(dst, tag, ctx, len)?;
        self.user_sends.insert(id, (buf, len));
        self.run_actions().await?;
        Ok(Request::Send(id))
    }

    /// `MPI_Irecv` into `cap` bytes at `buf`, from `src` (or any) with `tag` (or any).
    ///
    /// # Errors
    /// A source outside the world; what the progress made meanwhile met.
    pub async fn irecv(
        &mut self,
        buf: u64,
        cap: u32,
        src: Source,
        tag: TagSel,
    ) -> Result<Request, MpiError> {
        self.irecv_in(buf, cap, src, tag, Context::WORLD).await
    }

    /// [`Comm::irecv`] in context `ctx`.
    ///
    /// # Errors
    /// As [`Comm::irecv`].
    pub async fn irecv_in(
        &mut self,
        buf: u64,
        cap: u32,
        src: Source,
        tag: TagSel,
        ctx: Context,
    ) -> Result<Request, MpiError> {
        self.vipl.compute(self.vipl.costs().vipl_call).await;
        let pat = Pattern { src, tag, ctx };
        // The core only queues actions; they run below, once the buffer is known.
        let id = self.p2p.irecv(pat, cap)?;
        self.user_recvs.insert(id, (buf, cap));
        self.run_actions().await?;
        Ok(Request::Recv(id))
    }

    /// Whether `req` is complete, and for a receive its status (`MPI_Test`), after one
    /// round of progress.
    ///
    /// # Errors
    /// What the progress met.
    pub async fn test(&mut self, req: Request) -> Result<Option<Option<RecvStatus>>, MpiError> {
        self.vipl.compute(self.vipl.costs().vipl_call).await;
        self.progress_once().await?;
        Ok(self.completed(req))
    }

    fn completed(&self, req: Request) -> Option<Option<RecvStatus>> {
        match req {
            Request::Send(s) => self.p2p.send_done(s).then_some(None),
            Request::Recv(r) => self.p2p.recv_status(r).map(Some),
        }
    }

    /// `MPI_Wait`: progress until `req` is complete; a receive's status.
    ///
    /// # Errors
    /// [`MpiError::Stalled`] when nothing completes for the progress timeout; what the
    /// progress met.
    pub async fn wait(&mut self, req: Request) -> Result<Option<RecvStatus>, MpiError> {
        self.vipl.compute(self.vipl.costs().vipl_call).await;
        self.progress_until("MPI_Wait", |c| c.completed(req).is_some())
            .await?;
        Ok(self.completed(req).flatten())
    }

    /// `MPI_Waitall`.
    ///
    /// # Errors
    /// As [`Comm::wait`].
    pub async fn waitall(&mut self, reqs: &[Request]) -> Result<Vec<Option<RecvStatus>>, MpiError> {
        self.vipl.compute(self.vipl.costs().vipl_call).await;
        self.progress_until("MPI_Waitall", |c| {
            reqs.iter().all(|r| c.completed(*r).is_some())
        })
        .await?;
        Ok(reqs.iter().map(|r| self.completed(*r).flatten()).collect())
    }

    /// `MPI_Probe`: progress until a message matching `src` / `tag` has arrived
    /// unmatched; its envelope (source, tag, length). The message stays queued.
    ///
    /// # Errors
    /// As [`Comm::wait`].
    pub async fn probe(&mut self, src: Source, tag: TagSel) -> Result<Envelope, MpiError> {
        self.probe_in(src, tag, Context::WORLD).await
    }

    /// [`Comm::probe`] in context `ctx`.
    ///
    /// # Errors
    /// As [`Comm::wait`].
    pub async fn probe_in(
        &mut self,
        src: Source,
        tag: TagSel,
        ctx: Context,
    ) -> Result<Envelope, MpiError> {
        self.vipl.compute(self.vipl.costs().vipl_call).await;
        let pat = Pattern { src, tag, ctx };
        self.progress_until("MPI_Probe", |c| c.p2p.probe(&pat).is_some())
            .await?;
        self.p2p
            .probe(&pat)
            .ok_or(MpiError::Argument("MPI_Probe: the message went"))
    }

    /// `MPI_Send` (standard mode: returns when the buffer may be reused).
    ///
    /// # Errors
    /// As [`Comm::isend`] and [`Comm::wait`].
    pub async fn send(&mut self, buf: u64, len: u32, dst: Rank, tag: Tag) -> Result<(), MpiError> {
        let r = self.isend(buf, len, dst, tag).await?;
        self.wait(r).await.map(|_| ())
    }

    /// `MPI_Recv`.
    ///
    /// # Errors
    /// As [`Comm::irecv`] and [`Comm::wait`].
    pub async fn recv(
        &mut self,
        buf: u64,
        cap: u32,
        src: Source,
        tag: TagSel,
    ) -> Result<RecvStatus, MpiError> {
        let r = self.irecv(buf, cap, src, tag).await?;
        self.wait(r)
            .await?
            .ok_or(MpiError::Argument("a receive without a status"))
    }
}
