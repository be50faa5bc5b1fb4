//! The set-up every program shares, written as VIPL code, and the matching teardown.
//! It comes in parts so a node can hold several connections (`super::mesh`): opening
//! the NIC ([`open_nic`]), registering memory ([`alloc_registered`]) and one connection
//! with its exchange of RDMA targets ([`connect_peer`]); [`setup`] is the three for the
//! one connection of a two-node program.
//!
//! Control region layout (one registered 512-byte allocation, 64-byte aligned):
//!
//! | offset | what |
//! |---|---|
//! | 0x000 | send descriptor (set-up message, then send/receive data) |
//! | 0x040 | receive descriptor for data |
//! | 0x080 | receive descriptor for the peer's set-up message |
//! | 0x0C0 | RDMA write descriptor |
//! | 0x100 | outgoing set-up message: VA (8) + memory handle (4) + length (4) of the RDMA target |
//! | 0x140 | incoming set-up message |

use super::PingPongParams;
use crate::program::{CallExt, ProgramError};
use crate::vipl::descriptor::{data_segment, recv_descriptor, send_descriptor};
use crate::vipl::{
    Completion, NetAddress, NicHandle, Timeout, ViAttributes, ViHandle, VipError, VipMemAttributes,
    Vipl,
};
use via_abi::{MacAddr, MemHandle, ProtectionTag};

/// Send descriptor offset in the control region.
pub const SEND_DESC: u64 = 0x000;
/// Data receive descriptor offset.
pub const RECV_DESC: u64 = 0x040;
/// Set-up receive descriptor offset.
pub const INFO_RECV_DESC: u64 = 0x080;
/// RDMA write descriptor offset.
pub const RDMA_DESC: u64 = 0x0C0;
/// Outgoing set-up message offset.
pub const INFO_OUT: u64 = 0x100;
/// Incoming set-up message offset.
pub const INFO_IN: u64 = 0x140;
/// Size of the control region \[bytes\].
pub const CTL_BYTES: u64 = 0x200;
/// Size of a set-up message \[bytes\].
pub const INFO_BYTES: u32 = 16;

/// Which side of the connection a program is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Requests the connection and sends first.
    Initiator,
    /// Waits for the connection and answers.
    Responder,
}

/// What set-up leaves for the ping-pong loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// The open NIC.
    pub nic: NicHandle,
    /// Its MAC address.
    pub mac: MacAddr,
    /// The protection tag of everything below.
    pub ptag: ProtectionTag,
    /// The connected VI.
    pub vi: ViHandle,
    /// Control region (see the module doc) and its handle.
    pub ctl: (u64, MemHandle),
    /// Outgoing data buffer and its handle.
    pub src: (u64, MemHandle),
    /// Incoming data buffer (RDMA write enabled) and its handle.
    pub dst: (u64, MemHandle),
    /// Data buffer size \[bytes\].
    pub len: u32,
    /// The peer's incoming buffer: VA and handle, from its set-up message.
    pub peer_dst: (u64, MemHandle),
}

/// A completion with error bits is a program error.
///
/// # Errors
/// Error bits in the status.
pub fn checked(c: Completion, call: &'static str) -> Result<Completion, ProgramError> {
    if c.is_error() {
        Err(ProgramError::Completion {
            call,
            status: c.status,
        })
    } else {
        Ok(c)
    }
}

/// VipPostSend of the descriptor at `desc_va`, then VipSendWait for its completion.
///
/// # Errors
/// Either call failing, or the completion in error.
pub async fn post_send_and_wait(
    vipl: &mut Vipl,
    vi: ViHandle,
    desc_va: u64,
    mh: MemHandle,
    timeout: Timeout,
) -> Result<Completion, ProgramError> {
    vipl.vip_post_send(vi, desc_va, mh)
        .await
        .call("VipPostSend")?;
    let c = vipl.vip_send_wait(vi, timeout).await.call("VipSendWait")?;
    checked(c, "VipSendWait")
}

