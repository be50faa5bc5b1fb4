//! Host-side helpers of the test system: the process's memory, memory registration
//! through the ATT mailbox, VI commands and connections, descriptors and doorbells.

use super::{mac, Sys};
use sim_kernel::MsgId;
use via_abi::bar::{self, CmdResult, Reliability, ViStateCode};
use via_abi::descriptor::{AddressSegmentRepr, DataSegmentRepr};
use via_abi::{Control, DescriptorRepr, DoorbellRepr, MemAttributes, MemHandle, Op, Queue, Status};

impl Sys {
    /// Maps `[va, va + len)` of node `i`'s process to scattered frames.
    pub fn map(&mut self, i: usize, va: u64, len: u64) {
        let n = &mut self.w.store[i];
        n.pt.map_range(va, len, &mut n.mem).unwrap();
    }

    pub fn write_mem(&mut self, i: usize, va: u64, data: &[u8]) {
        let n = &mut self.w.store[i];
        n.pt.write(&mut n.mem, va, data).unwrap();
    }

    pub fn read_mem(&self, i: usize, va: u64, len: usize) -> Vec<u8> {
        let n = &self.w.store[i];
        let mut buf = vec![0u8; len];
        n.pt.read(&n.mem, va, &mut buf).unwrap();
        buf
    }

    /// Registers `[va, va + len)` (mapped first) through the ATT mailbox.
    pub fn register(
        &mut self,
        i: usize,
        va: u64,
        len: u64,
        ptag: u16,
        rdma_write: bool,
    ) -> Result<MemHandle, CmdResult> {
        let mut attrs = MemAttributes::empty();
        attrs.set(MemAttributes::ENABLE_RDMA_WRITE, rdma_write);
        self.register_with(i, va, len, ptag, attrs)
    }

    /// Registers `[va, va + len)` of node `i` with memory attributes `attrs`.
    pub fn register_with(
        &mut self,
        i: usize,
        va: u64,
        len: u64,
        ptag: u16,
        attrs: MemAttributes,
    ) -> Result<MemHandle, CmdResult> {
        self.map(i, va, len);
        let pages = self.w.store[i].pt.pages_of(va, len).unwrap();
        self.post_write(i, bar::ATT_VA_LO, &(va as u32).to_le_bytes());
        self.post_write(i, bar::ATT_VA_HI, &((va >> 32) as u32).to_le_bytes());
        self.post_write(i, bar::ATT_LEN, &(len as u32).to_le_bytes());
        let attr = u32::from(attrs.bits()) | (u32::from(ptag) << 16);
        self.post_write(i, bar::ATT_ATTR, &attr.to_le_bytes());
        for p in pages {
            self.post_write(i, bar::ATT_PAGE, &(p as u32).to_le_bytes());
        }
        self.post_write(i, bar::ATT_CMD, &1u32.to_le_bytes());
        self.run();
        let r = CmdResult::from_raw(self.read_reg(i, bar::ATT_RESULT));
        match r {
            CmdResult::Ok => Ok(MemHandle(self.read_reg(i, bar::ATT_HANDLE))),
            other => Err(other),
        }
    }

    pub fn vi_cmd(&mut self, i: usize, vi: u16, cmd: bar::ViCmd) -> CmdResult {
        self.write_reg(i, bar::VI_SEL, u32::from(vi));
        self.write_reg(i, bar::VI_CMD, cmd.raw());
        CmdResult::from_raw(self.read_reg(i, bar::VI_RESULT))
    }

    pub fn create_vi(&mut self, i: usize, vi: u16, ptag: u16, rel: Reliability, rdma_write: bool) {
        let bits = if rdma_write {
            bar::VI_ATTR_RDMA_WRITE
        } else {
            0
        };
        self.create_vi_with(i, vi, ptag, rel, bits);
    }

    /// Creates VI `vi` of node `i` with `bits` (`VI_ATTR_RDMA_*`) on top of `rel`.
    pub fn create_vi_with(&mut self, i: usize, vi: u16, ptag: u16, rel: Reliability, bits: u32) {
        self.write_reg(i, bar::VI_PTAG, u32::from(ptag));
        let attr = u32::from(rel.raw()) | bits;
        self.write_reg(i, bar::VI_ATTR, attr);
        assert_eq!(self.vi_cmd(i, vi, bar::ViCmd::Create), CmdResult::Ok);
    }

    pub fn vi_state(&mut self, i: usize, vi: u16) -> ViStateCode {
        self.write_reg(i, bar::VI_SEL, u32::from(vi));
        ViStateCode::from_raw(self.read_reg(i, bar::VI_STATE))
    }

