//! VMPI on the simulated cluster: every program below runs as host code on full nodes
//! (CPU, bridge, PCI, card, DP83820, wire, switch), and every received byte is compared
//! with what was sent.

use host_driver::{ProgramError, ProgramReport, ProgramResult, Vipl};
use std::future::Future;
use testbenches::config::{ConfigSource, SystemConfig, DEFAULT_PRESET};
use testbenches::system::run_spmd;
use via_abi::MacAddr;
use vmpi::collective::Datatype;
use vmpi::{Comm, MpiConfig, MpiStats, Rank, Source, Tag, TagSel};

fn config(nodes: usize) -> SystemConfig {
    let n = format!("topology.nodes={nodes}");
    let mut sets = vec![n.as_str()];
    if nodes > 2 {
        sets.push("topology.switch=store-and-forward");
    }
    SystemConfig::load(&ConfigSource::Preset(DEFAULT_PRESET.into()), &sets).expect("valid")
}

/// Runs `prog(vipl, rank, macs)` on every node; each node's result.
fn run_world<F, Fut>(nodes: usize, prog: F) -> Vec<ProgramResult>
where
    F: Fn(Vipl, Rank, Vec<MacAddr>) -> Fut + Clone + 'static,
    Fut: Future<Output = ProgramResult> + 'static,
{
    match run_spmd(&config(nodes), prog) {
        Ok((reports, _)) => reports.into_iter().map(Ok).collect(),
        Err(e) => panic!("the run failed: {e}"),
    }
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(13).wrapping_add(seed))
        .collect()
}

fn mismatch(what: &'static str) -> ProgramError {
    ProgramError::Protocol(what)
}

async fn done(comm: Comm, name: &'static str) -> ProgramResult {
    let v = comm.finalize().await?;
    Ok(ProgramReport {
        program: name,
        finished: v.now(),
        ..ProgramReport::default()
    })
}

/// Eager and synchronous sizes both ways, just below, at and above the eager limit.
#[test]
fn pingpong_moves_every_byte_in_both_protocols() {
    let limit = MpiConfig::default().eager_limit as usize;
    let sizes = [1usize, 4, 1460, limit, limit + 1, 65536];
    let res = run_world(2, move |v, rank, macs| async move {
        let mut c = Comm::init(v, rank, macs, MpiConfig::default()).await?;
        let buf = c
            .vipl()
            .malloc(65536, 64)
            .await
            .map_err(|_| mismatch("malloc"))?;
        for (i, &n) in sizes.iter().enumerate() {
            let len = u32::try_from(n).expect("small");
            let want = pattern(n, i as u8);
            if rank == Rank(0) {
                c.vipl()
                    .poke(buf, &want)
                    .await
                    .map_err(|_| mismatch("poke"))?;
                c.send(buf, len, Rank(1), Tag(i as i32)).await?;
                let st = c.recv(buf, len, Source::Rank(Rank(1)), TagSel::Any).await?;
                if st.len != len || st.tag != Tag(100 + i as i32) {
                    return Err(mismatch("reply status"));
                }
            } else {
                let st = c
                    .recv(buf, len, Source::Any, TagSel::Tag(Tag(i as i32)))
                    .await?;
                if st.len != len || st.source != Rank(0) || st.truncated {
                    return Err(mismatch("status"));
                }
                c.send(buf, len, Rank(0), Tag(100 + i as i32)).await?;
            }
            let got = c
                .vipl()
                .peek(buf, n as u64)
                .await
                .map_err(|_| mismatch("peek"))?;
            if got != want {
                return Err(mismatch("bytes differ"));
            }
        }
        let s: MpiStats = c.stats();
        // 2 synchronous sizes per direction; 4 eager ones.
        if s.synchronous_sends != 2 || s.eager_sends < 4 {
            return Err(mismatch("protocol per size"));
        }
        done(c, "mpi-pingpong").await
    });
    for r in res {
        r.expect("every node succeeds");
    }
}

