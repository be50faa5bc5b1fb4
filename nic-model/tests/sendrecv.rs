//! Send/receive: gather at the sender, scatter into the receive descriptor's data
//! segments, length and status written back; immediate data; no posted descriptor;
//! a receive buffer too small.

mod common;

use common::*;
use sim_kernel::SplitMix64;
use via_abi::bar::Reliability;
use via_abi::{CompletedOp, MemHandle, Queue, Status};

const PTAG: u16 = 3;

struct Setup {
    s: Sys,
    sdesc: Region,
    rdesc: Region,
}

fn setup(rel: Reliability) -> Setup {
    let mut s = Sys::new(Config::default());
    for i in 0..2 {
        s.create_vi(i, 2, PTAG, rel, false);
    }
    s.connect(2, 2, 77);
    let sdesc = region(&mut s, 0, 0x1000_0000, 8192, PTAG, false);
    let rdesc = region(&mut s, 1, 0x1000_0000, 8192, PTAG, false);
    Setup { s, sdesc, rdesc }
}

/// Posts a receive descriptor scattering into `bufs` at `rdesc` on VI 2 of node 1.
fn post_recv(s: &mut Sys, rdesc: &Region, bufs: &[(u64, MemHandle, u32)]) {
    s.post(1, 2, Queue::Receive, rdesc.va, rdesc.h, &recv_desc(bufs));
}

/// Posts a send descriptor gathering `local` at `sdesc` on VI 2 of node 0.
fn post_send(s: &mut Sys, sdesc: &Region, local: &[(u64, MemHandle, u32)], imm: Option<u32>) {
    s.post(0, 2, Queue::Send, sdesc.va, sdesc.h, &send_desc(local, imm));
}

fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut d = vec![0u8; len];
    SplitMix64::new(seed).fill(&mut d);
    d
}

#[test]
fn a_send_scatters_into_several_data_segments() {
    let Setup {
        mut s,
        sdesc,
        rdesc,
    } = setup(Reliability::Unreliable);
    // Sender: 5000 bytes gathered from two buffers (4 fragments on the wire).
    let a = region(&mut s, 0, 0x2000_0100, 3000, PTAG, false);
    let b = region(&mut s, 0, 0x2100_0FFE, 2000, PTAG, false);
    let msg = data(5000, 1);
    s.write_mem(0, a.va, &msg[..3000]);
    s.write_mem(0, b.va, &msg[3000..]);
    // Receiver: three buffers of 1000, 2500 and 4000 bytes (room 7500), pre-filled.
    let bufs = [
        (0x3000_0010u64, 1000u64),
        (0x3100_0F00, 2500),
        (0x3200_0000, 4000),
    ];
    let mut regs = Vec::new();
    for &(va, len) in &bufs {
        let r = region(&mut s, 1, va, len, PTAG, false);
        s.write_mem(1, va, &vec![0xEE; len as usize]);
        regs.push(r);
    }
    let segs: Vec<_> = regs.iter().map(|r| (r.va, r.h, r.len as u32)).collect();
    post_recv(&mut s, &rdesc, &segs);
    s.run();
    post_send(
        &mut s,
        &sdesc,
        &[(a.va, a.h, 3000), (b.va, b.h, 2000)],
        None,
    );
    s.run();

    let st = s.status(0, sdesc.va);
    assert_eq!((st.is_done(), st.errors()), (true, Status::empty()));
    assert_eq!(st.completed_op(), CompletedOp::Send);
    let rt = s.status(1, rdesc.va);
    assert_eq!(
        (rt.is_done(), rt.errors()),
        (true, Status::empty()),
        "{rt:?}"
    );
    assert_eq!(rt.completed_op(), CompletedOp::Receive);
    assert!(!rt.contains(Status::IMMEDIATE));
    assert_eq!(s.length(1, rdesc.va), 5000);
    assert_eq!(s.read_mem(1, regs[0].va, 1000), &msg[..1000]);
    assert_eq!(s.read_mem(1, regs[1].va, 2500), &msg[1000..3500]);
    let third = s.read_mem(1, regs[2].va, 4000);
    assert_eq!(&third[..1500], &msg[3500..]);
    assert!(
        third[1500..].iter().all(|&x| x == 0xEE),
        "past the message untouched"
    );
    let vi = s.engine(1).vi(2).unwrap();
    assert_eq!((vi.counters.recvs_completed, vi.recv_posted), (1, 0));
    assert_eq!(s.engine(1).stats().recv_bytes_placed, 5000);
}

#[test]
fn immediate_data_reaches_the_receive_descriptor() {
    let Setup {
        mut s,
        sdesc,
        rdesc,
    } = setup(Reliability::ReliableDelivery);
    let a = region(&mut s, 0, 0x2000_0000, 16, PTAG, false);
    let r = region(&mut s, 1, 0x3000_0000, 64, PTAG, false);
    s.write_mem(0, a.va, &[9; 16]);
    post_recv(&mut s, &rdesc, &[(r.va, r.h, 64)]);
    s.run();
    post_send(&mut s, &sdesc, &[(a.va, a.h, 16)], Some(0xC0FFEE));
    s.run();
    assert_eq!(s.status(0, sdesc.va).errors(), Status::empty());
    let rt = s.status(1, rdesc.va);
    assert!(rt.is_done() && rt.contains(Status::IMMEDIATE), "{rt:?}");
    assert_eq!(s.length(1, rdesc.va), 16);
    let imm = s.read_mem(1, rdesc.va + 20, 4);
    assert_eq!(u32::from_le_bytes(imm[..].try_into().unwrap()), 0xC0FFEE);
    assert_eq!(s.read_mem(1, r.va, 16), vec![9; 16]);
}

