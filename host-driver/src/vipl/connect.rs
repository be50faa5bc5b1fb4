//! VipConnectRequest, VipConnectWait, VipConnectAccept, VipConnectReject, VipDisconnect.
//!
//! Peers are addressed by the MAC address of their NIC plus a 32-bit discriminator. The
//! card binds a listening VI when the wait starts and accepts a matching request onto it
//! by itself (via-abi `bar`: "VipConnectAccept is folded in"), so **`vip_connect_wait`
//! takes the VI** that `vip_connect_accept` will name (a deviation from the VIPL
//! signature, forced by the register interface); accepting then only checks and costs a
//! library call. Waits poll `VI_RESULT` / `VI_STATE` with `register_poll_delay` between
//! reads; a wait that times out is cancelled with a Disconnect command.

use super::{ConnHandle, ConnectRequestInfo, NetAddress, NicHandle, Timeout, ViHandle, ViState};
use super::{VipError, VipResult, Vipl};
use crate::agent::ConnectOutcome;
use via_abi::bar::{self, ViCmd};

impl Vipl {
    /// **VipConnectRequest**: asks the peer at `remote` to connect to `vi`; returns the
    /// remote VI number once connected.
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: no such VI; `VIP_INVALID_STATE`: the VI is not idle;
    /// `VIP_REJECT`: refused; `VIP_TIMEOUT`: `timeout` passed.
    pub async fn vip_connect_request(
        &mut self,
        vi: ViHandle,
        local: &NetAddress,
        remote: &NetAddress,
        timeout: Timeout,
    ) -> VipResult<u16> {
        let start = self.now();
        let r = self.connect_request(vi, local, remote, timeout).await;
        self.end_call("VipConnectRequest", start, &r);
        r
    }

    async fn connect_request(
        &mut self,
        vi: ViHandle,
        _local: &NetAddress,
        remote: &NetAddress,
        timeout: Timeout,
    ) -> VipResult<u16> {
        self.compute(self.cfg.costs.vipl_call).await;
        self.any_nic()?;
        let entry = self.vis.get(&vi.0).ok_or(VipError::InvalidParameter)?;
        if entry.state != ViState::Idle {
            return Err(VipError::InvalidState);
        }
        let deadline = self.deadline(timeout);
        self.compute(self.cfg.costs.syscall).await;
        let m = remote.host.octets();
        let regs = [
            (
                bar::VI_PEER_MAC_LO,
                u32::from_le_bytes([m[0], m[1], m[2], m[3]]),
            ),
            (bar::VI_PEER_MAC_HI, u32::from_le_bytes([m[4], m[5], 0, 0])),
            (bar::VI_DISCRIMINATOR, remote.discriminator),
        ];
        self.agent_vi_start(vi.0, ViCmd::ConnectRequest, &regs)
            .await;
        let peer = self.finish_connect(vi, deadline).await?;
        self.set_connected(vi, ViState::Connected, peer);
        Ok(peer)
    }

    /// **VipConnectWait**: waits for a connect request to `local` (its discriminator)
    /// and lets the card accept it onto `vi` (see the module doc).
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: not the open NIC or no such VI; `VIP_INVALID_STATE`: the
    /// VI is not idle; `VIP_TIMEOUT`: `timeout` passed; what the card answers.
    pub async fn vip_connect_wait(
        &mut self,
        nic: NicHandle,
        local: &NetAddress,
        timeout: Timeout,
        vi: ViHandle,
    ) -> VipResult<ConnectRequestInfo> {
        let start = self.now();
        let r = self.connect_wait(nic, local, timeout, vi).await;
        self.end_call("VipConnectWait", start, &r);
        r
    }

    async fn connect_wait(
        &mut self,
        nic: NicHandle,
        local: &NetAddress,
        timeout: Timeout,
        vi: ViHandle,
    ) -> VipResult<ConnectRequestInfo> {
        self.compute(self.cfg.costs.vipl_call).await;
        self.check_nic(nic)?;
        let entry = self.vis.get(&vi.0).ok_or(VipError::InvalidParameter)?;
        if entry.state != ViState::Idle {
            return Err(VipError::InvalidState);
        }
        let deadline = self.deadline(timeout);
        self.compute(self.cfg.costs.syscall).await;
        let regs = [(bar::VI_DISCRIMINATOR, local.discriminator)];
        self.agent_vi_start(vi.0, ViCmd::ConnectWait, &regs).await;
        let peer = self.finish_connect(vi, deadline).await?;
        self.set_connected(vi, ViState::ConnectPending, peer);
        let conn = ConnHandle(self.next_conn);
        self.next_conn = self.next_conn.wrapping_add(1).max(1);
        let info = ConnectRequestInfo {
            conn,
            remote_vi: peer,
        };
        self.conns.insert(conn.0, (vi.0, info));
        Ok(info)
    }