/// [`post_send_and_wait`] for a ping-pong iteration; in the `last` one a send whose only
/// error is `DESCRIPTOR_FLUSHED` is accepted. On a reliable VI a send completes on the
/// peer's Ack, and the peer, done with its last iteration, may disconnect before that
/// Ack gets through (a lost Ack is resent only on our timeout): its Disconnect breaks
/// our VI and flushes the send, whose message the peer had already received.
///
/// # Errors
/// As [`post_send_and_wait`].
pub async fn post_iteration_send(
    vipl: &mut Vipl,
    vi: ViHandle,
    (desc_va, mh): (u64, MemHandle),
    timeout: Timeout,
    last: bool,
) -> Result<(), ProgramError> {
    vipl.vip_post_send(vi, desc_va, mh)
        .await
        .call("VipPostSend")?;
    wait_iteration_send(vipl, vi, timeout, last).await
}

/// The wait of [`post_iteration_send`]: VipSendWait, accepting a send flushed by the
/// peer's disconnect in the `last` iteration.
///
/// # Errors
/// The call failing, or the completion in error (but that one).
pub async fn wait_iteration_send(
    vipl: &mut Vipl,
    vi: ViHandle,
    timeout: Timeout,
    last: bool,
) -> Result<(), ProgramError> {
    let c = vipl.vip_send_wait(vi, timeout).await.call("VipSendWait")?;
    if last && c.status.errors() == via_abi::Status::FLUSHED {
        return Ok(());
    }
    checked(c, "VipSendWait").map(|_| ())
}

/// VipRecvWait for the next receive completion.
///
/// # Errors
/// The call failing, or the completion in error.
pub async fn recv_wait(
    vipl: &mut Vipl,
    vi: ViHandle,
    timeout: Timeout,
) -> Result<Completion, ProgramError> {
    let c = vipl.vip_recv_wait(vi, timeout).await.call("VipRecvWait")?;
    checked(c, "VipRecvWait")
}

/// What opening the NIC gives: the handle, its MAC address and a protection tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenNic {
    /// The open NIC.
    pub nic: NicHandle,
    /// Its MAC address.
    pub mac: MacAddr,
    /// The protection tag of everything registered on it.
    pub ptag: ProtectionTag,
}

/// The first part of every set-up: VipOpenNic, VipQueryNic (the MAC address),
/// VipCreatePtag.
///
/// # Errors
/// The first VIPL call that fails.
pub async fn open_nic(vipl: &mut Vipl) -> Result<OpenNic, ProgramError> {
    let name = vipl.device_name().to_owned();
    let nic = vipl.vip_open_nic(&name).await.call("VipOpenNic")?;
    let mac = vipl
        .vip_query_nic(nic)
        .await
        .call("VipQueryNic")?
        .local_nic_address;
    let ptag = vipl.vip_create_ptag(nic).await.call("VipCreatePtag")?;
    Ok(OpenNic { nic, mac, ptag })
}

/// `malloc`s `len` bytes (64-byte aligned) and registers them under the NIC's tag,
/// RDMA write enabled if `rdma_write` (an RDMA target), RDMA read if `rdma_read` (the
/// source of a peer's RDMA read).
///
/// # Errors
/// `malloc` or VipRegisterMem failing.
pub async fn alloc_registered(
    vipl: &mut Vipl,
    open: &OpenNic,
    len: u64,
    rdma_write: bool,
    rdma_read: bool,
) -> Result<(u64, MemHandle), ProgramError> {
    let attrs = VipMemAttributes {
        ptag: open.ptag,
        enable_rdma_write: rdma_write,
        enable_rdma_read: rdma_read,
    };
    let va = vipl.malloc(len, 64).await.call("malloc")?;
    let mh = vipl
        .vip_register_mem(open.nic, va, len, &attrs)
        .await
        .call("VipRegisterMem")?;
    Ok((va, mh))
}

/// A registered buffer: VA, memory handle, length.
pub type Segment = (u64, MemHandle, u32);

/// One connection of a set-up: the registered memory it uses and how to reach the peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionPlan {
    /// Control region (see the module doc; only the set-up slots are used here).
    pub ctl: (u64, MemHandle),
    /// The RDMA target this side offers the peer: VA, handle, length (0: none).
    pub target: Segment,
    /// Largest transfer the VI must carry \[bytes\].
    pub max_transfer: u32,
    /// A data receive to post before connecting (after the set-up message's): the
    /// descriptor's VA and handle, and its segment (VA, handle, length).
    pub data_recv: Option<((u64, MemHandle), Segment)>,
}

