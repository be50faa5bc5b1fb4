//! RDMA write end to end: the bytes land exactly in the remote registered buffer and
//! nowhere else, messages of several VIs interleave without mixing.

mod common;

use common::*;
use proptest::prelude::*;
use sim_kernel::SplitMix64;
use via_abi::bar::Reliability;
use via_abi::wire_header::{WireHeader, WireHeaderRepr};
use via_abi::{CompletedOp, Queue, Status};

const PTAG: u16 = 7;
const GUARD: u64 = 8192;

fn two_connected(rel: Reliability, vis: u16) -> Sys {
    let mut s = Sys::new(Config::default());
    for vi in 0..vis {
        for i in 0..2 {
            s.create_vi(i, vi, PTAG, rel, true);
        }
        s.connect(vi, vi, 0x100 + u32::from(vi));
    }
    s
}

/// Fills `[va - GUARD, va + len + GUARD)` of node 1 with a pattern (mapped, the middle
/// registered) and returns the region.
fn target(s: &mut Sys, va: u64, len: u64, seed: u64) -> (Region, Vec<u8>) {
    s.map(1, va - GUARD, len + 2 * GUARD);
    let mut pattern = vec![0u8; (len + 2 * GUARD) as usize];
    SplitMix64::new(seed).fill(&mut pattern);
    s.write_mem(1, va - GUARD, &pattern);
    (region(s, 1, va, len, PTAG, true), pattern)
}

fn rdma(s: &mut Sys, len: u64, src_off: u64, dst_off: u64, seed: u64) {
    let desc = region(s, 0, 0x1000_0000, 4096, PTAG, false);
    let src = region(s, 0, 0x3000_0000 + src_off, len, PTAG, false);
    let mut data = vec![0u8; len as usize];
    SplitMix64::new(seed ^ 0xABCD).fill(&mut data);
    s.write_mem(0, src.va, &data);
    let span = dst_off + len + 100;
    let (dst, mut expect) = target(s, 0x5000_0000 + (seed % 4096), span, seed);
    let d = rdma_desc(
        dst.va + dst_off,
        dst.h,
        &[(src.va, src.h, len as u32)],
        None,
    );
    let placed = s.engine(1).stats().rdma_bytes_placed;
    s.post(0, 0, Queue::Send, desc.va, desc.h, &d);
    s.run();
    let st = s.status(0, desc.va);
    assert!(st.is_done() && !st.is_error(), "{st:?}");
    assert_eq!(st.completed_op(), CompletedOp::RdmaWrite);
    let at = (GUARD + dst_off) as usize;
    expect[at..at + len as usize].copy_from_slice(&data);
    let got = s.read_mem(1, dst.va - GUARD, expect.len());
    assert!(got == expect, "bytes differ (len {len}, dst_off {dst_off})");
    let e1 = s.engine(1).stats();
    assert_eq!(e1.rdma_bytes_placed - placed, len);
    assert!(s.engine(1).is_idle() && s.engine(0).is_idle());
}

#[test]
fn a_4_byte_rdma_write_lands_and_completes() {
    let mut s = two_connected(Reliability::Unreliable, 1);
    rdma(&mut s, 4, 0, 100, 1);
    let vi = s.engine(1).vi(0).unwrap();
    assert_eq!(vi.counters.messages_received, 1);
    assert_eq!(vi.counters.frames_received, 1);
}

