//! The fake card's "engine": doorbells, descriptor processing, messages between the two
//! fake cards, translation through its registrations, and completion writes over the
//! bus (so the host sees them only when the host bridge commits them).

use super::fake_card::{CardMsg, FakeCard};
use pci_model::{page_segments, BusRequest, Command, HostMemory, PciMsg, PhysSegment};
use sim_kernel::Ctx;
use via_abi::bar::ViStateCode;
use via_abi::descriptor::{descriptor_len, CONTROL_SEGMENT_LEN};
use via_abi::{
    CompletedOp, ControlSegment, ControlSegmentRepr, DescriptorRepr, Doorbell, DoorbellRepr,
    MemAttributes, MemHandle, Op, Queue, Status, WorkQueue,
};

/// What travels between the fake cards.
#[derive(Clone, Debug)]
pub enum Frame {
    Send {
        data: Vec<u8>,
        imm: Option<u32>,
    },
    Rdma {
        va: u64,
        handle: MemHandle,
        data: Vec<u8>,
    },
}

impl FakeCard {
    /// Physical pieces of `[va, va + len)` of region `handle`, checking ptag and (for
    /// RDMA) the write enable.
    pub(super) fn translate(
        &self,
        handle: MemHandle,
        va: u64,
        len: u64,
        ptag: u16,
        rdma: bool,
    ) -> Option<Vec<PhysSegment>> {
        let r = self.regions.get(&handle.index())?;
        if r.generation != handle.generation() || r.ptag != ptag {
            return None;
        }
        if rdma && r.attrs & MemAttributes::ENABLE_RDMA_WRITE.bits() == 0 {
            return None;
        }
        if va < r.va || va.checked_add(len)? > r.va + r.len {
            return None;
        }
        let all = page_segments(&r.pages, r.len).ok()?;
        let mut skip = va - r.va;
        let mut left = len;
        let mut out = Vec::new();
        for s in all {
            if left == 0 {
                break;
            }
            if skip >= s.len {
                skip -= s.len;
                continue;
            }
            let n = (s.len - skip).min(left);
            out.push(PhysSegment {
                addr: s.addr + skip,
                len: n,
            });
            left -= n;
            skip = 0;
        }
        Some(out)
    }

    fn read(mem: &HostMemory, segs: &[PhysSegment]) -> Vec<u8> {
        let mut v = Vec::new();
        for s in segs {
            v.extend(mem.read_vec(s.addr, s.len as usize).unwrap());
        }
        v
    }

    /// DMA-writes `data` over the bus into the pieces `segs`.
    fn write<M: From<PciMsg>>(&mut self, segs: &[PhysSegment], data: &[u8], ctx: &mut Ctx<'_, M>) {
        let mut at = 0usize;
        for s in segs {
            let n = s.len as usize;
            let req = BusRequest {
                master: self.master,
                tag: self.next_tag,
                command: Command::MemoryWrite,
                addr: s.addr,
                len: s.len,
                data: data[at..at + n].to_vec(),
            };
            self.next_tag += 1;
            self.stats.bus_writes += 1;
            ctx.send(self.bus, PciMsg::Request(req).into());
            at += n;
        }
    }

    /// Reads the descriptor at (`va`, `handle`) of a VI with tag `ptag`.
    fn fetch(
        &self,
        mem: &HostMemory,
        va: u64,
        handle: MemHandle,
        ptag: u16,
    ) -> Option<(Vec<PhysSegment>, Vec<u8>)> {
        let segs = self.translate(handle, va, CONTROL_SEGMENT_LEN as u64, ptag, false)?;
        let head = Self::read(mem, &segs);
        let cs = ControlSegmentRepr::parse(&ControlSegment::new_unchecked(&head[..])).ok()?;
        let full = self.translate(
            handle,
            va,
            descriptor_len(cs.seg_count.min(self.p.max_segments)) as u64,
            ptag,
            false,
        )?;
        Some((segs, Self::read(mem, &full)))
    }

    /// Writes `status` (and, if given, the length before it and the immediate data
    /// before that) into the descriptor whose control segment is at `segs`.
    fn complete<M: From<PciMsg>>(
        &mut self,
        segs: &[PhysSegment],
        status: Status,
        length: Option<u32>,
        ctx: &mut Ctx<'_, M>,
    ) {
        self.complete_imm(segs, status, length, None, ctx);
    }

    fn complete_imm<M: From<PciMsg>>(
        &mut self,
        segs: &[PhysSegment],
        status: Status,
        length: Option<u32>,
        imm: Option<u32>,
        ctx: &mut Ctx<'_, M>,
    ) {
        let mut bytes = Vec::new();
        let mut off = 28;
        if let Some(i) = imm {
            bytes.extend(i.to_le_bytes());
            off = 20;
        }
        if let Some(l) = length {
            bytes.extend(l.to_le_bytes());
            off = off.min(24);
        }
        bytes.extend(status.bits().to_le_bytes());
        let mut skip = off as u64;
        let mut piece = Vec::new();
        let mut left = bytes.len() as u64;
        for s in segs {
            if skip >= s.len {
                skip -= s.len;
                continue;
            }
            let n = (s.len - skip).min(left);
            piece.push(PhysSegment {
                addr: s.addr + skip,
                len: n,
            });
            left -= n;
            skip = 0;
            if left == 0 {
                break;
            }
        }
        self.write(&piece, &bytes, ctx);
    }

