//! The kernel agent: the privileged half of the VI provider, reached by one system call
//! (`syscall` cycles) per request. It talks to the card only through BAR0 registers
//! (via-abi [`bar`]): memory-mapped writes, each posted by the host bridge and run on the
//! PCI bus, and memory-mapped reads that stall the CPU for the whole PCI read.
//!
//! - **Registration** (VipRegisterMem): pin the virtual range and walk the page table
//!   (`pin_page` per page, giving the ATT-style page list: first entry the start's
//!   physical address, then page bases), write `ATT_VA_LO`, `ATT_VA_HI`, `ATT_LEN`,
//!   `ATT_ATTR` (enable bits 15:0, tag 31:16), one `ATT_PAGE` per page, `ATT_CMD` =
//!   Register; read `ATT_RESULT` until it is no longer Busy (`register_poll_delay`
//!   between reads, for as long as the card takes: see [`crate::CpuWait::RegisterPoll`]); read
//!   `ATT_HANDLE`.
//! - **Deregistration**: write `ATT_HANDLE`, `ATT_CMD` = Deregister, wait for the result.
//! - **VI commands** (create, destroy, connect, disconnect): write `VI_SEL`, the
//!   command's parameter registers, `VI_CMD`; wait for `VI_RESULT`.
//! - **Connection waits**: read `VI_RESULT` and `VI_STATE` until the VI is connected,
//!   refused, or the deadline passes.
//!
//! Tracing target: `host::agent`.

use crate::ops::RegisterWait;
use crate::vipl::{VipError, VipMemAttributes, VipResult, Vipl};
use sim_kernel::{Cycles, Time};
use via_abi::bar::{self, AttCmd, CmdResult, ViCmd, ViStateCode};
use via_abi::MemHandle;

/// How a connection wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ConnectOutcome {
    /// Connected to this remote VI.
    Connected(u16),
    /// Refused (by the peer or the card).
    Refused(VipError),
    /// The deadline passed.
    TimedOut,
}

impl Vipl {
    /// Kernel-agent side of VipRegisterMem (see the module doc).
    pub(crate) async fn agent_register(
        &self,
        va: u64,
        len: u64,
        attrs: &VipMemAttributes,
    ) -> VipResult<MemHandle> {
        self.compute(self.cfg.costs.syscall).await;
        let pages = self.pages_of(va, len).await?;
        let n = pages.len() as u64;
        self.compute(Cycles(self.cfg.costs.pin_page.0.saturating_mul(n)))
            .await;
        let len32 = u32::try_from(len).map_err(|_| VipError::InvalidParameter)?;
        let mut words = Vec::with_capacity(pages.len());
        for p in &pages {
            words.push(u32::try_from(*p).map_err(|_| VipError::ErrorResource)?);
        }
        tracing::debug!(target: "host::agent", va, len, pages = pages.len(), "register");
        self.mmio_write(bar::ATT_VA_LO, low(va)).await;
        self.mmio_write(bar::ATT_VA_HI, high(va)).await;
        self.mmio_write(bar::ATT_LEN, len32).await;
        let attr = u32::from(attrs.att_bits().bits()) | (u32::from(attrs.ptag.raw()) << 16);
        self.mmio_write(bar::ATT_ATTR, attr).await;
        for w in words {
            self.mmio_write(bar::ATT_PAGE, w).await;
        }
        self.mmio_write(bar::ATT_CMD, AttCmd::Register.raw()).await;
        VipError::from_cmd(self.agent_wait_result(bar::ATT_RESULT).await?)?;
        let h = MemHandle::from_raw(self.mmio_read(bar::ATT_HANDLE).await?);
        if !h.is_well_formed() {
            tracing::warn!(target: "host::agent", handle = %h, "card returned a handle it cannot have issued");
            return Err(VipError::ErrorResource);
        }
        tracing::debug!(target: "host::agent", handle = %h, "registered");
        Ok(h)
    }

    /// Kernel-agent side of VipDeregisterMem.
    pub(crate) async fn agent_deregister(&self, handle: MemHandle) -> VipResult<()> {
        self.compute(self.cfg.costs.syscall).await;
        self.mmio_write(bar::ATT_HANDLE, handle.raw()).await;
        self.mmio_write(bar::ATT_CMD, AttCmd::Deregister.raw())
            .await;
        let r = self.agent_wait_result(bar::ATT_RESULT).await?;
        tracing::debug!(target: "host::agent", handle = %handle, ?r, "deregister");
        VipError::from_cmd(r)
    }

    /// Writes `VI_SEL`, `regs` and `VI_CMD`; waits for `VI_RESULT` (no system call cost:
    /// the caller's request pays it).
    pub(crate) async fn agent_vi_command(
        &self,
        vi: u16,
        cmd: ViCmd,
        regs: &[(u64, u32)],
    ) -> VipResult<()> {
        self.agent_vi_start(vi, cmd, regs).await;
        let r = self.agent_wait_result(bar::VI_RESULT).await?;
        tracing::debug!(target: "host::agent", vi, ?cmd, ?r, "VI command");
        VipError::from_cmd(r)
    }

