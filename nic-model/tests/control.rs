//! The BAR0 contract: identification registers, the ATT registration mailbox, VI
//! commands and connection set-up / teardown through control frames.

mod common;

use common::*;
use via_abi::bar::{self, CmdResult, Reliability, ViCmd, ViStateCode};
use via_abi::{MemHandle, Queue, Status};

#[test]
fn identification_registers() {
    let mut s = Sys::new(Config::default());
    assert_eq!(s.read_reg(0, bar::CARD_ID), bar::CARD_ID_VALUE);
    assert_eq!(s.read_reg(0, bar::CARD_STATUS) & 1, 1);
    let m = mac(1).octets();
    assert_eq!(
        s.read_reg(1, bar::MAC_LO),
        u32::from_le_bytes([m[0], m[1], m[2], m[3]])
    );
    assert_eq!(
        s.read_reg(1, bar::MAC_HI),
        u32::from_le_bytes([m[4], m[5], 0, 0])
    );
    assert_eq!(s.read_reg(0, 0x0F00), 0, "unknown offset reads 0");
    assert_eq!(
        s.read_reg(0, bar::ATT_LEN),
        0,
        "write-only register reads 0"
    );
    s.write_reg(0, bar::CARD_ID, 5);
    s.write_reg(0, 0x0F00, 5);
    assert_eq!(s.engine(0).stats().reg_writes_ignored, 2);
    assert_eq!(s.read_reg(0, bar::CARD_ID), bar::CARD_ID_VALUE);
}

#[test]
fn att_mailbox_register_deregister_and_refusals() {
    let mut s = Sys::new(Config::default());
    let h = s
        .register(0, 0x1000_0800, 10_000, 4, true)
        .expect("registered");
    assert!(h.is_well_formed());
    let h2 = s
        .register(0, 0x2000_0000, 100, 4, false)
        .expect("registered");
    assert_ne!(h, h2);
    // Protection tag 0 is refused; a page list that does not match the length too.
    assert_eq!(
        s.register(0, 0x3000_0000, 100, 0, true),
        Err(CmdResult::InvalidPtag)
    );
    s.map(0, 0x4000_0000, 8192);
    s.write_reg(0, bar::ATT_VA_LO, 0x4000_0000);
    s.write_reg(0, bar::ATT_VA_HI, 0);
    s.write_reg(0, bar::ATT_LEN, 8192);
    s.write_reg(0, bar::ATT_ATTR, 4 << 16);
    s.write_reg(0, bar::ATT_PAGE, 0x10_0000);
    s.write_reg(0, bar::ATT_CMD, bar::AttCmd::Register.raw());
    assert_eq!(
        CmdResult::from_raw(s.read_reg(0, bar::ATT_RESULT)),
        CmdResult::InvalidParameter
    );
    // Unknown command.
    s.write_reg(0, bar::ATT_CMD, 77);
    assert_eq!(
        CmdResult::from_raw(s.read_reg(0, bar::ATT_RESULT)),
        CmdResult::BadCommand
    );
    // Deregister: ok once, then the handle is stale.
    s.write_reg(0, bar::ATT_HANDLE, h.raw());
    s.write_reg(0, bar::ATT_CMD, bar::AttCmd::Deregister.raw());
    assert_eq!(
        CmdResult::from_raw(s.read_reg(0, bar::ATT_RESULT)),
        CmdResult::Ok
    );
    s.write_reg(0, bar::ATT_CMD, bar::AttCmd::Deregister.raw());
    assert_eq!(
        CmdResult::from_raw(s.read_reg(0, bar::ATT_RESULT)),
        CmdResult::InvalidState
    );
}

#[test]
fn att_result_reads_busy_until_the_manager_answers() {
    let mut s = Sys::new(Config::default());
    s.map(0, 0x1000_0000, 4096);
    let page = s.node(0).pt.pages_of(0x1000_0000, 4096).unwrap()[0];
    for (off, v) in [
        (bar::ATT_VA_LO, 0x1000_0000u32),
        (bar::ATT_VA_HI, 0),
        (bar::ATT_LEN, 4096),
        (bar::ATT_ATTR, 1 << 16),
        (bar::ATT_PAGE, page as u32),
    ] {
        s.post_write(0, off, &v.to_le_bytes());
    }
    s.run();
    // The command, and a read of ATT_RESULT right behind it (the CPU issues the read
    // once the write is posted in the bridge).
    s.post_write(0, bar::ATT_CMD, &1u32.to_le_bytes());
    // Read ATT_RESULT right behind the command: the manager has not answered yet.
    let ids = s.node(0).ids;
    let now = s.k.now();
    s.k.post(
        ids.bus,
        now,
        pci_model::PciMsg::CpuRead {
            tag: 999,
            addr: BAR + bar::ATT_RESULT,
            len: 4,
            reply_to: ids.cpu,
        }
        .into(),
    );
    s.run();
    let first = s.node(0).cpu.iter().find_map(|(_, m)| match m {
        pci_model::PciMsg::CpuReadData { tag: 999, data, .. } => Some(data.clone()),
        _ => None,
    });
    assert_eq!(first, Some(CmdResult::Busy.raw().to_le_bytes().to_vec()));
    assert_eq!(
        CmdResult::from_raw(s.read_reg(0, bar::ATT_RESULT)),
        CmdResult::Ok
    );
    assert!(MemHandle(s.read_reg(0, bar::ATT_HANDLE)).is_well_formed());
}

