//! The card's BAR0 as a PCI target ([`via_abi::bar`] is the contract): register reads
//! and writes, the ATT registration mailbox, and the VI command registers (the commands
//! themselves are in `connect`). Doorbell-window writes go to `doorbell`.
//!
//! A write arrives as `TargetWrite` at the end of its bus transaction and takes effect at
//! that edge, dword by dword in address order (bytes a write does not cover keep their
//! value). A read is answered `reg_read_wait` PCI clocks after the card sees its address,
//! with the register values of that edge. Reads of unknown or write-only offsets return 0;
//! writes to unknown or read-only offsets are ignored and counted (a PCI target cannot
//! refuse a decoded write).

use super::io::{Action, Io};
use super::unit::regs::RegWrite;
use super::Engine;
use crate::att::RegionRequest;
use crate::msg::ReqId;
use gige_mac::BufferRam;
use pci_model::PciMsg;
use sim_kernel::Cycles;
use via_abi::bar::{self, AttCmd, CmdResult};
use via_abi::{MemAttributes, MemHandle, ProtectionTag};

impl Engine {
    /// A write transaction to BAR0 has ended: apply it dword by dword.
    pub(crate) fn target_write(
        &mut self,
        addr: u64,
        data: &[u8],
        io: &mut Io,
        ram: &mut BufferRam,
    ) {
        let base = self.params.bar0_base;
        let mut dword: Option<(u64, [Option<u8>; 4])> = None;
        for (i, &byte) in data.iter().enumerate() {
            let Some(off) = addr
                .checked_add(i as u64)
                .and_then(|a| a.checked_sub(base))
                .filter(|&o| o < bar::BAR0_SIZE)
            else {
                self.stats.reg_writes_ignored += 1;
                continue;
            };
            let aligned = off & !3;
            if let Some((cur, _)) = dword {
                if cur != aligned {
                    if let Some((o, b)) = dword.take() {
                        self.write_dword(o, b, io, ram);
                    }
                }
            }
            let entry = dword.get_or_insert((aligned, [None; 4]));
            if let Some(slot) = entry.1.get_mut((off & 3) as usize) {
                *slot = Some(byte);
            }
        }
        if let Some((o, b)) = dword {
            self.write_dword(o, b, io, ram);
        }
    }

    fn write_dword(&mut self, off: u64, bytes: [Option<u8>; 4], io: &mut Io, ram: &mut BufferRam) {
        self.stats.reg_writes += 1;
        if let Some((vi, within)) = bar::doorbell_at(off) {
            self.doorbell_write(vi, within, bytes, io, ram);
            return;
        }
        match self.regs.write(off, bytes, self.params.max_region_pages) {
            RegWrite::Stored => {}
            RegWrite::AttCmd(cmd) => self.att_command(cmd, io),
            RegWrite::ViCmd(cmd) => self.vi_command(cmd, io, ram),
            RegWrite::Ignored => {
                self.stats.reg_writes_ignored += 1;
                tracing::debug!(target: "nic::doorbell", off, "write to a read-only or unknown register ignored");
            }
        }
    }

    /// The value of the register at `off` (dword aligned) now.
    fn read_dword(&self, off: u64) -> u32 {
        let r = &self.regs;
        if let Some(v) = r.read(off) {
            return v;
        }
        let mac = self.params.mac.octets();
        match off {
            bar::CARD_ID => bar::CARD_ID_VALUE,
            bar::CARD_STATUS => {
                1 | if self.params.rdma_read {
                    bar::CARD_RDMA_READ
                } else {
                    0
                }
            }
            bar::MAC_LO => u32::from_le_bytes([mac[0], mac[1], mac[2], mac[3]]),
            bar::MAC_HI => u32::from_le_bytes([mac[4], mac[5], 0, 0]),
            bar::VI_STATE => self.vis.state_code(r.vi_sel).raw(),
            bar::VI_PEER_VI => self.vis.peer_code(r.vi_sel),
            _ => match bar::doorbell_at(off) {
                // Any dword of VI n's doorbell window reads VI n's state (the VIPL's
                // check before a post and its flush after one).
                Some((vi, _)) => {
                    let pending = if self.doorbells.is_pending(vi) {
                        bar::POSTS_PENDING
                    } else {
                        0
                    };
                    self.vis.state_code(u32::from(vi)).raw() | pending
                }
                None => 0,
            },
        }
    }

    /// A read transaction to BAR0 has started: answer with the registers of this edge.
    pub(crate) fn target_read(&mut self, tag: u64, addr: u64, len: u64, io: &mut Io) {
        self.stats.reg_reads += 1;
        let base = self.params.bar0_base;
        // Not a lookup: an access outside BAR0 is the bus's input, answered with target abort.
        let Some(off) = addr.checked_sub(base).filter(|&o| o < bar::BAR0_SIZE) else {
            io.to_bus(Cycles(1), PciMsg::TargetAbort { tag });
            return;
        };
        let n = len.clamp(1, bar::BAR0_SIZE - off);
        let mut data = Vec::with_capacity(usize::try_from(n).unwrap_or(0));
        let mut at = off;
        while (data.len() as u64) < n {
            let word = self.read_dword(at & !3).to_le_bytes();
            let from = (at & 3) as usize;
            let take = (4 - from).min(usize::try_from(n - data.len() as u64).unwrap_or(4));
            data.extend_from_slice(&word[from..from + take]);
            at += take as u64;
        }
        let wait = Cycles(self.params.reg_read_wait.0.saturating_add(1));
        io.to_bus(wait, PciMsg::TargetReadData { tag, data });
    }

    /// `ATT_CMD` was written.
    fn att_command(&mut self, cmd: AttCmd, io: &mut Io) {
        if self.regs.att_busy() {
            self.stats.cmd_while_busy += 1;
            tracing::warn!(target: "nic::att", ?cmd, "ATT command while the last one is busy: ignored");
            return;
        }
        let (pages, overflow) = self.regs.take_att_pages();
        let r = &mut self.regs;
        let req = self.outstanding.new_req();
        match cmd {
            AttCmd::Register => {
                if overflow {
                    r.att_result = CmdResult::InvalidParameter;
                    return;
                }
                let attrs = MemAttributes::from_bits_retain(r.att_attr as u16);
                let region = RegionRequest {
                    va: r.att_va,
                    len: u64::from(r.att_len),
                    pages,
                    ptag: ProtectionTag((r.att_attr >> 16) as u16),
                    enable_rdma_write: attrs.contains(MemAttributes::ENABLE_RDMA_WRITE),
                    enable_rdma_read: attrs.contains(MemAttributes::ENABLE_RDMA_READ),
                };
                r.att_started(req);
                io.push(Action::Register { req, region });
            }
            AttCmd::Deregister => {
                r.att_started(req);
                io.push(Action::Deregister {
                    req,
                    handle: MemHandle(r.att_handle),
                });
            }
            AttCmd::Unknown(_) => r.att_result = CmdResult::BadCommand,
        }
    }

    /// The ATT manager answered a registration mailbox command.
    pub(crate) fn att_answer(&mut self, req: ReqId, result: Result<Option<MemHandle>, CmdResult>) {
        if !self.regs.att_answer(req, result) {
            self.stats.att_answers_unexpected += 1;
            tracing::warn!(target: "nic::att", ?req, "ATT answer for no pending command");
        }
    }
}
