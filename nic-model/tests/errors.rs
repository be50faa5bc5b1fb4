//! Refusals: a remote write outside the registered region, into a region without RDMA
//! write enabled, or with the wrong protection tag writes no byte and is reported with
//! the VIA error; local descriptor errors complete with their status bits.

mod common;

use common::*;
use via_abi::bar::{Reliability, ViStateCode};
use via_abi::{CompletedOp, MemHandle, Queue, Status};

const PTAG: u16 = 7;

struct Case {
    s: Sys,
    desc: Region,
    src: Region,
}

fn setup(rel: Reliability, vi_rdma: bool) -> Case {
    let mut s = Sys::new(Config::default());
    s.create_vi(0, 0, PTAG, rel, true);
    s.create_vi(1, 0, PTAG, rel, vi_rdma);
    s.connect(0, 0, 9);
    let desc = region(&mut s, 0, 0x1000_0000, 4096, PTAG, false);
    let src = region(&mut s, 0, 0x2000_0000, 3000, PTAG, false);
    s.write_mem(0, src.va, &[0xAB; 3000]);
    Case { s, desc, src }
}

/// Posts an RDMA write of `len` bytes to `va` / `h` on node 1 and runs; returns the
/// sender's status. Node 1's memory around `va` must stay `fill`.
fn attempt(c: &mut Case, va: u64, h: MemHandle, len: u32) -> Status {
    let d = rdma_desc(va, h, &[(c.src.va, c.src.h, len)], None);
    c.s.post(0, 0, Queue::Send, c.desc.va, c.desc.h, &d);
    c.s.run();
    c.s.status(0, c.desc.va)
}

fn untouched(c: &Case, va: u64, len: usize) {
    assert!(
        c.s.read_mem(1, va, len).iter().all(|&b| b == 0x11),
        "a byte was written"
    );
    assert_eq!(c.s.engine(1).stats().rdma_bytes_placed, 0);
}

fn target(c: &mut Case, ptag: u16, rdma_write: bool) -> Region {
    c.s.map(1, 0x5000_0000 - 4096, 3 * 4096);
    c.s.write_mem(1, 0x5000_0000 - 4096, &[0x11; 3 * 4096]);
    region(&mut c.s, 1, 0x5000_0000, 4096, ptag, rdma_write)
}

fn refused_reliable(c: &mut Case, st: Status) {
    assert!(st.is_done());
    assert_eq!(st.errors(), Status::RDMA_PROTECTION_ERROR);
    assert_eq!(st.completed_op(), CompletedOp::RdmaWrite);
    let rx = c.s.engine(1).vi(0).unwrap();
    assert_eq!(rx.counters.rx_protection_errors, 1);
    assert_eq!(rx.counters.naks_sent, 1);
    assert_eq!(rx.counters.last_rx_error, Status::RDMA_PROTECTION_ERROR);
    assert_eq!(rx.state, ViStateCode::Error);
    assert_eq!(c.s.engine(0).vi(0).unwrap().state, ViStateCode::Error);
    assert_eq!(c.s.vi_state(0, 0), ViStateCode::Error);
    assert!(c.s.engine(0).is_idle() && c.s.engine(1).is_idle());
}

#[test]
fn outside_the_registered_region() {
    let mut c = setup(Reliability::ReliableDelivery, true);
    let t = target(&mut c, PTAG, true);
    // Starts inside, runs 1 byte past the end (second fragment).
    let st = attempt(&mut c, t.va + 4096 - 2999, t.h, 3000);
    refused_reliable(&mut c, st);
    c.s.read_mem(1, t.va - 4096, 3 * 4096);
    // Fragments 0 and 1 were inside and placed; the refused fragment 2 wrote nothing.
    let got = c.s.read_mem(1, t.va + 4096 - 2999, 2999);
    assert!(got[..2920].iter().all(|&b| b == 0xAB));
    assert!(got[2920..].iter().all(|&b| b == 0x11));
    assert!(c
        .s
        .read_mem(1, t.va + 4096, 4096)
        .iter()
        .all(|&b| b == 0x11));
}

#[test]
fn entirely_outside_writes_nothing() {
    let mut c = setup(Reliability::ReliableDelivery, true);
    let t = target(&mut c, PTAG, true);
    let st = attempt(&mut c, t.va - 8, t.h, 4);
    refused_reliable(&mut c, st);
    untouched(&c, t.va - 4096, 3 * 4096);
}