#[test]
fn vi_commands_check_their_state() {
    let mut s = Sys::new(Config::default());
    assert_eq!(s.vi_state(0, 3), ViStateCode::Absent);
    s.create_vi(0, 3, 9, Reliability::ReliableDelivery, true);
    assert_eq!(s.vi_state(0, 3), ViStateCode::Idle);
    assert_eq!(s.vi_cmd(0, 3, ViCmd::Create), CmdResult::InvalidState);
    assert_eq!(
        s.vi_cmd(0, 64, ViCmd::Create),
        CmdResult::InvalidParameter,
        "beyond max_vis"
    );
    assert_eq!(s.vi_cmd(0, 4, ViCmd::Destroy), CmdResult::InvalidState);
    assert_eq!(
        s.vi_cmd(0, 3, ViCmd::ConnectReject),
        CmdResult::InvalidState
    );
    assert_eq!(s.vi_cmd(0, 3, ViCmd::Unknown(99)), CmdResult::BadCommand);
    s.write_reg(0, bar::VI_PTAG, 0);
    assert_eq!(s.vi_cmd(0, 5, ViCmd::Create), CmdResult::InvalidPtag);
    s.write_reg(0, bar::VI_PTAG, 2);
    s.write_reg(0, bar::VI_ATTR, 3);
    assert_eq!(
        s.vi_cmd(0, 5, ViCmd::Create),
        CmdResult::InvalidParameter,
        "reliability 3"
    );
    // Listening, then cancelled with ConnectReject.
    s.write_reg(0, bar::VI_DISCRIMINATOR, 5);
    assert_eq!(s.vi_cmd(0, 3, ViCmd::ConnectWait), CmdResult::Busy);
    assert_eq!(s.vi_state(0, 3), ViStateCode::ConnectPending);
    assert_eq!(s.vi_cmd(0, 3, ViCmd::ConnectReject), CmdResult::Ok);
    assert_eq!(s.vi_state(0, 3), ViStateCode::Idle);
    assert_eq!(s.vi_cmd(0, 3, ViCmd::Destroy), CmdResult::Ok);
    assert_eq!(s.vi_state(0, 3), ViStateCode::Absent);
}

#[test]
fn a_request_waits_for_a_later_connect_wait() {
    let mut s = Sys::new(Config::default());
    s.create_vi(0, 1, 9, Reliability::Unreliable, false);
    s.create_vi(1, 6, 9, Reliability::Unreliable, false);
    let m = mac(1).octets();
    s.write_reg(
        0,
        bar::VI_PEER_MAC_LO,
        u32::from_le_bytes([m[0], m[1], m[2], m[3]]),
    );
    s.write_reg(
        0,
        bar::VI_PEER_MAC_HI,
        u32::from_le_bytes([m[4], m[5], 0, 0]),
    );
    s.write_reg(0, bar::VI_DISCRIMINATOR, 0xD15C);
    assert_eq!(s.vi_cmd(0, 1, ViCmd::ConnectRequest), CmdResult::Busy);
    assert_eq!(
        s.vi_state(0, 1),
        ViStateCode::ConnectPending,
        "kept by the peer"
    );
    s.write_reg(1, bar::VI_DISCRIMINATOR, 0xD15C);
    s.write_reg(1, bar::VI_SEL, 6);
    s.write_reg(1, bar::VI_CMD, ViCmd::ConnectWait.raw());
    s.run();
    assert_eq!(s.vi_state(1, 6), ViStateCode::Connected);
    assert_eq!(
        CmdResult::from_raw(s.read_reg(1, bar::VI_RESULT)),
        CmdResult::Ok
    );
    assert_eq!(s.vi_state(0, 1), ViStateCode::Connected);
    assert_eq!(
        CmdResult::from_raw(s.read_reg(0, bar::VI_RESULT)),
        CmdResult::Ok
    );
    assert_eq!(s.read_reg(0, bar::VI_PEER_VI), 6);
    s.write_reg(1, bar::VI_SEL, 6);
    assert_eq!(s.read_reg(1, bar::VI_PEER_VI), 1);
}

#[test]
fn a_reliability_mismatch_is_rejected() {
    let mut s = Sys::new(Config::default());
    s.create_vi(0, 0, 9, Reliability::Unreliable, false);
    s.create_vi(1, 0, 9, Reliability::ReliableDelivery, false);
    s.write_reg(1, bar::VI_DISCRIMINATOR, 1);
    s.vi_cmd(1, 0, ViCmd::ConnectWait);
    let m = mac(1).octets();
    s.write_reg(
        0,
        bar::VI_PEER_MAC_LO,
        u32::from_le_bytes([m[0], m[1], m[2], m[3]]),
    );
    s.write_reg(
        0,
        bar::VI_PEER_MAC_HI,
        u32::from_le_bytes([m[4], m[5], 0, 0]),
    );
    s.write_reg(0, bar::VI_DISCRIMINATOR, 1);
    s.vi_cmd(0, 0, ViCmd::ConnectRequest);
    s.run();
    assert_eq!(s.vi_state(0, 0), ViStateCode::Idle);
    assert_eq!(
        CmdResult::from_raw(s.read_reg(0, bar::VI_RESULT)),
        CmdResult::Rejected
    );
    assert_eq!(
        s.vi_state(1, 0),
        ViStateCode::ConnectPending,
        "still listening"
    );
}

