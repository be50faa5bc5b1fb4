//! BSPlib over VIPL ([`Bsp`]): the calls of the BSPlib standard (Hill et al., "BSPlib:
//! the BSP programming library", Parallel Computing 24, 1998) a program uses, on top of
//! the VMPI transport ([`vmpi::Comm`]: one VI per peer, eager slots, credits) in a
//! context of their own.
//!
//! - `bsp_push_reg` registers the area with VIPL at once (RDMA write enabled) and tells
//!   every peer its address and memory handle at the next sync; the n-th registration
//!   of every process names the same variable, as BSPlib requires.
//! - `bsp_put` copies the source at the call (BSPlib's buffered semantics). A put of at
//!   least `rdma_put_min` bytes is copied into a registered buffer and RDMA-written
//!   straight into the remote area during the sync; smaller puts to one destination
//!   are combined into that destination's one sync message and copied into place by
//!   the receiver.
//! - `bsp_get` reads the bytes as they were before any put of the superstep: by RDMA
//!   read straight from the remote area on a card with it (the `rdma-read` preset), else
//!   as a request in the sync message that the owner answers (the published card has
//!   no RDMA read).
//! - `bsp_send` / `bsp_qsize` / `bsp_get_tag` / `bsp_move`: bulk-synchronous messages,
//!   delivered at the sync, in source-rank order.
//! - `bsp_sync`: see `sync` for the rounds.

mod sync;

use crate::records::{RecHeader, RecKind};
use crate::staging::{Pool, Staging};
use std::collections::VecDeque;
use via_abi::MemHandle;
use vmpi::{Comm, Context, MpiConfig, MpiError, Rank};

/// The communication context of BSPlib traffic.
pub const BSP_CONTEXT: Context = Context(2);

/// Why a BSPlib call failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BspError {
    /// The transport failed.
    #[error(transparent)]
    Mpi(#[from] MpiError),
    /// An address that is not the start of a registered area (or not yet, before the
    /// sync after its `bsp_push_reg`).
    #[error("{0:#x} is not a registered area")]
    NotRegistered(u64),
    /// A put or get outside the area.
    #[error("{what}: bytes {offset} .. {end} lie outside the {len}-byte area")]
    OutOfArea {
        /// Put or get.
        what: &'static str,
        /// First byte.
        offset: u64,
        /// One past the last.
        end: u64,
        /// The area's length.
        len: u64,
    },
    /// A process id outside `0 .. bsp_nprocs()`.
    #[error("process {0} does not exist")]
    Pid(u16),
    /// A peer's sync message is malformed.
    #[error("sync message from process {peer}: {error}")]
    Malformed {
        /// Its sender.
        peer: u16,
        /// What is wrong.
        error: crate::records::RecError,
    },
    /// A tag of the wrong length for `bsp_send`.
    #[error("a tag of {got} bytes where the tag size is {want}")]
    TagSize {
        /// Given.
        got: usize,
        /// The current tag size.
        want: u16,
    },
}

/// The library's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BspConfig {
    /// The transport's.
    pub mpi: MpiConfig,
    /// Puts of at least this many bytes go by RDMA write \[bytes\].
    pub rdma_put_min: u32,
}

impl Default for BspConfig {
    fn default() -> Self {
        BspConfig {
            mpi: MpiConfig::default(),
            rdma_put_min: 2048,
        }
    }
}

/// What the library did, for reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BspStats {
    /// Supersteps ended.
    pub supersteps: u64,
    /// Puts combined into sync messages.
    pub combined_puts: u64,
    /// Puts made by RDMA write.
    pub rdma_puts: u64,
    /// Gets answered by this process (request and reply).
    pub gets_served: u64,
    /// Gets made by RDMA read (on a card with it).
    pub rdma_gets: u64,
    /// Sync messages sent (all rounds).
    pub sync_messages: u64,
    /// Syncs that needed rounds 2 and 3.
    pub long_syncs: u64,
}

/// A registered area of this process.
#[derive(Clone, Copy, Debug)]
struct Area {
    va: u64,
    len: u64,
    handle: MemHandle,
}

/// A put by RDMA write waiting for its round.
#[derive(Clone, Copy, Debug)]
struct RdmaPut {
    /// Offset of the copied bytes in the put buffer.
    at: u64,
    len: u32,
    remote_va: u64,
    remote_handle: MemHandle,
}

