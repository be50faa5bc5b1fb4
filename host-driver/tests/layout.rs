//! What the host puts in memory and on the bus is via-abi's encoding, byte for byte:
//! descriptors (with the provider's Next links), doorbell records, and the registration
//! the kernel agent hands the card (attributes, tag, ATT-style page list).

mod common;

use common::{done, registered_page, Sys};
use host_driver::vipl::descriptor::{data_segment, rdma_write_descriptor, recv_descriptor};
use host_driver::{ViAttributes, VipMemAttributes};
use pci_model::PAGE_SIZE;
use sim_kernel::Time;
use std::cell::Cell;
use std::rc::Rc;
use via_abi::{DescriptorRepr, DoorbellRepr, MemHandle, Queue};

const LIMIT: Time = Time(20_000_000_000);

#[test]
fn descriptors_doorbells_and_registrations_match_via_abi() {
    let mut s = Sys::new(1, false);
    let got = Rc::new(Cell::new(None));
    let g = got.clone();
    s.load(0, Time::ZERO, move |mut v| async move {
        let nic = v.vip_open_nic("/dev/hvia0").await.unwrap();
        let ptag = v.vip_create_ptag(nic).await.unwrap();
        let vi = v
            .vip_create_vi(nic, &ViAttributes::reliable(ptag), None, None)
            .await
            .unwrap();
        let _pad = v.malloc(100, 64).await.unwrap();
        // a region that starts inside a page and spans three more
        let buf = v.malloc(3 * PAGE_SIZE + 200, 64).await.unwrap();
        let a = VipMemAttributes {
            ptag,
            enable_rdma_write: true,
            enable_rdma_read: false,
        };
        let mh = v
            .vip_register_mem(nic, buf, 3 * PAGE_SIZE + 200, &a)
            .await
            .unwrap();
        let (d1, d2, d3) = (buf, buf + 64, buf + 128);
        v.build_descriptor(
            d1,
            &recv_descriptor(vec![data_segment(buf + 1024, mh, 100)]),
        )
        .await
        .unwrap();
        v.build_descriptor(
            d2,
            &recv_descriptor(vec![
                data_segment(buf + 2048, mh, 200),
                data_segment(buf + 5000, mh, 300),
            ]),
        )
        .await
        .unwrap();
        v.build_descriptor(
            d3,
            &rdma_write_descriptor(
                vec![data_segment(buf + 8000, mh, 64)],
                0xBF00_3000,
                MemHandle(0x0020_0003),
                Some(5),
            ),
        )
        .await
        .unwrap();
        v.vip_post_recv(vi, d1, mh).await.unwrap();
        v.vip_post_recv(vi, d2, mh).await.unwrap();
        g.set(Some((buf, mh, ptag)));
        done(&v, "layout")
    });
    s.run(LIMIT);
    assert!(s.outcome(0).is_ok(), "{:?}", s.outcome(0));
    let (buf, mh, ptag) = got.get().unwrap();
    let cpu = s.cpu(0);
    let mem = s.mem(0);
    let card = s.card(0);

    // registration: attributes + tag in ATT_ATTR, the ATT-style page list
    let len = 3 * PAGE_SIZE + 200;
    let pages = cpu.page_table().pages_of(buf, len).unwrap();
    assert_eq!(pages.len(), 4);
    assert_eq!(pages[0] % PAGE_SIZE, buf % PAGE_SIZE);
    assert!(pages[1..].iter().all(|p| p % PAGE_SIZE == 0));
    let (attr, sent) = card.registrations.last().unwrap();
    assert_eq!(*attr, 0x0002 | (u32::from(ptag.raw()) << 16));
    assert_eq!(sent, &pages);

    // descriptors: via-abi bytes; the first now links to the second (Next VA + handle)
    let mut r1 = recv_descriptor(vec![data_segment(buf + 1024, mh, 100)]);
    r1.next_va = buf + 64;
    r1.next_handle = mh;
    let r2 = recv_descriptor(vec![
        data_segment(buf + 2048, mh, 200),
        data_segment(buf + 5000, mh, 300),
    ]);
    let w3 = rdma_write_descriptor(
        vec![data_segment(buf + 8000, mh, 64)],
        0xBF00_3000,
        MemHandle(0x0020_0003),
        Some(5),
    );
    for (va, want) in [(buf, &r1), (buf + 64, &r2), (buf + 128, &w3)] {
        let bytes = cpu.read_va(mem, va, want.buffer_len()).unwrap();
        assert_eq!(bytes, want.to_bytes().unwrap(), "descriptor at {va:#x}");
        assert_eq!(&DescriptorRepr::parse(&bytes).unwrap(), want);
    }
    assert_eq!(w3.buffer_len(), 64);

    // doorbells: the 16-byte record, one per post, in order; the queue's first post
    // names its descriptor (HEAD), the second is found through the first's Next link
    let want: Vec<[u8; 16]> = [buf, buf + 64]
        .iter()
        .enumerate()
        .map(|(k, &va)| {
            DoorbellRepr {
                desc_va: va,
                desc_handle: mh,
                vi: 0,
                queue: Queue::Receive,
                flags: if k == 0 { via_abi::doorbell::HEAD } else { 0 },
            }
            .to_bytes()
        })
        .collect();
    assert_eq!(card.doorbell_log, want);
}

