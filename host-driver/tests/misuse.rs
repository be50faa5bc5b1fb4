//! Misuse of the VIPL API returns the VIPL code, never a panic: calls on an unconnected
//! VI, zero-byte registrations, bad protection tags, deregistered handles, unsupported VI
//! attributes, bad descriptors (which the card reports as a format error), no card.

mod common;

use common::{connected_vi, done, mac, note, passive_peer, result_of, Log, Sys};
use host_driver::vipl::descriptor::{
    data_segment, rdma_write_descriptor, recv_descriptor, send_descriptor,
};
use host_driver::{HostCpuParams, Timeout, ViAttributes, ViHandle, VipError, VipMemAttributes};
use sim_kernel::{Duration, Time};
use via_abi::bar::Reliability;
use via_abi::{MemHandle, ProtectionTag, Status};

const LIMIT: Time = Time(20_000_000_000);

fn attrs(ptag: ProtectionTag) -> VipMemAttributes {
    VipMemAttributes {
        ptag,
        enable_rdma_write: false,
        enable_rdma_read: false,
    }
}

#[test]
fn library_refuses_misuse_with_vipl_codes() {
    let mut s = Sys::new(1, false);
    let log = Log::default();
    let l = log.clone();
    s.load(0, Time::ZERO, move |mut v| async move {
        note(&l, "open wrong name", &v.vip_open_nic("/dev/nope").await);
        note(
            &l,
            "ptag before open",
            &v.vip_create_ptag(host_driver::NicHandle(1)).await,
        );
        let nic = v.vip_open_nic("/dev/hvia0").await.unwrap();
        note(&l, "open twice", &v.vip_open_nic("/dev/hvia0").await);
        let ptag = v.vip_create_ptag(nic).await.unwrap();
        let buf = v.malloc(8192, 64).await.unwrap();
        note(
            &l,
            "register zero bytes",
            &v.vip_register_mem(nic, buf, 0, &attrs(ptag)).await,
        );
        note(
            &l,
            "register bad ptag",
            &v.vip_register_mem(nic, buf, 64, &attrs(ProtectionTag(77)))
                .await,
        );
        note(
            &l,
            "register unmapped",
            &v.vip_register_mem(nic, 0x7000_0000, 64, &attrs(ptag)).await,
        );
        let mh = v
            .vip_register_mem(nic, buf, 8192, &attrs(ptag))
            .await
            .unwrap();
        note(
            &l,
            "create vi bad ptag",
            &v.vip_create_vi(nic, &ViAttributes::reliable(ProtectionTag(99)), None, None)
                .await,
        );
        let mut a = ViAttributes::reliable(ptag);
        a.enable_rdma_read = true;
        note(
            &l,
            "create vi rdma read",
            &v.vip_create_vi(nic, &a, None, None).await,
        );
        let mut a = ViAttributes::reliable(ptag);
        a.qos = Some(1);
        note(
            &l,
            "create vi qos",
            &v.vip_create_vi(nic, &a, None, None).await,
        );
        let mut a = ViAttributes::reliable(ptag);
        a.reliability_level = Reliability::Unknown(3);
        note(
            &l,
            "create vi reliability",
            &v.vip_create_vi(nic, &a, None, None).await,
        );
        let mut a = ViAttributes::reliable(ptag);
        a.max_transfer_size = u32::MAX;
        note(
            &l,
            "create vi mtu",
            &v.vip_create_vi(nic, &a, None, None).await,
        );
        let vi = v
            .vip_create_vi(nic, &ViAttributes::reliable(ptag), None, None)
            .await
            .unwrap();
        let desc = send_descriptor(vec![data_segment(buf + 256, mh, 4)], None);
        v.build_descriptor(buf, &desc).await.unwrap();
        note(
            &l,
            "post send unconnected",
            &v.vip_post_send(vi, buf, mh).await,
        );
        note(
            &l,
            "post recv misaligned",
            &v.vip_post_recv(vi, buf + 32, mh).await,
        );
        note(
            &l,
            "post unknown vi",
            &v.vip_post_recv(ViHandle(900), buf, mh).await,
        );
        note(
            &l,
            "post forged handle",
            &v.vip_post_recv(vi, buf, MemHandle(0x0010_0042)).await,
        );
        note(&l, "send done empty", &v.vip_send_done(vi).await);
        note(
            &l,
            "send wait empty",
            &v.vip_send_wait(vi, Timeout::INFINITE).await,
        );
        note(
            &l,
            "destroy ptag in use",
            &v.vip_destroy_ptag(nic, ptag).await,
        );
        note(
            &l,
            "destroy unknown ptag",
            &v.vip_destroy_ptag(nic, ProtectionTag(1234)).await,
        );
        note(&l, "disconnect idle", &v.vip_disconnect(vi).await);
        note(
            &l,
            "accept unknown",
            &v.vip_connect_accept(host_driver::ConnHandle(5), vi).await,
        );
        note(
            &l,
            "deregister wrong va",
            &v.vip_deregister_mem(nic, buf + 64, mh).await,
        );
        note(&l, "deregister", &v.vip_deregister_mem(nic, buf, mh).await);
        note(
            &l,
            "deregister twice",
            &v.vip_deregister_mem(nic, buf, mh).await,
        );
        note(
            &l,
            "post with deregistered handle",
            &v.vip_post_recv(vi, buf, mh).await,
        );
        note(
            &l,
            "query deregistered handle",
            &v.vip_query_mem(nic, buf, mh).await,
        );
        note(&l, "destroy vi", &v.vip_destroy_vi(vi).await);
        note(&l, "destroy vi twice", &v.vip_destroy_vi(vi).await);
        note(&l, "cq zero entries", &v.vip_create_cq(nic, 0).await);
        note(&l, "close", &v.vip_close_nic(nic).await);
        note(&l, "ptag after close", &v.vip_create_ptag(nic).await);
        done(&v, "misuse")
    });
    s.run(LIMIT);
    assert!(s.outcome(0).is_ok());
    use VipError::{
        ErrorResource, InvalidMtu, InvalidParameter, InvalidPtag, InvalidQos, InvalidRdmaRead,
        InvalidReliabilityLevel, InvalidState, NotDone,
    };
    let expect = [
        ("open wrong name", Err(InvalidParameter)),
        ("ptag before open", Err(InvalidParameter)),
        ("open twice", Err(ErrorResource)),
        ("register zero bytes", Err(InvalidParameter)),
        ("register bad ptag", Err(InvalidPtag)),
        ("register unmapped", Err(InvalidParameter)),
        ("create vi bad ptag", Err(InvalidPtag)),
        ("create vi rdma read", Err(InvalidRdmaRead)),
        ("create vi qos", Err(InvalidQos)),
        ("create vi reliability", Err(InvalidReliabilityLevel)),
        ("create vi mtu", Err(InvalidMtu)),
        ("post send unconnected", Err(InvalidState)),
        ("post recv misaligned", Err(InvalidParameter)),
        ("post unknown vi", Err(InvalidParameter)),
        ("post forged handle", Err(InvalidParameter)),
        ("send done empty", Err(NotDone)),
        ("send wait empty", Err(NotDone)),
        ("destroy ptag in use", Err(ErrorResource)),
        ("destroy unknown ptag", Err(InvalidPtag)),
        ("disconnect idle", Err(InvalidState)),
        ("accept unknown", Err(InvalidParameter)),
        ("deregister wrong va", Err(InvalidParameter)),
        ("deregister", Ok(())),
        ("deregister twice", Err(InvalidParameter)),
        ("post with deregistered handle", Err(InvalidParameter)),
        ("query deregistered handle", Err(InvalidParameter)),
        ("destroy vi", Ok(())),
        ("destroy vi twice", Err(InvalidParameter)),
        ("cq zero entries", Err(InvalidParameter)),
        ("close", Ok(())),
        ("ptag after close", Err(InvalidParameter)),
    ];
    for (name, want) in expect {
        assert_eq!(result_of(&log, name), want, "{name}");
    }
    assert_eq!(log.borrow().len(), expect.len());
    // nothing bad reached the card: the unconnected post rang no doorbell
    assert_eq!(s.card(0).stats.doorbells, 0);
}