/// A get by RDMA read waiting for its round.
#[derive(Clone, Copy, Debug)]
struct ReadGet {
    /// Offset of its landing place in the get buffer.
    at: u64,
    dst: u64,
    len: u32,
    remote_va: u64,
    remote_handle: MemHandle,
}

/// An outgoing sync message being built.
#[derive(Debug, Default)]
struct Outgoing {
    buf: Staging,
    records: u32,
}

/// BSPlib state of one process.
pub struct Bsp {
    comm: Comm,
    cfg: BspConfig,
    regs: Vec<Option<Area>>,
    /// Per peer, per registration index: its area (address, handle, length).
    remote: Vec<Vec<Option<(u64, MemHandle, u64)>>>,
    pushed: Vec<usize>,
    popped: Vec<usize>,
    out: Vec<Outgoing>,
    rdma: Vec<Vec<RdmaPut>>,
    /// Registered buffer the RDMA puts' bytes are copied into.
    put_buf: (Staging, MemHandle),
    /// Registered buffer RDMA reads land in, before their copy to the destination.
    get_buf: (Staging, MemHandle),
    /// Gets by RDMA read of this superstep, per peer.
    reads: Vec<Vec<ReadGet>>,
    /// Gets of this superstep by request id: destination, bytes.
    gets: Vec<(u64, u32)>,
    /// Puts and gets to this process itself: (source, destination, bytes), applied at
    /// the sync (gets first).
    local_gets: Vec<(u64, u64, u32)>,
    local_puts: Vec<(u64, u64, u32)>,
    local_stage: Staging,
    /// Messages delivered by the last sync: tag, payload address, length.
    inbox: VecDeque<(Vec<u8>, u64, u32)>,
    /// Buffers the inbox points into, recycled at the next sync.
    held: Vec<(u64, u64)>,
    pool: Pool,
    tagsize: u16,
    next_tagsize: u16,
    superstep: u64,
    stats: BspStats,
}

impl Bsp {
    /// `bsp_begin`: this process is `rank` of the world whose NICs have `macs`.
    ///
    /// # Errors
    /// The transport's `MPI_Init`.
    pub async fn begin(
        vipl: host_driver::Vipl,
        rank: Rank,
        macs: Vec<via_abi::MacAddr>,
        cfg: BspConfig,
    ) -> Result<Bsp, BspError> {
        let comm = Comm::init(vipl, rank, macs, cfg.mpi).await?;
        let n = usize::from(comm.size());
        Ok(Bsp {
            comm,
            cfg,
            regs: Vec::new(),
            remote: vec![Vec::new(); n],
            pushed: Vec::new(),
            popped: Vec::new(),
            out: (0..n).map(|_| Outgoing::default()).collect(),
            rdma: vec![Vec::new(); n],
            put_buf: (Staging::default(), MemHandle::NULL),
            get_buf: (Staging::default(), MemHandle::NULL),
            reads: vec![Vec::new(); n],
            gets: Vec::new(),
            local_gets: Vec::new(),
            local_puts: Vec::new(),
            local_stage: Staging::default(),
            inbox: VecDeque::new(),
            held: Vec::new(),
            pool: Pool::default(),
            tagsize: 0,
            next_tagsize: 0,
            superstep: 0,
            stats: BspStats::default(),
        })
    }

    /// `bsp_end`: a last sync, then the transport's `MPI_Finalize`. Returns the VIPL.
    ///
    /// # Errors
    /// The sync's or the finalize's.
    pub async fn end(mut self) -> Result<host_driver::Vipl, BspError> {
        self.sync().await?;
        Ok(self.comm.finalize().await?)
    }

    /// `bsp_pid`.
    #[must_use]
    pub fn pid(&self) -> u16 {
        self.comm.rank().0
    }

    /// `bsp_nprocs`.
    #[must_use]
    pub fn nprocs(&self) -> u16 {
        self.comm.size()
    }

    /// `bsp_time` \[s\].
    pub async fn time(&self) -> f64 {
        self.comm.wtime().await
    }

    /// The transport (for buffers, compute and instrumentation).
    pub fn comm(&mut self) -> &mut Comm {
        &mut self.comm
    }