/// Four ranks: a message that arrives before its receive (the stash path), ANY_SOURCE
/// with non-overtaking per sender, Bcast, Allreduce on f64 and i64, Barrier.
#[test]
fn four_ranks_collectives_and_matching() {
    let res = run_world(4, move |v, rank, macs| async move {
        let mut c = Comm::init(v, rank, macs, MpiConfig::default()).await?;
        let buf = c
            .vipl()
            .malloc(4096, 64)
            .await
            .map_err(|_| mismatch("malloc"))?;
        let me = usize::from(rank.0);
        // Ranks 1..3 each send two tagged messages to 0 before 0 posts anything.
        if rank != Rank(0) {
            for k in 0..2u8 {
                c.vipl()
                    .poke(buf, &pattern(16, 10 * rank.0 as u8 + k))
                    .await
                    .map_err(|_| mismatch("poke"))?;
                c.send(buf, 16, Rank(0), Tag(7)).await?;
            }
        } else {
            c.barrier().await?; // by now every message is in (or on its way)
        }
        if rank == Rank(0) {
            let mut seen = [0u8; 4];
            for _ in 0..6 {
                let st = c.recv(buf, 16, Source::Any, TagSel::Tag(Tag(7))).await?;
                let s = usize::from(st.source.0);
                let got = c.vipl().peek(buf, 16).await.map_err(|_| mismatch("peek"))?;
                if got != pattern(16, 10 * st.source.0 as u8 + seen[s]) {
                    return Err(mismatch("a message overtook another from its sender"));
                }
                seen[s] += 1;
            }
            if c.stats().unexpected == 0 {
                return Err(mismatch("no message took the stash path"));
            }
        } else {
            c.barrier().await?;
        }
        // Bcast 3000 bytes from rank 2.
        if rank == Rank(2) {
            c.vipl()
                .poke(buf, &pattern(3000, 99))
                .await
                .map_err(|_| mismatch("poke"))?;
        }
        c.bcast(buf, 3000, Rank(2)).await?;
        let got = c
            .vipl()
            .peek(buf, 3000)
            .await
            .map_err(|_| mismatch("peek"))?;
        if got != pattern(3000, 99) {
            return Err(mismatch("bcast bytes"));
        }
        // Allreduce: element i of rank r is r + i/4 (f64) and r * 1000 + i (i64).
        let xs: Vec<u8> = (0..8)
            .flat_map(|i| (me as f64 + f64::from(i) / 4.0).to_le_bytes())
            .collect();
        c.vipl()
            .poke(buf, &xs)
            .await
            .map_err(|_| mismatch("poke"))?;
        c.allreduce(buf, buf + 1024, 8, Datatype::F64).await?;
        let got = c
            .vipl()
            .peek(buf + 1024, 64)
            .await
            .map_err(|_| mismatch("peek"))?;
        for i in 0..8 {
            let v = f64::from_le_bytes(got[8 * i..8 * i + 8].try_into().expect("8"));
            if v != 6.0 + i as f64 {
                return Err(mismatch("allreduce f64"));
            }
        }
        let ys: Vec<u8> = (0..8)
            .flat_map(|i| (me as i64 * 1000 + i).to_le_bytes())
            .collect();
        c.vipl()
            .poke(buf, &ys)
            .await
            .map_err(|_| mismatch("poke"))?;
        c.allreduce(buf, buf + 2048, 8, Datatype::I64).await?;
        let got = c
            .vipl()
            .peek(buf + 2048, 64)
            .await
            .map_err(|_| mismatch("peek"))?;
        for i in 0..8 {
            let v = i64::from_le_bytes(got[8 * i..8 * i + 8].try_into().expect("8"));
            if v != 6000 + 4 * i as i64 {
                return Err(mismatch("allreduce i64"));
            }
        }
        done(c, "mpi-four").await
    });
    for r in res {
        r.expect("every node succeeds");
    }
}

/// The ping-pong program of `hvia mpi pingpong`: a record per round trip, every byte
/// checked, eager below the limit and synchronous above it.
#[test]
fn the_mpi_pingpong_program_checks_every_byte() {
    use std::cell::RefCell;
    use std::rc::Rc;
    use vmpi::programs::{mpi_pingpong, Bench};
    let limit = MpiConfig::default().eager_limit;
    let bench = Bench {
        sizes: vec![4, limit, limit + 1, 65536],
        iterations: 2,
        warmup: 1,
    };
    let sinks: Vec<Rc<RefCell<MpiStats>>> = (0..2).map(|_| Rc::default()).collect();
    let s2 = sinks.clone();
    let (reports, _) = run_spmd(&config(2), move |v, rank, macs| {
        let sink = s2[usize::from(rank.0)].clone();
        mpi_pingpong(v, rank, macs, MpiConfig::default(), bench.clone(), sink)
    })
    .expect("runs");
    let recs = &reports[0].iterations;
    assert_eq!(recs.len(), 4 * 3);
    for r in recs {
        assert_eq!(r.verified_bytes, u64::from(r.bytes));
        assert!(r.end > r.start);
    }
    let s = *sinks[0].borrow();
    assert_eq!(s.synchronous_sends, 2 * 3, "two sizes above the limit");
    assert_eq!(s.eager_sends, 2 * 3);
    assert!(
        s.registrations >= 2 * 3 * 2,
        "per-call registration, both sides"
    );
}