    pub(super) fn ring<M: From<PciMsg> + From<CardMsg>>(
        &mut self,
        rec: &[u8; 16],
        ctx: &mut Ctx<'_, M>,
        mem: &HostMemory,
    ) {
        let Ok(db) = DoorbellRepr::parse(&Doorbell::new_unchecked(&rec[..])) else {
            return;
        };
        let Some(vi) = self.vis.get(&db.vi) else {
            return;
        };
        let ptag = vi.ptag;
        match db.queue {
            Queue::Receive => {
                if let Some(v) = self.vis.get_mut(&db.vi) {
                    v.recv_q.push_back((db.desc_va, db.desc_handle));
                }
                let waiting = self.vis.get_mut(&db.vi).and_then(|v| v.waiting.pop_front());
                if let Some(f) = waiting {
                    self.frame_in(db.vi, f, ctx, mem);
                }
            }
            Queue::Send => self.send(db.vi, ptag, db.desc_va, db.desc_handle, ctx, mem),
            Queue::Unknown(_) => {}
        }
    }

    fn send<M: From<PciMsg> + From<CardMsg>>(
        &mut self,
        vi: u16,
        ptag: u16,
        va: u64,
        handle: MemHandle,
        ctx: &mut Ctx<'_, M>,
        mem: &HostMemory,
    ) {
        let Some((cs_segs, bytes)) = self.fetch(mem, va, handle, ptag) else {
            self.stats.protection_errors += 1;
            return;
        };
        let done = Status::DONE;
        let seg_count = u16::from_le_bytes([bytes[12], bytes[13]]);
        let desc = DescriptorRepr::parse(&bytes[..]);
        let desc = match desc {
            Ok(d) if seg_count <= self.p.max_segments && d.validate(WorkQueue::Send).is_ok() => d,
            _ => {
                self.stats.format_errors += 1;
                self.complete(&cs_segs, done | Status::FORMAT_ERROR, None, ctx);
                return;
            }
        };
        let mut data = Vec::new();
        for s in &desc.data {
            match self.translate(s.local_handle, s.local_va, u64::from(s.length), ptag, false) {
                Some(p) => data.extend(Self::read(mem, &p)),
                None => {
                    self.stats.protection_errors += 1;
                    self.complete(&cs_segs, done | Status::PROTECTION_ERROR, None, ctx);
                    return;
                }
            }
        }
        let connected = self
            .vis
            .get(&vi)
            .filter(|v| v.state == ViStateCode::Connected)
            .and_then(|v| v.peer);
        let (Some(peer_vi), Some((card, _))) = (connected, self.peer) else {
            self.complete(&cs_segs, done | Status::TRANSPORT_ERROR, None, ctx);
            return;
        };
        let imm = desc
            .control
            .contains(via_abi::Control::IMMEDIATE)
            .then_some(desc.immediate);
        let (frame, op) = match (desc.control.op(), desc.address) {
            (Op::RdmaWrite, Some(a)) => (
                Frame::Rdma {
                    va: a.remote_va,
                    handle: a.remote_handle,
                    data,
                },
                CompletedOp::RdmaWrite,
            ),
            _ => (Frame::Send { data, imm }, CompletedOp::Send),
        };
        ctx.send_after(
            card,
            self.p.link_clocks,
            CardMsg::Frame {
                dst_vi: peer_vi,
                frame,
            }
            .into(),
        );
        self.complete(&cs_segs, done.with_completed_op(op), None, ctx);
    }

    pub(super) fn frame_in<M: From<PciMsg> + From<CardMsg>>(
        &mut self,
        vi: u16,
        frame: Frame,
        ctx: &mut Ctx<'_, M>,
        mem: &HostMemory,
    ) {
        self.stats.frames_in += 1;
        let Some(v) = self.vis.get(&vi) else {
            self.stats.dropped += 1;
            return;
        };
        let ptag = v.ptag;
        match frame {
            Frame::Rdma { va, handle, data } => {
                match self.translate(handle, va, data.len() as u64, ptag, true) {
                    Some(segs) => self.write(&segs, &data, ctx),
                    None => self.stats.dropped += 1,
                }
            }
            Frame::Send { data, imm } => {
                let head = self.vis.get_mut(&vi).and_then(|v| v.recv_q.pop_front());
                let Some((dva, dh)) = head else {
                    if let Some(v) = self.vis.get_mut(&vi) {
                        v.waiting.push_back(Frame::Send { data, imm });
                    }
                    return;
                };
                let Some((cs_segs, bytes)) = self.fetch(mem, dva, dh, ptag) else {
                    self.stats.dropped += 1;
                    return;
                };
                let Ok(desc) = DescriptorRepr::parse(&bytes[..]) else {
                    self.complete(&cs_segs, Status::DONE | Status::FORMAT_ERROR, None, ctx);
                    return;
                };
                let mut at = 0usize;
                for s in &desc.data {
                    let n = (s.length as usize).min(data.len() - at);
                    if n == 0 {
                        break;
                    }
                    match self.translate(s.local_handle, s.local_va, n as u64, ptag, false) {
                        Some(p) => self.write(&p, &data[at..at + n], ctx),
                        None => {
                            self.complete(
                                &cs_segs,
                                Status::DONE | Status::PROTECTION_ERROR,
                                None,
                                ctx,
                            );
                            return;
                        }
                    }
                    at += n;
                }
                let mut st = Status::DONE.with_completed_op(CompletedOp::Receive);
                if at < data.len() {
                    st |= Status::LENGTH_ERROR;
                }
                if imm.is_some() {
                    st |= Status::IMMEDIATE;
                }
                self.complete_imm(&cs_segs, st, Some(at as u32), imm, ctx);
            }
        }
    }
}
