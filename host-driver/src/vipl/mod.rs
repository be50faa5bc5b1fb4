//! The VIPL library as a Rust API: one async method per VIPL call, on the [`Vipl`]
//! handle a host program receives from its [`HostCpu`](crate::HostCpu).
//!
//! | VIPL | method | file |
//! |---|---|---|
//! | VipOpenNic / VipCloseNic / VipQueryNic | [`Vipl::vip_open_nic`], [`Vipl::vip_close_nic`], [`Vipl::vip_query_nic`] | `nic` |
//! | VipCreatePtag / VipDestroyPtag | [`Vipl::vip_create_ptag`], [`Vipl::vip_destroy_ptag`] | `nic` |
//! | VipRegisterMem / VipDeregisterMem / VipQueryMem | [`Vipl::vip_register_mem`], [`Vipl::vip_deregister_mem`], [`Vipl::vip_query_mem`] | `mem` |
//! | VipCreateVi / VipDestroyVi / VipQueryVi | [`Vipl::vip_create_vi`], [`Vipl::vip_destroy_vi`], [`Vipl::vip_query_vi`] | `vi` |
//! | VipConnectRequest / VipConnectWait / VipConnectAccept / VipConnectReject / VipDisconnect | [`Vipl::vip_connect_request`], [`Vipl::vip_connect_wait`], [`Vipl::vip_connect_accept`], [`Vipl::vip_connect_reject`], [`Vipl::vip_disconnect`] | `connect` |
//! | VipPostSend / VipPostRecv | [`Vipl::vip_post_send`], [`Vipl::vip_post_recv`] | `post` |
//! | VipSendDone / VipSendWait / VipRecvDone / VipRecvWait | [`Vipl::vip_send_done`], [`Vipl::vip_send_wait`], [`Vipl::vip_recv_done`], [`Vipl::vip_recv_wait`] | `complete` |
//! | VipCreateCQ / VipDestroyCQ / VipCQDone / VipCQWait | [`Vipl::vip_create_cq`], [`Vipl::vip_destroy_cq`], [`Vipl::vip_cq_done`], [`Vipl::vip_cq_wait`] | `cq` |
//!
//! Besides VIPL: [`Vipl::malloc`] (buffers for the program), [`Vipl::build_descriptor`]
//! (the stores a C program does into a `VIP_DESCRIPTOR`), memory loads/stores, polls and
//! instrumentation ([`Vipl::peek`], [`Vipl::poke`]) in `sys`; descriptor constructors in
//! [`descriptor`].
//!
//! Every VIPL call costs `vipl_call` cycles plus what it does (kernel-agent requests,
//! memory-mapped accesses, memory accesses, polling), and records a trace span named
//! after the call (`VipPostSend`, ...) from entry to return, under the message id set
//! with [`Vipl::set_trace_msg`]. Misuse returns the VIPL code, never panics.

mod complete;
mod connect;
mod cq;
pub mod descriptor;
mod error;
mod mem;
mod nic;
mod post;
mod sys;
mod types;
mod vi;

pub use error::{VipError, VipResult};
pub use types::{
    Completion, ConnHandle, ConnectRequestInfo, CqCompletion, CqHandle, NetAddress, NicAttributes,
    NicHandle, Timeout, ViAttributes, ViHandle, ViQuery, ViState, VipMemAttributes,
};

use crate::cpu::HostCpuParams;
use crate::ops::{Slot, SpanRecord};
use sim_kernel::Time;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use via_abi::MemHandle;

/// A descriptor on a work queue, posted and not yet reaped by a Done/Wait call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Posted {
    pub va: u64,
    pub handle: MemHandle,
    /// Already reported by `VipCQDone`.
    pub notified: bool,
}

/// The library's record of one VI.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ViEntry {
    pub attrs: ViAttributes,
    pub state: ViState,
    pub send: VecDeque<Posted>,
    pub recv: VecDeque<Posted>,
    /// The last descriptor posted on the send queue, done or not: the card's tail of
    /// that queue, into whose Next link the next post goes. `None` also once that
    /// descriptor is posted again on another queue (the next post names its own).
    pub send_last: Option<Posted>,
    /// The same for the receive queue.
    pub recv_last: Option<Posted>,
    pub send_cq: Option<CqHandle>,
    pub recv_cq: Option<CqHandle>,
    pub peer_vi: Option<u16>,
}

