//! Where the time of one message goes: the engine's spans of a 4-byte RDMA write and of
//! one full-size frame (1460 payload bytes), contiguous on each card, with the fixed
//! processing times counted by hand; and per-word stepping of the word movers gives
//! exactly the batched results.

mod common;

use common::*;
use nic_model::engine::{EngineParams, WordStepping};
use sim_kernel::{MsgId, SplitMix64};
use via_abi::bar::Reliability;
use via_abi::{Queue, Status};

/// One core clock (33 MHz) [ps].
const T: u64 = 30_303;

struct Run {
    s: Sys,
    msg: MsgId,
}

fn one_rdma(len: u32, rel: Reliability, stepping: WordStepping) -> Run {
    let mut s = Sys::new(Config {
        trace: true,
        engine: EngineParams {
            stepping,
            ..EngineParams::default()
        },
        ..Config::default()
    });
    for i in 0..2 {
        s.create_vi(i, 0, 7, rel, true);
    }
    s.connect(0, 0, 1);
    let desc = region(&mut s, 0, 0x1000_0000, 4096, 7, false);
    let src = region(&mut s, 0, 0x2000_0000, 4096, 7, false);
    let dst = region(&mut s, 1, 0x3000_0000, 4096, 7, true);
    s.write_mem(0, src.va, &vec![0x5A; len as usize]);
    let d = rdma_desc(dst.va, dst.h, &[(src.va, src.h, len)], None);
    s.k.trace_mut().clear();
    s.post(0, 0, Queue::Send, desc.va, desc.h, &d);
    s.run();
    assert_eq!(s.status(0, desc.va).errors(), Status::empty());
    assert_eq!(
        s.read_mem(1, dst.va, len as usize),
        vec![0x5A; len as usize]
    );
    let msg =
        s.k.trace()
            .spans()
            .iter()
            .find(|sp| sp.stage == "doorbell")
            .map(|sp| sp.msg)
            .expect("a doorbell span");
    Run { s, msg }
}

/// The engine spans of `msg` on node `i`, in time order: (stage, start, end) [ps].
fn engine_spans(r: &Run, i: usize) -> Vec<(&'static str, u64, u64)> {
    let e = r.s.node(i).ids.engine;
    let mut v: Vec<_> =
        r.s.k
            .trace()
            .spans()
            .iter()
            .filter(|sp| sp.msg == r.msg && sp.component == e)
            .map(|sp| (sp.stage, sp.start.0, sp.end.0))
            .collect();
    v.sort_by_key(|x| (x.1, x.2));
    v
}