#[test]
fn region_without_rdma_write_enabled() {
    let mut c = setup(Reliability::ReliableDelivery, true);
    let t = target(&mut c, PTAG, false);
    let st = attempt(&mut c, t.va, t.h, 100);
    refused_reliable(&mut c, st);
    untouched(&c, t.va - 4096, 3 * 4096);
}

#[test]
fn wrong_protection_tag() {
    let mut c = setup(Reliability::ReliableDelivery, true);
    let t = target(&mut c, PTAG + 1, true);
    let st = attempt(&mut c, t.va, t.h, 2000);
    refused_reliable(&mut c, st);
    untouched(&c, t.va - 4096, 3 * 4096);
}

#[test]
fn vi_without_rdma_write_enabled() {
    let mut c = setup(Reliability::ReliableDelivery, false);
    let t = target(&mut c, PTAG, true);
    let st = attempt(&mut c, t.va, t.h, 10);
    refused_reliable(&mut c, st);
    untouched(&c, t.va - 4096, 3 * 4096);
}

#[test]
fn forged_handle() {
    let mut c = setup(Reliability::ReliableDelivery, true);
    let t = target(&mut c, PTAG, true);
    let forged = MemHandle(t.h.raw() ^ 0x0010_0000);
    let st = attempt(&mut c, t.va, forged, 10);
    refused_reliable(&mut c, st);
    untouched(&c, t.va - 4096, 3 * 4096);
}

#[test]
fn unreliable_refusal_is_counted_at_the_receiver() {
    let mut c = setup(Reliability::Unreliable, true);
    let t = target(&mut c, PTAG + 1, true);
    let st = attempt(&mut c, t.va, t.h, 2000);
    assert_eq!(
        (st.is_done(), st.errors()),
        (true, Status::empty()),
        "unreliable: done when sent"
    );
    untouched(&c, t.va - 4096, 3 * 4096);
    let rx = c.s.engine(1).vi(0).unwrap();
    assert_eq!(rx.counters.rx_protection_errors, 1);
    assert_eq!(
        rx.counters.rx_dropped_after_error, 1,
        "second fragment of the failed message"
    );
    assert_eq!(rx.counters.last_rx_error, Status::RDMA_PROTECTION_ERROR);
    assert_eq!(rx.state, ViStateCode::Connected);
    // The VI goes on working.
    let good = target(&mut c, PTAG, true);
    let d = rdma_desc(good.va, good.h, &[(c.src.va, c.src.h, 8)], None);
    c.s.post(0, 0, Queue::Send, c.desc.va + 64, c.desc.h, &d);
    c.s.run();
    assert_eq!(c.s.status(0, c.desc.va + 64).errors(), Status::empty());
    assert_eq!(c.s.read_mem(1, good.va, 8), vec![0xAB; 8]);
}

#[test]
fn sends_after_a_nak_are_flushed_and_the_vi_can_reconnect() {
    let mut c = setup(Reliability::ReliableDelivery, true);
    let t = target(&mut c, PTAG + 1, true);
    let d = rdma_desc(t.va, t.h, &[(c.src.va, c.src.h, 64)], None);
    c.s.post(0, 0, Queue::Send, c.desc.va, c.desc.h, &d);
    c.s.run();
    c.s.post(0, 0, Queue::Send, c.desc.va + 64, c.desc.h, &d);
    c.s.run();
    assert_eq!(
        c.s.status(0, c.desc.va).errors(),
        Status::RDMA_PROTECTION_ERROR
    );
    let st = c.s.status(0, c.desc.va + 64);
    assert!(st.is_done());
    assert_eq!(st.errors(), Status::FLUSHED);
    for i in 0..2 {
        assert_eq!(
            c.s.vi_cmd(i, 0, via_abi::bar::ViCmd::Disconnect),
            via_abi::bar::CmdResult::Ok
        );
    }
    c.s.connect(0, 0, 10);
    let good = target(&mut c, PTAG, true);
    let d = rdma_desc(good.va, good.h, &[(c.src.va, c.src.h, 64)], None);
    c.s.post(0, 0, Queue::Send, c.desc.va + 128, c.desc.h, &d);
    c.s.run();
    assert_eq!(c.s.status(0, c.desc.va + 128).errors(), Status::empty());
}