    /// What the library did so far.
    #[must_use]
    pub fn stats(&self) -> BspStats {
        self.stats
    }

    /// Supersteps ended so far.
    #[must_use]
    pub fn superstep(&self) -> u64 {
        self.superstep
    }

    async fn call_cost(&mut self) {
        let c = self.comm.vipl().costs().vipl_call;
        self.comm.vipl().compute(c).await;
    }

    fn check_pid(&self, pid: u16) -> Result<usize, BspError> {
        if pid < self.nprocs() {
            Ok(usize::from(pid))
        } else {
            Err(BspError::Pid(pid))
        }
    }

    /// The registration index of the area starting at `va`.
    fn area_index(&self, va: u64) -> Result<usize, BspError> {
        self.regs
            .iter()
            .position(|a| a.is_some_and(|a| a.va == va))
            .filter(|i| !self.pushed.contains(i))
            .ok_or(BspError::NotRegistered(va))
    }

    /// `bsp_push_reg`: registers `len` bytes at `va`; usable from the next superstep.
    ///
    /// # Errors
    /// What `VipRegisterMem` returns.
    pub async fn push_reg(&mut self, va: u64, len: u64) -> Result<(), BspError> {
        self.call_cost().await;
        let handle = self.comm.register_rdma(va, len).await?;
        self.regs.push(Some(Area { va, len, handle }));
        self.pushed.push(self.regs.len() - 1);
        Ok(())
    }

    /// `bsp_pop_reg`: the area at `va` is no longer registered from the next superstep.
    ///
    /// # Errors
    /// [`BspError::NotRegistered`].
    pub async fn pop_reg(&mut self, va: u64) -> Result<(), BspError> {
        self.call_cost().await;
        let i = self.area_index(va)?;
        self.popped.push(i);
        Ok(())
    }

    /// `bsp_set_tagsize`: the tag size from the next superstep; returns the current.
    pub fn set_tagsize(&mut self, bytes: u16) -> u16 {
        self.next_tagsize = bytes;
        self.tagsize
    }

    /// `bsp_put`: `len` bytes at `src` into process `pid`'s copy of the area starting
    /// at `dst` (this process's address of it), at `offset`; the source is copied now.
    ///
    /// # Errors
    /// A bad pid, an unregistered area, bytes outside it; the copy failing.
    pub async fn put(
        &mut self,
        pid: u16,
        src: u64,
        dst: u64,
        offset: u64,
        len: u32,
    ) -> Result<(), BspError> {
        self.call_cost().await;
        let p = self.check_pid(pid)?;
        let i = self.area_index(dst)?;
        let me = usize::from(self.pid());
        let (area_len, remote) = if p == me {
            let a = self.regs[i].ok_or(BspError::NotRegistered(dst))?;
            (a.len, None)
        } else {
            let r = self.remote[p]
                .get(i)
                .copied()
                .flatten()
                .ok_or(BspError::NotRegistered(dst))?;
            (r.2, Some(r))
        };
        check_range("bsp_put", offset, len, area_len)?;
        let n = u64::from(len);
        match remote {
            None => {
                let at = self
                    .local_stage
                    .push_copy(&mut self.comm, &mut self.pool, src, n, 8)
                    .await?;
                self.local_puts.push((at, dst + offset, len));
            }
            Some((rva, rh, _)) if len >= self.cfg.rdma_put_min => {
                let at = self.put_buf_copy(src, n).await?;
                self.rdma[p].push(RdmaPut {
                    at,
                    len,
                    remote_va: rva + offset,
                    remote_handle: rh,
                });
            }
            Some(_) => {
                let h = RecHeader {
                    kind: RecKind::Put,
                    tag_len: 0,
                    a: u32::try_from(i).unwrap_or(u32::MAX),
                    b: u32::try_from(offset).unwrap_or(u32::MAX),
                    len,
                };
                self.record(p, h, Some((src, n))).await?;
                self.stats.combined_puts += 1;
            }
        }
        Ok(())
    }