    /// Connects VI `va` of node 0 (requester) with VI `vb` of node 1 (listener).
    pub fn connect(&mut self, va: u16, vb: u16, disc: u32) {
        self.write_reg(1, bar::VI_DISCRIMINATOR, disc);
        self.vi_cmd(1, vb, bar::ViCmd::ConnectWait);
        let m = mac(1).octets();
        self.write_reg(
            0,
            bar::VI_PEER_MAC_LO,
            u32::from_le_bytes([m[0], m[1], m[2], m[3]]),
        );
        self.write_reg(
            0,
            bar::VI_PEER_MAC_HI,
            u32::from_le_bytes([m[4], m[5], 0, 0]),
        );
        self.write_reg(0, bar::VI_DISCRIMINATOR, disc);
        self.write_reg(0, bar::VI_SEL, u32::from(va));
        self.write_reg(0, bar::VI_CMD, bar::ViCmd::ConnectRequest.raw());
        self.run();
        assert_eq!(self.vi_state(0, va), ViStateCode::Connected);
        assert_eq!(self.vi_state(1, vb), ViStateCode::Connected);
        assert_eq!(self.read_reg(0, bar::VI_PEER_VI), u32::from(vb));
    }

    /// Writes descriptor `d` at `desc_va` of node `i` and rings VI `vi`'s doorbell for
    /// `queue` (not run).
    pub fn post(
        &mut self,
        i: usize,
        vi: u16,
        queue: Queue,
        desc_va: u64,
        handle: MemHandle,
        d: &DescriptorRepr,
    ) {
        let bytes = d.to_bytes().unwrap();
        self.write_mem(i, desc_va, &bytes);
        let rec = DoorbellRepr {
            desc_va,
            desc_handle: handle,
            vi,
            queue,
            flags: via_abi::doorbell::HEAD,
        };
        self.post_write(i, bar::doorbell_offset(vi).unwrap(), &rec.to_bytes());
    }

    /// The status word of the descriptor at `desc_va` of node `i`.
    pub fn status(&self, i: usize, desc_va: u64) -> Status {
        let b = self.read_mem(i, desc_va + 28, 4);
        Status::from_bits_retain(u32::from_le_bytes(b[..].try_into().unwrap()))
    }

    /// The length word of the descriptor at `desc_va` of node `i`.
    pub fn length(&self, i: usize, desc_va: u64) -> u32 {
        let b = self.read_mem(i, desc_va + 24, 4);
        u32::from_le_bytes(b[..].try_into().unwrap())
    }

    /// Spans with `stage` of trace id `msg`: (start ps, end ps).
    pub fn spans(&self, msg: MsgId) -> Vec<(&'static str, u64, u64)> {
        self.k
            .trace()
            .spans()
            .iter()
            .filter(|s| s.msg == msg)
            .map(|s| (s.stage, s.start.0, s.end.0))
            .collect()
    }
}

/// An RDMA-write descriptor: one address segment, data segments `local`.
pub fn rdma_desc(
    remote_va: u64,
    remote: MemHandle,
    local: &[(u64, MemHandle, u32)],
    imm: Option<u32>,
) -> DescriptorRepr {
    let mut d = send_desc(local, imm);
    d.control = d.control.with_op(Op::RdmaWrite);
    d.address = Some(AddressSegmentRepr {
        remote_va,
        remote_handle: remote,
        reserved: 0,
    });
    d
}

/// An RDMA read of the peer's `remote_va` (handle `remote`) into data segments `local`.
#[allow(dead_code)]
pub fn rdma_read_desc(
    remote_va: u64,
    remote: MemHandle,
    local: &[(u64, MemHandle, u32)],
) -> DescriptorRepr {
    let mut d = rdma_desc(remote_va, remote, local, None);
    d.control = d.control.with_op(Op::RdmaRead);
    d
}

/// A send descriptor with data segments `local`.
pub fn send_desc(local: &[(u64, MemHandle, u32)], imm: Option<u32>) -> DescriptorRepr {
    let mut control = Control::from_op(Op::SendRecv);
    if imm.is_some() {
        control |= Control::IMMEDIATE;
    }
    DescriptorRepr {
        control,
        immediate: imm.unwrap_or(0),
        length: local.iter().map(|s| s.2).sum(),
        data: local
            .iter()
            .map(|&(local_va, local_handle, length)| DataSegmentRepr {
                local_va,
                local_handle,
                length,
            })
            .collect(),
        ..DescriptorRepr::default()
    }
}

/// A receive descriptor with data segments `bufs`.
pub fn recv_desc(bufs: &[(u64, MemHandle, u32)]) -> DescriptorRepr {
    let mut d = send_desc(bufs, None);
    d.length = 0;
    d
}

/// A region of node memory: registered with handle `h`.
#[derive(Clone, Copy, Debug)]
pub struct Region {
    pub va: u64,
    pub len: u64,
    pub h: MemHandle,
}

pub fn region(s: &mut Sys, i: usize, va: u64, len: u64, ptag: u16, rdma_write: bool) -> Region {
    let h = s
        .register(i, va, len, ptag, rdma_write)
        .expect("registered");
    Region { va, len, h }
}
