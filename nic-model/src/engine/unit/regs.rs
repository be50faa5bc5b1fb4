//! Unit **register file**: BAR0's registers (everything but the doorbell windows), the
//! ATT registration mailbox (its staging, the command waiting for the ATT manager, its
//! answer) and the VI command registers. [`Regs::write`] stores a dword and tells which
//! command it starts; the engine's `regs` step file splits bus transactions into dwords,
//! answers the registers kept elsewhere (card identity, VI state, doorbell windows) and
//! runs the commands.

use crate::engine::ids::ViCmdSeq;
use crate::msg::ReqId;
use via_abi::bar::{self, AttCmd, CmdResult, ViCmd};
use via_abi::MemHandle;

/// What a register write asks of the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RegWrite {
    /// Stored in the register file (or staged in the ATT mailbox).
    Stored,
    /// `ATT_CMD` was written: a mailbox command.
    AttCmd(AttCmd),
    /// `VI_CMD` was written: a VI command.
    ViCmd(ViCmd),
    /// A read-only or unknown offset: the write is ignored.
    Ignored,
}

/// The register file (everything but the doorbell windows).
#[derive(Clone, Debug)]
pub(crate) struct Regs {
    pub att_va: u64,
    pub att_len: u32,
    pub att_attr: u32,
    pub att_pages: Vec<u64>,
    pub att_pages_overflow: bool,
    pub att_handle: u32,
    pub att_result: CmdResult,
    /// The ATT command waiting for the manager's answer.
    pub att_req: Option<ReqId>,
    pub vi_sel: u32,
    pub vi_ptag: u32,
    pub vi_attr: u32,
    pub vi_peer_mac_lo: u32,
    pub vi_peer_mac_hi: u32,
    pub vi_disc: u32,
    pub vi_result: CmdResult,
    /// Sequence number of the last VI command (asynchronous results check it).
    pub vi_cmd_seq: ViCmdSeq,
}

impl Default for Regs {
    fn default() -> Self {
        Self {
            att_va: 0,
            att_len: 0,
            att_attr: 0,
            att_pages: Vec::new(),
            att_pages_overflow: false,
            att_handle: 0,
            att_result: CmdResult::Ok,
            att_req: None,
            vi_sel: 0,
            vi_ptag: 0,
            vi_attr: 0,
            vi_peer_mac_lo: 0,
            vi_peer_mac_hi: 0,
            vi_disc: 0,
            vi_result: CmdResult::Ok,
            vi_cmd_seq: ViCmdSeq::default(),
        }
    }
}

impl Regs {
    /// Applies a write of `bytes` (the byte enables of one dword) at offset `off`;
    /// `ATT_PAGE` stages at most `max_pages` page addresses (more: the next Register is
    /// refused).
    pub fn write(&mut self, off: u64, bytes: [Option<u8>; 4], max_pages: usize) -> RegWrite {
        let v = |old: u32| merge(old, bytes);
        match off {
            bar::ATT_VA_LO => {
                let lo = v(self.att_va as u32);
                self.att_va = (self.att_va & !0xFFFF_FFFF) | u64::from(lo);
            }
            bar::ATT_VA_HI => {
                let hi = v((self.att_va >> 32) as u32);
                self.att_va = (self.att_va & 0xFFFF_FFFF) | (u64::from(hi) << 32);
            }
            bar::ATT_LEN => self.att_len = v(self.att_len),
            bar::ATT_ATTR => self.att_attr = v(self.att_attr),
            bar::ATT_PAGE => {
                if self.att_pages.len() < max_pages {
                    self.att_pages.push(u64::from(v(0)));
                } else {
                    self.att_pages_overflow = true;
                }
            }
            bar::ATT_HANDLE => self.att_handle = v(self.att_handle),
            bar::ATT_CMD => return RegWrite::AttCmd(AttCmd::from_raw(v(0))),
            bar::VI_SEL => self.vi_sel = v(self.vi_sel),
            bar::VI_PTAG => self.vi_ptag = v(self.vi_ptag),
            bar::VI_ATTR => self.vi_attr = v(self.vi_attr),
            bar::VI_PEER_MAC_LO => self.vi_peer_mac_lo = v(self.vi_peer_mac_lo),
            bar::VI_PEER_MAC_HI => self.vi_peer_mac_hi = v(self.vi_peer_mac_hi),
            bar::VI_DISCRIMINATOR => self.vi_disc = v(self.vi_disc),
            bar::VI_CMD => return RegWrite::ViCmd(ViCmd::from_raw(v(0))),
            _ => return RegWrite::Ignored,
        }
        RegWrite::Stored
    }

