//! A FAKE HVIA-GE card for host-driver tests: a PCI device target that decodes the
//! via-abi BAR0 map (ATT registration mailbox, VI commands, doorbells) and a bus master
//! that writes completions into host memory through the host bridge.
//!
//! Not a model of the card: commands complete after a fixed latency, the card reads
//! host memory directly at the doorbell instant (only its *writes* go over the bus, so
//! the host sees them when the bridge commits them), and the two cards of a test system
//! exchange messages directly with a fixed latency. Enough to run VIPL programs.

use super::fake_engine::Frame;
use pci_model::{HostMemory, MasterId, PciMsg};
use sim_kernel::{ComponentId, Ctx, Time};
use std::collections::{BTreeMap, VecDeque};
use via_abi::bar::{self, AttCmd, CmdResult, ViCmd, ViStateCode};
use via_abi::{MacAddr, MemHandle};

/// Messages between fake cards (and the card's own).
#[derive(Clone, Debug)]
pub enum CardMsg {
    /// A connect request for a VI listening with `disc`.
    ConnReq { from_vi: u16, disc: u32 },
    /// The request of `to_vi` was accepted by `peer_vi`.
    ConnAck { to_vi: u16, peer_vi: u16 },
    /// The request of `to_vi` was refused.
    ConnRej { to_vi: u16 },
    /// A message for VI `dst_vi`.
    Frame { dst_vi: u16, frame: Frame },
}

pub use super::fake_types::{FakeCardParams, FakeRegion, FakeStats, FakeVi};

pub struct FakeCard {
    pub(super) p: FakeCardParams,
    pub(super) bus: ComponentId,
    pub(super) master: MasterId,
    base: u64,
    pub(super) peer: Option<(ComponentId, MacAddr)>,
    att: [u32; 8],
    att_pages: Vec<u64>,
    att_result: (CmdResult, Time),
    vi_regs: [u32; 8],
    vi_result: (CmdResult, Time),
    pub regions: BTreeMap<u32, FakeRegion>,
    generations: BTreeMap<u32, u16>,
    next_index: u32,
    pub vis: BTreeMap<u16, FakeVi>,
    held: Vec<(u16, u32)>,
    doorbells: BTreeMap<u16, [u8; 16]>,
    pub(super) next_tag: u64,
    pub stats: FakeStats,
    /// Every doorbell record rung, in order.
    pub doorbell_log: Vec<[u8; 16]>,
    /// Every ATT_ATTR value of a registration, with its page list.
    pub registrations: Vec<(u32, Vec<u64>)>,
}

impl FakeCard {
    pub fn new(p: FakeCardParams, bus: ComponentId, master: MasterId, base: u64) -> Self {
        Self {
            p,
            bus,
            master,
            base,
            peer: None,
            att: [0; 8],
            att_pages: Vec::new(),
            att_result: (CmdResult::Ok, Time::ZERO),
            vi_regs: [0; 8],
            vi_result: (CmdResult::Ok, Time::ZERO),
            regions: BTreeMap::new(),
            generations: BTreeMap::new(),
            next_index: 1,
            vis: BTreeMap::new(),
            held: Vec::new(),
            doorbells: BTreeMap::new(),
            next_tag: 1,
            stats: FakeStats::default(),
            doorbell_log: Vec::new(),
            registrations: Vec::new(),
        }
    }

    pub fn connect_peer(&mut self, card: ComponentId, mac: MacAddr) {
        self.peer = Some((card, mac));
    }

    pub fn handle<M: From<PciMsg> + From<CardMsg>>(
        &mut self,
        msg: super::TMsg,
        ctx: &mut Ctx<'_, M>,
        mem: &HostMemory,
    ) {
        match msg {
            super::TMsg::Pci(PciMsg::TargetWrite { addr, data }) => {
                let off = addr.wrapping_sub(self.base);
                for (i, w) in data.chunks(4).enumerate() {
                    let mut b = [0u8; 4];
                    b[..w.len()].copy_from_slice(w);
                    self.reg_write(off + 4 * i as u64, u32::from_le_bytes(b), ctx, mem);
                }
            }
            super::TMsg::Pci(PciMsg::TargetRead { tag, addr, .. }) => {
                self.stats.reg_reads += 1;
                let v = self.reg_read(addr.wrapping_sub(self.base), ctx.now());
                let data = v.to_le_bytes().to_vec();
                ctx.send(self.bus, PciMsg::TargetReadData { tag, data }.into());
            }
            super::TMsg::Pci(PciMsg::TransactionDone(_)) => {}
            super::TMsg::Card(m) => self.card_msg(m, ctx, mem),
            other => panic!("fake card got {other:?}"),
        }
    }

