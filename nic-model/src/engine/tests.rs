//! Unit tests of the engine's paths through its sans-IO interface: each test feeds the
//! engine hand-made inputs (`handle_pci` / `handle_nic` / `handle_mac`) at chosen core
//! clock edges and checks the [`Action`]s it hands back. No kernel, no PCI bus, no ATT
//! manager, no GEC and no second node: the test plays all of them.

use super::frame::{headers, HEADERS_LEN};
use super::ids::SendId;
use super::unit::vi::{Vi, ViState};
use super::*;
use crate::att::{AccessKind, Piece};
use crate::msg::ReqId;
use pci_model::{DmaDirection, DmaDone};
use sim_kernel::{ClockDomain, Cycles, MsgId, Priority, Time};
use via_abi::bar::{self, Reliability, ViCmd};
use via_abi::descriptor::DataSegmentRepr;
use via_abi::doorbell::{Doorbell, DoorbellRepr, DOORBELL_LEN};
use via_abi::wire_header::{WireFlags, WireHeaderRepr, WireOp};
use via_abi::{Control, DescriptorRepr, MacAddr, MemHandle, Op, ProtectionTag, Queue, Status};

const PEER: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x99]);
const PTAG: ProtectionTag = ProtectionTag(7);

/// The engine, its buffer RAM and a clock: the test is the rest of the world.
struct Bench {
    e: Engine,
    ram: BufferRam,
    now: Time,
    core: ClockDomain,
    gec: ClockDomain,
}

impl Bench {
    fn new() -> Self {
        let layout = BufferLayout::default();
        let ports = EnginePorts {
            bus: sim_kernel::ComponentId(0),
            dma: sim_kernel::ComponentId(1),
            att: sim_kernel::ComponentId(2),
            gec: sim_kernel::ComponentId(3),
        };
        let e = Engine::new(EngineParams::default(), ports, &layout).expect("engine");
        let core = ClockDomain::from_mhz("card.core", 33.0).expect("clock");
        Self {
            e,
            ram: BufferRam::new(layout).expect("ram"),
            now: core.edge_after(Time(0), Cycles(10)),
            gec: core.clone(),
            core,
        }
    }

    fn io(&self) -> Io {
        Io::new(self.now, self.core.clone(), self.gec.clone())
    }

    /// Moves the clock `n` core cycles on.
    fn after(&mut self, n: Cycles) {
        self.now = self.core.edge_after(self.now, n);
    }

    fn pci(&mut self, msg: PciMsg) -> Vec<Action> {
        let mut io = self.io();
        self.e.handle_pci(msg, &mut io, &mut self.ram);
        io.take_actions()
    }

    fn nic(&mut self, msg: NicMsg) -> Vec<Action> {
        let mut io = self.io();
        self.e.handle_nic(msg, &mut io, &mut self.ram);
        io.take_actions()
    }

    fn mac(&mut self, msg: MacMsg) -> Vec<Action> {
        let mut io = self.io();
        self.e.handle_mac(msg, &mut io, &mut self.ram);
        io.take_actions()
    }

    /// VI 0 with tag [`PTAG`], in `state` (connected to [`PEER`] VI 0 if so).
    fn vi0(&mut self, state: ViState) {
        let mut io = self.io();
        let mut vi = Vi::new(0, PTAG, Reliability::Unreliable, true);
        vi.peer_mac = PEER;
        vi.fsm.set(state, &mut io);
        self.e.vis.put(0, Some(vi));
    }

    fn write_reg(&mut self, off: u64, v: u32) -> Vec<Action> {
        self.pci(PciMsg::TargetWrite {
            addr: self.e.params.bar0_base + off,
            data: v.to_le_bytes().to_vec(),
        })
    }

    /// Rings VI 0's doorbell for `queue` with a descriptor at `va`, named in the record
    /// (`HEAD`).
    fn ring(&mut self, queue: Queue, va: u64) -> Vec<Action> {
        self.ring_flags(queue, va, via_abi::doorbell::HEAD)
    }

