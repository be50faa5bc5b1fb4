//! `pci-model`: the PCI buses of an HVIA-GE node, modelled at the level of bus phases,
//! one PCI clock at a time.
//!
//! - [`PciBus`] ([`bus`]): one bus segment (32/64-bit, 33/66 MHz): the arbiter
//!   (REQ#/GNT#, parking, round robin), the bus-phase state machine (address, DEVSEL#,
//!   wait states, data phases, turnaround, retry, disconnect, master abort, latency
//!   timer), target decode, and the PCI interface of each master;
//! - [`bridge`]: the host bridge attached to the system bus: delayed DMA reads from host
//!   memory with prefetch, posted DMA writes committed after a latency, posted CPU writes
//!   and stalling CPU reads of device BARs;
//! - [`HostMemory`] ([`memory`]) and [`PageTable`] ([`page_table`]): sparse physical
//!   memory with real bytes and per-process 4 KB page tables over scattered frames;
//! - [`DmaMaster`] ([`dma`]): the card's DMA engine: page splitting, bursts, command
//!   choice;
//! - [`SimpleTarget`] ([`device`]): a memory-like device target for tests and the
//!   local-bus scenario;
//! - [`PciMsg`] ([`msg`]): the one message enum of this crate, including the bus
//!   interface other crates' masters, targets and CPU use;
//! - [`params`]: parameter structs with units and sources, [`param_docs`];
//! - [`ram_fold`]: a device target's RAM that the bus reads itself (the GEC read fold);
//! - [`stats`]: bus, master and per-transaction statistics;
//! - [`testbench`]: a small self-contained system and the `dma` throughput scenario.
//!
//! Tracing targets: `pci::bus`, `pci::bridge`, `pci::dma`.
//!
//! # Wiring a bus into a system
//!
//! The World (a [`sim_kernel::Wiring`]) owns the [`PciBus`] and the node's [`HostMemory`]
//! and passes the memory into the bus's handler; masters register with [`PciBus::add_master`], device targets with
//! [`PciBus::add_device_target`], host memory with [`PciBus::attach_host_bridge`]. Here
//! the CPU posts a doorbell write to the card's BAR:
//!
//! ```
//! use pci_model::{BridgeParams, BusParams, HostMemory, Node, PciBus, PciMsg, PciParts,
//!                 PciWorld, Probe, SimpleTarget, TargetProfile};
//! use sim_kernel::{Bytes, ClockDomain, Cycles, Kernel, OnMisroute, Time};
//!
//! let params = BusParams::default(); // 32-bit, 33 MHz
//! let mut k: Kernel<PciMsg> = Kernel::new(false);
//! let pci = k.add_domain(params.clock_domain("pci.system").unwrap());
//! let cpu_d = k.add_domain(ClockDomain::from_mhz("cpu", 800.0).unwrap());
//! let bus_id = k.add_component("pci.bus", pci);
//! let cpu = k.add_component("cpu", cpu_d);
//! let card = k.add_component("card", pci);
//! let mut bus = PciBus::new(params).unwrap();
//! bus.attach_host_bridge(BridgeParams::default(), 256 << 20).unwrap();
//! bus.add_device_target(0xE000_0000, 4096, card, TargetProfile::default()).unwrap();
//! let mut world = PciWorld::of(
//!     vec![
//!         Node::Bus(Box::new(bus)),
//!         Node::Probe(Probe::default()),
//!         Node::Device(SimpleTarget::new(bus_id, 0xE000_0000, 4096, Cycles(0), 0)),
//!     ],
//!     HostMemory::new(Bytes(256 << 20), 1).unwrap(),
//!     OnMisroute::Panic,
//! );
//! k.post(bus_id, Time::ZERO, PciMsg::CpuWrite { tag: 1, addr: 0xE000_0040,
//!        data: 7u32.to_le_bytes().to_vec(), reply_to: cpu });
//! k.run_to_idle(&mut world);
//! assert_eq!(&world.device(card).unwrap().bytes()[0x40..0x44], &[7, 0, 0, 0]);
//! ```

#![forbid(unsafe_code)]

pub mod abort;
pub mod bridge;
pub mod bus;
pub mod device;
pub mod dma;
pub mod error;
pub mod memory;
pub mod msg;
pub mod page_table;
pub mod params;
pub mod ram_fold;
pub mod stats;
pub mod testbench;

pub use abort::{AbortKind, AbortRange, AbortRangeError};
pub use bridge::{BridgeStats, HostBridge};
pub use bus::{
    BusPhase, Deferral, FoldPort, FoldStats, FoldedMaster, MasterConfig, PciBus, TargetId,
};
pub use device::SimpleTarget;
pub use dma::{read_command, write_command, DmaMaster, DmaState, DmaStats};
pub use error::{MemError, PciError};
pub use memory::{page_base, HostMemory, PAGE_SIZE};
pub use msg::{
    BusRequest, Command, DmaDirection, DmaDone, DmaJob, DmaStatus, MasterId, PciMsg,
    TransactionDone, TxnStatus,
};
pub use page_table::{contiguous_pages, page_segments, PageTable, PhysSegment, Pieces};
pub use params::{
    param_docs, BridgeParams, BusParams, BusWidth, DevselSpeed, DmaParams, ParamDoc, ParkPolicy,
    ReadMode, Stepping, TargetProfile,
};
pub use ram_fold::{FoldRam, PendingWrites, RamBacking, ReadSamples};
pub use stats::{BusStats, MasterStats, TenureEnd, TenureRecord};
pub use testbench::{
    burst_account, dma_throughput, BenchDirection, BenchTarget, BurstAccount, DmaBenchParams,
    DmaBenchReport, Node, PciParts, PciWorld, Probe,
};
