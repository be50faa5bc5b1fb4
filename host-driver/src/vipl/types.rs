//! The VIPL data types: handles, attributes, addresses, timeouts and completions, each
//! named after its VIPL counterpart.
//!
//! Memory handles and protection tags are via-abi's [`MemHandle`] (`VIP_MEM_HANDLE`) and
//! [`ProtectionTag`] (`VIP_PROTECTION_HANDLE`), the reliability level is via-abi's
//! [`Reliability`] (`VIP_RELIABILITY_LEVEL`): the values the card sees.

use sim_kernel::Duration;
use via_abi::bar::Reliability;
use via_abi::{MacAddr, MemHandle, ProtectionTag, Status, WorkQueue};

/// `VIP_NIC_HANDLE`: an open NIC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NicHandle(pub u32);

/// `VIP_VI_HANDLE`: a VI (its number on the card).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ViHandle(pub u16);

/// `VIP_CQ_HANDLE`: a completion queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CqHandle(pub u32);

/// `VIP_CONN_HANDLE`: a connection request seen by `VipConnectWait`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnHandle(pub u32);

/// `VIP_NET_ADDRESS`: a host address (the NIC's MAC) and a discriminator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NetAddress {
    /// Host address: the NIC's Ethernet MAC.
    pub host: MacAddr,
    /// Discriminator that matches a request with a wait (32 bits on the card).
    pub discriminator: u32,
}

/// `VIP_VI_ATTRIBUTES`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ViAttributes {
    /// Reliability level.
    pub reliability_level: Reliability,
    /// Largest transfer on this VI \[bytes\].
    pub max_transfer_size: u32,
    /// Quality of service: HVIA-GE supports none (`Some` gives `VIP_INVALID_QOS`).
    pub qos: Option<u32>,
    /// Protection tag of the VI.
    pub ptag: ProtectionTag,
    /// Whether RDMA write is enabled.
    pub enable_rdma_write: bool,
    /// Whether RDMA read is enabled (HVIA-GE has none: `VIP_INVALID_RDMAREAD`).
    pub enable_rdma_read: bool,
}

impl ViAttributes {
    /// Reliable delivery, RDMA write enabled, 64 KB transfers, tag `ptag`.
    #[must_use]
    pub fn reliable(ptag: ProtectionTag) -> Self {
        Self {
            reliability_level: Reliability::ReliableDelivery,
            max_transfer_size: 64 << 10,
            qos: None,
            ptag,
            enable_rdma_write: true,
            enable_rdma_read: false,
        }
    }
}

/// `VIP_MEM_ATTRIBUTES`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VipMemAttributes {
    /// Protection tag of the region.
    pub ptag: ProtectionTag,
    /// Whether peers may RDMA-write into the region.
    pub enable_rdma_write: bool,
    /// Whether peers may RDMA-read from it.
    pub enable_rdma_read: bool,
}

impl VipMemAttributes {
    /// The attribute bits the ATT stores (without `VALID`, which the card sets).
    #[must_use]
    pub fn att_bits(&self) -> via_abi::MemAttributes {
        let mut a = via_abi::MemAttributes::empty();
        a.set(
            via_abi::MemAttributes::ENABLE_RDMA_WRITE,
            self.enable_rdma_write,
        );
        a.set(
            via_abi::MemAttributes::ENABLE_RDMA_READ,
            self.enable_rdma_read,
        );
        a
    }
}

/// `VIP_VI_STATE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ViState {
    /// Created, not connected.
    Idle,
    /// A connect request or accept is outstanding.
    ConnectPending,
    /// Connected.
    Connected,
    /// Error.
    Error,
}

/// What `VipQueryVi` returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ViQuery {
    /// State as the card reports it.
    pub state: ViState,
    /// Attributes the VI was created with.
    pub attributes: ViAttributes,
    /// Whether no send descriptor is outstanding.
    pub send_queue_empty: bool,
    /// Whether no receive descriptor is outstanding.
    pub recv_queue_empty: bool,
}