    fn reg_read(&self, off: u64, now: Time) -> u32 {
        let sel = u16::try_from(self.vi_regs[0]).unwrap_or(u16::MAX);
        let result = |r: (CmdResult, Time)| if now < r.1 { CmdResult::Busy } else { r.0 };
        let m = self.p.mac.octets();
        match off {
            bar::CARD_ID => bar::CARD_ID_VALUE,
            bar::CARD_STATUS => 1,
            bar::MAC_LO => u32::from_le_bytes([m[0], m[1], m[2], m[3]]),
            bar::MAC_HI => u32::from_le_bytes([m[4], m[5], 0, 0]),
            bar::ATT_HANDLE => self.att[5],
            bar::ATT_RESULT => result(self.att_result).raw(),
            bar::VI_STATE => self
                .vis
                .get(&sel)
                .map_or(ViStateCode::Absent, |v| v.state)
                .raw(),
            bar::VI_RESULT => result(self.vi_result).raw(),
            bar::VI_PEER_VI => self.vis.get(&sel).and_then(|v| v.peer).map_or(0, u32::from),
            // A doorbell window reads its VI's state (a post's check and flush).
            _ => bar::doorbell_at(off).map_or(0, |(vi, _)| {
                self.vis
                    .get(&vi)
                    .map_or(ViStateCode::Absent, |v| v.state)
                    .raw()
            }),
        }
    }

    fn reg_write<M: From<PciMsg> + From<CardMsg>>(
        &mut self,
        off: u64,
        v: u32,
        ctx: &mut Ctx<'_, M>,
        mem: &HostMemory,
    ) {
        self.stats.reg_writes += 1;
        let ready = ctx.now() + self.p.cmd_latency;
        match off {
            bar::ATT_PAGE => self.att_pages.push(u64::from(v)),
            bar::ATT_CMD => {
                let r = self.att_command(AttCmd::from_raw(v));
                self.att_pages.clear();
                self.att_result = (r, ready);
            }
            o if (bar::ATT_VA_LO..bar::ATT_CMD).contains(&o) => {
                self.att[((o - bar::ATT_VA_LO) / 4) as usize] = v;
            }
            bar::VI_CMD => {
                let r = self.vi_command(ViCmd::from_raw(v), ctx);
                self.vi_result = (r, ready);
            }
            o if (bar::VI_SEL..bar::VI_CMD).contains(&o) => {
                self.vi_regs[((o - bar::VI_SEL) / 4) as usize] = v;
            }
            o => {
                if let Some((vi, k)) = bar::doorbell_at(o) {
                    let rec = self.doorbells.entry(vi).or_insert([0; 16]);
                    let k = k as usize;
                    rec[k..k + 4].copy_from_slice(&v.to_le_bytes());
                    if k == 12 {
                        let rec = *rec;
                        self.stats.doorbells += 1;
                        self.doorbell_log.push(rec);
                        self.ring(&rec, ctx, mem);
                    }
                }
            }
        }
    }

    fn att_command(&mut self, cmd: AttCmd) -> CmdResult {
        match cmd {
            AttCmd::Register => {
                self.registrations
                    .push((self.att[3], self.att_pages.clone()));
                let va = u64::from(self.att[0]) | (u64::from(self.att[1]) << 32);
                let len = u64::from(self.att[2]);
                let (attrs, ptag) = ((self.att[3] & 0xFFFF) as u16, (self.att[3] >> 16) as u16);
                let first = 4096 - va % 4096;
                let need = if len == 0 {
                    0
                } else {
                    1 + len.saturating_sub(first).div_ceil(4096)
                };
                if len == 0 || self.att_pages.len() as u64 != need {
                    return CmdResult::InvalidParameter;
                }
                if ptag == 0 {
                    return CmdResult::InvalidPtag;
                }
                let index = self.next_index;
                self.next_index += 1;
                let generation =
                    MemHandle::next_generation(*self.generations.get(&index).unwrap_or(&0));
                self.generations.insert(index, generation);
                let h = MemHandle::new(index, generation).unwrap();
                self.regions.insert(
                    index,
                    FakeRegion {
                        va,
                        len,
                        pages: self.att_pages.clone(),
                        attrs,
                        ptag,
                        generation,
                    },
                );
                self.att[5] = h.raw();
                CmdResult::Ok
            }
            AttCmd::Deregister => {
                let h = MemHandle::from_raw(self.att[5]);
                match self.regions.get(&h.index()) {
                    Some(r) if r.generation == h.generation() => {
                        self.regions.remove(&h.index());
                        CmdResult::Ok
                    }
                    _ => CmdResult::InvalidState,
                }
            }
            AttCmd::Unknown(_) => CmdResult::BadCommand,
        }
    }

