//! The host-memory ATT's table port: turns the ATT manager's table reads and writes into
//! DMA jobs of the card's DMA master over the system PCI bus (the software-VIA placement
//! of the table, a what-if of `card.att_location = "host"`).
//!
//! ```text
//!  AttManager --AttTableRead/Write--> HostTablePort --DmaStart--> DmaMaster --PCI--> host memory
//!  AttManager <--AttTableReadDone/WriteDone-- HostTablePort <--DmaDone-- DmaMaster
//! ```
//!
//! The table occupies a physically contiguous range of host memory (the kernel agent's
//! pinned allocation), so each access is one contiguous DMA job. It is clocked by the
//! system PCI clock, like the DMA master it talks to.

use crate::att::TableIoError;
use crate::msg::NicMsg;
use pci_model::page_table::contiguous_pages;
use pci_model::{DmaDirection, DmaJob, DmaStatus, PciMsg};
use sim_kernel::{ComponentId, Ctx};
use std::collections::BTreeMap;

/// What an outstanding DMA job was for: the table access it serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pending {
    write: bool,
    tag: u64,
    addr: u64,
    reply_to: ComponentId,
}

/// The table port component (one per card, in the `pci.system` domain).
#[derive(Clone, Debug)]
pub struct HostTablePort {
    dma: ComponentId,
    next: u64,
    pending: BTreeMap<u64, Pending>,
    /// Table accesses turned into DMA jobs.
    pub jobs: u64,
    /// Messages it could not use (counted, never silently dropped).
    pub unexpected: u64,
}

impl HostTablePort {
    /// A port that sends its jobs to the DMA master `dma`.
    #[must_use]
    pub fn new(dma: ComponentId) -> Self {
        Self {
            dma,
            next: 0,
            pending: BTreeMap::new(),
            jobs: 0,
            unexpected: 0,
        }
    }

    /// Handles a table access from the ATT manager.
    pub fn on_nic<M: From<PciMsg> + From<NicMsg>>(&mut self, msg: NicMsg, ctx: &mut Ctx<'_, M>) {
        let me = ctx.me();
        let (pending, direction, len) = match msg {
            NicMsg::AttTableRead {
                tag,
                addr,
                len,
                reply_to,
            } => (
                Pending {
                    write: false,
                    tag,
                    addr,
                    reply_to,
                },
                DmaDirection::Read { len },
                len,
            ),
            NicMsg::AttTableWrite {
                tag,
                addr,
                data,
                reply_to,
            } => {
                let len = data.len() as u64;
                (
                    Pending {
                        write: true,
                        tag,
                        addr,
                        reply_to,
                    },
                    DmaDirection::Write { data },
                    len,
                )
            }
            other => {
                self.unexpected += 1;
                tracing::warn!(target: "nic::att", ?other, "table port: message not for it");
                return;
            }
        };
        let job = self.next;
        self.next += 1;
        self.jobs += 1;
        self.pending.insert(job, pending);
        ctx.send(
            self.dma,
            PciMsg::DmaStart(DmaJob {
                tag: job,
                reply_to: me,
                direction,
                pages: contiguous_pages(pending.addr, len.max(1)),
            })
            .into(),
        );
    }

    /// Handles the DMA master's completion.
    pub fn on_pci<M: From<PciMsg> + From<NicMsg>>(&mut self, msg: PciMsg, ctx: &mut Ctx<'_, M>) {
        let PciMsg::DmaDone(done) = msg else {
            self.unexpected += 1;
            return;
        };
        let Some(p) = self.pending.remove(&done.tag) else {
            self.unexpected += 1;
            return;
        };
        let ok = matches!(done.status, DmaStatus::Ok);
        let err = TableIoError::Bus { addr: p.addr };
        let reply = if p.write {
            NicMsg::AttTableWriteDone {
                tag: p.tag,
                result: if ok { Ok(()) } else { Err(err) },
            }
        } else {
            NicMsg::AttTableReadDone {
                tag: p.tag,
                result: if ok { Ok(done.data) } else { Err(err) },
            }
        };
        ctx.send(p.reply_to, reply.into());
    }
}