/// The library's record of one registered region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Region {
    pub va: u64,
    pub len: u64,
    pub attrs: VipMemAttributes,
}

impl Region {
    /// Whether `[va, va + len)` lies inside the region.
    pub fn covers(&self, va: u64, len: u64) -> bool {
        va >= self.va
            && va
                .checked_add(len)
                .is_some_and(|end| end <= self.va.saturating_add(self.len))
    }
}

/// The process's VIPL handle: its library state (open NIC, tags, VIs, registrations,
/// CQs) and its line to the CPU. Created by [`HostCpu::load`](crate::HostCpu::load).
#[derive(Debug)]
pub struct Vipl {
    pub(crate) slot: Slot,
    pub(crate) cfg: HostCpuParams,
    pub(crate) nic: Option<(NicHandle, NicAttributes)>,
    pub(crate) next_nic: u32,
    pub(crate) heap_next: u64,
    pub(crate) ptags: BTreeSet<u16>,
    pub(crate) next_ptag: u16,
    pub(crate) regions: BTreeMap<u32, Region>,
    pub(crate) vis: BTreeMap<u16, ViEntry>,
    pub(crate) next_vi: u16,
    pub(crate) cqs: BTreeMap<u32, u32>,
    pub(crate) next_cq: u32,
    /// Pending connection requests: handle -> (waiting VI, request).
    pub(crate) conns: BTreeMap<u32, (u16, ConnectRequestInfo)>,
    pub(crate) next_conn: u32,
}

impl Vipl {
    pub(crate) fn new(slot: Slot, cfg: &HostCpuParams) -> Self {
        Self {
            slot,
            heap_next: cfg.heap_base,
            next_vi: cfg.first_vi,
            cfg: cfg.clone(),
            nic: None,
            next_nic: 1,
            ptags: BTreeSet::new(),
            next_ptag: 1,
            regions: BTreeMap::new(),
            vis: BTreeMap::new(),
            cqs: BTreeMap::new(),
            next_cq: 1,
            conns: BTreeMap::new(),
            next_conn: 1,
        }
    }

    /// Records the span of a VIPL call that started at `start` and logs its result.
    pub(crate) fn end_call<T>(&self, call: &'static str, start: Time, r: &VipResult<T>) {
        self.record_span(call, start);
        match r {
            Ok(_) => {
                tracing::debug!(target: "host::vipl", call, start = %start, end = %self.now(), "ok")
            }
            Err(e) => {
                tracing::debug!(target: "host::vipl", call, start = %start, error = %e, "failed")
            }
        }
    }

    /// Declares (or, with `None`, ends) a wait that polls card registers, so that a run
    /// loop can tell it from work (see [`crate::CpuWait::RegisterPoll`]).
    pub(crate) fn declare_wait(&self, wait: Option<crate::ops::RegisterWait>) {
        self.slot.borrow_mut().register_wait = wait;
    }

    /// Records a trace span `stage` from `start` to now (under the current message id).
    pub fn record_span(&self, stage: &'static str, start: Time) {
        let mut s = self.slot.borrow_mut();
        let (msg, end) = (s.msg, s.now);
        s.last_span = Some((stage, end));
        s.spans.push(SpanRecord {
            msg,
            stage,
            start,
            end,
        });
    }

    /// Records a span of this CPU from `start` to `end` (both already past), e.g. an
    /// interval measured between two `gettimeofday` clock reads.
    pub fn record_span_between(&self, stage: &'static str, start: Time, end: Time) {
        let mut s = self.slot.borrow_mut();
        let msg = s.msg;
        s.spans.push(SpanRecord {
            msg,
            stage,
            start,
            end,
        });
    }

    /// Checks that `nic` is the open NIC.
    pub(crate) fn check_nic(&self, nic: NicHandle) -> VipResult<()> {
        match &self.nic {
            Some((h, _)) if *h == nic => Ok(()),
            _ => Err(VipError::InvalidParameter),
        }
    }

    /// Checks that a NIC is open.
    pub(crate) fn any_nic(&self) -> VipResult<()> {
        if self.nic.is_some() {
            Ok(())
        } else {
            Err(VipError::InvalidParameter)
        }
    }
}
