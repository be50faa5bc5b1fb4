//! `MPI_Init` and `MPI_Finalize`: the NIC, the completion queue, one VI per peer, the
//! bounce region with every receive slot posted, and the connection mesh.
//!
//! Mesh order (no deadlock for any size): a process first accepts the connections of
//! every lower rank, in increasing order, then requests one to every higher rank, in
//! increasing order. Each waits only for lower ranks, so the waits form no cycle. Each
//! pair has its own discriminator (`base + 64 * lower + higher`), so a request that
//! arrives while its target still waits for another is kept by the card (or refused
//! and retried), never taken by the wrong wait.

use super::{Bounce, Call, Comm, MpiConfig, MpiError, Peer, WorldMacs};
use crate::p2p::{P2p, P2pParams};
use crate::types::Rank;
use crate::wire::HEADER_LEN;
use host_driver::vipl::descriptor::{data_segment, recv_descriptor};
use host_driver::vipl::{NetAddress, Timeout, ViAttributes, VipError, VipMemAttributes};
use host_driver::Vipl;
use std::collections::{BTreeMap, VecDeque};

/// Most processes in a world (the discriminator scheme and the cluster's size).
pub const MAX_SIZE: u16 = 64;

impl Comm {
    /// `MPI_Init`: this process is `rank` of `macs.len()`, whose NICs have these
    /// addresses (rank order).
    ///
    /// # Errors
    /// [`MpiError::Argument`] for a bad world or settings; the first VIPL call that
    /// fails.
    pub async fn init(
        mut vipl: Vipl,
        rank: Rank,
        macs: WorldMacs,
        cfg: MpiConfig,
    ) -> Result<Comm, MpiError> {
        let size = u16::try_from(macs.len()).map_err(|_| MpiError::Argument("world too large"))?;
        if !(1..=MAX_SIZE).contains(&size) || rank.0 >= size {
            return Err(MpiError::Argument(
                "rank outside a world of 1 ..= 64 processes",
            ));
        }
        let p2p = P2p::new(P2pParams {
            rank,
            size,
            eager_limit: cfg.eager_limit,
            buffers: cfg.buffers_per_peer,
            credit_threshold: cfg.credit_threshold,
        })?;
        let name = vipl.device_name().to_owned();
        let nic = vipl.vip_open_nic(&name).await.call("VipOpenNic")?;
        let nic_attrs = vipl.vip_query_nic(nic).await.call("VipQueryNic")?;
        let ptag = vipl.vip_create_ptag(nic).await.call("VipCreatePtag")?;
        let peers_n = usize::from(size) - 1;
        let per = usize::from(cfg.buffers_per_peer);
        let slot_bytes = (HEADER_LEN as u64 + u64::from(cfg.eager_limit)).next_multiple_of(64);
        let bounce_len = (slot_bytes + 64) * (2 * peers_n * per) as u64;
        let cq_entries = u32::try_from(4 * peers_n * per).unwrap_or(u32::MAX).max(1);
        let cq = vipl
            .vip_create_cq(nic, cq_entries)
            .await
            .call("VipCreateCQ")?;
        let local = VipMemAttributes {
            ptag,
            enable_rdma_write: false,
            enable_rdma_read: false,
        };
        let (va, handle) = if bounce_len > 0 {
            let va = vipl.malloc(bounce_len, 64).await.call("malloc")?;
            let h = vipl
                .vip_register_mem(nic, va, bounce_len, &local)
                .await
                .call("VipRegisterMem")?;
            (va, h)
        } else {
            (0, via_abi::MemHandle::NULL)
        };
        let bounce = Bounce {
            va,
            handle,
            slot_bytes,
            recv_slots: peers_n * per,
            send_slots: peers_n * per,
        };
        let mut attrs = ViAttributes::reliable(ptag);
        attrs.reliability_level = cfg.reliability;
        attrs.enable_rdma_write = true;
        // RDMA read where the card has it (VIA 1.0: only on reliable VIs).
        let rdma_read =
            nic_attrs.rdma_read_support && cfg.reliability != via_abi::bar::Reliability::Unreliable;
        attrs.enable_rdma_read = rdma_read;
        attrs.max_transfer_size = nic_attrs.max_transfer_size;
        let mut peers = Vec::with_capacity(usize::from(size));
        let mut vi_peer = BTreeMap::new();
        let mut k = 0usize;
        for r in 0..size {
            if r == rank.0 {
                peers.push(None);
                continue;
            }
            let vi = vipl
                .vip_create_vi(nic, &attrs, Some(cq), Some(cq))
                .await
                .call("VipCreateVi")?;
            let mut posted = VecDeque::with_capacity(per);
            for s in k * per..(k + 1) * per {
                let d = recv_descriptor(vec![data_segment(
                    bounce.slot_va(s),
                    handle,
                    u32::try_from(slot_bytes).unwrap_or(u32::MAX),
                )]);
                vipl.build_descriptor(bounce.desc_va(s), &d)
                    .await
                    .call("build")?;
                vipl.vip_post_recv(vi, bounce.desc_va(s), handle)
                    .await
                    .call("VipPostRecv")?;
                posted.push_back(s);
            }
            k += 1;
            vi_peer.insert(vi.0, Rank(r));
            peers.push(Some(Peer {
                vi,
                posted,
                in_flight: VecDeque::new(),
            }));
        }
        let send_free = (bounce.recv_slots..bounce.recv_slots + bounce.send_slots)
            .rev()
            .collect();
        let mut comm = Comm {
            vipl,
            cfg,
            rank,
            size,
            p2p,
            nic,
            ptag,
            cq,
            peers,
            vi_peer,
            bounce,
            send_free,
            user_sends: BTreeMap::new(),
            user_recvs: BTreeMap::new(),
            recv_handles: BTreeMap::new(),
            stashes: BTreeMap::new(),
            stash_free: Vec::new(),
            reg_cache: BTreeMap::new(),
            coll_seq: 0,
            scratch_free: Vec::new(),
            finalizing: false,
            rdma_read,
            in_actions: false,
            stats: super::MpiStats::default(),
        };
        comm.connect_mesh(&macs).await?;
        Ok(comm)
    }