    /// The value of the register at `off` if the register file holds it (`ATT_HANDLE`,
    /// `ATT_RESULT`, `VI_RESULT`).
    pub fn read(&self, off: u64) -> Option<u32> {
        match off {
            bar::ATT_HANDLE => Some(self.att_handle),
            bar::ATT_RESULT => Some(self.att_result.raw()),
            bar::VI_RESULT => Some(self.vi_result.raw()),
            _ => None,
        }
    }

    /// Whether an ATT command waits for the manager's answer.
    pub fn att_busy(&self) -> bool {
        self.att_req.is_some()
    }

    /// The staged page addresses, and whether more were written than fit; the staging
    /// starts empty again.
    pub fn take_att_pages(&mut self) -> (Vec<u64>, bool) {
        let pages = std::mem::take(&mut self.att_pages);
        let overflow = std::mem::replace(&mut self.att_pages_overflow, false);
        (pages, overflow)
    }

    /// ATT command `req` went to the manager: `ATT_RESULT` reads Busy until its answer.
    pub fn att_started(&mut self, req: ReqId) {
        self.att_result = CmdResult::Busy;
        self.att_req = Some(req);
    }

    /// The manager's answer to `req` (a handle for a registration): `ATT_RESULT` (and
    /// `ATT_HANDLE`) show it. Returns `false`, changing nothing, if `req` is not the
    /// command waiting.
    pub fn att_answer(&mut self, req: ReqId, result: Result<Option<MemHandle>, CmdResult>) -> bool {
        if self.att_req != Some(req) {
            return false;
        }
        self.att_req = None;
        match result {
            Ok(handle) => {
                if let Some(h) = handle {
                    self.att_handle = h.raw();
                }
                self.att_result = CmdResult::Ok;
            }
            Err(code) => self.att_result = code,
        }
        true
    }
}