    /// Rings VI 0's doorbell for `queue` with `flags` (without `HEAD`, `va` is only
    /// informational: the card follows the queue's link).
    fn ring_flags(&mut self, queue: Queue, va: u64, flags: u8) -> Vec<Action> {
        let mut rec = [0u8; DOORBELL_LEN];
        DoorbellRepr {
            desc_va: va,
            desc_handle: MemHandle(1),
            vi: 0,
            queue,
            flags,
        }
        .emit(&mut Doorbell::new_unchecked(&mut rec[..]));
        let off = bar::doorbell_offset(0).expect("window");
        self.pci(PciMsg::TargetWrite {
            addr: self.e.params.bar0_base + off,
            data: rec.to_vec(),
        })
    }

    /// Plays the ATT manager: answers translation `req`.
    fn translated(&mut self, req: ReqId, pieces: Vec<Piece>) -> Vec<Action> {
        self.nic(NicMsg::AttTranslated {
            req,
            result: Ok(pieces),
        })
    }

    /// Plays the DMA master: job `tag` ended well (with `data` for a read).
    fn dma_done(&mut self, tag: DmaTag, data: Vec<u8>) -> Vec<Action> {
        let now = self.now;
        self.pci(PciMsg::DmaDone(DmaDone {
            tag: tag.0,
            status: DmaStatus::Ok,
            bytes: data.len() as u64,
            data,
            bursts: 1,
            start: now,
            end: now,
        }))
    }

    /// Follows the wake-ups in `acts` (and those they ask for) until one of `want`'s
    /// actions appears; returns the actions of that step.
    fn run_wakes(&mut self, mut acts: Vec<Action>, want: impl Fn(&Action) -> bool) -> Vec<Action> {
        for _ in 0..100 {
            if acts.iter().any(&want) {
                return acts;
            }
            let Some((after, wake)) = acts.iter().find_map(|a| match a {
                Action::WakeAfter { after, wake, .. } => Some((*after, *wake)),
                _ => None,
            }) else {
                panic!("no wake-up left and the action never came: {acts:?}");
            };
            self.after(after);
            acts = self.nic(NicMsg::Engine(wake));
        }
        panic!("the action never came");
    }
}