/// `VIP_NIC_ATTRIBUTES` (what `VipQueryNic` returns).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NicAttributes {
    /// Device name.
    pub name: String,
    /// Card identification register (`CARD_ID`).
    pub hardware_version: u32,
    /// VI provider version (this crate's).
    pub provider_version: &'static str,
    /// The NIC's MAC address (`MAC_LO`/`MAC_HI`).
    pub local_nic_address: MacAddr,
    /// Whether VIPL calls may be made from several threads (no: one process, one thread).
    pub thread_safe: bool,
    /// Longest discriminator \[bytes\].
    pub max_discriminator_len: u32,
    /// Largest registration \[bytes\] (`ATT_LEN` is 32 bits).
    pub max_register_bytes: u64,
    /// Most registered regions (handle index bits: 2^20).
    pub max_register_regions: u32,
    /// Number of VIs (doorbell windows in BAR0).
    pub max_vi: u32,
    /// Largest transfer \[bytes\].
    pub max_transfer_size: u32,
    /// Payload of one frame: MTU 1514 - Ethernet 14 - VIA header 40 \[bytes\].
    pub native_mtu: u32,
    /// Most protection tags.
    pub max_ptags: u32,
    /// Highest reliability level supported.
    pub reliability_level_support: Reliability,
    /// Whether RDMA read is supported (`CARD_STATUS` bit 1: no on the published card,
    /// which implements RDMA write only; yes with the `rdma-read` preset's engine).
    pub rdma_read_support: bool,
}

/// A VIPL timeout: `VIP_INFINITE` or a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Timeout {
    /// `VIP_INFINITE`: wait for ever.
    Infinite,
    /// Give up after this much simulated time.
    After(Duration),
}

impl Timeout {
    /// `VIP_INFINITE`.
    pub const INFINITE: Timeout = Timeout::Infinite;

    /// A VIPL timeout in milliseconds (`0xFFFF_FFFF` is `VIP_INFINITE`).
    #[must_use]
    pub fn millis(ms: u32) -> Timeout {
        if ms == u32::MAX {
            Timeout::Infinite
        } else {
            Timeout::After(Duration::from_ns(u64::from(ms) * 1_000_000))
        }
    }
}

/// A completed descriptor, as `VipSendDone` / `VipRecvDone` / the waits return it (VIPL
/// returns a pointer to the descriptor; these are the fields read from it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Completion {
    /// Virtual address of the descriptor.
    pub desc_va: u64,
    /// Memory handle it was posted with.
    pub desc_handle: MemHandle,
    /// Which work queue it came from.
    pub queue: WorkQueue,
    /// The status word the card wrote (done bit, error bits, operation).
    pub status: Status,
    /// Total length field (receive: bytes received) \[bytes\].
    pub length: u32,
    /// Immediate data, if the status says it is present.
    pub immediate: Option<u32>,
}

impl Completion {
    /// Whether an error bit is set.
    #[must_use]
    pub fn is_error(&self) -> bool {
        self.status.is_error()
    }

    /// `Ok(self)`, or `VIP_DESCRIPTOR_ERROR` if an error bit is set.
    ///
    /// # Errors
    /// An error bit in the status.
    pub fn ok(self) -> Result<Self, super::VipError> {
        if self.is_error() {
            Err(super::VipError::DescriptorError)
        } else {
            Ok(self)
        }
    }
}

/// What `VipConnectWait` returns: the request and who sent it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConnectRequestInfo {
    /// Handle for `VipConnectAccept` / `VipConnectReject`.
    pub conn: ConnHandle,
    /// The remote VI number (`VI_PEER_VI`).
    pub remote_vi: u16,
}

/// What `VipCQDone` returns: which VI and work queue has a completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CqCompletion {
    /// The VI.
    pub vi: ViHandle,
    /// Its send or receive queue.
    pub queue: WorkQueue,
}
