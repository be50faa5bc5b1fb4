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
use super::unit::regs::merge;
use super::Engine;
use crate::att::RegionRequest;
use crate::msg::ReqId;
use gige_mac::BufferRam;
use pci_model::PciMsg;
use sim_kernel::Cycles;
use via_abi::bar::{self, AttCmd, CmdResult, ViCmd};
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
        let r = &mut self.regs;
        let v = |old: u32| merge(old, bytes);
        match off {
            bar::ATT_VA_LO => {
                let lo = v(r.att_va as u32);
                r.att_va = (r.att_va & !0xFFFF_FFFF) | u64::from(lo);
            }
            bar::ATT_VA_HI => {
                let hi = v((r.att_va >> 32) as u32);
                r.att_va = (r.att_va & 0xFFFF_FFFF) | (u64::from(hi) << 32);
            }
            bar::ATT_LEN => r.att_len = v(r.att_len),
            bar::ATT_ATTR => r.att_attr = v(r.att_attr),
            bar::ATT_PAGE => {
                if r.att_pages.len() < self.params.max_region_pages {
                    r.att_pages.push(u64::from(v(0)));
                } else {
                    r.att_pages_overflow = true;
                }
            }
            bar::ATT_HANDLE => r.att_handle = v(r.att_handle),
            bar::ATT_CMD => {
                let cmd = AttCmd::from_raw(v(0));
                self.att_command(cmd, io);
            }
            bar::VI_SEL => r.vi_sel = v(r.vi_sel),
            bar::VI_PTAG => r.vi_ptag = v(r.vi_ptag),
            bar::VI_ATTR => r.vi_attr = v(r.vi_attr),
            bar::VI_PEER_MAC_LO => r.vi_peer_mac_lo = v(r.vi_peer_mac_lo),
            bar::VI_PEER_MAC_HI => r.vi_peer_mac_hi = v(r.vi_peer_mac_hi),
            bar::VI_DISCRIMINATOR => r.vi_disc = v(r.vi_disc),
            bar::VI_CMD => {
                let cmd = ViCmd::from_raw(v(0));
                self.vi_command(cmd, io, ram);
            }
            _ => {
                self.stats.reg_writes_ignored += 1;
                tracing::debug!(target: "nic::doorbell", off, "write to a read-only or unknown register ignored");
            }
        }
    }

    /// The value of the register at `off` (dword aligned) now.
    fn read_dword(&self, off: u64) -> u32 {
        let r = &self.regs;
        let mac = self.params.mac.octets();
        match off {
            bar::CARD_ID => bar::CARD_ID_VALUE,
            bar::CARD_STATUS => 1,
            bar::MAC_LO => u32::from_le_bytes([mac[0], mac[1], mac[2], mac[3]]),
            bar::MAC_HI => u32::from_le_bytes([mac[4], mac[5], 0, 0]),
            bar::ATT_HANDLE => r.att_handle,
            bar::ATT_RESULT => r.att_result.raw(),
            bar::VI_STATE => self.vis.state_code(r.vi_sel).raw(),
            bar::VI_RESULT => r.vi_result.raw(),
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
        if self.regs.att_req.is_some() {
            self.stats.cmd_while_busy += 1;
            tracing::warn!(target: "nic::att", ?cmd, "ATT command while the last one is busy: ignored");
            return;
        }
        let r = &mut self.regs;
        let pages = std::mem::take(&mut r.att_pages);
        let overflow = std::mem::replace(&mut r.att_pages_overflow, false);
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
                r.att_result = CmdResult::Busy;
                r.att_req = Some(req);
                io.push(Action::Register { req, region });
            }
            AttCmd::Deregister => {
                r.att_result = CmdResult::Busy;
                r.att_req = Some(req);
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
        if self.regs.att_req != Some(req) {
            self.stats.att_answers_unexpected += 1;
            tracing::warn!(target: "nic::att", ?req, "ATT answer for no pending command");
            return;
        }
        self.regs.att_req = None;
        match result {
            Ok(handle) => {
                if let Some(h) = handle {
                    self.regs.att_handle = h.raw();
                }
                self.regs.att_result = CmdResult::Ok;
            }
            Err(code) => self.regs.att_result = code,
        }
    }
}