#[test]
fn card_reports_a_bad_segment_count_as_a_format_error() {
    let mut s = Sys::new(2, false);
    let log = Log::default();
    let l = log.clone();
    let status = std::rc::Rc::new(std::cell::Cell::new(Status::empty()));
    let st = status.clone();
    s.load(1, Time::ZERO, move |v| {
        passive_peer(v, mac(0), Duration::from_ns(500_000))
    });
    s.load(0, Time::ZERO, move |mut v| async move {
        let (nic, ptag, vi) = connected_vi(&mut v, false, mac(1)).await.unwrap();
        let buf = v.malloc(4096, 64).await.unwrap();
        let mh = v
            .vip_register_mem(nic, buf, 4096, &attrs(ptag))
            .await
            .unwrap();
        // An RDMA write whose segment count (1) leaves out the data segment: the total
        // length (4) no longer matches the data segments (none).
        let mut d = rdma_write_descriptor(
            vec![data_segment(buf + 512, mh, 4)],
            0x1000,
            MemHandle(1),
            None,
        );
        d.data.clear();
        d.length = 4;
        v.build_descriptor(buf, &d).await.unwrap();
        note(&l, "post", &v.vip_post_send(vi, buf, mh).await);
        let c = v
            .vip_send_wait(vi, Timeout::After(Duration::from_ns(1_000_000)))
            .await;
        note(&l, "wait", &c);
        if let Ok(c) = c {
            st.set(c.status);
            note(&l, "ok()", &c.ok());
        }
        // the queue works on afterwards: a good receive can still be posted
        let r = recv_descriptor(vec![data_segment(buf + 1024, mh, 64)]);
        v.build_descriptor(buf + 64, &r).await.unwrap();
        note(&l, "post recv", &v.vip_post_recv(vi, buf + 64, mh).await);
        done(&v, "format")
    });
    s.run(LIMIT);
    assert!(s.outcome(0).is_ok(), "{:?}", s.outcome(0));
    assert_eq!(result_of(&log, "post"), Ok(()));
    assert_eq!(result_of(&log, "wait"), Ok(()));
    assert_eq!(result_of(&log, "ok()"), Err(VipError::DescriptorError));
    assert_eq!(result_of(&log, "post recv"), Ok(()));
    assert!(status.get().is_done());
    assert!(status.get().contains(Status::FORMAT_ERROR));
    assert_eq!(s.card(0).stats.format_errors, 1);
}

