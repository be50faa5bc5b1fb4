//! MPI programs users run and copy: the ping-pong of `hvia mpi pingpong` (`MPI_Send` /
//! `MPI_Recv` of each size between ranks 0 and 1, the other ranks idle in
//! `MPI_Finalize`) and the broadcast of `hvia mpi bcast`. Timed with the host clock;
//! buffers filled and checked by instrumentation outside the timed span.

use crate::collective::Datatype;
use crate::comm::{Comm, MpiConfig, MpiError, MpiStats};
use crate::types::{Rank, Source, Tag, TagSel};
use host_driver::programs::{pattern, Direction};
use host_driver::{IterationRecord, ProgramError, ProgramReport, ProgramResult, Vipl};
use std::cell::RefCell;
use std::rc::Rc;
use via_abi::MacAddr;

/// What a ping-pong or broadcast does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bench {
    /// Message sizes \[bytes\], in order.
    pub sizes: Vec<u32>,
    /// Timed repetitions per size.
    pub iterations: u32,
    /// Untimed repetitions before them.
    pub warmup: u32,
}

/// Where a program leaves its library statistics for the harness.
pub type StatsSink = Rc<RefCell<MpiStats>>;

fn vipl_err(call: &'static str) -> impl FnOnce(host_driver::VipError) -> MpiError {
    move |error| MpiError::Vipl { call, error }
}

/// Checks `len` bytes at `va` against `want` (instrumentation); the bytes checked.
async fn check(comm: &mut Comm, va: u64, want: &[u8], i: u32) -> Result<u64, ProgramError> {
    let got = comm
        .vipl()
        .peek(va, want.len() as u64)
        .await
        .map_err(|error| ProgramError::Vipl {
            call: "verify",
            error,
        })?;
    match got.iter().zip(want).position(|(g, w)| g != w) {
        Some(k) => Err(ProgramError::DataMismatch {
            iteration: i,
            offset: k as u64,
            expected: want[k],
            found: got[k],
        }),
        None => Ok(want.len() as u64),
    }
}

/// `MPI_Init` (and a barrier if `barrier`: every rank through its set-up), and a buffer
/// for the largest size; the comm, the buffer and when set-up was done.
async fn start(
    vipl: Vipl,
    rank: Rank,
    macs: Vec<MacAddr>,
    cfg: MpiConfig,
    bench: &Bench,
    barrier: bool,
) -> Result<(Comm, u64, sim_kernel::Time), ProgramError> {
    let mut comm = Comm::init(vipl, rank, macs, cfg).await?;
    if barrier {
        comm.barrier().await?;
    }
    let setup_done = comm.vipl().now();
    let largest = bench.sizes.iter().copied().max().unwrap_or(1).max(1);
    let buf = comm
        .vipl()
        .malloc(u64::from(largest), 64)
        .await
        .map_err(vipl_err("malloc"))?;
    Ok((comm, buf, setup_done))
}

