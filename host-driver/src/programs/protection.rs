//! Protection as a VIPL user meets it: an RDMA write that the receiving card must refuse.
//!
//! ```text
//! initiator                                     responder
//!   set-up (both: open, ptag, register, VI, connect, exchange RDMA targets)
//!                                                 prepare the case's target (may
//!                                                 deregister, register another region)
//!   VipRecvWait  <-----------------------------   send the target: VA, handle, length
//!   sleep (the responder is done)                 return
//!   VipPostSend(RDMA write of the pattern
//!     to the case's address and handle)  ---->    (the card refuses it)
//!   VipSendWait: reliable levels complete the descriptor with the card's error bits
//!   (the program returns `ProgramError::Completion`); unreliable completes it when sent
//! ```
//!
//! The responder returns before the refused write reaches its card, so a test can take
//! the responder's whole memory in between and check that not one byte changed. One
//! more case breaks no remote rule but the descriptor format: the sending card refuses
//! it.

use super::setup::{post_send_and_wait, recv_wait, setup, Role, INFO_BYTES, INFO_OUT, SEND_DESC};
use super::PingPongParams;
use crate::program::{CallExt, ProgramError, ProgramReport, ProgramResult};
use crate::vipl::descriptor::{data_segment, rdma_write_descriptor, send_descriptor};
use crate::vipl::{VipMemAttributes, Vipl};
use sim_kernel::Duration;
use via_abi::descriptor::control_segment::field::CONTROL;
use via_abi::MemHandle;

/// Offset of the RDMA write descriptor in the control region (set-up's own slot).
const RDMA_DESC: u64 = super::setup::RDMA_DESC;

/// The byte the initiator fills its source buffer with: a test looks for it.
pub const PROTECTION_PATTERN: u8 = 0xC3;

/// How the initiator waits after learning the target, so the responder has returned
/// (and a test has looked at its memory) before the write reaches its card. Setting:
/// far above the responder's last send completion.
const SETTLE: Duration = Duration::from_ns(200_000);

/// Which protection rule the initiator's RDMA write breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProtectionCase {
    /// Starts inside the registered target and runs one byte past its end.
    PastTheEnd,
    /// An address no region covers, with the target's valid handle.
    Unregistered,
    /// A handle whose translation-table index was changed (never registered).
    ForgedHandle,
    /// The handle of a region the responder deregistered after announcing it.
    StaleHandle,
    /// A region registered under another protection tag than the VI's.
    WrongPtag,
    /// A region registered without RDMA write enabled.
    NoRdmaWrite,
    /// A valid target, but the initiator's descriptor has a reserved control bit set:
    /// the sending card must complete it with a format error and send nothing.
    MalformedDescriptor,
}

impl ProtectionCase {
    /// Every case the receiving card must refuse (all but
    /// [`ProtectionCase::MalformedDescriptor`], which the sending card refuses).
    pub const REMOTE: [ProtectionCase; 6] = [
        ProtectionCase::PastTheEnd,
        ProtectionCase::Unregistered,
        ProtectionCase::ForgedHandle,
        ProtectionCase::StaleHandle,
        ProtectionCase::WrongPtag,
        ProtectionCase::NoRdmaWrite,
    ];
}

/// The responder: set-up, then prepares the case's target and sends it (VA, handle,
/// length) to the initiator; returns once that send completed.
///
/// # Errors
/// The first failing VIPL call or a completion in error.
pub async fn protection_responder(
    mut vipl: Vipl,
    p: PingPongParams,
    case: ProtectionCase,
) -> ProgramResult {
    let ep = setup(&mut vipl, &p, Role::Responder, false).await?;
    let (ctl, ctl_mh) = ep.ctl;
    let len = u64::from(ep.len);
    let (va, mh) = match case {
        ProtectionCase::PastTheEnd
        | ProtectionCase::Unregistered
        | ProtectionCase::ForgedHandle
        | ProtectionCase::MalformedDescriptor => ep.dst,
        ProtectionCase::StaleHandle => {
            vipl.vip_deregister_mem(ep.nic, ep.dst.0, ep.dst.1)
                .await
                .call("VipDeregisterMem")?;
            ep.dst
        }
        ProtectionCase::WrongPtag | ProtectionCase::NoRdmaWrite => {
            let ptag = if case == ProtectionCase::WrongPtag {
                vipl.vip_create_ptag(ep.nic).await.call("VipCreatePtag")?
            } else {
                ep.ptag
            };
            let attrs = VipMemAttributes {
                ptag,
                enable_rdma_write: case == ProtectionCase::WrongPtag,
                enable_rdma_read: false,
            };
            let va = vipl.malloc(len, 64).await.call("malloc")?;
            let mh = vipl
                .vip_register_mem(ep.nic, va, len, &attrs)
                .await
                .call("VipRegisterMem")?;
            (va, mh)
        }
    };
    let mut info = [0u8; INFO_BYTES as usize];
    info[..8].copy_from_slice(&va.to_le_bytes());
    info[8..12].copy_from_slice(&mh.raw().to_le_bytes());
    info[12..].copy_from_slice(&ep.len.to_le_bytes());
    vipl.write_mem(ctl + INFO_OUT, &info).await.call("store")?;
    let send = send_descriptor(vec![data_segment(ctl + INFO_OUT, ctl_mh, INFO_BYTES)], None);
    vipl.build_descriptor(ctl + SEND_DESC, &send)
        .await
        .call("build")?;
    post_send_and_wait(&mut vipl, ep.vi, ctl + SEND_DESC, ctl_mh, p.wait_timeout).await?;
    Ok(ProgramReport {
        program: "protection-responder",
        setup_done: vipl.now(),
        finished: vipl.now(),
        ..ProgramReport::default()
    })
}