fn print(title: &str, spans: &[(&'static str, u64, u64)]) {
    println!("{title}");
    for (stage, a, b) in spans {
        println!(
            "  {stage:<26} {:>10.1} ns {:>10.1} ns {:>8.1} ns",
            *a as f64 / 1e3,
            *b as f64 / 1e3,
            (b - a) as f64 / 1e3
        );
    }
}

fn contiguous(spans: &[(&'static str, u64, u64)]) {
    for w in spans.windows(2) {
        assert_eq!(w[0].2, w[1].1, "{} -> {} not contiguous", w[0].0, w[1].0);
    }
}

fn duration(spans: &[(&'static str, u64, u64)], stage: &str) -> u64 {
    spans
        .iter()
        .filter(|s| s.0 == stage)
        .map(|s| s.2 - s.1)
        .sum()
}

#[test]
fn spans_of_a_4_byte_rdma_write() {
    let r = one_rdma(4, Reliability::Unreliable, WordStepping::Batched);
    let tx = engine_spans(&r, 0);
    let rx = engine_spans(&r, 1);
    print("sender (4-byte RDMA write)", &tx);
    print("receiver", &rx);
    let stages: Vec<_> = tx.iter().map(|s| s.0).collect();
    assert_eq!(
        stages,
        [
            "doorbell",
            "descriptor translate",
            "descriptor DMA read",
            "descriptor decode",
            "buffer translate",
            "payload DMA read",
            "tx buffer fill",
            "frame handoff",
            "status write"
        ]
    );
    contiguous(&tx[..8]);
    // Fixed processing times (assumptions, EngineParams defaults), in core clocks:
    // doorbell decode 2, descriptor decode 2, one payload word 1, handoff strobe 1.
    assert_eq!(duration(&tx, "doorbell"), 2 * T);
    assert_eq!(duration(&tx, "descriptor decode"), 2 * T);
    assert_eq!(duration(&tx, "tx buffer fill"), T);
    assert_eq!(duration(&tx, "frame handoff"), T);
    let stages: Vec<_> = rx.iter().map(|s| s.0).collect();
    assert_eq!(
        stages,
        [
            "header check",
            "remote translate",
            "rx buffer drain",
            "payload DMA write"
        ]
    );
    contiguous(&rx);
    // Header check: 14 words read out of the RX buffer + 2 compare clocks.
    assert_eq!(duration(&rx, "header check"), 16 * T);
    assert_eq!(duration(&rx, "rx buffer drain"), T);
}

#[test]
fn spans_of_a_full_size_frame() {
    let r = one_rdma(1460, Reliability::ReliableDelivery, WordStepping::Batched);
    let tx = engine_spans(&r, 0);
    let rx = engine_spans(&r, 1);
    print(
        "sender (1460-byte RDMA write, one full frame, reliable)",
        &tx,
    );
    print("receiver", &rx);
    contiguous(&tx[..8]);
    contiguous(&rx);
    let sent = &r.s.node(0).gec.sent;
    assert_eq!(sent.iter().map(|(_, b)| b.len()).max(), Some(1514));
    // The last payload chunk (1460 = 512 + 512 + 436 bytes) moves 109 words after its
    // DMA read, plus what is left of the previous chunk's 128 (the DMA master streams
    // the three chunks back to back, a little faster than one word per core clock).
    let fill = duration(&tx, "tx buffer fill");
    assert!((109 * T..(109 + 128) * T).contains(&fill), "{fill}");
    // The receiver drains 3 chunks of 128, 128 and 109 words back to back.
    assert_eq!(duration(&rx, "rx buffer drain"), (128 + 128 + 109) * T);
    // The Ack: header build (2) and 14 header words at the receiver; at the sender the
    // ack wait ends at its arrival, its header check follows, then the status write.
    assert_eq!(duration(&rx, "control frame build"), 16 * T);
    let stages: Vec<_> = tx.iter().map(|s| s.0).collect();
    assert_eq!(&stages[8..], ["ack wait", "header check", "status write"]);
    contiguous(&tx[8..]);
}

/// A mixed scenario: RDMA writes on two VIs and a scattered send, all at once.
fn mixed(stepping: WordStepping) -> (Sys, Vec<u64>) {
    let mut s = Sys::new(Config {
        trace: true,
        engine: EngineParams {
            stepping,
            send_fifo_bytes: sim_kernel::Bytes(1024),
            recv_fifo_bytes: sim_kernel::Bytes(700),
            ..EngineParams::default()
        },
        ..Config::default()
    });
    for vi in 0..2u16 {
        for i in 0..2 {
            s.create_vi(i, vi, 7, Reliability::ReliableDelivery, true);
        }
        s.connect(vi, vi, 20 + u32::from(vi));
    }
    let desc = region(&mut s, 0, 0x1000_0000, 4096, 7, false);
    let rdesc = region(&mut s, 1, 0x1000_0000, 4096, 7, false);
    let src = region(&mut s, 0, 0x2000_0003, 20_000, 7, false);
    let dst = region(&mut s, 1, 0x3000_0000, 20_000, 7, true);
    let buf = region(&mut s, 1, 0x4000_0100, 3000, 7, false);
    let mut data = vec![0u8; 20_000];
    SplitMix64::new(3).fill(&mut data);
    s.write_mem(0, src.va, &data);
    let rd = recv_desc(&[(buf.va, buf.h, 1000), (buf.va + 1500, buf.h, 1500)]);
    s.post(1, 1, Queue::Receive, rdesc.va, rdesc.h, &rd);
    let jobs = [(0u16, 0u64, 7000u32), (0, 7000, 5), (1, 12_000, 2300)];
    let mut dvas = Vec::new();
    for (k, &(vi, off, len)) in jobs.iter().enumerate() {
        let d = if vi == 0 {
            rdma_desc(dst.va + off + 1, dst.h, &[(src.va + off, src.h, len)], None)
        } else {
            send_desc(&[(src.va + off, src.h, len)], Some(42))
        };
        let dva = desc.va + 64 * k as u64;
        s.post(0, vi, Queue::Send, dva, desc.h, &d);
        dvas.push(dva);
    }
    s.run();
    (s, dvas)
}

#[test]
fn per_word_stepping_equals_batched() {
    let (a, dvas) = mixed(WordStepping::PerWord);
    let (b, _) = mixed(WordStepping::Batched);
    for &d in &dvas {
        assert_eq!(a.status(0, d).errors(), Status::empty());
        assert_eq!(a.status(0, d), b.status(0, d));
    }
    assert_eq!(a.status(1, 0x1000_0000), b.status(1, 0x1000_0000));
    assert!(a.status(1, 0x1000_0000).is_done());
    assert_eq!(a.k.now(), b.k.now());
    let (ta, tb) = (a.k.trace().transitions(), b.k.trace().transitions());
    if let Some(i) = (0..ta.len().min(tb.len())).find(|&i| ta[i] != tb[i]) {
        panic!(
            "transition {i}: {:?}\n vs {:?}\n{:?}",
            ta[i],
            tb[i],
            &ta[i.saturating_sub(3)..i + 3]
        );
    }
    assert_eq!(ta.len(), tb.len());
    assert_eq!(a.k.trace().spans(), b.k.trace().spans());
    assert_eq!(a.k.trace().digest(), b.k.trace().digest());
    for i in 0..2 {
        assert_eq!(a.engine(i).stats(), b.engine(i).stats());
        assert_eq!(a.node(i).gec.sent, b.node(i).gec.sent);
    }
    assert_eq!(
        a.read_mem(1, 0x3000_0000, 20_000),
        b.read_mem(1, 0x3000_0000, 20_000)
    );
    assert_eq!(
        a.read_mem(1, 0x4000_0100, 3000),
        b.read_mem(1, 0x4000_0100, 3000)
    );
    assert!(
        a.k.stats().events > b.k.stats().events + 1000,
        "per-word wakes every clock"
    );
}
