//! VBSP (BSPlib) on the simulated cluster: puts combined and by RDMA write, gets that
//! see the areas before the superstep's puts, bulk-synchronous messages, registration
//! taking effect at the sync; every byte compared.

use host_driver::{ProgramError, ProgramReport, ProgramResult};
use testbenches::config::{ConfigSource, SystemConfig, DEFAULT_PRESET};
use testbenches::system::{RunEnd, System};
use vbsp::{Bsp, BspConfig, BspError};
use vmpi::Rank;

fn bad(what: &'static str) -> ProgramError {
    ProgramError::Protocol(what)
}

fn err(e: BspError) -> ProgramError {
    eprintln!("BSP: {e}");
    bad("BSP call failed")
}

#[test]
fn a_superstep_of_puts_gets_and_messages_on_four_processes() {
    // The published card answers gets by request and reply; with RDMA read, by reads.
    superstep_on("hvia-ge", false);
    superstep_on("rdma-read", true);
}

fn superstep_on(preset: &str, reads: bool) {
    let cfg = SystemConfig::load(
        &ConfigSource::Preset(preset.into()),
        &["topology.nodes=4", "topology.switch=store-and-forward"],
    )
    .expect("valid");
    let mut sys = System::build(&cfg, false).expect("builds");
    let macs = sys.macs.clone();
    for n in 0..4u16 {
        let m = macs.clone();
        sys.cpu_mut(usize::from(n))
            .expect("node")
            .load(move |v| async move {
                let mut b = Bsp::begin(v, Rank(n), m, BspConfig::default())
                    .await
                    .map_err(err)?;
                let p = b.nprocs();
                let me = b.pid();
                let next = (me + 1) % p;
                let prev = (me + p - 1) % p;
                let v = b.comm().vipl();
                let a = v.malloc(8 * 4, 64).await.map_err(|_| bad("malloc"))?;
                let big = v.malloc(4096, 64).await.map_err(|_| bad("malloc"))?;
                let src = v.malloc(4096, 64).await.map_err(|_| bad("malloc"))?;
                let got = v.malloc(64, 64).await.map_err(|_| bad("malloc"))?;
                let msg = v.malloc(64, 64).await.map_err(|_| bad("malloc"))?;
                v.poke(a, &[0xEE; 32]).await.map_err(|_| bad("poke"))?;
                b.push_reg(a, 32).await.map_err(err)?;
                b.push_reg(big, 4096).await.map_err(err)?;
                b.set_tagsize(4);
                b.sync().await.map_err(err)?;
                // Superstep 1: my id into slot `me` of every process's `a` (combined puts),
                // 4 KiB into `next`'s `big` (RDMA write), a get of `prev`'s slot `prev`, a
                // message to process 0.
                let word: Vec<u8> = (0..8).map(|i| (me as u8) * 16 + i).collect();
                let v = b.comm().vipl();
                v.poke(src, &word).await.map_err(|_| bad("poke"))?;
                for q in 0..p {
                    b.put(q, src, a, 8 * u64::from(me), 8).await.map_err(err)?;
                }
                let bulk: Vec<u8> = (0..4096u32).map(|i| (i as u8) ^ (me as u8)).collect();
                b.comm()
                    .vipl()
                    .poke(src, &bulk)
                    .await
                    .map_err(|_| bad("poke"))?;
                b.put(next, src, big, 0, 4096).await.map_err(err)?;
                // The source may change right after the put: the put copied it.
                b.comm()
                    .vipl()
                    .poke(src, &[0; 4096])
                    .await
                    .map_err(|_| bad("poke"))?;
                b.get(prev, a, 8 * u64::from(prev), got, 8)
                    .await
                    .map_err(err)?;
                b.comm()
                    .vipl()
                    .poke(msg, &[me as u8; 10])
                    .await
                    .map_err(|_| bad("poke"))?;
                b.send(0, &u32::from(me).to_le_bytes(), msg, 10)
                    .await
                    .map_err(err)?;
                b.sync().await.map_err(err)?;
                let v = b.comm().vipl();
                let all = v.peek(a, 32).await.map_err(|_| bad("peek"))?;
                for q in 0..4u8 {
                    let want: Vec<u8> = (0..8).map(|i| q * 16 + i).collect();
                    if all[8 * usize::from(q)..8 * usize::from(q) + 8] != want[..] {
                        return Err(bad("a combined put is missing"));
                    }
                }
                let g = v.peek(got, 8).await.map_err(|_| bad("peek"))?;
                if g != [0xEE; 8] {
                    return Err(bad("a get saw a put of its own superstep"));
                }
                let bb = v.peek(big, 4096).await.map_err(|_| bad("peek"))?;
                if bb
                    .iter()
                    .enumerate()
                    .any(|(i, &x)| x != (i as u8) ^ (prev as u8))
                {
                    return Err(bad("the RDMA put's bytes differ"));
                }
                if me == 0 {
                    if b.qsize() != (4, 40) {
                        return Err(bad("message count"));
                    }
                    for q in 0..4u32 {
                        let (len, tag) = b.get_tag().ok_or(bad("no message"))?;
                        if len != 10 || tag != q.to_le_bytes() {
                            return Err(bad("messages out of source order"));
                        }
                        let n = b.move_msg(got, 64).await.map_err(err)?;
                        let m = b
                            .comm()
                            .vipl()
                            .peek(got, 10)
                            .await
                            .map_err(|_| bad("peek"))?;
                        if n != Some(10) || m != [q as u8; 10] {
                            return Err(bad("message bytes"));
                        }
                    }
                }
                let s = b.stats();
                if s.rdma_puts != 1 || s.combined_puts != 3 || s.long_syncs != 1 {
                    return Err(bad("puts not combined or not by RDMA"));
                }
                let by_read = (s.rdma_gets, s.gets_served) == (1, 0);
                let by_reply = (s.rdma_gets, s.gets_served) == (0, 1);
                if (reads && !by_read) || (!reads && !by_reply) {
                    return Err(bad("the get did not go the card's way"));
                }
                // An empty superstep: one round.
                b.sync().await.map_err(err)?;
                if b.stats().long_syncs != 1 {
                    return Err(bad("an empty superstep took more rounds"));
                }
                let v = b.end().await.map_err(err)?;
                Ok(ProgramReport {
                    program: "bsp",
                    finished: v.now(),
                    ..ProgramReport::default()
                })
            });
    }
    sys.start();
    let end = sys.run_programs();
    let out: Vec<ProgramResult> = (0..4)
        .map(|n| {
            sys.cpu_mut(n)
                .and_then(host_driver::HostCpu::take_outcome)
                .unwrap_or(Err(ProgramError::Stuck))
        })
        .collect();
    assert!(matches!(end, RunEnd::Finished), "{out:?}");
    for r in out {
        r.expect("every process succeeds");
    }
}

