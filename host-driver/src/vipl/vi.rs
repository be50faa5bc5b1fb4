//! VipCreateVi, VipDestroyVi, VipQueryVi.
//!
//! The kernel agent numbers VIs from `first_vi` up (one process per node) and creates
//! each on the card with `VI_SEL`, `VI_PTAG`, `VI_ATTR` (reliability bits 1:0, RDMA write
//! bit 8, RDMA read bit 9) and `VI_CMD` = Create. HVIA-GE implements RDMA write only and
//! no quality of service, which the library refuses up front.

use super::{CqHandle, NicHandle, ViAttributes, ViEntry, ViHandle, ViQuery, ViState};
use super::{VipError, VipResult, Vipl};
use std::collections::VecDeque;
use via_abi::bar::{self, Reliability, ViCmd, ViStateCode};

impl Vipl {
    /// **VipCreateVi**: a new VI with `attrs`, its send and receive queues optionally
    /// tied to completion queues.
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: not the open NIC or a dead CQ; `VIP_INVALID_PTAG`,
    /// `VIP_INVALID_RELIABILITY_LEVEL`, `VIP_INVALID_MTU` (above the NIC's largest
    /// transfer), `VIP_INVALID_QOS`, `VIP_INVALID_RDMAREAD`; `VIP_ERROR_RESOURCE`: no VI
    /// number left; what the card answers.
    pub async fn vip_create_vi(
        &mut self,
        nic: NicHandle,
        attrs: &ViAttributes,
        send_cq: Option<CqHandle>,
        recv_cq: Option<CqHandle>,
    ) -> VipResult<ViHandle> {
        let start = self.now();
        let r = self.create_vi(nic, attrs, send_cq, recv_cq).await;
        self.end_call("VipCreateVi", start, &r);
        r
    }

    async fn create_vi(
        &mut self,
        nic: NicHandle,
        attrs: &ViAttributes,
        send_cq: Option<CqHandle>,
        recv_cq: Option<CqHandle>,
    ) -> VipResult<ViHandle> {
        self.compute(self.cfg.costs.vipl_call).await;
        self.check_nic(nic)?;
        if !self.ptag_live(attrs.ptag) {
            return Err(VipError::InvalidPtag);
        }
        if matches!(attrs.reliability_level, Reliability::Unknown(_)) {
            return Err(VipError::InvalidReliabilityLevel);
        }
        if attrs.max_transfer_size == 0 || attrs.max_transfer_size > self.cfg.max_transfer_bytes {
            return Err(VipError::InvalidMtu);
        }
        if attrs.qos.is_some() {
            return Err(VipError::InvalidQos);
        }
        // VIA 1.0: RDMA read needs a NIC that supports it and a reliable VI.
        let read_ok = self.nic.as_ref().is_some_and(|(_, a)| a.rdma_read_support)
            && attrs.reliability_level != Reliability::Unreliable;
        if attrs.enable_rdma_read && !read_ok {
            return Err(VipError::InvalidRdmaRead);
        }
        let cq_ok = |cq: Option<CqHandle>| cq.is_none_or(|c| self.cqs.contains_key(&c.0));
        if !cq_ok(send_cq) || !cq_ok(recv_cq) {
            return Err(VipError::InvalidParameter);
        }
        let n = self.next_vi;
        if u64::from(n) >= bar::MAX_VIS {
            return Err(VipError::ErrorResource);
        }
        self.compute(self.cfg.costs.syscall).await;
        let mut vi_attr = u32::from(attrs.reliability_level.raw());
        if attrs.enable_rdma_write {
            vi_attr |= bar::VI_ATTR_RDMA_WRITE;
        }
        if attrs.enable_rdma_read {
            vi_attr |= bar::VI_ATTR_RDMA_READ;
        }
        let regs = [
            (bar::VI_PTAG, u32::from(attrs.ptag.raw())),
            (bar::VI_ATTR, vi_attr),
        ];
        self.agent_vi_command(n, ViCmd::Create, &regs).await?;
        self.next_vi = n.saturating_add(1);
        self.vis.insert(
            n,
            ViEntry {
                attrs: *attrs,
                state: ViState::Idle,
                send: VecDeque::new(),
                recv: VecDeque::new(),
                send_last: None,
                recv_last: None,
                send_cq,
                recv_cq,
                peer_vi: None,
            },
        );
        Ok(ViHandle(n))
    }

    /// **VipDestroyVi**: destroys an idle VI.
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: no such VI; `VIP_INVALID_STATE`: not idle (disconnect
    /// first); what the card answers.
    pub async fn vip_destroy_vi(&mut self, vi: ViHandle) -> VipResult<()> {
        let start = self.now();
        let r = self.destroy_vi(vi).await;
        self.end_call("VipDestroyVi", start, &r);
        r
    }

    async fn destroy_vi(&mut self, vi: ViHandle) -> VipResult<()> {
        self.compute(self.cfg.costs.vipl_call).await;
        let entry = self.vis.get(&vi.0).ok_or(VipError::InvalidParameter)?;
        if entry.state != ViState::Idle {
            return Err(VipError::InvalidState);
        }
        self.compute(self.cfg.costs.syscall).await;
        self.agent_vi_command(vi.0, ViCmd::Destroy, &[]).await?;
        self.vis.remove(&vi.0);
        Ok(())
    }

    /// **VipQueryVi**: the VI's state (read from the card), attributes and whether its
    /// queues are empty.
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: no such VI; `VIP_ERROR_RESOURCE`: the card does not know
    /// the VI or cannot be read.
    pub async fn vip_query_vi(&mut self, vi: ViHandle) -> VipResult<ViQuery> {
        let start = self.now();
        let r = self.query_vi(vi).await;
        self.end_call("VipQueryVi", start, &r);
        r
    }

    async fn query_vi(&mut self, vi: ViHandle) -> VipResult<ViQuery> {
        self.compute(self.cfg.costs.vipl_call).await;
        let entry = self
            .vis
            .get(&vi.0)
            .ok_or(VipError::InvalidParameter)?
            .clone();
        self.compute(self.cfg.costs.syscall).await;
        let state = match self.agent_vi_state(vi.0).await? {
            ViStateCode::Idle => ViState::Idle,
            ViStateCode::ConnectPending => ViState::ConnectPending,
            ViStateCode::Connected => ViState::Connected,
            ViStateCode::Error => ViState::Error,
            ViStateCode::Absent | ViStateCode::Unknown(_) => return Err(VipError::ErrorResource),
        };
        Ok(ViQuery {
            state,
            attributes: entry.attrs,
            send_queue_empty: entry.send.is_empty(),
            recv_queue_empty: entry.recv.is_empty(),
        })
    }
}