    /// Waits for the card to connect `vi`; cancels the attempt on timeout.
    async fn finish_connect(
        &mut self,
        vi: ViHandle,
        deadline: Option<sim_kernel::Time>,
    ) -> VipResult<u16> {
        match self.agent_wait_connected(vi.0, deadline).await? {
            ConnectOutcome::Connected(peer) => Ok(peer),
            ConnectOutcome::Refused(e) => Err(e),
            ConnectOutcome::TimedOut => {
                // best effort: the attempt is abandoned either way
                let _ = self.agent_vi_command(vi.0, ViCmd::Disconnect, &[]).await;
                Err(VipError::Timeout)
            }
        }
    }

    fn set_connected(&mut self, vi: ViHandle, state: ViState, peer: u16) {
        if let Some(e) = self.vis.get_mut(&vi.0) {
            e.state = state;
            e.peer_vi = Some(peer);
        }
    }

    /// **VipConnectAccept**: accepts the request `conn` onto `vi` (the VI given to the
    /// wait; the card has already connected it).
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: an unknown request or another VI.
    pub async fn vip_connect_accept(&mut self, conn: ConnHandle, vi: ViHandle) -> VipResult<()> {
        let start = self.now();
        self.compute(self.cfg.costs.vipl_call).await;
        let r = match self.conns.get(&conn.0) {
            Some((v, _)) if *v == vi.0 => {
                self.conns.remove(&conn.0);
                if let Some(e) = self.vis.get_mut(&vi.0) {
                    e.state = ViState::Connected;
                }
                Ok(())
            }
            _ => Err(VipError::InvalidParameter),
        };
        self.end_call("VipConnectAccept", start, &r);
        r
    }

    /// **VipConnectReject**: refuses the request `conn` (the card drops the connection
    /// it had set up on the waiting VI, which becomes idle).
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: an unknown request; what the card answers.
    pub async fn vip_connect_reject(&mut self, conn: ConnHandle) -> VipResult<()> {
        let start = self.now();
        let r = self.connect_reject(conn).await;
        self.end_call("VipConnectReject", start, &r);
        r
    }

    async fn connect_reject(&mut self, conn: ConnHandle) -> VipResult<()> {
        self.compute(self.cfg.costs.vipl_call).await;
        let (vi, _) = self
            .conns
            .remove(&conn.0)
            .ok_or(VipError::InvalidParameter)?;
        self.compute(self.cfg.costs.syscall).await;
        if let Some(e) = self.vis.get_mut(&vi) {
            e.state = ViState::Idle;
            e.peer_vi = None;
        }
        self.agent_vi_command(vi, ViCmd::ConnectReject, &[]).await
    }

    /// **VipDisconnect**: ends the connection of `vi`, which becomes idle.
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: no such VI; `VIP_INVALID_STATE`: the VI is idle; what the
    /// card answers.
    pub async fn vip_disconnect(&mut self, vi: ViHandle) -> VipResult<()> {
        let start = self.now();
        let r = self.disconnect(vi).await;
        self.end_call("VipDisconnect", start, &r);
        r
    }

    async fn disconnect(&mut self, vi: ViHandle) -> VipResult<()> {
        self.compute(self.cfg.costs.vipl_call).await;
        let entry = self.vis.get(&vi.0).ok_or(VipError::InvalidParameter)?;
        if entry.state == ViState::Idle {
            return Err(VipError::InvalidState);
        }
        self.compute(self.cfg.costs.syscall).await;
        self.agent_vi_command(vi.0, ViCmd::Disconnect, &[]).await?;
        self.conns.retain(|_, (v, _)| *v != vi.0);
        if let Some(e) = self.vis.get_mut(&vi.0) {
            e.state = ViState::Idle;
            e.peer_vi = None;
        }
        Ok(())
    }
}
