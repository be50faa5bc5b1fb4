//! The CPU cost model in simulated time: exact costs of pure CPU work, per-call spans
//! named after the VIPL calls, memory-mapped accesses that take bus time, polls that see
//! a DMA write only once the host bridge has committed it, and a program that can never
//! resume.

mod common;

use common::{connected_vi, done, mac, passive_peer, registered_page, Sys};
use host_driver::vipl::descriptor::{data_segment, recv_descriptor, send_descriptor};
use host_driver::{CpuCosts, CpuState, PollCond, ProgramError, Timeout, VipMemAttributes};
use sim_kernel::{Cycles, Duration, Span, Time};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use via_abi::bar;

const LIMIT: Time = Time(20_000_000_000);
const CYCLE: u64 = 1_250; // ps
const PCI: u64 = 30_303; // ps

fn cyc(n: u64) -> Duration {
    Duration(n * CYCLE)
}

fn spans<'a>(s: &'a Sys, stage: &str) -> Vec<&'a Span> {
    s.k.trace()
        .spans()
        .iter()
        .filter(|sp| sp.stage == stage)
        .collect()
}

type Deltas = Rc<RefCell<Vec<(&'static str, Duration)>>>;

fn delta(d: &Deltas, name: &str) -> Duration {
    d.borrow().iter().find(|(n, _)| *n == name).unwrap().1
}

#[test]
fn pure_cpu_work_costs_exactly_the_table() {
    let c = CpuCosts::default();
    let mut s = Sys::new(1, true);
    let d = Deltas::default();
    let dd = d.clone();
    s.load(0, Time::ZERO, move |mut v| async move {
        let nic = v.vip_open_nic("/dev/hvia0").await.unwrap();
        let buf = v.malloc(4096, 4096).await.unwrap();
        let mut t = v.now();
        let mut mark = |name, now: Time| {
            dd.borrow_mut().push((name, now - t));
            t = now;
        };
        v.compute(Cycles(100)).await;
        mark("compute", v.now());
        v.write_mem(buf, &[7u8; 64]).await.unwrap();
        mark("store 64 cold", v.now());
        v.read_mem(buf, 64).await.unwrap();
        mark("load 64 cached", v.now());
        v.read_mem(buf + 64, 96).await.unwrap();
        mark("load 96 cold", v.now());
        v.vip_query_nic(nic).await.unwrap();
        mark("VipQueryNic", v.now());
        v.vip_create_ptag(nic).await.unwrap();
        mark("VipCreatePtag", v.now());
        v.sleep(Duration::from_ns(1_000)).await;
        mark("sleep", v.now());
        done(&v, "costs")
    });
    s.run(LIMIT);
    assert!(s.outcome(0).is_ok());
    assert_eq!(delta(&d, "compute"), cyc(100));
    assert_eq!(delta(&d, "store 64 cold"), cyc(2 * c.store_miss.0 + 16));
    assert_eq!(delta(&d, "load 64 cached"), cyc(2 * c.cache_hit.0 + 16));
    assert_eq!(
        delta(&d, "load 96 cold"),
        cyc(c.cache_miss.0 + 2 * c.cache_miss_stream.0 + 24)
    );
    assert_eq!(delta(&d, "VipQueryNic"), cyc(c.vipl_call.0));
    assert_eq!(delta(&d, "VipCreatePtag"), cyc(c.vipl_call.0 + c.syscall.0));
    assert_eq!(delta(&d, "sleep"), Duration::from_ns(1_000));
    // the same numbers in the trace, as spans named after the calls, in the CPU's domain
    let q = spans(&s, "VipCreatePtag");
    assert_eq!(q.len(), 1);
    assert_eq!(q[0].end - q[0].start, cyc(860));
    assert_eq!(q[0].component, s.nodes[0].cpu);
    assert_eq!(q[0].domain, s.cpu_domain);
    let st = s.cpu(0).stats();
    assert_eq!(st.idle_cycles, 800);
    assert!(st.line_misses >= 5 && st.line_hits >= 2);
}

#[test]
fn memory_mapped_accesses_take_bus_time() {
    let c = CpuCosts::default();
    let mut s = Sys::new(1, true);
    let d = Deltas::default();
    let dd = d.clone();
    s.load(0, Time::ZERO, move |v| async move {
        for _ in 0..3 {
            let t = v.now();
            v.mmio_write(bar::VI_SEL, 0).await;
            dd.borrow_mut().push(("write", v.now() - t));
            let t = v.now();
            v.mmio_read(bar::CARD_ID).await.unwrap();
            dd.borrow_mut().push(("read", v.now() - t));
        }
        done(&v, "mmio")
    });
    s.run(LIMIT);
    for (name, took) in d.borrow().iter() {
        let issue = cyc(if *name == "write" {
            c.mmio_write.0
        } else {
            c.mmio_read.0
        });
        let bus = Duration(took.0 - issue.0);
        match *name {
            // to the bridge on the next PCI edge, posted, back on the next CPU edge
            "write" => assert!(
                bus >= Duration(PCI + CYCLE) && bus < Duration(2 * PCI + CYCLE),
                "write {bus:?}"
            ),
            // a whole PCI read: arbitration, address, DEVSEL (medium), data, completion
            _ => assert!(bus >= Duration(5 * PCI), "read {bus:?}"),
        }
    }
    let st = s.cpu(0).stats();
    assert_eq!((st.mmio_writes, st.mmio_reads), (3, 3));
    assert!(st.mmio_read_wait > st.mmio_write_wait);
}

#[test]
fn post_send_span_is_call_cost_plus_doorbell() {
    let c = CpuCosts::default();
    let mut s = Sys::new(2, true);
    s.load(1, Time::ZERO, move |v| {
        passive_peer(v, mac(0), Duration::from_ns(400_000))
    });
    s.load(0, Time::ZERO, move |mut v| async move {
        let (nic, ptag, vi) = connected_vi(&mut v, false, mac(1)).await.unwrap();
        let (buf, mh) = registered_page(&mut v, nic, ptag).await;
        v.build_descriptor(
            buf,
            &send_descriptor(vec![data_segment(buf + 512, mh, 8)], None),
        )
        .await
        .unwrap();
        v.vip_post_send(vi, buf, mh).await.unwrap();
        v.vip_send_wait(vi, Timeout::INFINITE).await.unwrap();
        done(&v, "post")
    });
    s.run(LIMIT);
    assert!(s.outcome(0).is_ok(), "{:?}", s.outcome(0));
    let post = spans(&s, "VipPostSend");
    let bell: Vec<_> = spans(&s, "doorbell")
        .into_iter()
        .filter(|sp| sp.component == s.nodes[0].cpu)
        .collect();
    assert_eq!((post.len(), bell.len()), (1, 1));
    // call + the VI-state read + link + Next/handle store (12 B, cached line) + status
    // store (4 B) + doorbell + the flush read
    let cpu = c.vipl_call.0 + c.post_link.0 + (c.cache_hit.0 + 3) + (c.cache_hit.0 + 1);
    let bell_time = bell[0].end - bell[0].start;
    let one = |stage| {
        let v = spans(&s, stage);
        assert_eq!(v.len(), 1, "{stage}");
        v[0].end - v[0].start
    };
    let (read, flush) = (one("vi state read"), one("doorbell flush"));
    assert_eq!(
        post[0].end - post[0].start,
        cyc(cpu) + read + bell_time + flush
    );
    // each read is a whole PCI read (address, turnaround, data) after its issue cost
    for r in [read, flush] {
        assert!(r >= Duration(c.mmio_read.0 * CYCLE + 3 * PCI), "{r:?}");
    }
    // the flush waits behind the four posted doorbell writes on the bus
    assert!(flush > read, "{flush:?} {read:?}");
    assert!(bell_time >= Duration(4 * (c.mmio_write.0 * CYCLE + PCI + CYCLE)));
    // the wait is a poll: its span is inside VipSendWait
    let wait = spans(&s, "VipSendWait");
    let poll: Vec<_> = spans(&s, "poll")
        .into_iter()
        .filter(|sp| sp.start >= wait[0].start)
        .collect();
    assert!(!poll.is_empty() && poll[0].end <= wait[0].end);
}

#[test]
fn a_poll_sees_a_dma_write_only_once_the_bridge_commits_it() {
    let c = CpuCosts::default();
    let mut s = Sys::new(1, true);
    let target = Rc::new(Cell::new(None));
    let seen = Rc::new(Cell::new(Time::ZERO));
    let (tg, sn) = (target.clone(), seen.clone());
    s.load(0, Time::ZERO, move |mut v| async move {
        let nic = v.vip_open_nic("/dev/hvia0").await.unwrap();
        let ptag = v.vip_create_ptag(nic).await.unwrap();
        let vi = v
            .vip_create_vi(nic, &host_driver::ViAttributes::reliable(ptag), None, None)
            .await
            .unwrap();
        let buf = v.malloc(256, 64).await.unwrap();
        let a = VipMemAttributes {
            ptag,
            enable_rdma_write: true,
            enable_rdma_read: false,
        };
        let mh = v.vip_register_mem(nic, buf, 256, &a).await.unwrap();
        tg.set(Some((vi, buf, mh)));
        v.poll_mem(buf + 255, PollCond::ByteEquals(0xAB), Timeout::INFINITE)
            .await
            .unwrap();
        sn.set(v.now());
        done(&v, "poller")
    });
    // run until the buffer is registered and polled, then let "the peer" RDMA-write it
    let mut t = Time::ZERO;
    while target.get().is_none() {
        t += Duration::from_ns(10_000);
        s.k.run_until(&mut s.w, t);
    }
    let (vi, va, mh) = target.get().unwrap();
    let mut data = vec![0x11u8; 256];
    data[255] = 0xAB;
    let frame = common::fake_card::CardMsg::Frame {
        dst_vi: vi.0,
        frame: common::FrameOut::Rdma {
            va,
            handle: mh,
            data,
        },
    };
    s.k.post(s.nodes[0].card, t + Duration::from_ns(5_000), frame.into());
    s.run(LIMIT);
    assert!(s.outcome(0).is_ok());
    // the bridge commits on its own clock: the first PCI edge at or after the instant
    let commit = s.bus(0).bridge().unwrap().last_commit();
    let visible = Time(commit.0.div_ceil(PCI) * PCI);
    let found = seen.get() - visible;
    let hit_turn = c.poll_iteration.0 + c.cache_hit.0;
    let miss_turn = c.poll_iteration.0 + c.cache_miss.0;
    assert!(found >= cyc(miss_turn), "{found:?}: seen before the commit");
    assert!(found <= cyc(miss_turn + hit_turn), "{found:?}: seen late");
    assert!(s.cpu(0).stats().dma_misses >= 1);
}

#[test]
fn a_program_awaiting_a_foreign_future_is_stuck_not_hung() {
    let mut s = Sys::new(1, true);
    s.load(0, Time::ZERO, |v| async move {
        v.compute(Cycles(10)).await;
        std::future::pending::<()>().await;
        done(&v, "never")
    });
    s.run(LIMIT);
    assert_eq!(s.outcome(0), &Err(ProgramError::Stuck));
    assert_eq!(s.cpu(0).state(), CpuState::Stuck);
    let fsm: Vec<_> = s.k.trace().transitions().iter().map(|t| t.to).collect();
    assert_eq!(fsm, vec!["compute", "stuck"]);
}

#[test]
fn every_vipl_call_of_a_receive_path_has_its_span() {
    let mut s = Sys::new(2, true);
    s.load(1, Time::ZERO, move |v| {
        passive_peer(v, mac(0), Duration::from_ns(100_000))
    });
    s.load(0, Time::ZERO, move |mut v| async move {
        let (nic, ptag, vi) = connected_vi(&mut v, false, mac(1)).await.unwrap();
        let (buf, mh) = registered_page(&mut v, nic, ptag).await;
        v.build_descriptor(buf, &recv_descriptor(vec![data_segment(buf + 512, mh, 8)]))
            .await
            .unwrap();
        v.vip_post_recv(vi, buf, mh).await.unwrap();
        let _ = v.vip_recv_done(vi).await;
        v.vip_query_vi(vi).await.unwrap();
        v.vip_disconnect(vi).await.unwrap();
        v.vip_deregister_mem(nic, buf, mh).await.unwrap();
        v.vip_destroy_vi(vi).await.unwrap();
        v.vip_destroy_ptag(nic, ptag).await.unwrap();
        v.vip_close_nic(nic).await.unwrap();
        done(&v, "calls")
    });
    s.run(LIMIT);
    assert!(s.outcome(0).is_ok(), "{:?}", s.outcome(0));
    for call in [
        "VipOpenNic",
        "VipQueryNic",
        "VipCreatePtag",
        "VipCreateVi",
        "VipConnectRequest",
        "VipRegisterMem",
        "VipPostRecv",
        "VipRecvDone",
        "VipQueryVi",
        "VipDisconnect",
        "VipDeregisterMem",
        "VipDestroyVi",
        "VipDestroyPtag",
        "VipCloseNic",
        "doorbell",
    ] {
        let n = spans(&s, call)
            .iter()
            .filter(|sp| sp.component == s.nodes[0].cpu)
            .count();
        assert!(n >= 1, "{call}");
    }
    for call in ["VipConnectWait", "VipConnectAccept"] {
        assert_eq!(
            spans(&s, call)
                .iter()
                .filter(|sp| sp.component == s.nodes[1].cpu)
                .count(),
            1
        );
    }
}

#[test]
fn memcpy_pays_the_loads_and_stores_of_its_lines_and_the_copy_once() {
    let c = CpuCosts::default();
    let mut s = Sys::new(1, true);
    let d = Deltas::default();
    let dd = d.clone();
    let moved = Rc::new(RefCell::new(Vec::new()));
    let mv = moved.clone();
    s.load(0, Time::ZERO, move |mut v| async move {
        let buf = v.malloc(4096, 4096).await.unwrap();
        let data: Vec<u8> = (0..64u8).collect();
        v.write_mem(buf, &data).await.unwrap();
        let t = v.now();
        v.memcpy(buf + 1024, buf, 64).await.unwrap();
        dd.borrow_mut().push(("memcpy", v.now() - t));
        *mv.borrow_mut() = v.peek(buf + 1024, 64).await.unwrap();
        assert!(v.memcpy(buf, 0x10, 4).await.is_err(), "unmapped source");
        done(&v, "memcpy")
    });
    s.run(LIMIT);
    assert!(s.outcome(0).is_ok());
    // The source lines are cached (just written), the destination lines are not.
    assert_eq!(
        delta(&d, "memcpy"),
        cyc(2 * c.cache_hit.0 + 2 * c.store_miss.0 + 16)
    );
    assert_eq!(*moved.borrow(), (0..64u8).collect::<Vec<_>>());
}