/// A descriptor posted again on another queue (a pool shared by VIs, as vmpi's send
/// slots are) is no longer linked into by the queue it was last posted on: that queue
/// forgets it and names its next descriptor in the doorbell (`HEAD`), so the reused
/// descriptor's Next holds only its new queue's link.
#[test]
fn a_descriptor_reused_on_another_queue_takes_no_link_from_its_old_queue() {
    let mut s = Sys::new(1, false);
    let got = Rc::new(Cell::new(None));
    let g = got.clone();
    s.load(0, Time::ZERO, move |mut v| async move {
        let nic = v.vip_open_nic("/dev/hvia0").await.unwrap();
        let ptag = v.vip_create_ptag(nic).await.unwrap();
        let mut vis = Vec::new();
        for _ in 0..2 {
            let vi = v
                .vip_create_vi(nic, &ViAttributes::reliable(ptag), None, None)
                .await
                .unwrap();
            vis.push(vi);
        }
        let (buf, mh) = registered_page(&mut v, nic, ptag).await;
        let (d1, d2, d3) = (buf, buf + 64, buf + 128);
        // d1 on VI 0; d2 on VI 1; d1 again on VI 1 (done on VI 0, in a real run);
        // then d3 on VI 0, whose last post, d1, now belongs to VI 1.
        for (vi, d) in [(vis[0], d1), (vis[1], d2), (vis[1], d1), (vis[0], d3)] {
            v.build_descriptor(d, &recv_descriptor(vec![data_segment(buf + 1024, mh, 64)]))
                .await
                .unwrap();
            v.vip_post_recv(vi, d, mh).await.unwrap();
        }
        g.set(Some((buf, mh, vis[0].0, vis[1].0)));
        done(&v, "reuse")
    });
    s.run(LIMIT);
    assert!(s.outcome(0).is_ok(), "{:?}", s.outcome(0));
    let (buf, mh, vi0, vi1) = got.get().unwrap();
    let (d1, d2, d3) = (buf, buf + 64, buf + 128);
    let head = via_abi::doorbell::HEAD;
    let want: Vec<[u8; 16]> = [
        (vi0, d1, head),
        (vi1, d2, head),
        (vi1, d1, 0),
        (vi0, d3, head),
    ]
    .iter()
    .map(|&(vi, desc_va, flags)| {
        DoorbellRepr {
            desc_va,
            desc_handle: mh,
            vi,
            queue: Queue::Receive,
            flags,
        }
        .to_bytes()
    })
    .collect();
    assert_eq!(s.card(0).doorbell_log, want);
    let next_of = |va: u64| {
        let bytes = s.cpu(0).read_va(s.mem(0), va, 64).unwrap();
        let d = DescriptorRepr::parse(&bytes).unwrap();
        (d.next_va, d.next_handle)
    };
    assert_eq!(next_of(d2), (d1, mh), "VI 1's list: d2 -> d1");
    assert_eq!(
        next_of(d1),
        (0, MemHandle(0)),
        "VI 0's post of d3 left d1 alone"
    );
}
