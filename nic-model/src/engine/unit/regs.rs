//! Unit **register file**: BAR0's registers (everything but the doorbell windows), the
//! ATT registration mailbox's staging and the VI command registers. Reads and writes are
//! decoded by the engine's `regs` step file.

use crate::engine::ids::ViCmdSeq;
use crate::msg::ReqId;
use via_abi::bar::CmdResult;

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