#[test]
fn a_full_frame_and_a_two_fragment_message() {
    let mut s = two_connected(Reliability::ReliableDelivery, 1);
    rdma(&mut s, 1460, 3, 1, 2);
    rdma(&mut s, 1461, 4093, 4095, 3);
    let sent = &s.node(0).gec.sent;
    let hdrs: Vec<WireHeaderRepr> = sent
        .iter()
        .map(|(_, b)| WireHeaderRepr::parse(&WireHeader::new_unchecked(&b[14..])).unwrap())
        .filter(|h| h.op.carries_data())
        .collect();
    assert_eq!(hdrs.len(), 3);
    assert_eq!((hdrs[0].frag_len, hdrs[0].msg_len), (1460, 1460));
    assert_eq!(sent.iter().map(|(_, b)| b.len()).max(), Some(1514));
    assert_eq!(
        (hdrs[1].frag_len, hdrs[2].frag_len, hdrs[2].frag_offset),
        (1460, 1, 1460)
    );
    assert_eq!(
        s.engine(1).vi(0).unwrap().counters.acks_sent,
        2,
        "one per message"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    /// Random data, random length from 1 byte to 1 MB, random offsets on both sides.
    #[test]
    fn rdma_write_lands_byte_exact(
        len in prop_oneof![1u64..=64, 1u64..=20_000, 1u64..=(1 << 20)],
        src_off in 0u64..4096,
        dst_off in 0u64..9000,
        seed in any::<u64>(),
        reliable in any::<bool>(),
    ) {
        let rel = if reliable { Reliability::ReliableDelivery } else { Reliability::Unreliable };
        let mut s = two_connected(rel, 1);
        rdma(&mut s, len, src_off, dst_off, seed);
    }
}

#[test]
fn one_megabyte() {
    let mut s = two_connected(Reliability::Unreliable, 1);
    rdma(&mut s, 1 << 20, 17, 5, 9);
}

#[test]
fn several_vis_interleave_without_mixing() {
    const N: u16 = 3;
    let mut s = two_connected(Reliability::ReliableDelivery, N);
    let desc = region(&mut s, 0, 0x1000_0000, 4096, PTAG, false);
    let mut jobs = Vec::new();
    for vi in 0..N {
        let len = 9000 + 1000 * u64::from(vi);
        let src = region(
            &mut s,
            0,
            0x3000_0000 + 0x10_0000 * u64::from(vi),
            len,
            PTAG,
            false,
        );
        let mut data = vec![0u8; len as usize];
        SplitMix64::new(u64::from(vi)).fill(&mut data);
        s.write_mem(0, src.va, &data);
        let (dst, mut expect) = target(
            &mut s,
            0x5000_0000 + 0x10_0000 * u64::from(vi),
            len,
            50 + u64::from(vi),
        );
        let at = GUARD as usize;
        expect[at..at + len as usize].copy_from_slice(&data);
        let d = rdma_desc(dst.va, dst.h, &[(src.va, src.h, len as u32)], None);
        jobs.push((vi, d, dst, expect, desc.va + 64 * u64::from(vi)));
    }
    // All three doorbells at once.
    for (vi, d, _, _, dva) in &jobs {
        s.post(0, *vi, Queue::Send, *dva, desc.h, d);
    }
    let jobs: Vec<_> = jobs
        .into_iter()
        .map(|(_, _, dst, expect, dva)| (dst, expect, dva))
        .collect();
    s.run();
    for (vi, (dst, expect, dva)) in jobs.iter().enumerate() {
        let st = s.status(0, *dva);
        assert_eq!(st.errors(), Status::empty(), "vi {vi}");
        assert!(st.is_done());
        assert!(
            s.read_mem(1, dst.va - GUARD, expect.len()) == *expect,
            "vi {vi} data"
        );
    }
    // The fragments of the three messages were interleaved on the wire.
    let order: Vec<u16> = s
        .node(0)
        .gec
        .sent
        .iter()
        .map(|(_, b)| WireHeaderRepr::parse(&WireHeader::new_unchecked(&b[14..])).unwrap())
        .filter(|h| h.op.carries_data())
        .map(|h| h.src_vi)
        .collect();
    let switches = order.windows(2).filter(|w| w[0] != w[1]).count();
    assert!(switches >= 6, "{order:?}");
}

#[test]
fn rdma_write_with_immediate_consumes_a_receive_descriptor() {
    let mut s = two_connected(Reliability::ReliableDelivery, 1);
    let desc = region(&mut s, 0, 0x1000_0000, 4096, PTAG, false);
    let rdesc = region(&mut s, 1, 0x1000_0000, 4096, PTAG, false);
    let src = region(&mut s, 0, 0x3000_0000, 3000, PTAG, false);
    s.write_mem(0, src.va, &[0x3C; 3000]);
    let (dst, _) = target(&mut s, 0x5000_0000, 3000, 1);
    s.post(1, 0, Queue::Receive, rdesc.va, rdesc.h, &recv_desc(&[]));
    s.run();
    let d = rdma_desc(dst.va, dst.h, &[(src.va, src.h, 3000)], Some(0xFEED));
    s.post(0, 0, Queue::Send, desc.va, desc.h, &d);
    s.run();
    assert_eq!(s.status(0, desc.va).errors(), Status::empty());
    assert_eq!(s.read_mem(1, dst.va, 3000), vec![0x3C; 3000]);
    let rt = s.status(1, rdesc.va);
    assert!(
        rt.is_done() && rt.contains(Status::IMMEDIATE) && !rt.is_error(),
        "{rt:?}"
    );
    assert_eq!(rt.completed_op(), CompletedOp::RemoteRdmaWrite);
    let imm = s.read_mem(1, rdesc.va + 20, 4);
    assert_eq!(u32::from_le_bytes(imm[..].try_into().unwrap()), 0xFEED);
    // Without a posted descriptor the immediate RDMA write is refused (Nak).
    let d = rdma_desc(dst.va, dst.h, &[(src.va, src.h, 10)], Some(1));
    s.post(0, 0, Queue::Send, desc.va + 64, desc.h, &d);
    s.run();
    assert_eq!(
        s.status(0, desc.va + 64).errors(),
        Status::REMOTE_DESCRIPTOR_ERROR
    );
}

#[test]
fn tiny_fifos_and_single_slots_still_move_every_byte() {
    let mut s = Sys::new(Config {
        engine: nic_model::engine::EngineParams {
            send_fifo_bytes: sim_kernel::Bytes(100),
            recv_fifo_bytes: sim_kernel::Bytes(60),
            dma_chunk_bytes: sim_kernel::Bytes(512),
            ..nic_model::engine::EngineParams::default()
        },
        layout: gige_mac::BufferLayout {
            tx_slots: 1,
            rx_slots: 1,
            ..gige_mac::BufferLayout::default()
        },
        ..Config::default()
    });
    for i in 0..2 {
        s.create_vi(i, 0, PTAG, Reliability::ReliableDelivery, true);
    }
    s.connect(0, 0, 5);
    rdma(&mut s, 20_001, 7, 3, 4);
    let st = s.engine(0).stats();
    assert!(st.send_fifo_max <= 100, "{st:?}");
    assert!(s.engine(1).stats().recv_fifo_max <= 60);
}

#[test]
fn gather_from_three_local_buffers_reads_the_rest_of_the_descriptor() {
    let mut s = two_connected(Reliability::Unreliable, 1);
    let desc = region(&mut s, 0, 0x1000_0000, 4096, PTAG, false);
    let a = region(&mut s, 0, 0x3000_0FF0, 700, PTAG, false);
    let b = region(&mut s, 0, 0x3100_0000, 1, PTAG, false);
    let c = region(&mut s, 0, 0x3200_0123, 2500, PTAG, false);
    let mut data = vec![0u8; 3201];
    SplitMix64::new(77).fill(&mut data);
    s.write_mem(0, a.va, &data[..700]);
    s.write_mem(0, b.va, &data[700..701]);
    s.write_mem(0, c.va, &data[701..]);
    let (dst, _) = target(&mut s, 0x5000_0000, 3201, 2);
    // 32 + 16 + 3 x 16 = 96 bytes: the engine reads 64, then the remaining 32.
    let d = rdma_desc(
        dst.va,
        dst.h,
        &[(a.va, a.h, 700), (b.va, b.h, 1), (c.va, c.h, 2500)],
        None,
    );
    assert_eq!(d.buffer_len(), 96);
    s.post(0, 0, Queue::Send, desc.va, desc.h, &d);
    s.run();
    assert_eq!(s.status(0, desc.va).errors(), Status::empty());
    assert_eq!(s.read_mem(1, dst.va, 3201), data);
}