    /// `bsp_get`: `len` bytes of process `pid`'s copy of the area starting at `src`
    /// (this process's address of it), from `offset`, into `dst` at the sync.
    ///
    /// # Errors
    /// A bad pid, an unregistered area, bytes outside it.
    pub async fn get(
        &mut self,
        pid: u16,
        src: u64,
        offset: u64,
        dst: u64,
        len: u32,
    ) -> Result<(), BspError> {
        self.call_cost().await;
        let p = self.check_pid(pid)?;
        let i = self.area_index(src)?;
        let me = usize::from(self.pid());
        if p == me {
            let a = self.regs[i].ok_or(BspError::NotRegistered(src))?;
            check_range("bsp_get", offset, len, a.len)?;
            self.local_gets.push((a.va + offset, dst, len));
            return Ok(());
        }
        let r = self.remote[p]
            .get(i)
            .copied()
            .flatten()
            .ok_or(BspError::NotRegistered(src))?;
        check_range("bsp_get", offset, len, r.2)?;
        if self.comm.has_rdma_read() {
            let at = self.get_buf_reserve(u64::from(len)).await?;
            self.reads[p].push(ReadGet {
                at,
                dst,
                len,
                remote_va: r.0 + offset,
                remote_handle: r.1,
            });
            return Ok(());
        }
        let req = u32::try_from(self.gets.len()).unwrap_or(u32::MAX);
        self.gets.push((dst, len));
        let h = RecHeader {
            kind: RecKind::Get,
            tag_len: 0,
            a: u32::try_from(i).unwrap_or(u32::MAX),
            b: u32::try_from(offset).unwrap_or(u32::MAX),
            len,
        };
        let mut payload = [0u8; 8];
        payload[..4].copy_from_slice(&req.to_le_bytes());
        self.record_bytes(p, h, &payload).await
    }

    /// `bsp_send`: a message with `tag` (the current tag size) and `len` bytes at
    /// `payload` to process `pid`, delivered at the sync.
    ///
    /// # Errors
    /// A bad pid or tag size; the copy failing.
    pub async fn send(
        &mut self,
        pid: u16,
        tag: &[u8],
        payload: u64,
        len: u32,
    ) -> Result<(), BspError> {
        self.call_cost().await;
        let p = self.check_pid(pid)?;
        if tag.len() != usize::from(self.tagsize) {
            return Err(BspError::TagSize {
                got: tag.len(),
                want: self.tagsize,
            });
        }
        let h = RecHeader {
            kind: RecKind::Message,
            tag_len: self.tagsize,
            a: 0,
            b: 0,
            len,
        };
        let out = &mut self.out[p];
        ensure_header(out, &mut self.comm, &mut self.pool).await?;
        out.buf
            .push(&mut self.comm, &mut self.pool, &h.emit())
            .await?;
        out.buf.push(&mut self.comm, &mut self.pool, tag).await?;
        let total = u64::from(self.tagsize) + u64::from(len);
        let pad = total.next_multiple_of(8) - total;
        out.buf
            .push_copy(&mut self.comm, &mut self.pool, payload, u64::from(len), 1)
            .await?;
        if pad > 0 {
            let z = vec![0u8; usize::try_from(pad).unwrap_or(0)];
            out.buf.push(&mut self.comm, &mut self.pool, &z).await?;
        }
        out.records += 1;
        Ok(())
    }

    /// `bsp_qsize`: messages delivered by the last sync and not yet moved, and their
    /// payload bytes.
    #[must_use]
    pub fn qsize(&self) -> (usize, u64) {
        (
            self.inbox.len(),
            self.inbox.iter().map(|m| u64::from(m.2)).sum(),
        )
    }

    /// `bsp_get_tag`: the next message's payload length and tag.
    #[must_use]
    pub fn get_tag(&self) -> Option<(u32, Vec<u8>)> {
        self.inbox.front().map(|m| (m.2, m.0.clone()))
    }

    /// `bsp_move`: copies at most `max` bytes of the next message's payload to `dst`
    /// and removes it from the queue; returns the bytes copied (none: queue empty).
    ///
    /// # Errors
    /// The copy failing.
    pub async fn move_msg(&mut self, dst: u64, max: u32) -> Result<Option<u32>, BspError> {
        self.call_cost().await;
        let Some((_, va, len)) = self.inbox.pop_front() else {
            return Ok(None);
        };
        let n = len.min(max);
        if n > 0 {
            self.comm
                .vipl()
                .memcpy(dst, va, u64::from(n))
                .await
                .map_err(|error| MpiError::Vipl {
                    call: "memcpy",
                    error,
                })?;
        }
        Ok(Some(n))
    }