/// Eager credits exhausted on the real system: with 3 buffers per peer the sender of a
/// burst of 24 messages runs out of credits (the last is kept for credit messages) and
/// waits for the receiver's credit returns; every message arrives, in order.
#[test]
fn a_burst_past_the_eager_credits_waits_and_arrives_in_order() {
    use std::cell::RefCell;
    use std::rc::Rc;
    let cfg = MpiConfig {
        buffers_per_peer: 3,
        credit_threshold: 2,
        ..MpiConfig::default()
    };
    let stats: Vec<Rc<RefCell<MpiStats>>> = (0..2).map(|_| Rc::default()).collect();
    let st = stats.clone();
    let res = run_world(2, move |v, rank, macs| {
        let sink = st[usize::from(rank.0)].clone();
        async move {
            let mut c = Comm::init(v, rank, macs, cfg).await?;
            let buf = c
                .vipl()
                .malloc(24 * 16, 64)
                .await
                .map_err(|_| mismatch("malloc"))?;
            if rank == Rank(0) {
                let mut reqs = Vec::new();
                for k in 0..24u8 {
                    let at = buf + 16 * u64::from(k);
                    c.vipl()
                        .poke(at, &pattern(16, k))
                        .await
                        .map_err(|_| mismatch("poke"))?;
                    reqs.push(c.isend(at, 16, Rank(1), Tag(5)).await?);
                }
                c.waitall(&reqs).await?;
            } else {
                // Receive late: the sender has long run out of credits.
                c.vipl().sleep(sim_kernel::Duration::from_ns(500_000)).await;
                for k in 0..24u8 {
                    c.recv(buf, 16, Source::Rank(Rank(0)), TagSel::Tag(Tag(5)))
                        .await?;
                    let got = c.vipl().peek(buf, 16).await.map_err(|_| mismatch("peek"))?;
                    if got != pattern(16, k) {
                        return Err(mismatch("out of order or corrupted"));
                    }
                }
            }
            *sink.borrow_mut() = c.stats();
            done(c, "burst").await
        }
    });
    for r in res {
        r.expect("every node succeeds");
    }
    let receiver = *stats[1].borrow();
    assert!(
        receiver.control_messages > 0,
        "credits came back in credit messages"
    );
    assert_eq!(stats[0].borrow().eager_sends, 24);
}

/// The same four-rank program twice: the same simulated finish time on every rank.
#[test]
fn mpi_runs_are_deterministic() {
    let prog = |v: Vipl, rank: Rank, macs: Vec<MacAddr>| async move {
        let mut c = Comm::init(v, rank, macs, MpiConfig::default()).await?;
        let buf = c
            .vipl()
            .malloc(8192, 64)
            .await
            .map_err(|_| mismatch("malloc"))?;
        c.bcast(buf, 5000, Rank(1)).await?;
        c.allreduce(buf, buf + 4096, 16, Datatype::F64).await?;
        done(c, "det").await
    };
    let a: Vec<_> = run_world(4, prog)
        .into_iter()
        .map(|r| r.expect("ok").finished)
        .collect();
    let b: Vec<_> = run_world(4, prog)
        .into_iter()
        .map(|r| r.expect("ok").finished)
        .collect();
    assert_eq!(a, b);
}

/// A wait's budget grows with the synchronous bytes under way: with a 1 ms base a
/// 256 KiB transfer (about 2.8 ms, one completion at its end) still completes, while a
/// receive that nothing will ever match fails after the budget, naming the call.
#[test]
fn the_progress_budget_grows_with_the_bytes_under_way() {
    let cfg = MpiConfig {
        progress_timeout: sim_kernel::Duration::from_ns(1_000_000),
        ..MpiConfig::default()
    };
    let res = run_world(2, move |v, rank, macs| async move {
        let mut c = Comm::init(v, rank, macs, cfg).await?;
        let n: u32 = 256 * 1024;
        let want = pattern(n as usize, 3);
        let buf = c
            .vipl()
            .malloc(u64::from(n), 64)
            .await
            .map_err(|_| mismatch("malloc"))?;
        let peer = Rank(1 - rank.0);
        if rank == Rank(0) {
            c.vipl()
                .poke(buf, &want)
                .await
                .map_err(|_| mismatch("poke"))?;
            c.send(buf, n, peer, Tag(1)).await?;
        } else {
            c.recv(buf, n, Source::Rank(peer), TagSel::Tag(Tag(1)))
                .await?;
            let got = c
                .vipl()
                .peek(buf, u64::from(n))
                .await
                .map_err(|_| mismatch("peek"))?;
            if got != want {
                return Err(mismatch("bytes"));
            }
        }
        // Nobody sends tag 2: each side's wait gives up after the 1 ms budget (both at
        // about the same time, so they meet again in MPI_Finalize's barrier).
        let t = c.vipl().now();
        let e = c
            .recv(buf, 4, Source::Rank(peer), TagSel::Tag(Tag(2)))
            .await;
        let waited = c.vipl().now() - t;
        if !matches!(
            e,
            Err(vmpi::MpiError::Stalled {
                call: "MPI_Wait",
                ..
            })
        ) || waited.0 < 1_000_000_000
        {
            return Err(mismatch("an unmatched receive did not give up"));
        }
        done(c, "budget").await
    });
    for r in res {
        r.expect("every node succeeds");
    }
}