fn translate_of(acts: &[Action]) -> (ReqId, u64, u64, AccessKind) {
    acts.iter()
        .find_map(|a| match a {
            Action::Translate {
                req,
                va,
                len,
                access,
                ptag,
                ..
            } => {
                assert_eq!(*ptag, PTAG, "the VI's protection tag");
                Some((*req, *va, *len, *access))
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no Translate in {acts:?}"))
}

fn dma_of(acts: &[Action]) -> (DmaTag, DmaDirection, Vec<u64>) {
    acts.iter()
        .find_map(|a| match a {
            Action::Dma {
                tag,
                direction,
                pages,
            } => Some((*tag, direction.clone(), pages.clone())),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no Dma in {acts:?}"))
}

fn wake_of(acts: &[Action]) -> (Cycles, Priority, EngineWake) {
    acts.iter()
        .find_map(|a| match a {
            Action::WakeAfter { after, prio, wake } => Some((*after, *prio, *wake)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no WakeAfter in {acts:?}"))
}

fn piece(pa: u64, len: u32) -> Vec<Piece> {
    vec![Piece { pa, len }]
}

#[test]
fn send_path_doorbell_to_status_write() {
    let mut b = Bench::new();
    b.vi0(ViState::Connected);
    let desc_va = 0x4000_0000;
    let buf_va = 0x5000_0010;

    // Doorbell: decode for doorbell_decode_cycles (2), no bus traffic yet.
    let acts = b.ring(Queue::Send, desc_va);
    assert_eq!(
        acts,
        vec![
            Action::WakeAfter {
                after: Cycles(2),
                prio: Priority::NORMAL,
                wake: EngineWake::DoorbellDecoded
            },
            Action::Transition {
                machine: "doorbell",
                from: "idle",
                to: "decoding"
            },
        ]
    );
    let t0 = b.now;
    b.after(Cycles(2));

    // Dispatch: the descriptor's first 64 bytes are translated with the VI's tag.
    let acts = b.nic(NicMsg::Engine(EngineWake::DoorbellDecoded));
    assert!(acts.contains(&Action::Span {
        msg: MsgId(1),
        stage: "doorbell",
        start: t0,
        end: b.now
    }));
    let (req, va, len, access) = translate_of(&acts);
    assert_eq!((va, len, access), (desc_va, 64, AccessKind::LocalRead));

    // Translated: DMA read of 64 bytes from the physical page.
    let acts = b.translated(req, piece(0x10_0000, 64));
    let (tag, dir, pages) = dma_of(&acts);
    assert_eq!(
        (dir, pages),
        (DmaDirection::Read { len: 64 }, vec![0x10_0000])
    );

    // The descriptor: a 4-byte send from one segment.
    let desc = DescriptorRepr {
        control: Control::from_op(Op::SendRecv),
        length: 4,
        data: vec![DataSegmentRepr {
            local_va: buf_va,
            local_handle: MemHandle(2),
            length: 4,
        }],
        ..DescriptorRepr::default()
    };
    let mut bytes = vec![0u8; 64];
    desc.emit(&mut bytes).expect("descriptor");
    let acts = b.dma_done(tag, bytes);
    assert_eq!(
        wake_of(&acts),
        (
            Cycles(2),
            Priority::NORMAL,
            EngineWake::DescriptorDecoded { send: SendId(1) }
        )
    );
    b.after(Cycles(2));

    // Decoded: the data segment is translated.
    let acts = b.nic(NicMsg::Engine(EngineWake::DescriptorDecoded {
        send: SendId(1),
    }));
    let (req, va, len, _) = translate_of(&acts);
    assert_eq!((va, len), (buf_va, 4));

    // Translated: a TX slot, the header run, and the payload's DMA read.
    let acts = b.translated(req, piece(0x20_0010, 4));
    let (tag, dir, pages) = dma_of(&acts);
    assert_eq!(
        (dir, pages),
        (DmaDirection::Read { len: 4 }, vec![0x20_0010])
    );
    let mut acts2 = b.dma_done(tag, vec![1, 2, 3, 4]);
    acts2.extend(acts);

    // The mover fills the slot (54 header bytes + 4) one word per clock; then the handoff.
    let acts = b.run_wakes(acts2, |a| matches!(a, Action::ToGec { .. }));
    let handoff = acts
        .iter()
        .find_map(|a| match a {
            Action::ToGec { after, msg } => Some((*after, msg.clone())),
            _ => None,
        })
        .expect("handoff");
    assert_eq!(
        handoff,
        (
            Cycles(1),
            MacMsg::GecTransmit {
                slot: 0,
                len: 58,
                msg: MsgId(1)
            }
        )
    );
    let slot = b.e.layout.tx_buffer(0).expect("slot");
    let frame = b.ram.read_vec(slot, 58).expect("frame");
    assert_eq!(&frame[HEADERS_LEN..], &[1, 2, 3, 4]);
    assert_eq!(&frame[0..6], &PEER.0);

    // Sent: the status word (offset 28) is written through the descriptor's translation.
    b.after(Cycles(40));
    let acts = b.mac(MacMsg::GecTxDone {
        slot: 0,
        ok: true,
        msg: MsgId(1),
    });
    let (tag, dir, pages) = dma_of(&acts);
    let status = Status::DONE.with_completed_op(via_abi::CompletedOp::Send);
    assert_eq!(
        (dir, pages),
        (
            DmaDirection::Write {
                data: status.bits().to_le_bytes().to_vec()
            },
            vec![0x10_0000 + 28]
        )
    );
    assert!(!b.e.is_idle());
    b.after(Cycles(20));
    let acts = b.dma_done(tag, Vec::new());
    assert!(acts.iter().any(|a| matches!(
        a,
        Action::Span {
            stage: "status write",
            ..
        }
    )));
    let vi = b.e.vi(0).expect("vi");
    assert_eq!(
        (vi.counters.sends_completed, vi.counters.frames_sent),
        (1, 1)
    );
    assert!(b.e.is_idle());
}

#[test]
fn receive_path_places_an_rdma_write() {
    let mut b = Bench::new();
    b.vi0(ViState::Connected);
    let hdr = WireHeaderRepr {
        op: WireOp::RdmaWrite,
        flags: WireFlags::FIRST | WireFlags::LAST,
        dst_vi: 0,
        src_vi: 0,
        seq: 0,
        msg_len: 6,
        frag_offset: 0,
        frag_len: 6,
        remote_va: 0x7000_0100,
        remote_handle: MemHandle(9),
        immediate: 0,
    };
    let mut frame = headers(PEER, b.e.params.mac, &hdr);
    frame.extend_from_slice(&[9, 8, 7, 6, 5, 4]);
    let at = b.e.layout.rx_buffer(2).expect("slot");
    b.ram.write(at, &frame).expect("write");

    // The header is read (14 words) and checked (header_check_cycles = 2).
    let acts = b.mac(MacMsg::GecRxFrame {
        slot: 2,
        len: frame.len() as u32,
        msg: MsgId(500),
    });
    assert_eq!(
        wake_of(&acts),
        (Cycles(16), Priority::NORMAL, EngineWake::HeaderChecked)
    );
    b.after(Cycles(16));

    // The remote range is translated for an RDMA write with the VI's tag.
    let acts = b.nic(NicMsg::Engine(EngineWake::HeaderChecked));
    let (req, va, len, access) = translate_of(&acts);
    assert_eq!((va, len, access), (0x7000_0100, 6, AccessKind::RdmaWrite));

    // Translated: the payload is drained into the Recv FIFO, then DMA-written.
    let acts = b.translated(req, piece(0x30_0100, 6));
    let acts = b.run_wakes(acts, |a| matches!(a, Action::Dma { .. }));
    let (tag, dir, pages) = dma_of(&acts);
    assert_eq!(
        (dir, pages),
        (
            DmaDirection::Write {
                data: vec![9, 8, 7, 6, 5, 4]
            },
            vec![0x30_0100]
        )
    );
    assert!(acts.contains(&Action::ToGec {
        after: Cycles(1),
        msg: MacMsg::GecRxRelease { slot: 2 }
    }));

    // Written: the message is complete (unreliable: no ack, no descriptor).
    let acts = b.dma_done(tag, Vec::new());
    assert!(acts.iter().all(|a| !matches!(a, Action::ToGec { .. })));
    assert_eq!(b.e.stats().rdma_bytes_placed, 6);
    assert_eq!(b.e.vi(0).map(|v| v.counters.messages_received), Some(1));
    assert!(b.e.is_idle());
}

/// A read request (wire op 9) for 100 bytes arrives on reliable VI 0 of an engine with
/// RDMA read: the responder translates the source with `RdmaRead` access and the VI's
/// tag, Acks the request and DMA-reads the source for its response frame; refused, it
/// reads nothing and Naks with `RDMA_PROTECTION_ERROR`.
fn read_request(b: &mut Bench, rdma_read_vi: bool) -> Vec<Action> {
    b.e.params.rdma_read = true;
    let mut io = b.io();
    let mut vi = Vi::new(0, PTAG, Reliability::ReliableDelivery, false);
    vi.rdma_read = rdma_read_vi;
    vi.peer_mac = PEER;
    vi.fsm.set(ViState::Connected, &mut io);
    b.e.vis.put(0, Some(vi));
    let hdr = WireHeaderRepr {
        op: WireOp::RdmaReadRequest,
        flags: WireFlags::FIRST | WireFlags::LAST,
        dst_vi: 0,
        src_vi: 0,
        seq: 0,
        msg_len: 100,
        frag_offset: 0,
        frag_len: 0,
        remote_va: 0x7000_0100,
        remote_handle: MemHandle(9),
        immediate: 0,
    };
    let frame = headers(PEER, b.e.params.mac, &hdr);
    let at = b.e.layout.rx_buffer(1).expect("slot");
    b.ram.write(at, &frame).expect("write");
    let acts = b.mac(MacMsg::GecRxFrame {
        slot: 1,
        len: frame.len() as u32,
        msg: MsgId(700),
    });
    b.after(wake_of(&acts).0);
    b.nic(NicMsg::Engine(EngineWake::HeaderChecked))
}

#[test]
fn responder_answers_a_read_request_through_its_send_path() {
    let mut b = Bench::new();
    let acts = read_request(&mut b, true);
    let (req, va, len, access) = translate_of(&acts);
    assert_eq!((va, len, access), (0x7000_0100, 100, AccessKind::RdmaRead));
    let acts = b.translated(req, piece(0x40_0100, 100));
    // The response's payload is read from the source, into the Send FIFO.
    let (_, dir, pages) = dma_of(&acts);
    assert_eq!(
        (dir, pages),
        (DmaDirection::Read { len: 100 }, vec![0x40_0100])
    );
    let st = b.e.stats();
    assert_eq!(
        (st.read_requests_received, st.read_response_frames_sent),
        (1, 1)
    );
    assert_eq!(
        b.e.vi(0).map(|v| v.counters.acks_sent),
        Some(1),
        "request acked"
    );
}

#[test]
fn responder_refuses_a_read_the_vi_does_not_enable() {
    let mut b = Bench::new();
    let acts = read_request(&mut b, false);
    assert!(
        acts.iter()
            .all(|a| !matches!(a, Action::Translate { .. } | Action::Dma { .. })),
        "nothing translated or read: {acts:?}"
    );
    let st = b.e.stats();
    assert_eq!(
        (st.read_requests_refused, st.read_response_frames_sent),
        (1, 0)
    );
    let vi = b.e.vi(0).expect("VI 0");
    assert_eq!(vi.counters.naks_sent, 1);
    assert_eq!(vi.counters.last_rx_error, Status::RDMA_PROTECTION_ERROR);
    assert_eq!(vi.state, bar::ViStateCode::Error);
}

#[test]
fn receive_path_refuses_a_frame_out_of_sequence() {
    let mut b = Bench::new();
    b.vi0(ViState::Connected);
    let hdr = WireHeaderRepr {
        op: WireOp::RdmaWrite,
        flags: WireFlags::FIRST | WireFlags::LAST,
        dst_vi: 0,
        src_vi: 0,
        seq: 5,
        msg_len: 4,
        frag_offset: 0,
        frag_len: 4,
        remote_va: 0x7000_0000,
        remote_handle: MemHandle(9),
        immediate: 0,
    };
    let mut frame = headers(PEER, b.e.params.mac, &hdr);
    frame.extend_from_slice(&[1, 2, 3, 4]);
    let at = b.e.layout.rx_buffer(0).expect("slot");
    b.ram.write(at, &frame).expect("write");
    let acts = b.mac(MacMsg::GecRxFrame {
        slot: 0,
        len: frame.len() as u32,
        msg: MsgId(9),
    });
    b.after(wake_of(&acts).0);
    let acts = b.nic(NicMsg::Engine(EngineWake::HeaderChecked));
    // No translation, no byte written: the slot is released at once.
    assert!(acts
        .iter()
        .all(|a| !matches!(a, Action::Translate { .. } | Action::Dma { .. })));
    assert!(acts.contains(&Action::ToGec {
        after: Cycles(1),
        msg: MacMsg::GecRxRelease { slot: 0 }
    }));
    assert_eq!(b.e.vi(0).map(|v| v.counters.rx_sequence_errors), Some(1));
}

#[test]
fn completion_flushes_posted_receives_of_a_destroyed_vi() {
    let mut b = Bench::new();
    b.vi0(ViState::Idle);
    let desc_va = 0x4000_0040;
    let acts = b.ring(Queue::Receive, desc_va);
    b.after(wake_of(&acts).0);
    let acts = b.nic(NicMsg::Engine(EngineWake::DoorbellDecoded));
    assert!(acts.iter().all(|a| !matches!(a, Action::Translate { .. })));
    assert_eq!(b.e.vi(0).map(|v| v.recv_posted), Some(1));

    // Destroy: the posted descriptor completes with DESCRIPTOR_FLUSHED. It was never
    // fetched, so its status word is translated first, then written.
    b.write_reg(bar::VI_SEL, 0);
    let acts = b.write_reg(bar::VI_CMD, ViCmd::Destroy.raw());
    let (req, va, len, access) = translate_of(&acts);
    assert_eq!((va, len, access), (desc_va + 28, 4, AccessKind::LocalWrite));
    assert!(b.e.vi(0).is_none(), "the VI is gone at once");
    let acts = b.translated(req, piece(0x11_0000 + 28, 4));
    let (tag, dir, pages) = dma_of(&acts);
    let status = (Status::DONE | Status::FLUSHED).with_completed_op(via_abi::CompletedOp::Receive);
    assert_eq!(
        (dir, pages),
        (
            DmaDirection::Write {
                data: status.bits().to_le_bytes().to_vec()
            },
            vec![0x11_0000 + 28]
        )
    );
    assert!(!b.e.is_idle());
    b.dma_done(tag, Vec::new());
    assert_eq!(b.e.stats().status_writes, 1);
    assert!(b.e.is_idle());
}

#[test]
fn completion_flushes_a_send_on_an_unconnected_vi() {
    // A send posted on a VI that is not connected is fetched and decoded, then completes
    // with DESCRIPTOR_FLUSHED written into its status word; nothing is transmitted.
    let mut b = Bench::new();
    b.vi0(ViState::Idle);
    let acts = decoded_send_on_idle_vi(&mut b, 0x4000_0000, 0);
    assert!(acts.iter().all(|a| !matches!(a, Action::ToGec { .. })));
    let (tag, dir, pages) = dma_of(&acts);
    let status = (Status::DONE | Status::FLUSHED).with_completed_op(via_abi::CompletedOp::Send);
    assert_eq!(
        (dir, pages),
        (
            DmaDirection::Write {
                data: status.bits().to_le_bytes().to_vec()
            },
            vec![0x10_0000 + 28]
        )
    );
    b.dma_done(tag, Vec::new());
    let vi = b.e.vi(0).expect("vi");
    assert_eq!(
        (vi.counters.sends_completed, vi.counters.send_errors),
        (1, 1)
    );
    assert!(b.e.is_idle());
}

/// The receive descriptors VI 0's receive queue holds (VA), in order.
fn recv_queue(b: &Bench) -> Vec<u64> {
    b.e.vis
        .get(0)
        .map(|v| v.recv_queue.iter().map(|r| r.va).collect())
        .unwrap_or_default()
}

/// A doorbell without `HEAD` finds its descriptor through the Next link of the queue's
/// tail (the last descriptor taken): translate the tail, read its 12 link bytes by DMA,
/// then take the descriptor the link names, not the one the record names.
#[test]
fn a_doorbell_without_head_follows_the_tails_link() {
    let mut b = Bench::new();
    b.vi0(ViState::Connected);
    let first = 0x4000_0000;
    let second: u64 = 0x4000_0200;

    // The queue's first post names its descriptor; taking it makes it the tail.
    b.ring(Queue::Receive, first);
    b.after(Cycles(2));
    b.nic(NicMsg::Engine(EngineWake::DoorbellDecoded));
    assert_eq!(recv_queue(&b), vec![first]);

    // The next post: the record's address is ignored, the tail's link is read.
    b.after(Cycles(1));
    b.ring_flags(Queue::Receive, 0xDEAD_0000, 0);
    b.after(Cycles(2));
    let acts = b.nic(NicMsg::Engine(EngineWake::DoorbellDecoded));
    let (req, va, len, access) = translate_of(&acts);
    assert_eq!((va, len, access), (first, 12, AccessKind::LocalRead));
    assert!(
        b.e.doorbells.is_pending(0),
        "not taken while its link is read"
    );
    let acts = b.translated(req, piece(0x10_0000, 12));
    let (tag, dir, pages) = dma_of(&acts);
    assert_eq!(
        (dir, pages),
        (DmaDirection::Read { len: 12 }, vec![0x10_0000])
    );
    let mut link = second.to_le_bytes().to_vec();
    link.extend_from_slice(&1u32.to_le_bytes());
    b.after(Cycles(3));
    b.dma_done(tag, link);
    assert_eq!(
        recv_queue(&b),
        vec![first, second],
        "the descriptor the link names"
    );
    assert!(!b.e.doorbells.is_pending(0));
    assert_eq!(b.e.stats.doorbell_links_read, 1);
    assert_eq!(
        b.e.doorbells
            .tails
            .get(&(0, true))
            .map(|t| (t.va, t.handle)),
        Some((second, MemHandle(1)))
    );
}

/// Rings a send of the descriptor at `va` on VI 0 (left idle by the caller) and runs it
/// through its translation, its DMA read (a send/recv descriptor whose Next link is
/// `next` with handle 1, as if the provider had linked the next post in before the card
/// read it; 0: no link) and its decode: the actions of the decode.
fn decoded_send_on_idle_vi(b: &mut Bench, va: u64, next: u64) -> Vec<Action> {
    let acts = b.ring(Queue::Send, va);
    b.after(wake_of(&acts).0);
    let acts = b.nic(NicMsg::Engine(EngineWake::DoorbellDecoded));
    let (req, _, _, _) = translate_of(&acts);
    let acts = b.translated(req, piece(0x10_0000, 64));
    let (tag, _, _) = dma_of(&acts);
    let mut bytes = vec![0u8; 64];
    DescriptorRepr {
        control: Control::from_op(Op::SendRecv),
        ..DescriptorRepr::default()
    }
    .emit(&mut bytes)
    .expect("descriptor");
    if next != 0 {
        bytes[..8].copy_from_slice(&next.to_le_bytes());
        bytes[8..12].copy_from_slice(&1u32.to_le_bytes());
    }
    let acts = b.dma_done(tag, bytes);
    let (after, _, wake) = wake_of(&acts);
    b.after(after);
    b.nic(NicMsg::Engine(wake))
}

/// Runs a flushed send (VI 0 idle) of the descriptor at `first` whose DMA read returns
/// `next` as its Next link (handle 1), to its status write; then rings the send queue's
/// next doorbell without `HEAD` and returns the actions of its dispatch.
fn send_then_next_doorbell(follow: bool, first: u64, next: u64) -> (Bench, Vec<Action>) {
    let mut b = Bench::new();
    b.e.params.follow_read_links = follow;
    b.vi0(ViState::Idle);
    let acts = decoded_send_on_idle_vi(&mut b, first, next);
    let (tag, _, _) = dma_of(&acts);
    b.dma_done(tag, Vec::new());
    b.after(Cycles(1));
    let acts = b.ring_flags(Queue::Send, 0xDEAD_0000, 0);
    b.after(wake_of(&acts).0);
    let acts = b.nic(NicMsg::Engine(EngineWake::DoorbellDecoded));
    (b, acts)
}

/// `follow_read_links`: the send's descriptor read found its Next link already written,
/// so the next doorbell without `HEAD` goes straight to the descriptor the link names
/// (its own 64-byte translation, which checks its handle), with no queue-link read.
#[test]
fn a_link_found_by_the_tails_read_needs_no_queue_link_read() {
    let (first, second) = (0x4000_0000, 0x4000_0200);
    let (b, acts) = send_then_next_doorbell(true, first, second);
    let (_, va, len, access) = translate_of(&acts);
    assert_eq!((va, len, access), (second, 64, AccessKind::LocalRead));
    assert_eq!(
        (
            b.e.stats.doorbell_links_known,
            b.e.stats.doorbell_links_read
        ),
        (1, 0)
    );
    let tail = b.e.doorbells.tails.get(&(0, false)).copied();
    assert_eq!(
        tail.map(|t| (t.va, t.handle, t.next)),
        Some((second, MemHandle(1), None)),
        "the new tail's link is not known until it is read"
    );
}

/// Without `follow_read_links`, or when the tail's Next was still null when the card
/// read it, the next doorbell reads the queue link by DMA, as before.
#[test]
fn without_a_link_found_by_the_read_the_queue_link_is_read() {
    let first = 0x4000_0000;
    for (follow, next) in [(false, 0x4000_0200), (true, 0)] {
        let (b, acts) = send_then_next_doorbell(follow, first, next);
        let (_, va, len, access) = translate_of(&acts);
        assert_eq!(
            (va, len, access),
            (first, 12, AccessKind::LocalRead),
            "follow {follow}, Next {next:#x}: the tail's link is read"
        );
        assert_eq!(b.e.stats.doorbell_links_known, 0);
        assert!(
            b.e.doorbells.is_pending(0),
            "not taken while its link is read"
        );
    }
}

/// A doorbell without `HEAD` on a queue with no tail, or whose tail's link is still
/// null, is a provider error: counted, and nothing is taken.
#[test]
fn an_unlinked_doorbell_is_counted_and_not_taken() {
    let mut b = Bench::new();
    b.vi0(ViState::Connected);
    b.ring_flags(Queue::Receive, 0x4000_0000, 0);
    b.after(Cycles(2));
    let acts = b.nic(NicMsg::Engine(EngineWake::DoorbellDecoded));
    assert!(!acts
        .iter()
        .any(|a| matches!(a, Action::Translate { .. } | Action::Dma { .. })));
    assert_eq!(b.e.stats.doorbell_unlinked, 1);
    assert!(recv_queue(&b).is_empty());
    assert!(
        !b.e.doorbells.is_pending(0),
        "the window no longer reports it"
    );

    // A tail whose Next is still null (the provider rang before linking).
    b.ring(Queue::Receive, 0x4000_0000);
    b.after(Cycles(2));
    b.nic(NicMsg::Engine(EngineWake::DoorbellDecoded));
    b.ring_flags(Queue::Receive, 0, 0);
    b.after(Cycles(2));
    let acts = b.nic(NicMsg::Engine(EngineWake::DoorbellDecoded));
    let (req, _, len, _) = translate_of(&acts);
    assert_eq!(len, 12);
    let acts = b.translated(req, piece(0x10_0000, 12));
    let (tag, _, _) = dma_of(&acts);
    b.dma_done(tag, vec![0; 12]);
    assert_eq!(recv_queue(&b), vec![0x4000_0000]);
    assert_eq!(b.e.stats.doorbell_unlinked, 2);
}

#[test]
fn stray_answers_and_acks_are_counted_and_dropped() {
    let mut b = Bench::new();
    b.vi0(ViState::Connected);
    // A transmit completion for a slot never handed over: nothing to free.
    let acts = b.mac(MacMsg::GecTxDone {
        slot: 0,
        ok: true,
        msg: MsgId(1),
    });
    assert!(acts.is_empty(), "{acts:?}");
    // An ATT answer while no ATT_CMD waits: the mailbox stays as it is.
    b.nic(NicMsg::AttDeregistered {
        req: ReqId(77),
        result: Ok(()),
    });
    assert_eq!(b.e.regs.att_result, via_abi::bar::CmdResult::Ok);
    // An Ack from the peer while no send waits for one.
    let mut hdr = super::frame::control(WireOp::Ack, 0, 0, 0);
    hdr.seq = 3;
    let frame = headers(PEER, b.e.params.mac, &hdr);
    let at = b.e.layout.rx_buffer(0).expect("slot");
    b.ram.write(at, &frame).expect("write");
    let acts = b.mac(MacMsg::GecRxFrame {
        slot: 0,
        len: frame.len() as u32,
        msg: MsgId(9),
    });
    b.after(wake_of(&acts).0);
    let acts = b.nic(NicMsg::Engine(EngineWake::HeaderChecked));
    // Dropped: the slot is released, nothing is sent, written or completed.
    assert!(acts.contains(&Action::ToGec {
        after: Cycles(1),
        msg: MacMsg::GecRxRelease { slot: 0 }
    }));
    assert!(acts
        .iter()
        .all(|a| !matches!(a, Action::Dma { .. } | Action::Translate { .. })));
    assert_eq!(b.e.vi(0).map(|v| v.counters.naks_received), Some(0));
    let s = b.e.stats();
    assert_eq!(
        (
            s.tx_done_unexpected,
            s.att_answers_unexpected,
            s.acks_unmatched
        ),
        (1, 1, 1)
    );
    assert_eq!(s.bookkeeping_misses, 0);
}