/// LU on a 2 x 2 grid: the factors equal the host's, computed in the same order.
#[test]
fn lu_on_a_two_by_two_grid_equals_the_host_computation() {
    use std::cell::RefCell;
    use std::rc::Rc;
    use testbenches::system::run_spmd;
    use vbsp::programs::{bsp_lu, lu_reference, LuParams};
    for n in [1u32, 7, 24] {
        let cfg = SystemConfig::load(
            &ConfigSource::Preset(DEFAULT_PRESET.into()),
            &["topology.nodes=4", "topology.switch=store-and-forward"],
        )
        .expect("valid");
        let sink: Rc<RefCell<Vec<f64>>> = Rc::default();
        let sk = sink.clone();
        let (reports, _) = run_spmd(&cfg, move |v, rank, macs| {
            bsp_lu(
                v,
                rank,
                macs,
                BspConfig::default(),
                LuParams { n, s: 2, t: 2 },
                sk.clone(),
            )
        })
        .expect("runs");
        let want = lu_reference(n);
        let got = sink.borrow();
        assert_eq!(got.len(), want.len());
        let worst = got
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f64, f64::max);
        assert!(
            worst <= 1e-12 * f64::from(n),
            "n = {n}: worst error {worst}"
        );
        let r = &reports[0].iterations[0];
        assert!(r.end > r.start, "n = {n}: the factorization takes time");
    }
}

/// The probe on two processes: L from empty supersteps, g from total exchanges; a
/// larger h-relation takes longer.
#[test]
fn probe_measures_g_and_l() {
    use testbenches::system::run_spmd;
    use vbsp::programs::{bsp_probe, fit, ProbeParams};
    let none: &[&str] = &[];
    let cfg =
        SystemConfig::load(&ConfigSource::Preset(DEFAULT_PRESET.into()), none).expect("valid");
    let p = ProbeParams {
        empty: 3,
        hs: vec![1024, 8192, 32_768],
        reps: 2,
    };
    let (reports, _) = run_spmd(&cfg, move |v, rank, macs| {
        bsp_probe(v, rank, macs, BspConfig::default(), p.clone())
    })
    .expect("runs");
    let recs = &reports[0].iterations;
    assert_eq!(recs.len(), 3 + 3 * 2);
    assert!(recs
        .iter()
        .filter(|r| r.bytes > 0)
        .all(|r| r.verified_bytes == u64::from(r.bytes) / 8 * 8));
    let c = fit(recs);
    assert!(
        c.l_ns > 1_000.0,
        "an empty superstep is a message each way: {c:?}"
    );
    assert!(c.g_ns_per_byte > 1.0, "a byte costs time: {c:?}");
}
