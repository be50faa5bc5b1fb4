//! VipRegisterMem, VipDeregisterMem, VipQueryMem: the library checks what it can (NIC,
//! length, tag, handle) and the kernel agent does the rest with the card's ATT manager
//! (see [`crate::agent`]).

use super::{NicHandle, Region, VipError, VipMemAttributes, VipResult, Vipl};
use via_abi::MemHandle;

impl Vipl {
    /// **VipRegisterMem**: pins `[va, va + len)` and registers it with the card's ATT;
    /// returns the memory handle descriptors and peers use.
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: not the open NIC, zero length, more than 4 GB, or pages
    /// that are not mapped; `VIP_INVALID_PTAG`: a tag that is not live; what the card
    /// answers (`VIP_ERROR_RESOURCE` when its table is full, ...).
    pub async fn vip_register_mem(
        &mut self,
        nic: NicHandle,
        va: u64,
        len: u64,
        attrs: &VipMemAttributes,
    ) -> VipResult<MemHandle> {
        let start = self.now();
        let r = self.register_mem(nic, va, len, attrs).await;
        self.end_call("VipRegisterMem", start, &r);
        r
    }

    async fn register_mem(
        &mut self,
        nic: NicHandle,
        va: u64,
        len: u64,
        attrs: &VipMemAttributes,
    ) -> VipResult<MemHandle> {
        self.compute(self.cfg.costs.vipl_call).await;
        self.check_nic(nic)?;
        if len == 0 || len > u64::from(u32::MAX) || va.checked_add(len).is_none() {
            return Err(VipError::InvalidParameter);
        }
        if !self.ptag_live(attrs.ptag) {
            return Err(VipError::InvalidPtag);
        }
        let handle = self.agent_register(va, len, attrs).await?;
        self.regions.insert(
            handle.raw(),
            Region {
                va,
                len,
                attrs: *attrs,
            },
        );
        Ok(handle)
    }

    /// **VipDeregisterMem**: ends the registration `handle` of the region starting at
    /// `va`; the handle is dead afterwards (the card refuses it, the library too).
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: not the open NIC, a handle that is not registered (never,
    /// or already deregistered) or a `va` that is not the region's start; what the card
    /// answers.
    pub async fn vip_deregister_mem(
        &mut self,
        nic: NicHandle,
        va: u64,
        handle: MemHandle,
    ) -> VipResult<()> {
        let start = self.now();
        let r = self.deregister_mem(nic, va, handle).await;
        self.end_call("VipDeregisterMem", start, &r);
        r
    }

    async fn deregister_mem(
        &mut self,
        nic: NicHandle,
        va: u64,
        handle: MemHandle,
    ) -> VipResult<()> {
        self.compute(self.cfg.costs.vipl_call).await;
        self.check_nic(nic)?;
        match self.regions.get(&handle.raw()) {
            Some(r) if r.va == va => {}
            _ => return Err(VipError::InvalidParameter),
        }
        self.agent_deregister(handle).await?;
        self.regions.remove(&handle.raw());
        Ok(())
    }

    /// **VipQueryMem**: the attributes of the registered region `handle` holding `va`.
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: not the open NIC, a dead handle, or `va` outside it.
    pub async fn vip_query_mem(
        &mut self,
        nic: NicHandle,
        va: u64,
        handle: MemHandle,
    ) -> VipResult<VipMemAttributes> {
        let start = self.now();
        self.compute(self.cfg.costs.vipl_call).await;
        let r = self
            .check_nic(nic)
            .and_then(|()| match self.regions.get(&handle.raw()) {
                Some(reg) if reg.covers(va, 1) => Ok(reg.attrs),
                _ => Err(VipError::InvalidParameter),
            });
        self.end_call("VipQueryMem", start, &r);
        r
    }

    /// The registered region `handle`, if `[va, va + len)` lies inside it.
    pub(crate) fn region_covering(&self, handle: MemHandle, va: u64, len: u64) -> Option<Region> {
        self.regions
            .get(&handle.raw())
            .filter(|r| r.covers(va, len))
            .copied()
    }
}