#[test]
fn no_card_at_bar0_is_an_error_not_a_panic() {
    let params = HostCpuParams {
        bar0: 0xD000_0000, // nothing decodes this address: master abort, all ones
        ..HostCpuParams::default()
    };
    let mut s = Sys::with(
        1,
        false,
        params,
        common::fake_card::FakeCardParams::default(),
    );
    let log = Log::default();
    let l = log.clone();
    s.load(0, Time::ZERO, move |mut v| async move {
        note(&l, "open", &v.vip_open_nic("/dev/hvia0").await);
        done(&v, "no card")
    });
    s.run(LIMIT);
    assert_eq!(result_of(&log, "open"), Err(VipError::ErrorResource));
}

#[test]
fn another_device_at_bar0_is_refused_and_counted() {
    let params = HostCpuParams {
        // BAR0's CARD_ID lands on the card's CARD_STATUS (1): not an HVIA-GE card.
        bar0: common::BAR0 + 4,
        ..HostCpuParams::default()
    };
    let mut s = Sys::with(
        1,
        false,
        params,
        common::fake_card::FakeCardParams::default(),
    );
    let log = Log::default();
    let l = log.clone();
    s.load(0, Time::ZERO, move |mut v| async move {
        note(&l, "open", &v.vip_open_nic("/dev/hvia0").await);
        done(&v, "another device")
    });
    s.run(LIMIT);
    assert_eq!(result_of(&log, "open"), Err(VipError::ErrorResource));
    assert_eq!(s.cpu(0).stats().open_no_card, 1);
    // Starting the finished program again is counted and ignored.
    assert_eq!(s.cpu(0).stats().unexpected, 0);
    let (cpu, now) = (s.nodes[0].cpu, s.k.now());
    s.k.post(cpu, now, host_driver::HostMsg::Start.into());
    s.run(LIMIT);
    assert_eq!(s.cpu(0).stats().unexpected, 1);
    assert!(s.outcome(0).is_ok(), "{:?}", s.outcome(0));
}

#[test]
fn waits_time_out() {
    let mut s = Sys::new(2, false);
    let log = Log::default();
    let l = log.clone();
    s.load(1, Time::ZERO, move |v| {
        passive_peer(v, mac(0), Duration::from_ns(300_000))
    });
    s.load(0, Time::ZERO, move |mut v| async move {
        let (nic, ptag, vi) = connected_vi(&mut v, false, mac(1)).await.unwrap();
        let buf = v.malloc(4096, 64).await.unwrap();
        let mh = v
            .vip_register_mem(nic, buf, 4096, &attrs(ptag))
            .await
            .unwrap();
        v.build_descriptor(buf, &recv_descriptor(vec![data_segment(buf + 512, mh, 64)]))
            .await
            .unwrap();
        v.vip_post_recv(vi, buf, mh).await.unwrap();
        let t0 = v.now();
        note(
            &l,
            "recv wait",
            &v.vip_recv_wait(vi, Timeout::After(Duration::from_ns(50_000)))
                .await,
        );
        let waited = v.now() - t0;
        note(
            &l,
            "waited ~50 us",
            &(waited >= Duration::from_ns(50_000) && waited < Duration::from_ns(51_000))
                .then_some(())
                .ok_or(VipError::Timeout),
        );
        note(&l, "recv done", &v.vip_recv_done(vi).await);
        done(&v, "timeout")
    });
    s.run(LIMIT);
    assert_eq!(result_of(&log, "recv wait"), Err(VipError::Timeout));
    assert_eq!(result_of(&log, "waited ~50 us"), Ok(()));
    assert_eq!(result_of(&log, "recv done"), Err(VipError::NotDone));
}