    /// Writes `VI_SEL`, `regs` and `VI_CMD`, without waiting.
    pub(crate) async fn agent_vi_start(&self, vi: u16, cmd: ViCmd, regs: &[(u64, u32)]) {
        self.mmio_write(bar::VI_SEL, u32::from(vi)).await;
        for &(reg, value) in regs {
            self.mmio_write(reg, value).await;
        }
        self.mmio_write(bar::VI_CMD, cmd.raw()).await;
    }

    /// The card's state of VI `vi` (`VI_SEL` write, `VI_STATE` read).
    pub(crate) async fn agent_vi_state(&self, vi: u16) -> VipResult<ViStateCode> {
        self.mmio_write(bar::VI_SEL, u32::from(vi)).await;
        Ok(ViStateCode::from_raw(self.mmio_read(bar::VI_STATE).await?))
    }

    /// Reads the result register `reg` until it is no longer Busy, for as long as the
    /// card takes (a declared register wait: a card that never answers is a stall the
    /// run loop reports, not a time-out that would fail a slow but valid card).
    ///
    /// # Errors
    /// `VIP_ERROR_RESOURCE` if a read fails.
    pub(crate) async fn agent_wait_result(&self, reg: u64) -> VipResult<CmdResult> {
        self.declare_wait(Some(RegisterWait {
            what: "a card command to finish (result register no longer Busy)",
            deadline: None,
            since: self.now(),
        }));
        let r = loop {
            match self.mmio_read(reg).await.map(CmdResult::from_raw) {
                Ok(CmdResult::Busy) => {}
                other => break other,
            }
            self.compute(self.cfg.costs.register_poll_delay).await;
        };
        self.declare_wait(None);
        r
    }

    /// After a connect request or wait on `vi` (already written): reads `VI_RESULT` and
    /// `VI_STATE` until the VI is connected, refused, or `deadline` passes.
    pub(crate) async fn agent_wait_connected(
        &self,
        vi: u16,
        deadline: Option<Time>,
    ) -> VipResult<ConnectOutcome> {
        self.declare_wait(Some(RegisterWait {
            what: "the VI to connect (VI_RESULT / VI_STATE)",
            deadline,
            since: self.now(),
        }));
        let r = self.wait_connected_loop(vi, deadline).await;
        self.declare_wait(None);
        r
    }

    async fn wait_connected_loop(
        &self,
        vi: u16,
        deadline: Option<Time>,
    ) -> VipResult<ConnectOutcome> {
        let since = self.now();
        loop {
            let r = CmdResult::from_raw(self.mmio_read(bar::VI_RESULT).await?);
            match r {
                CmdResult::Busy | CmdResult::Ok => {}
                other => {
                    let e = VipError::from_cmd(other).err().unwrap_or(VipError::Reject);
                    return Ok(ConnectOutcome::Refused(e));
                }
            }
            let state = self.agent_vi_state(vi).await?;
            match (r, state) {
                (_, ViStateCode::Connected) => {
                    let peer = self.mmio_read(bar::VI_PEER_VI).await?;
                    let peer = u16::try_from(peer).map_err(|_| VipError::ErrorResource)?;
                    return Ok(ConnectOutcome::Connected(peer));
                }
                (_, ViStateCode::Error) => {
                    return Ok(ConnectOutcome::Refused(VipError::InvalidState))
                }
                (_, ViStateCode::Absent | ViStateCode::Unknown(_)) => {
                    return Ok(ConnectOutcome::Refused(VipError::ErrorResource))
                }
                // done, but back to idle: the peer refused without saying so
                (CmdResult::Ok, ViStateCode::Idle) => {
                    return Ok(ConnectOutcome::Refused(VipError::Reject))
                }
                (_, ViStateCode::Idle | ViStateCode::ConnectPending) => {}
            }
            if deadline.is_some_and(|d| self.now() >= d) {
                return Ok(ConnectOutcome::TimedOut);
            }
            if self.now().0.saturating_sub(since.0) >= CONNECT_SPIN.0 {
                self.sleep(CONNECT_BACKOFF).await;
            } else {
                self.compute(self.cfg.costs.register_poll_delay).await;
            }
        }
    }
}

/// How long a connection wait polls the card's registers back to back before it backs
/// off. Assumption: a driver spins a little (a connection on a LAN is set up in tens of
/// microseconds, 10 to 20 us in every preset) and then yields the CPU between polls
/// rather than keep the bus busy while the card resends a lost request (1 ms apart).
const CONNECT_SPIN: sim_kernel::Duration = sim_kernel::Duration::from_ns(100_000);

/// The pause between two polls once the spin is over. Assumption: a scheduler tick
/// fraction, short against the card's 1 ms connect retry.
const CONNECT_BACKOFF: sim_kernel::Duration = sim_kernel::Duration::from_ns(10_000);

/// Bits 31:0 of `v`.
#[allow(clippy::cast_possible_truncation)]
pub(crate) const fn low(v: u64) -> u32 {
    v as u32
}

/// Bits 63:32 of `v`.
#[allow(clippy::cast_possible_truncation)]
pub(crate) const fn high(v: u64) -> u32 {
    (v >> 32) as u32
}