#[test]
fn zero_length_send() {
    let Setup {
        mut s,
        sdesc,
        rdesc,
    } = setup(Reliability::Unreliable);
    let r = region(&mut s, 1, 0x3000_0000, 64, PTAG, false);
    post_recv(&mut s, &rdesc, &[(r.va, r.h, 64)]);
    s.run();
    post_send(&mut s, &sdesc, &[], None);
    s.run();
    assert!(s.status(0, sdesc.va).is_done());
    let rt = s.status(1, rdesc.va);
    assert!(rt.is_done() && !rt.is_error(), "{rt:?}");
    assert_eq!(s.length(1, rdesc.va), 0);
}

#[test]
fn no_posted_receive_unreliable_drops_and_counts() {
    let Setup { mut s, sdesc, .. } = setup(Reliability::Unreliable);
    let a = region(&mut s, 0, 0x2000_0000, 100, PTAG, false);
    post_send(&mut s, &sdesc, &[(a.va, a.h, 100)], None);
    s.run();
    let st = s.status(0, sdesc.va);
    assert_eq!(
        (st.is_done(), st.errors()),
        (true, Status::empty()),
        "unreliable: sent is done"
    );
    let vi = s.engine(1).vi(2).unwrap();
    assert_eq!(vi.counters.rx_no_descriptor, 1);
    assert_eq!(vi.counters.naks_sent, 0);
    assert_eq!(vi.state, via_abi::bar::ViStateCode::Connected);
}

#[test]
fn no_posted_receive_reliable_is_a_nak() {
    let Setup { mut s, sdesc, .. } = setup(Reliability::ReliableDelivery);
    let a = region(&mut s, 0, 0x2000_0000, 3000, PTAG, false);
    post_send(&mut s, &sdesc, &[(a.va, a.h, 3000)], None);
    s.run();
    let st = s.status(0, sdesc.va);
    assert!(st.is_done());
    assert_eq!(st.errors(), Status::REMOTE_DESCRIPTOR_ERROR);
    let rx = s.engine(1).vi(2).unwrap();
    assert_eq!(
        (rx.counters.rx_no_descriptor, rx.counters.naks_sent),
        (1, 1)
    );
    assert_eq!(rx.state, via_abi::bar::ViStateCode::Error);
    let tx = s.engine(0).vi(2).unwrap();
    assert_eq!(tx.counters.naks_received, 1);
    assert_eq!(tx.state, via_abi::bar::ViStateCode::Error);
    assert!(s.engine(0).is_idle() && s.engine(1).is_idle());
}

#[test]
fn a_receive_buffer_too_small_is_a_length_error() {
    let Setup {
        mut s,
        sdesc,
        rdesc,
    } = setup(Reliability::ReliableDelivery);
    let a = region(&mut s, 0, 0x2000_0000, 200, PTAG, false);
    let r = region(&mut s, 1, 0x3000_0000, 100, PTAG, false);
    s.write_mem(1, r.va, &[0x55; 100]);
    post_recv(&mut s, &rdesc, &[(r.va, r.h, 100)]);
    s.run();
    post_send(&mut s, &sdesc, &[(a.va, a.h, 200)], None);
    s.run();
    let rt = s.status(1, rdesc.va);
    assert!(rt.is_done());
    assert_eq!(rt.errors(), Status::LENGTH_ERROR);
    assert_eq!(s.read_mem(1, r.va, 100), vec![0x55; 100], "no byte placed");
    assert_eq!(
        s.status(0, sdesc.va).errors(),
        Status::REMOTE_DESCRIPTOR_ERROR
    );
    assert_eq!(s.engine(1).vi(2).unwrap().counters.rx_length_errors, 1);
}

#[test]
fn several_messages_use_posted_descriptors_in_order() {
    let Setup {
        mut s,
        sdesc,
        rdesc,
    } = setup(Reliability::ReliableDelivery);
    let a = region(&mut s, 0, 0x2000_0000, 4 * 2000, PTAG, false);
    let r = region(&mut s, 1, 0x3000_0000, 4 * 2000, PTAG, false);
    let msg = data(8000, 5);
    s.write_mem(0, a.va, &msg);
    for k in 0..4u64 {
        let d = recv_desc(&[(r.va + 2000 * k, r.h, 2000)]);
        s.post(1, 2, Queue::Receive, rdesc.va + 64 * k, rdesc.h, &d);
    }
    s.run();
    let lens = [2000u32, 1, 1999, 1460];
    for (k, len) in lens.iter().enumerate() {
        let d = send_desc(&[(a.va + 2000 * k as u64, a.h, *len)], None);
        s.post(0, 2, Queue::Send, sdesc.va + 64 * k as u64, sdesc.h, &d);
    }
    s.run();
    for (k, len) in lens.iter().enumerate() {
        let off = 64 * k as u64;
        assert_eq!(s.status(0, sdesc.va + off).errors(), Status::empty());
        assert!(s.status(1, rdesc.va + off).is_done());
        assert_eq!(s.length(1, rdesc.va + off), *len);
        let at = 2000 * k;
        assert_eq!(
            s.read_mem(1, r.va + at as u64, *len as usize),
            &msg[at..at + *len as usize]
        );
    }
}