/// `old` with the bytes a write covers replaced.
pub(crate) fn merge(old: u32, bytes: [Option<u8>; 4]) -> u32 {
    let mut b = old.to_le_bytes();
    for (dst, src) in b.iter_mut().zip(bytes) {
        if let Some(v) = src {
            *dst = v;
        }
    }
    u32::from_le_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(v: u32) -> [Option<u8>; 4] {
        v.to_le_bytes().map(Some)
    }

    #[test]
    fn writes_store_dwords_with_their_byte_enables() {
        let mut r = Regs::default();
        assert_eq!(
            r.write(bar::ATT_VA_LO, all(0x89AB_CDEF), 8),
            RegWrite::Stored
        );
        assert_eq!(
            r.write(bar::ATT_VA_HI, all(0x0000_0012), 8),
            RegWrite::Stored
        );
        assert_eq!(r.att_va, 0x12_89AB_CDEF);
        // Only byte 1 enabled: the other bytes keep their value.
        r.write(bar::ATT_VA_LO, [None, Some(0x00), None, None], 8);
        assert_eq!(r.att_va, 0x12_89AB_00EF);
        r.write(bar::ATT_HANDLE, all(0x0102_0304), 8);
        r.write(bar::ATT_HANDLE, [None, None, None, Some(0xFF)], 8);
        assert_eq!(r.read(bar::ATT_HANDLE), Some(0xFF02_0304));
        for (off, v) in [
            (bar::VI_SEL, 3),
            (bar::VI_PTAG, 7),
            (bar::VI_ATTR, 0x102),
            (bar::VI_PEER_MAC_LO, 0x0403_0201),
            (bar::VI_PEER_MAC_HI, 0x0605),
            (bar::VI_DISCRIMINATOR, 42),
        ] {
            assert_eq!(r.write(off, all(v), 8), RegWrite::Stored);
        }
        assert_eq!(
            (
                r.vi_sel,
                r.vi_ptag,
                r.vi_attr,
                r.vi_peer_mac_lo,
                r.vi_peer_mac_hi,
                r.vi_disc
            ),
            (3, 7, 0x102, 0x0403_0201, 0x0605, 42)
        );
    }

    #[test]
    fn commands_are_handed_back_and_read_only_offsets_are_ignored() {
        let mut r = Regs::default();
        assert_eq!(
            r.write(bar::ATT_CMD, all(AttCmd::Register.raw()), 8),
            RegWrite::AttCmd(AttCmd::Register)
        );
        assert_eq!(
            r.write(bar::VI_CMD, all(ViCmd::ConnectWait.raw()), 8),
            RegWrite::ViCmd(ViCmd::ConnectWait)
        );
        let before = r.clone();
        for off in [
            bar::CARD_ID,
            bar::ATT_RESULT,
            bar::VI_STATE,
            bar::VI_RESULT,
            0x0FFC,
        ] {
            assert_eq!(
                r.write(off, all(0xFFFF_FFFF), 8),
                RegWrite::Ignored,
                "{off:#x}"
            );
        }
        assert_eq!(
            (r.att_result, r.vi_result, r.att_va, r.vi_sel),
            (
                before.att_result,
                before.vi_result,
                before.att_va,
                before.vi_sel
            )
        );
        // What the file does not hold is read elsewhere (card identity, VI state).
        assert_eq!(r.read(bar::CARD_ID), None);
        assert_eq!(r.read(bar::VI_STATE), None);
        assert_eq!(r.read(bar::VI_RESULT), Some(CmdResult::Ok.raw()));
    }

    #[test]
    fn the_mailbox_stages_pages_up_to_its_limit_then_starts_afresh() {
        let mut r = Regs::default();
        for p in [0x1000, 0x2000, 0x3000] {
            r.write(bar::ATT_PAGE, all(p), 2);
        }
        assert_eq!(
            r.take_att_pages(),
            (vec![0x1000, 0x2000], true),
            "the third overflowed"
        );
        assert_eq!(
            r.take_att_pages(),
            (Vec::new(), false),
            "taken: empty again"
        );
        r.write(bar::ATT_PAGE, all(0x4000), 2);
        assert_eq!(r.take_att_pages(), (vec![0x4000], false));
    }

    #[test]
    fn the_mailbox_is_busy_until_the_answer_to_its_own_command() {
        let mut r = Regs::default();
        assert!(!r.att_busy());
        assert!(!r.att_answer(ReqId(1), Ok(None)), "nothing waits");
        r.att_started(ReqId(5));
        assert!(r.att_busy());
        assert_eq!(r.read(bar::ATT_RESULT), Some(CmdResult::Busy.raw()));
        assert!(
            !r.att_answer(ReqId(4), Ok(Some(MemHandle(9)))),
            "another command's answer"
        );
        assert_eq!(
            (r.att_result, r.att_handle),
            (CmdResult::Busy, 0),
            "unchanged"
        );
        assert!(r.att_answer(ReqId(5), Ok(Some(MemHandle(9)))));
        assert!(!r.att_busy());
        assert_eq!(r.read(bar::ATT_RESULT), Some(CmdResult::Ok.raw()));
        assert_eq!(r.read(bar::ATT_HANDLE), Some(9));
        assert!(!r.att_answer(ReqId(5), Ok(None)), "answered once");
        // A refusal shows its code and keeps the last handle.
        r.att_started(ReqId(6));
        assert!(r.att_answer(ReqId(6), Err(CmdResult::InvalidParameter)));
        assert_eq!(
            (r.att_result, r.att_handle),
            (CmdResult::InvalidParameter, 9)
        );
        // A deregistration's answer (no handle) leaves ATT_HANDLE as it is.
        r.att_started(ReqId(7));
        assert!(r.att_answer(ReqId(7), Ok(None)));
        assert_eq!((r.att_result, r.att_handle), (CmdResult::Ok, 9));
    }

    #[test]
    fn merge_replaces_only_the_enabled_bytes() {
        assert_eq!(merge(0x4433_2211, [None; 4]), 0x4433_2211);
        assert_eq!(
            merge(0x4433_2211, [Some(0xAA), None, Some(0xBB), None]),
            0x44BB_22AA
        );
        assert_eq!(merge(0, [Some(1), Some(2), Some(3), Some(4)]), 0x0403_0201);
    }
}