/// The MPI ping-pong on rank `rank`: rank 0 sends each size to rank 1 and waits for it
/// back (one record per round trip, `end - start` = two one-way trips); rank 1 echoes;
/// others only take part in `MPI_Init` and `MPI_Finalize`. Every message's bytes are
/// checked at its receiver.
///
/// # Errors
/// The first MPI call that fails; a byte that differs.
pub async fn mpi_pingpong(
    vipl: Vipl,
    rank: Rank,
    macs: Vec<MacAddr>,
    cfg: MpiConfig,
    bench: Bench,
    sink: StatsSink,
) -> ProgramResult {
    let (mut comm, buf, setup_done) = start(vipl, rank, macs, cfg, &bench, false).await?;
    let mut records = Vec::new();
    let mut index = 0u32;
    if rank.0 <= 1 {
        let peer = Rank(1 - rank.0);
        for &size in &bench.sizes {
            for k in 0..bench.warmup.saturating_add(bench.iterations) {
                let ping = pattern(index, Direction::Ping, size);
                let pong = pattern(index, Direction::Pong, size);
                let tag = Tag(i32::try_from(index % 0x7FFF_FFFF).unwrap_or(0));
                let src = Source::Rank(peer);
                if rank.0 == 0 {
                    comm.vipl()
                        .poke(buf, &ping)
                        .await
                        .map_err(vipl_err("poke"))?;
                    let start = comm.vipl().now();
                    comm.send(buf, size, peer, tag).await?;
                    let st = comm.recv(buf, size, src, TagSel::Tag(tag)).await?;
                    let end = comm.vipl().now();
                    if st.len != size || st.truncated {
                        return Err(ProgramError::Protocol("reply of the wrong length"));
                    }
                    let v = check(&mut comm, buf, &pong, index).await?;
                    records.push(IterationRecord {
                        index,
                        bytes: size,
                        start,
                        end,
                        verified_bytes: v,
                        warmup: k < bench.warmup,
                    });
                } else {
                    let st = comm.recv(buf, size, src, TagSel::Tag(tag)).await?;
                    if st.len != size || st.truncated {
                        return Err(ProgramError::Protocol("message of the wrong length"));
                    }
                    check(&mut comm, buf, &ping, index).await?;
                    comm.vipl()
                        .poke(buf, &pong)
                        .await
                        .map_err(vipl_err("poke"))?;
                    comm.send(buf, size, peer, tag).await?;
                }
                index += 1;
            }
        }
    }
    *sink.borrow_mut() = comm.stats();
    let v = comm.finalize().await?;
    Ok(ProgramReport {
        program: "mpi-pingpong",
        iterations: records,
        setup_done,
        finished: v.now(),
    })
}

/// `MPI_Bcast` of each size from rank 0 to every rank, then an `MPI_Barrier`; a record
/// per broadcast on every rank (its start to the end of its own part), and every
/// byte checked on every rank. Rank 0's records span its part only; the harness takes
/// the latest end over the ranks as the broadcast's completion.
///
/// # Errors
/// The first MPI call that fails; a byte that differs.
pub async fn mpi_bcast(
    vipl: Vipl,
    rank: Rank,
    macs: Vec<MacAddr>,
    cfg: MpiConfig,
    bench: Bench,
    sink: StatsSink,
) -> ProgramResult {
    let (mut comm, buf, setup_done) = start(vipl, rank, macs, cfg, &bench, true).await?;
    let mut records = Vec::new();
    let mut index = 0u32;
    for &size in &bench.sizes {
        for k in 0..bench.warmup.saturating_add(bench.iterations) {
            let data = pattern(index, Direction::Ping, size);
            if rank.0 == 0 {
                comm.vipl()
                    .poke(buf, &data)
                    .await
                    .map_err(vipl_err("poke"))?;
            }
            // Everyone starts together, so the span is the broadcast's.
            comm.barrier().await?;
            let start = comm.vipl().now();
            comm.bcast(buf, size, Rank(0)).await?;
            let end = comm.vipl().now();
            let v = check(&mut comm, buf, &data, index).await?;
            records.push(IterationRecord {
                index,
                bytes: size,
                start,
                end,
                verified_bytes: v,
                warmup: k < bench.warmup,
            });
            index += 1;
        }
    }
    // One all-reduce of the ranks' record counts: every rank ran every broadcast.
    let x = comm
        .vipl()
        .malloc(16, 64)
        .await
        .map_err(vipl_err("malloc"))?;
    let n = i64::try_from(records.len()).unwrap_or(0);
    comm.vipl()
        .poke(x, &n.to_le_bytes())
        .await
        .map_err(vipl_err("poke"))?;
    comm.allreduce(x, x + 8, 1, Datatype::I64).await?;
    let total = comm.vipl().peek(x + 8, 8).await.map_err(vipl_err("peek"))?;
    let want = n * i64::from(comm.size());
    if i64::from_le_bytes(total.try_into().unwrap_or([0; 8])) != want {
        return Err(ProgramError::Protocol("a rank missed a broadcast"));
    }
    *sink.borrow_mut() = comm.stats();
    let v = comm.finalize().await?;
    Ok(ProgramReport {
        program: "mpi-bcast",
        iterations: records,
        setup_done,
        finished: v.now(),
    })
}
