//! VipOpenNic, VipCloseNic, VipQueryNic, VipCreatePtag, VipDestroyPtag.
//!
//! Opening reads the card's identity, readiness and MAC address from BAR0 (`CARD_ID`,
//! `CARD_STATUS`, `MAC_LO`, `MAC_HI`); the attributes `VipQueryNic` returns come from
//! those reads (RDMA read support: `CARD_STATUS` bit 1) and the card's published facts. Protection tags are handed out by the
//! kernel agent (1, 2, ...; 0 is never issued) and checked again by the card wherever a
//! VI or region names one.

use super::{NicAttributes, NicHandle, VipError, VipResult, Vipl};
use via_abi::bar::{self, Reliability};
use via_abi::{MacAddr, ProtectionTag};

/// `CARD_STATUS` bit 0: the engine is ready.
const CARD_READY: u32 = 1;

impl Vipl {
    /// **VipOpenNic**: opens the NIC called `name` (the configured device name, by
    /// default `/dev/hvia0`) and reads its identity and MAC address.
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: unknown name; `VIP_ERROR_RESOURCE`: already open, or no
    /// HVIA-GE card answers at BAR0 (or it never becomes ready).
    pub async fn vip_open_nic(&mut self, name: &str) -> VipResult<NicHandle> {
        let start = self.now();
        let r = self.open_nic(name).await;
        self.end_call("VipOpenNic", start, &r);
        r
    }

    async fn open_nic(&mut self, name: &str) -> VipResult<NicHandle> {
        self.compute(self.cfg.costs.vipl_call).await;
        if name != self.cfg.nic_name {
            return Err(VipError::InvalidParameter);
        }
        if self.nic.is_some() {
            return Err(VipError::ErrorResource);
        }
        self.compute(self.cfg.costs.syscall).await;
        let id = self.mmio_read(bar::CARD_ID).await?;
        if id != bar::CARD_ID_VALUE {
            self.slot.borrow_mut().open_no_card += 1;
            tracing::warn!(target: "host::agent", id, "no HVIA-GE card at BAR0");
            return Err(VipError::ErrorResource);
        }
        self.declare_wait(Some(crate::ops::RegisterWait {
            what: "the card to be ready (CARD_STATUS)",
            deadline: None,
            since: self.now(),
        }));
        let ready = loop {
            match self.mmio_read(bar::CARD_STATUS).await {
                Ok(s) if s & CARD_READY != 0 => break Ok(s),
                Ok(_) => {}
                Err(e) => break Err(e),
            }
            self.compute(self.cfg.costs.register_poll_delay).await;
        };
        self.declare_wait(None);
        let status = ready?;
        let lo = self.mmio_read(bar::MAC_LO).await?.to_le_bytes();
        let hi = self.mmio_read(bar::MAC_HI).await?.to_le_bytes();
        let mac = MacAddr([lo[0], lo[1], lo[2], lo[3], hi[0], hi[1]]);
        let handle = NicHandle(self.next_nic);
        self.next_nic = self.next_nic.wrapping_add(1).max(1);
        let attrs = NicAttributes {
            name: name.to_owned(),
            hardware_version: id,
            provider_version: concat!("hvia-sim host-driver ", env!("CARGO_PKG_VERSION")),
            local_nic_address: mac,
            thread_safe: false,
            max_discriminator_len: 4,
            max_register_bytes: u64::from(u32::MAX),
            max_register_regions: via_abi::MemHandle::MAX_INDEX + 1,
            max_vi: u32::try_from(bar::MAX_VIS).unwrap_or(u32::MAX),
            max_transfer_size: self.cfg.max_transfer_bytes,
            native_mtu: 1514 - 14 - 40,
            max_ptags: u32::from(u16::MAX),
            reliability_level_support: Reliability::ReliableReception,
            rdma_read_support: status & bar::CARD_RDMA_READ != 0,
        };
        self.nic = Some((handle, attrs));
        Ok(handle)
    }

    /// **VipCloseNic**: closes the NIC; later calls naming it fail.
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: not the open NIC.
    pub async fn vip_close_nic(&mut self, nic: NicHandle) -> VipResult<()> {
        let start = self.now();
        self.compute(self.cfg.costs.vipl_call).await;
        let r = match self.check_nic(nic) {
            Ok(()) => {
                self.compute(self.cfg.costs.syscall).await;
                self.nic = None;
                Ok(())
            }
            Err(e) => Err(e),
        };
        self.end_call("VipCloseNic", start, &r);
        r
    }

    /// **VipQueryNic**: the NIC's attributes.
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: not the open NIC.
    pub async fn vip_query_nic(&mut self, nic: NicHandle) -> VipResult<NicAttributes> {
        let start = self.now();
        self.compute(self.cfg.costs.vipl_call).await;
        let r = match &self.nic {
            Some((h, a)) if *h == nic => Ok(a.clone()),
            _ => Err(VipError::InvalidParameter),
        };
        self.end_call("VipQueryNic", start, &r);
        r
    }

    /// **VipCreatePtag**: a new protection tag (kernel agent request).
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: not the open NIC; `VIP_ERROR_RESOURCE`: all 65 535 tags
    /// are in use.
    pub async fn vip_create_ptag(&mut self, nic: NicHandle) -> VipResult<ProtectionTag> {
        let start = self.now();
        self.compute(self.cfg.costs.vipl_call).await;
        let r = match self.check_nic(nic) {
            Ok(()) => {
                self.compute(self.cfg.costs.syscall).await;
                self.alloc_ptag()
            }
            Err(e) => Err(e),
        };
        self.end_call("VipCreatePtag", start, &r);
        r
    }

    fn alloc_ptag(&mut self) -> VipResult<ProtectionTag> {
        for _ in 0..=u32::from(u16::MAX) {
            let t = self.next_ptag;
            self.next_ptag = self.next_ptag.wrapping_add(1).max(1);
            if t != 0 && self.ptags.insert(t) {
                return Ok(ProtectionTag(t));
            }
        }
        Err(VipError::ErrorResource)
    }

    /// **VipDestroyPtag**: frees a protection tag.
    ///
    /// # Errors
    /// `VIP_INVALID_PARAMETER`: not the open NIC; `VIP_INVALID_PTAG`: not a live tag;
    /// `VIP_ERROR_RESOURCE`: a VI or a registered region still uses it.
    pub async fn vip_destroy_ptag(&mut self, nic: NicHandle, ptag: ProtectionTag) -> VipResult<()> {
        let start = self.now();
        self.compute(self.cfg.costs.vipl_call).await;
        let r = self.destroy_ptag(nic, ptag).await;
        self.end_call("VipDestroyPtag", start, &r);
        r
    }

    async fn destroy_ptag(&mut self, nic: NicHandle, ptag: ProtectionTag) -> VipResult<()> {
        self.check_nic(nic)?;
        if !self.ptags.contains(&ptag.raw()) {
            return Err(VipError::InvalidPtag);
        }
        let in_use = self.vis.values().any(|v| v.attrs.ptag == ptag)
            || self.regions.values().any(|r| r.attrs.ptag == ptag);
        if in_use {
            return Err(VipError::ErrorResource);
        }
        self.compute(self.cfg.costs.syscall).await;
        self.ptags.remove(&ptag.raw());
        Ok(())
    }

    /// Whether `ptag` is a live tag of this process.
    pub(crate) fn ptag_live(&self, ptag: ProtectionTag) -> bool {
        ptag.raw() != 0 && self.ptags.contains(&ptag.raw())
    }
}