    /// Appends a record with `n` payload bytes copied from `src` (padded) to pid `p`'s
    /// message.
    async fn record(
        &mut self,
        p: usize,
        h: RecHeader,
        src: Option<(u64, u64)>,
    ) -> Result<(), BspError> {
        let out = &mut self.out[p];
        ensure_header(out, &mut self.comm, &mut self.pool).await?;
        out.buf
            .push(&mut self.comm, &mut self.pool, &h.emit())
            .await?;
        if let Some((va, n)) = src {
            out.buf
                .push_copy(&mut self.comm, &mut self.pool, va, n, 8)
                .await?;
        }
        out.records += 1;
        Ok(())
    }

    /// Appends a record with its payload given as bytes (already a multiple of 8).
    async fn record_bytes(
        &mut self,
        p: usize,
        h: RecHeader,
        payload: &[u8],
    ) -> Result<(), BspError> {
        let out = &mut self.out[p];
        ensure_header(out, &mut self.comm, &mut self.pool).await?;
        let mut b = h.emit().to_vec();
        b.extend_from_slice(payload);
        out.buf.push(&mut self.comm, &mut self.pool, &b).await?;
        out.records += 1;
        Ok(())
    }

    /// Copies `n` bytes at `src` into the registered put buffer; their offset in it.
    async fn put_buf_copy(&mut self, src: u64, n: u64) -> Result<u64, BspError> {
        let mut buf = std::mem::take(&mut self.put_buf);
        let r = self.grow_registered(&mut buf, n).await;
        let r = match r {
            Ok(()) => buf
                .0
                .push_copy(&mut self.comm, &mut self.pool, src, n, 8)
                .await
                .map_err(BspError::from),
            Err(e) => Err(e),
        };
        self.put_buf = buf;
        r
    }

    /// Room for `n` bytes (8-byte aligned) in the registered get buffer, where an RDMA
    /// read lands; their offset in it.
    async fn get_buf_reserve(&mut self, n: u64) -> Result<u64, BspError> {
        let mut buf = std::mem::take(&mut self.get_buf);
        let r = self.grow_registered(&mut buf, n).await;
        let at = buf.0.len;
        buf.0.len += n.next_multiple_of(8);
        self.get_buf = buf;
        r.map(|()| at)
    }

    /// Makes room for `n` more bytes (padded to 8) in a registered buffer: a larger one
    /// registered, the bytes so far moved into it, the old one deregistered.
    async fn grow_registered(
        &mut self,
        buf: &mut (Staging, MemHandle),
        n: u64,
    ) -> Result<(), BspError> {
        let padded = n.next_multiple_of(8);
        if buf.0.len + padded <= buf.0.cap {
            return Ok(());
        }
        let old = *buf;
        let want = (old.0.len + padded).max(2 * old.0.cap).max(64 * 1024);
        let (va, cap) = self.pool.take(&mut self.comm, want).await?;
        if old.0.len > 0 {
            self.comm
                .vipl()
                .memcpy(va, old.0.va, old.0.len)
                .await
                .map_err(|error| MpiError::Vipl {
                    call: "memcpy",
                    error,
                })?;
        }
        let nh = self.comm.register_rdma(va, cap).await?;
        if old.0.cap > 0 {
            self.comm.deregister_rdma(old.0.va, old.1).await?;
            self.pool.give((old.0.va, old.0.cap));
        }
        *buf = (
            Staging {
                va,
                cap,
                len: old.0.len,
            },
            nh,
        );
        Ok(())
    }
}

/// Reserves the 32-byte message header at the start of an empty outgoing message.
async fn ensure_header(
    out: &mut Outgoing,
    comm: &mut Comm,
    pool: &mut Pool,
) -> Result<(), BspError> {
    if out.buf.len == 0 {
        out.buf
            .push(comm, pool, &[0u8; crate::records::MSG_HEADER])
            .await?;
    }
    Ok(())
}

fn check_range(what: &'static str, offset: u64, len: u32, area: u64) -> Result<(), BspError> {
    let end = offset.saturating_add(u64::from(len));
    if end > area {
        return Err(BspError::OutOfArea {
            what,
            offset,
            end,
            len: area,
        });
    }
    Ok(())
}