/// The per-connection part of a set-up: creates a VI, posts the receive of the peer's
/// set-up message (and `plan.data_recv`), connects to the peer (`p.peer`, on
/// `p.discriminator`, as `role`) and exchanges the RDMA targets. Returns the VI and the
/// peer's target (VA, handle, length). A node can make several connections one after
/// the other with the same control region: each exchange has finished when this
/// returns.
///
/// # Errors
/// The first VIPL call that fails, a completion in error, or a malformed set-up message.
pub async fn connect_peer(
    vipl: &mut Vipl,
    open: &OpenNic,
    p: &PingPongParams,
    role: Role,
    plan: &ConnectionPlan,
) -> Result<(ViHandle, Segment), ProgramError> {
    let (ctl, ctl_mh) = plan.ctl;
    let mut attrs = ViAttributes::reliable(open.ptag);
    attrs.reliability_level = p.reliability;
    attrs.max_transfer_size = attrs.max_transfer_size.max(plan.max_transfer);
    attrs.enable_rdma_read = p.rdma_read;
    let vi = vipl
        .vip_create_vi(open.nic, &attrs, None, None)
        .await
        .call("VipCreateVi")?;

    let info_recv = recv_descriptor(vec![data_segment(ctl + INFO_IN, ctl_mh, INFO_BYTES)]);
    vipl.build_descriptor(ctl + INFO_RECV_DESC, &info_recv)
        .await
        .call("build")?;
    vipl.vip_post_recv(vi, ctl + INFO_RECV_DESC, ctl_mh)
        .await
        .call("VipPostRecv")?;
    if let Some(((desc, desc_mh), (va, mh, len))) = plan.data_recv {
        let data_recv = recv_descriptor(vec![data_segment(va, mh, len)]);
        vipl.build_descriptor(desc, &data_recv)
            .await
            .call("build")?;
        vipl.vip_post_recv(vi, desc, desc_mh)
            .await
            .call("VipPostRecv")?;
    }

    connect(vipl, p, role, open.nic, open.mac, vi).await?;

    // Tell the peer where our RDMA target is, learn where its is (the paper's step 1).
    let (dst, dst_mh, len) = plan.target;
    let mut info = [0u8; INFO_BYTES as usize];
    info[..8].copy_from_slice(&dst.to_le_bytes());
    info[8..12].copy_from_slice(&dst_mh.raw().to_le_bytes());
    info[12..].copy_from_slice(&len.to_le_bytes());
    vipl.write_mem(ctl + INFO_OUT, &info).await.call("store")?;
    let send = send_descriptor(vec![data_segment(ctl + INFO_OUT, ctl_mh, INFO_BYTES)], None);
    vipl.build_descriptor(ctl + SEND_DESC, &send)
        .await
        .call("build")?;
    post_send_and_wait(vipl, vi, ctl + SEND_DESC, ctl_mh, p.wait_timeout).await?;
    let c = recv_wait(vipl, vi, p.wait_timeout).await?;
    if c.length != INFO_BYTES {
        return Err(ProgramError::Protocol("set-up message of the wrong length"));
    }
    let peer = vipl
        .read_mem(ctl + INFO_IN, u64::from(INFO_BYTES))
        .await
        .call("load")?;
    let word = |r: std::ops::Range<usize>| peer.get(r).map(<[u8]>::to_vec).unwrap_or_default();
    let peer_va = u64::from_le_bytes(word(0..8).try_into().unwrap_or([0; 8]));
    let peer_mh = u32::from_le_bytes(word(8..12).try_into().unwrap_or([0; 4]));
    let peer_len = u32::from_le_bytes(word(12..16).try_into().unwrap_or([0; 4]));
    Ok((vi, (peer_va, MemHandle::from_raw(peer_mh), peer_len)))
}

