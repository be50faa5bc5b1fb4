//! [`NicMsg`]: every message a `nic-model` component receives or sends (one enum per
//! crate, see ARCHITECTURE.md). A system wraps it in its own message type
//! (`M: From<NicMsg>`); replies go to the `reply_to` component named in the request.
//!
//! ATT manager ([`AttManager`](crate::att::AttManager)) ports:
//!
//! | variant | direction | meaning |
//! |---|---|---|
//! | `AttRegister` | in | `VipRegisterMem`: register a region |
//! | `AttRegistered` | out, to `reply_to` | its memory handle, or the refusal |
//! | `AttDeregister` | in | `VipDeregisterMem`: end a registration |
//! | `AttDeregistered` | out, to `reply_to` | done, or the refusal |
//! | `AttTranslate` | in | translate (handle, VA, length, access, ptag) |
//! | `AttTranslated` | out, to `reply_to` | physical pieces, or the refusal |
//! | `AttTableRead` / `AttTableWrite` | out, to the table port | host-memory ATT: table DMA |
//! | `AttTableReadDone` / `AttTableWriteDone` | in, from the table port | their completions |
//! | `AttSdramDone` | to itself | an SDRAM access has completed (card ATT) |
//!
//! VIA protocol engine ([`Engine`](crate::engine::Engine)): it sends `AttRegister`,
//! `AttDeregister` and `AttTranslate` (with itself as `reply_to`) and receives the
//! answers, and `Engine` is its own wake-up ([`EngineWake`]).

use crate::att::{
    AccessKind, DeregisterError, Piece, RegionRequest, RegisterError, TableIoError, TranslateError,
};
use crate::engine::EngineWake;
use sim_kernel::{ComponentId, MsgId};
use via_abi::{MemHandle, ProtectionTag};

/// Identifies a request so its reply can be matched (chosen by the requester).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReqId(pub u64);

/// Messages of the HVIA-GE card model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NicMsg {
    /// Register a memory region (`VipRegisterMem`, from the host over the system PCI bus).
    AttRegister {
        /// Request id, echoed in the reply.
        req: ReqId,
        /// The region, its pages and attributes.
        region: RegionRequest,
        /// Who gets [`NicMsg::AttRegistered`].
        reply_to: ComponentId,
    },
    /// Reply to [`NicMsg::AttRegister`], sent once the table is written.
    AttRegistered {
        /// The request's id.
        req: ReqId,
        /// The new memory handle, or why the registration was refused.
        result: Result<MemHandle, RegisterError>,
    },
    /// End a registration (`VipDeregisterMem`).
    AttDeregister {
        /// Request id, echoed in the reply.
        req: ReqId,
        /// The handle to invalidate.
        handle: MemHandle,
        /// Who gets [`NicMsg::AttDeregistered`].
        reply_to: ComponentId,
    },
    /// Reply to [`NicMsg::AttDeregister`], sent once the L1 entry is cleared.
    AttDeregistered {
        /// The request's id.
        req: ReqId,
        /// Done, or why the deregistration was refused.
        result: Result<(), DeregisterError>,
    },
    /// Translate a virtual range of a registered region into physical pieces.
    AttTranslate {
        /// Request id, echoed in the reply.
        req: ReqId,
        /// Message (transaction) the translation works for, for trace spans.
        msg: MsgId,
        /// Memory handle (from a descriptor or the wire).
        handle: MemHandle,
        /// First virtual address.
        va: u64,
        /// Length \[bytes\].
        len: u64,
        /// Who accesses the memory, and how.
        access: AccessKind,
        /// Protection tag of the VI doing the access.
        ptag: ProtectionTag,
        /// Who gets [`NicMsg::AttTranslated`].
        reply_to: ComponentId,
    },
    /// Reply to [`NicMsg::AttTranslate`], sent when the table reads it needed are done.
    AttTranslated {
        /// The request's id.
        req: ReqId,
        /// Pieces in VA order, split at page boundaries, or the refusal (its VIA status
        /// bit: [`TranslateError::status`]).
        result: Result<Vec<Piece>, TranslateError>,
    },
    /// Host-memory ATT: read `len` bytes of the table at host physical address `addr`.
    AttTableRead {
        /// Matches the completion.
        tag: u64,
        /// Host physical address.
        addr: u64,
        /// Bytes to read.
        len: u64,
        /// Who gets [`NicMsg::AttTableReadDone`].
        reply_to: ComponentId,
    },
    /// Completion of [`NicMsg::AttTableRead`].
    AttTableReadDone {
        /// The read's tag.
        tag: u64,
        /// The bytes read, or the failure.
        result: Result<Vec<u8>, TableIoError>,
    },
    /// Host-memory ATT: write `data` into the table at host physical address `addr`.
    AttTableWrite {
        /// Matches the completion.
        tag: u64,
        /// Host physical address.
        addr: u64,
        /// Bytes to write.
        data: Vec<u8>,
        /// Who gets [`NicMsg::AttTableWriteDone`].
        reply_to: ComponentId,
    },
    /// Completion of [`NicMsg::AttTableWrite`].
    AttTableWriteDone {
        /// The write's tag.
        tag: u64,
        /// Done, or the failure.
        result: Result<(), TableIoError>,
    },
    /// The ATT manager's own wake-up: the SDRAM access `tag` has completed.
    AttSdramDone {
        /// The access's tag.
        tag: u64,
    },
    /// The VIA engine's own wake-up.
    Engine(EngineWake),
}