#[test]
fn disconnect_breaks_the_peer_and_flushes_posted_receives() {
    let mut s = Sys::new(Config::default());
    for i in 0..2 {
        s.create_vi(i, 0, 9, Reliability::Unreliable, false);
    }
    s.connect(0, 0, 3);
    let desc = region(&mut s, 1, 0x1000_0000, 4096, 9, false);
    let buf = region(&mut s, 1, 0x2000_0000, 64, 9, false);
    s.post(
        1,
        0,
        Queue::Receive,
        desc.va,
        desc.h,
        &recv_desc(&[(buf.va, buf.h, 64)]),
    );
    s.run();
    assert_eq!(s.vi_cmd(0, 0, ViCmd::Disconnect), CmdResult::Ok);
    s.run();
    assert_eq!(s.vi_state(0, 0), ViStateCode::Idle);
    assert_eq!(s.vi_state(1, 0), ViStateCode::Error);
    let st = s.status(1, desc.va);
    assert!(st.is_done());
    assert_eq!(st.errors(), Status::FLUSHED);
    // A receive posted on a VI in error completes flushed at once.
    s.post(
        1,
        0,
        Queue::Receive,
        desc.va + 64,
        desc.h,
        &recv_desc(&[(buf.va, buf.h, 64)]),
    );
    s.run();
    assert_eq!(s.status(1, desc.va + 64).errors(), Status::FLUSHED);
    assert_eq!(s.vi_cmd(1, 0, ViCmd::Disconnect), CmdResult::Ok);
    assert_eq!(s.vi_cmd(1, 0, ViCmd::Destroy), CmdResult::Ok);
}

#[test]
fn a_send_on_an_unconnected_vi_is_flushed() {
    let mut s = Sys::new(Config::default());
    s.create_vi(0, 0, 9, Reliability::Unreliable, false);
    let desc = region(&mut s, 0, 0x1000_0000, 4096, 9, false);
    let buf = region(&mut s, 0, 0x2000_0000, 64, 9, false);
    s.post(
        0,
        0,
        Queue::Send,
        desc.va,
        desc.h,
        &send_desc(&[(buf.va, buf.h, 64)], None),
    );
    s.run();
    let st = s.status(0, desc.va);
    assert!(st.is_done());
    assert_eq!(st.errors(), Status::FLUSHED);
    // A doorbell for a VI that does not exist is counted and dropped.
    s.post(
        0,
        9,
        Queue::Send,
        desc.va + 64,
        desc.h,
        &send_desc(&[], None),
    );
    s.run();
    assert_eq!(s.engine(0).stats().doorbell_no_vi, 1);
    assert!(!s.status(0, desc.va + 64).is_done());
}

#[test]
fn the_host_disconnects_in_the_middle_of_a_message() {
    let mut s = Sys::new(Config::default());
    for i in 0..2 {
        s.create_vi(i, 0, 9, Reliability::Unreliable, false);
    }
    s.connect(0, 0, 3);
    let sdesc = region(&mut s, 0, 0x1000_0000, 4096, 9, false);
    let rdesc = region(&mut s, 1, 0x1000_0000, 4096, 9, false);
    let a = region(&mut s, 0, 0x2000_0000, 20_000, 9, false);
    let b = region(&mut s, 1, 0x2000_0000, 20_000, 9, false);
    s.post(
        1,
        0,
        Queue::Receive,
        rdesc.va,
        rdesc.h,
        &recv_desc(&[(b.va, b.h, 20_000)]),
    );
    s.run();
    s.post(
        0,
        0,
        Queue::Send,
        sdesc.va,
        sdesc.h,
        &send_desc(&[(a.va, a.h, 20_000)], None),
    );
    let until = s.k.now() + sim_kernel::Duration::from_ns(60_000);
    s.k.run_until(&mut s.w, until);
    assert!(!s.status(1, rdesc.va).is_done(), "still receiving");
    s.post_write(1, bar::VI_SEL, &0u32.to_le_bytes());
    s.post_write(1, bar::VI_CMD, &ViCmd::Disconnect.raw().to_le_bytes());
    s.run();
    assert!(
        s.status(0, sdesc.va).is_done(),
        "unreliable sender completes"
    );
    let rt = s.status(1, rdesc.va);
    assert!(rt.is_done());
    assert_eq!(rt.errors(), Status::FLUSHED);
    assert!(s.engine(0).is_idle() && s.engine(1).is_idle());
    assert!(
        s.engine(1).stats().rx_not_connected > 0,
        "later fragments dropped"
    );
}