/// Opens the NIC, registers the buffers, creates and connects the VI and exchanges the
/// RDMA target buffers ([`open_nic`], [`alloc_registered`], [`connect_peer`]). With
/// `post_data_recv` a data receive is posted before connecting, so the first data
/// message always finds it.
///
/// # Errors
/// The first VIPL call that fails, a completion in error, or a malformed set-up message.
pub async fn setup(
    vipl: &mut Vipl,
    p: &PingPongParams,
    role: Role,
    post_data_recv: bool,
) -> Result<Endpoint, ProgramError> {
    let len = p.msg_bytes;
    if len == 0 {
        return Err(ProgramError::Protocol(
            "message size must be at least 1 byte",
        ));
    }
    let open = open_nic(vipl).await?;
    let (ctl, ctl_mh) = alloc_registered(vipl, &open, CTL_BYTES, false, false).await?;
    let (src, src_mh) = alloc_registered(vipl, &open, u64::from(len), false, false).await?;
    let (dst, dst_mh) = alloc_registered(vipl, &open, u64::from(len), true, p.rdma_read).await?;
    let plan = ConnectionPlan {
        ctl: (ctl, ctl_mh),
        target: (dst, dst_mh, len),
        max_transfer: len,
        data_recv: post_data_recv.then_some(((ctl + RECV_DESC, ctl_mh), (dst, dst_mh, len))),
    };
    let (vi, (peer_va, peer_mh, peer_len)) = connect_peer(vipl, &open, p, role, &plan).await?;
    if peer_len != len {
        return Err(ProgramError::Protocol("the peer uses another message size"));
    }
    Ok(Endpoint {
        nic: open.nic,
        mac: open.mac,
        ptag: open.ptag,
        vi,
        ctl: (ctl, ctl_mh),
        src: (src, src_mh),
        dst: (dst, dst_mh),
        len,
        peer_dst: (peer_va, peer_mh),
    })
}

/// The responder waits and accepts; the initiator requests, retrying while refused.
async fn connect(
    vipl: &mut Vipl,
    p: &PingPongParams,
    role: Role,
    nic: NicHandle,
    mac: MacAddr,
    vi: ViHandle,
) -> Result<(), ProgramError> {
    let local = NetAddress {
        host: mac,
        discriminator: p.discriminator,
    };
    match role {
        Role::Responder => {
            let req = vipl
                .vip_connect_wait(nic, &local, p.wait_timeout, vi)
                .await
                .call("VipConnectWait")?;
            vipl.vip_connect_accept(req.conn, vi)
                .await
                .call("VipConnectAccept")
        }
        Role::Initiator => {
            let remote = NetAddress {
                host: p.peer,
                discriminator: p.discriminator,
            };
            let attempts = p.connect_attempts.max(1);
            for attempt in 1..=attempts {
                match vipl
                    .vip_connect_request(vi, &local, &remote, p.wait_timeout)
                    .await
                {
                    Ok(_) => return Ok(()),
                    Err(VipError::Reject | VipError::Timeout) if attempt < attempts => {
                        vipl.sleep(p.connect_retry).await;
                    }
                    Err(error) => {
                        return Err(ProgramError::Vipl {
                            call: "VipConnectRequest",
                            error,
                        })
                    }
                }
            }
            Err(ProgramError::Vipl {
                call: "VipConnectRequest",
                error: VipError::Reject,
            })
        }
    }
}

/// Disconnects and releases everything `setup` made. Best effort: the peer may have
/// disconnected already, so failures are logged, not returned.
pub async fn teardown(vipl: &mut Vipl, ep: &Endpoint) {
    let results = [
        ("VipDisconnect", vipl.vip_disconnect(ep.vi).await),
        ("VipDestroyVi", vipl.vip_destroy_vi(ep.vi).await),
        (
            "VipDeregisterMem",
            vipl.vip_deregister_mem(ep.nic, ep.dst.0, ep.dst.1).await,
        ),
        (
            "VipDeregisterMem",
            vipl.vip_deregister_mem(ep.nic, ep.src.0, ep.src.1).await,
        ),
        (
            "VipDeregisterMem",
            vipl.vip_deregister_mem(ep.nic, ep.ctl.0, ep.ctl.1).await,
        ),
        (
            "VipDestroyPtag",
            vipl.vip_destroy_ptag(ep.nic, ep.ptag).await,
        ),
        ("VipCloseNic", vipl.vip_close_nic(ep.nic).await),
    ];
    for (call, r) in results {
        if let Err(e) = r {
            tracing::debug!(target: "host::vipl", call, %e, "teardown step failed");
        }
    }
}