    fn discriminator(&self, a: Rank, b: Rank) -> u32 {
        let (lo, hi) = if a < b { (a, b) } else { (b, a) };
        self.cfg
            .discriminator_base
            .wrapping_add(64 * u32::from(lo.0) + u32::from(hi.0))
    }

    async fn connect_mesh(&mut self, macs: &[via_abi::MacAddr]) -> Result<(), MpiError> {
        let me = self.rank;
        let my_mac = macs[usize::from(me.0)];
        let timeout = Timeout::After(self.cfg.progress_timeout);
        for r in 0..me.0 {
            let peer = Rank(r);
            let vi = self
                .peer(peer)
                .map(|p| p.vi)
                .ok_or(MpiError::Argument("no VI"))?;
            let local = NetAddress {
                host: my_mac,
                discriminator: self.discriminator(me, peer),
            };
            let req = self
                .vipl
                .vip_connect_wait(self.nic, &local, timeout, vi)
                .await
                .call("VipConnectWait")?;
            self.vipl
                .vip_connect_accept(req.conn, vi)
                .await
                .call("VipConnectAccept")?;
        }
        for r in me.0 + 1..self.size {
            let peer = Rank(r);
            let vi = self
                .peer(peer)
                .map(|p| p.vi)
                .ok_or(MpiError::Argument("no VI"))?;
            let d = self.discriminator(me, peer);
            let local = NetAddress {
                host: my_mac,
                discriminator: d,
            };
            let remote = NetAddress {
                host: macs[usize::from(r)],
                discriminator: d,
            };
            let attempts = self.cfg.connect_attempts.max(1);
            let mut attempt = 1;
            loop {
                match self
                    .vipl
                    .vip_connect_request(vi, &local, &remote, timeout)
                    .await
                {
                    Ok(_) => break,
                    Err(VipError::Reject | VipError::Timeout) if attempt < attempts => {
                        attempt += 1;
                        self.vipl.sleep(self.cfg.connect_retry).await;
                    }
                    Err(error) => {
                        return Err(MpiError::Vipl {
                            call: "VipConnectRequest",
                            error,
                        })
                    }
                }
            }
        }
        Ok(())
    }

    /// `MPI_Finalize`: a barrier (no peer still needs this process), the wait for
    /// every send of this process to complete on the card, then every VI disconnected
    /// and the bounce region and cached registrations released (best effort: a peer may
    /// have gone first). Returns the VIPL for the program's last words.
    ///
    /// # Errors
    /// The barrier's, or a send that never completes.
    pub async fn finalize(mut self) -> Result<Vipl, MpiError> {
        self.finalizing = true;
        self.barrier().await?;
        self.drain_sends("MPI_Finalize").await?;
        let vis: Vec<_> = self.peers.iter().flatten().map(|p| p.vi).collect();
        let v = &mut self.vipl;
        for vi in vis {
            if let Err(e) = v.vip_disconnect(vi).await {
                tracing::debug!(target: "host::vipl", %e, "MPI_Finalize: disconnect");
            }
        }
        let mut regions = Vec::new();
        if self.bounce.bytes() > 0 {
            regions.push((self.bounce.va, self.bounce.handle));
        }
        regions.extend(
            std::mem::take(&mut self.reg_cache)
                .into_iter()
                .map(|(va, (_, h))| (va, h)),
        );
        for (va, h) in regions {
            if let Err(e) = v.vip_deregister_mem(self.nic, va, h).await {
                tracing::debug!(target: "host::vipl", %e, "MPI_Finalize: deregister");
            }
        }
        Ok(self.vipl)
    }
}