    fn vi_command<M: From<PciMsg> + From<CardMsg>>(
        &mut self,
        cmd: ViCmd,
        ctx: &mut Ctx<'_, M>,
    ) -> CmdResult {
        let sel = u16::try_from(self.vi_regs[0]).unwrap_or(u16::MAX);
        let disc = self.vi_regs[5];
        match cmd {
            ViCmd::Create => {
                if self.vis.contains_key(&sel) {
                    return CmdResult::InvalidState;
                }
                if self.vi_regs[1] == 0 {
                    return CmdResult::InvalidPtag;
                }
                let vi = FakeVi {
                    state: ViStateCode::Idle,
                    ptag: self.vi_regs[1] as u16,
                    attr: self.vi_regs[2],
                    peer: None,
                    listening: None,
                    recv_q: VecDeque::new(),
                    waiting: VecDeque::new(),
                };
                self.vis.insert(sel, vi);
                CmdResult::Ok
            }
            ViCmd::Destroy => match self.vis.get(&sel) {
                Some(v) if v.state == ViStateCode::Idle => {
                    self.vis.remove(&sel);
                    CmdResult::Ok
                }
                _ => CmdResult::InvalidState,
            },
            ViCmd::ConnectRequest => {
                let lo = self.vi_regs[3].to_le_bytes();
                let hi = self.vi_regs[4].to_le_bytes();
                let want = MacAddr([lo[0], lo[1], lo[2], lo[3], hi[0], hi[1]]);
                let Some(v) = self
                    .vis
                    .get_mut(&sel)
                    .filter(|v| v.state == ViStateCode::Idle)
                else {
                    return CmdResult::InvalidState;
                };
                match self.peer {
                    Some((card, mac)) if mac == want => {
                        v.state = ViStateCode::ConnectPending;
                        let m = CardMsg::ConnReq { from_vi: sel, disc };
                        ctx.send_after(card, self.p.link_clocks, m.into());
                        CmdResult::Ok
                    }
                    _ => CmdResult::Rejected,
                }
            }
            ViCmd::ConnectWait => {
                let Some(v) = self
                    .vis
                    .get_mut(&sel)
                    .filter(|v| v.state == ViStateCode::Idle)
                else {
                    return CmdResult::InvalidState;
                };
                v.state = ViStateCode::ConnectPending;
                v.listening = Some(disc);
                if let Some(i) = self.held.iter().position(|(_, d)| *d == disc) {
                    let (from_vi, _) = self.held.remove(i);
                    self.accept(sel, from_vi, ctx);
                }
                CmdResult::Ok
            }
            ViCmd::ConnectReject | ViCmd::Disconnect => match self.vis.get_mut(&sel) {
                Some(v) if v.state != ViStateCode::Idle => {
                    v.state = ViStateCode::Idle;
                    v.peer = None;
                    v.listening = None;
                    CmdResult::Ok
                }
                _ => CmdResult::InvalidState,
            },
            ViCmd::Unknown(_) => CmdResult::BadCommand,
        }
    }

    fn accept<M: From<CardMsg>>(&mut self, vi: u16, from_vi: u16, ctx: &mut Ctx<'_, M>) {
        if let Some(v) = self.vis.get_mut(&vi) {
            v.state = ViStateCode::Connected;
            v.peer = Some(from_vi);
            v.listening = None;
        }
        if let Some((card, _)) = self.peer {
            let m = CardMsg::ConnAck {
                to_vi: from_vi,
                peer_vi: vi,
            };
            ctx.send_after(card, self.p.link_clocks, m.into());
        }
    }

    fn card_msg<M: From<PciMsg> + From<CardMsg>>(
        &mut self,
        m: CardMsg,
        ctx: &mut Ctx<'_, M>,
        mem: &HostMemory,
    ) {
        match m {
            CardMsg::ConnReq { from_vi, disc } => {
                let listener = self
                    .vis
                    .iter()
                    .find(|(_, v)| v.listening == Some(disc))
                    .map(|(n, _)| *n);
                match listener {
                    Some(vi) => self.accept(vi, from_vi, ctx),
                    None if self.p.reject_unmatched => {
                        if let Some((card, _)) = self.peer {
                            ctx.send_after(
                                card,
                                self.p.link_clocks,
                                CardMsg::ConnRej { to_vi: from_vi }.into(),
                            );
                        }
                    }
                    None => self.held.push((from_vi, disc)),
                }
            }
            CardMsg::ConnAck { to_vi, peer_vi } => {
                if let Some(v) = self.vis.get_mut(&to_vi) {
                    v.state = ViStateCode::Connected;
                    v.peer = Some(peer_vi);
                }
            }
            CardMsg::ConnRej { to_vi } => {
                if let Some(v) = self.vis.get_mut(&to_vi) {
                    v.state = ViStateCode::Idle;
                }
                self.vi_result = (CmdResult::Rejected, ctx.now());
            }
            CardMsg::Frame { dst_vi, frame } => self.frame_in(dst_vi, frame, ctx, mem),
        }
    }
}