#[test]
fn local_descriptor_errors() {
    let mut c = setup(Reliability::Unreliable, true);
    let t = target(&mut c, PTAG, true);
    // Reserved control bits: format error.
    let mut d = rdma_desc(t.va, t.h, &[(c.src.va, c.src.h, 4)], None);
    d.control = via_abi::Control::from_bits_retain(d.control.bits() | 0x100);
    c.s.post(0, 0, Queue::Send, c.desc.va, c.desc.h, &d);
    c.s.run();
    let st = c.s.status(0, c.desc.va);
    assert_eq!((st.is_done(), st.errors()), (true, Status::FORMAT_ERROR));
    // Total length != sum of segments: format error.
    let mut d = rdma_desc(t.va, t.h, &[(c.src.va, c.src.h, 4)], None);
    d.length = 5;
    c.s.post(0, 0, Queue::Send, c.desc.va + 64, c.desc.h, &d);
    c.s.run();
    assert_eq!(c.s.status(0, c.desc.va + 64).errors(), Status::FORMAT_ERROR);
    // A local buffer outside its region: protection error.
    let d = rdma_desc(t.va, t.h, &[(c.src.va + 2990, c.src.h, 20)], None);
    c.s.post(0, 0, Queue::Send, c.desc.va + 128, c.desc.h, &d);
    c.s.run();
    assert_eq!(
        c.s.status(0, c.desc.va + 128).errors(),
        Status::PROTECTION_ERROR
    );
    // RDMA read is not implemented: format error.
    let mut d = rdma_desc(t.va, t.h, &[(c.src.va, c.src.h, 4)], None);
    d.control = d.control.with_op(via_abi::Op::RdmaRead);
    c.s.post(0, 0, Queue::Send, c.desc.va + 192, c.desc.h, &d);
    c.s.run();
    assert_eq!(
        c.s.status(0, c.desc.va + 192).errors(),
        Status::FORMAT_ERROR
    );
    // A descriptor whose address does not translate cannot be completed: counted.
    c.s.map(0, 0x7000_0000, 4096);
    c.s.post(0, 0, Queue::Send, 0x7000_0000, c.desc.h, &d);
    c.s.run();
    assert_eq!(c.s.engine(0).stats().descriptors_unreachable, 1);
    untouched(&c, t.va - 4096, 3 * 4096);
    assert_eq!(c.s.engine(0).vi(0).unwrap().counters.send_errors, 4);
    assert!(c.s.engine(0).is_idle());
}

#[test]
fn fragments_out_of_order_or_out_of_sequence_are_counted_never_placed() {
    use nic_model::engine::frame::headers;
    use via_abi::wire_header::{WireFlags, WireHeaderRepr, WireOp};
    let mut c = setup(Reliability::Unreliable, true);
    let t = target(&mut c, PTAG, true);
    let frame = |seq: u32, msg_len: u32, off: u32, len: u16, flags: WireFlags, fill: u8| {
        let h = WireHeaderRepr {
            op: WireOp::RdmaWrite,
            flags,
            dst_vi: 0,
            src_vi: 0,
            seq,
            msg_len,
            frag_offset: off,
            frag_len: len,
            remote_va: t.va,
            remote_handle: t.h,
            immediate: 0,
        };
        let mut b = headers(mac(0), mac(1), &h);
        b.extend(vec![fill; usize::from(len)]);
        b
    };
    let both = WireFlags::FIRST | WireFlags::LAST;
    let frames = [
        frame(0, 3000, 0, 1460, WireFlags::FIRST, 0xA1),
        frame(1, 3000, 2000, 1000, WireFlags::LAST, 0xB2), // offset should be 1460
        frame(5, 10, 0, 10, both, 0xC3),                   // sequence gap (2 expected)
        frame(6, 10, 0, 10, both, 0xD4),                   // resynchronised: placed
    ];
    let gec = c.s.node(1).ids.gec;
    for (k, bytes) in frames.into_iter().enumerate() {
        let at = c.s.k.now() + sim_kernel::Duration::from_ns(20_000 * k as u64);
        c.s.k.post(
            gec,
            at,
            Msg::Deliver {
                bytes,
                msg: sim_kernel::MsgId(900 + k as u64),
            },
        );
    }
    c.s.run();
    let got = c.s.read_mem(1, t.va, 4096);
    assert!(got[..10].iter().all(|&b| b == 0xD4));
    assert!(got[10..1460].iter().all(|&b| b == 0xA1));
    assert!(
        got[1460..].iter().all(|&b| b == 0x11),
        "the misplaced fragment wrote nothing"
    );
    let vi = c.s.engine(1).vi(0).unwrap();
    assert_eq!(vi.counters.rx_fragment_errors, 1);
    assert_eq!(vi.counters.rx_sequence_errors, 1);
    assert_eq!(vi.counters.messages_received, 1);
    assert_eq!(vi.counters.last_rx_error, Status::TRANSPORT_ERROR);
    assert!(c.s.engine(1).is_idle());
}
