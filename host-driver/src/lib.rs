//! `host-driver`: the host side of an HVIA-GE node: a Pentium III 800 MHz running one
//! Linux 2.4 process whose program is written against VIPL, the VI Provider Library of
//! VIA 1.0, and pays what the real host would for every call.
//!
//! - [`HostCpu`] ([`cpu`]): the component (domain `host.cpu`, 800 MHz). It owns the
//!   process page table and a deterministic single-future executor for the program;
//! - [`Vipl`] ([`vipl`]): the VIPL calls as async methods (`vip_open_nic`,
//!   `vip_register_mem`, `vip_post_send`, ...; each doc names its VIPL call) and
//!   [`VipError`], the VIPL return codes;
//! - [`agent`]: the kernel agent: registration (page pinning, ATT mailbox writes),
//!   VI commands and connection waits over BAR0;
//! - [`costs`]: the CPU cost model ([`CpuCosts`], every value a documented assumption);
//! - [`cache`]: which lines the CPU holds, so a poll pays a miss after a DMA write;
//! - [`ops`]: the op slot between program and CPU;
//! - [`programs`]: ping-pong programs users copy (RDMA write, send/receive);
//! - [`pattern`]: their test messages, which the CPU's instrumentation ops write and
//!   check a piece at a time;
//! - [`program`]: what a program returns ([`ProgramReport`], [`ProgramError`]);
//! - [`msg`]: [`HostMsg`], the messages of this crate.
//!
//! `host-driver` never depends on `nic-model`: the two meet only through the PCI bus
//! (`pci-model`) and the layouts of `via-abi`. Tracing targets: `host::vipl` (calls),
//! `host::cpu` (executor, ops), `host::agent` (kernel agent).
//!
//! # Wiring a CPU into a World
//!
//! The system's message type must convert from [`PciMsg`](pci_model::PciMsg) and
//! [`HostMsg`]; the World (a [`sim_kernel::Wiring`]) routes both to the CPU with the
//! node's host memory. A program
//! that only computes and touches memory needs no card:
//!
//! ```
//! use host_driver::{HostCpu, HostCpuParams, HostIncoming, HostMsg, ProgramReport};
//! use pci_model::{HostMemory, PciMsg};
//! use sim_kernel::{Bytes, ClockDomain, ComponentId, Ctx, Cycles, Kernel, OnMisroute, Part, Time,
//!                  Wiring};
//!
//! struct Cpu(HostCpu);
//! impl Part<HostIncoming, HostMemory> for Cpu {
//!     fn take(&mut self, msg: HostIncoming, ctx: &mut Ctx<'_, HostIncoming>,
//!             mem: &mut HostMemory) -> Option<HostIncoming> {
//!         self.0.handle(msg, ctx, mem);
//!         None
//!     }
//! }
//!
//! let mut k: Kernel<HostIncoming> = Kernel::new(true);
//! let d = k.add_domain(ClockDomain::from_mhz("host.cpu", 800.0).unwrap());
//! let bus = ComponentId(99); // no card, no bus: the program below makes no MMIO access
//! let id = k.add_component("host0.cpu", d);
//! let mut cpu = HostCpu::new(HostCpuParams::default(), bus);
//! cpu.load(|mut vipl| async move {
//!     let buf = vipl.malloc(4096, 64).await.map_err(|_| host_driver::ProgramError::Stuck)?;
//!     vipl.write_mem(buf, &[1, 2, 3, 4]).await.ok();
//!     vipl.compute(Cycles(100)).await;
//!     Ok(ProgramReport { program: "doc", finished: vipl.now(), ..ProgramReport::default() })
//! });
//! let mut node = Wiring::new(HostMemory::new(Bytes(1 << 20), 1).unwrap(), OnMisroute::Panic);
//! node.place(id, Cpu(cpu));
//! k.post(id, Time::ZERO, HostMsg::Start.into());
//! k.run_to_idle(&mut node);
//! let Some(Cpu(cpu)) = node.get(id) else { unreachable!() };
//! let report = cpu.outcome().unwrap().as_ref().unwrap();
//! // malloc 200 + page fault 2400 + store 12 + copy 1 + compute 100 cycles of 1.25 ns
//! assert_eq!(report.finished, Time(2_713 * 1_250));
//! ```

#![forbid(unsafe_code)]

pub mod agent;
pub mod cache;
pub mod costs;
pub mod cpu;
pub mod msg;
pub mod ops;
pub mod pattern;
pub mod program;
pub mod programs;
pub mod vipl;

pub use cache::{CacheModel, CacheParams};
pub use costs::{ByteRate, CostDoc, CpuCosts};
pub use cpu::{CpuState, CpuStats, CpuWait, HostCpu, HostCpuParams, ProgramFuture};
pub use msg::{HostIncoming, HostMsg};
pub use ops::{PollCond, PollOutcome, PollTarget, ScanOutcome};
pub use program::{CallExt, IterationRecord, ProgramError, ProgramReport, ProgramResult};
pub use vipl::{
    Completion, ConnHandle, ConnectRequestInfo, CqCompletion, CqHandle, NetAddress, NicAttributes,
    NicHandle, Timeout, ViAttributes, ViHandle, ViQuery, ViState, VipError, VipMemAttributes,
    VipResult, Vipl,
};