/// The initiator: set-up (with a receive posted for the target message), learns the
/// case's target, waits for the responder to be done, then RDMA-writes its whole
/// source buffer ([`PROTECTION_PATTERN`]) where the case says and waits for the send.
///
/// # Errors
/// The first failing VIPL call; under a reliable level, the refused write's completion
/// (`ProgramError::Completion` with the card's error bits).
pub async fn protection_initiator(
    mut vipl: Vipl,
    p: PingPongParams,
    case: ProtectionCase,
) -> ProgramResult {
    if p.msg_bytes < INFO_BYTES {
        return Err(ProgramError::Protocol(
            "the protection test needs messages of at least 16 bytes",
        ));
    }
    let ep = setup(&mut vipl, &p, Role::Initiator, true).await?;
    let (ctl, ctl_mh) = ep.ctl;
    let c = recv_wait(&mut vipl, ep.vi, p.wait_timeout).await?;
    if c.length != INFO_BYTES {
        return Err(ProgramError::Protocol("target message of the wrong length"));
    }
    let msg = vipl
        .read_mem(ep.dst.0, u64::from(INFO_BYTES))
        .await
        .call("load")?;
    let word = |r: std::ops::Range<usize>| msg.get(r).map(<[u8]>::to_vec).unwrap_or_default();
    let va = u64::from_le_bytes(word(0..8).try_into().unwrap_or([0; 8]));
    let raw = u32::from_le_bytes(word(8..12).try_into().unwrap_or([0; 4]));
    let (va, raw) = match case {
        ProtectionCase::PastTheEnd => (va + 1, raw),
        // 64 MiB above the target: no region of the responder's is there.
        ProtectionCase::Unregistered => (va + (64 << 20), raw),
        // The next translation-table entry (bits 19:0 index), which was never used.
        ProtectionCase::ForgedHandle => (va, (raw & !0x000F_FFFF) | ((raw + 7) & 0x000F_FFFF)),
        ProtectionCase::StaleHandle
        | ProtectionCase::WrongPtag
        | ProtectionCase::NoRdmaWrite
        | ProtectionCase::MalformedDescriptor => (va, raw),
    };
    vipl.write_mem(ep.src.0, &vec![PROTECTION_PATTERN; ep.len as usize])
        .await
        .call("store")?;
    let desc = rdma_write_descriptor(
        vec![data_segment(ep.src.0, ep.src.1, ep.len)],
        va,
        MemHandle::from_raw(raw),
        None,
    );
    vipl.build_descriptor(ctl + RDMA_DESC, &desc)
        .await
        .call("build")?;
    if case == ProtectionCase::MalformedDescriptor {
        // Set reserved control bit 4 in the stored descriptor (no VIPL call builds one).
        let at = ctl + RDMA_DESC + CONTROL.start as u64;
        let word = vipl.read_mem(at, 2).await.call("load")?;
        let low = word.first().copied().unwrap_or(0);
        let high = word.get(1).copied().unwrap_or(0);
        let control = u16::from_le_bytes([low, high]) | 0x0010;
        vipl.write_mem(at, &control.to_le_bytes())
            .await
            .call("store")?;
    }
    vipl.sleep(SETTLE).await;
    post_send_and_wait(&mut vipl, ep.vi, ctl + RDMA_DESC, ctl_mh, p.wait_timeout).await?;
    Ok(ProgramReport {
        program: "protection-initiator",
        setup_done: vipl.now(),
        finished: vipl.now(),
        ..ProgramReport::default()
    })
}
