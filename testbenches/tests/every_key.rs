//! Every configuration key reaches the model (issue 11, item 5): for each key that
//! `SystemConfig::flatten` lists (the keys `hvia config --show` prints), a perturbed
//! value, applied the way `--set KEY=VALUE` applies it to the default preset, changes a
//! result of the model.
//!
//! - [`CASES`] names every key once, with the perturbation, the observable and (where
//!   the physics says so) the direction of the change. A case may start from a modified
//!   base (`base` sets, e.g. a 64-bit bus for a `supports_64bit`); the comparison is then
//!   between that base and the base plus the perturbation.
//! - [`DRIVES_NOTHING`] lists the keys for which no observable changes: they are
//!   accepted but drive nothing. `no_key_drives_nothing` fails while it is not empty;
//!   each such key must be wired into the model (and moved to [`CASES`]) or removed.
//! - `the_table_names_every_key_exactly_once` fails when a key has no entry (so a key
//!   cannot be added without its test) and when an entry names a key that is gone.
//!
//! Runs are small (4-byte and 3000-byte ping-pongs with one warm-up and one measured
//! round trip, 4 KB DMA runs), every distinct run is made once and the runs go in
//! parallel.

use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use testbenches::config::{feasible, ConfigSource, SystemConfig, DEFAULT_PRESET};
use testbenches::dma::{throughput, BusArg, DirectionArg, DmaArgs};
use testbenches::system::{run_pingpong, Op, PingPongSpec, RunEnd, RunError, System};

/// Which bus a DMA run measures (`hvia dma --bus`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Bus {
    /// The card's DMA master against host memory behind the host bridge.
    System,
    /// The DP83820 against the GEC's buffer RAM.
    Local,
}

/// Which way a DMA run moves data (`hvia dma --direction`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Dir {
    Read,
    Write,
}

/// What is measured to see a key's effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Obs {
    /// One-way latency \[ps\] of a ping-pong of `size` bytes (1 warm-up, 1 measured).
    OneWay(Op, u32),
    /// When the initiator of a 4-byte RDMA-write ping-pong finished its set-up (open,
    /// register, connect, exchange) \[ps\].
    Setup,
    /// The responder's timed `VipPostRecv` of a traced 4-byte send/recv ping-pong, from
    /// one `gettimeofday` to the next \[ps\] (the calibration target "VipPostRecv CPU
    /// time").
    PostRecvSpan,
    /// The physical frame node 0's allocator hands out next after a 4-byte RDMA-write
    /// ping-pong (where the seeded allocator puts pages in host memory).
    NextFrame,
    /// One-way latency \[ps\] of an RDMA-write ping-pong whose programs pay for writing
    /// and checking the payload (`touch_data`; no `hvia` command sets it).
    TouchedOneWay(u32),
    /// Time of a 4 KB DMA run (`hvia dma --bytes 4096`) \[ps\].
    Dma(Bus, Dir),
    /// The PCI commands of the middle burst of a 4 KB DMA run (its cycle accounting).
    DmaCommands(Bus, Dir),
    /// The trace digest of a 4 KB system-bus DMA read (`hvia dma` traces when
    /// `sim.trace` is on).
    DmaTraceDigest,
    /// Whether a ping-pong of this many bytes fits the configured system (host memory,
    /// the ATT's L2 pool): the check `hvia pingpong` makes before it runs.
    Fits(u32),
    /// The events a 4-byte RDMA-write ping-pong took (what `sim.stepping` changes; its
    /// results are the same in both modes, which `tests/lockstep.rs` proves).
    Events,
    /// Both directions at once through the store-and-forward switch (the `bidirectional`
    /// traffic pattern, 3 messages of 64 KB each way, 8 outstanding): the simulated
    /// time and the DP83820s' PAUSE frames when it finishes, the losses when it stalls.
    /// The nodes' RX FIFOs fill, their PAUSE frames stop the switch's outputs and the
    /// switch's buffers and flow control take the strain.
    Duplex,
    /// The one-way stream (the `stream` traffic pattern, 12 messages of 64 KB, 8
    /// outstanding): its aggregate bandwidth \[B/s\]. Posts run ahead of the card, so a
    /// descriptor is often linked before the card reads it.
    Stream,
    /// What the faults did in a 4-byte RDMA-write ping-pong: each wire direction's
    /// counters and the ATT bit flips when it finishes, the stall's named losses when a lost frame stops it
    /// (unreliable VIs: nothing retransmits), so a run that cannot finish is a result.
    WireFaults,
    /// One-way latency \[ps\] of an MPI ping-pong of `size` bytes (`hvia mpi pingpong`,
    /// 1 warm-up, 1 measured).
    Mpi(u32),
    /// When rank 0 of that 4-byte MPI ping-pong was through `MPI_Init` \[ps\].
    MpiSetup,
    /// Control messages (RTS, CTS, credits) rank 1 sent while receiving a burst of 24
    /// eager messages from rank 0.
    MpiCredits,
    /// Length \[ps\] of a BSP superstep in which process 0 puts `size` bytes into
    /// process 1.
    BspPut(u32),
}

/// The direction a result must move, where the physics says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// Different, either way.
    Changed,
    /// Larger (e.g. a slower clock gives a longer latency).
    Up,
    /// Smaller.
    Down,
}

/// One key, how it is perturbed and what must change.
struct Case {
    /// The dotted key.
    key: &'static str,
    /// `--set`s applied to the preset before comparing (the base of the comparison).
    base: &'static [&'static str],
    /// The perturbed value (as `--set` reads it).
    value: &'static str,
    /// What must change.
    obs: Obs,
    /// How.
    expect: Expect,
}

const fn case(key: &'static str, value: &'static str, obs: Obs, expect: Expect) -> Case {
    Case {
        key,
        base: &[],
        value,
        obs,
        expect,
    }
}

const fn on(
    base: &'static [&'static str],
    key: &'static str,
    value: &'static str,
    obs: Obs,
    expect: Expect,
) -> Case {
    Case {
        key,
        base,
        value,
        obs,
        expect,
    }
}

use Expect::{Changed, Down, Up};
use Obs::{OneWay, Setup};

const RDMA4: Obs = OneWay(Op::RdmaWrite, 4);
const SR4: Obs = OneWay(Op::SendRecv, 4);
const RDMA3000: Obs = OneWay(Op::RdmaWrite, 3000);
const SR3000: Obs = OneWay(Op::SendRecv, 3000);
const SYS_READ: Obs = Obs::Dma(Bus::System, Dir::Read);
const SYS_WRITE: Obs = Obs::Dma(Bus::System, Dir::Write);
const LOCAL_READ: Obs = Obs::Dma(Bus::Local, Dir::Read);
const LOCAL_WRITE: Obs = Obs::Dma(Bus::Local, Dir::Write);

const WIDE_SYSTEM: &[&str] = &["pci.system.width_bits=64"];
const WIDE_LOCAL: &[&str] = &["pci.local.width_bits=64"];
/// Posts without the read-back and the wait for the card: the CPU goes on right after
/// its doorbell writes, so the bridge's CPU write buffer is on its path.
const POST_WITHOUT_READS: &[&str] = &[
    "host.vipl.post_waits_for_card=false",
    "host.vipl.post_flushes_doorbell=false",
];

/// A link-down window far after the end of a 4-byte ping-pong (500 s, 100 s long).
const LINK_DOWN_LATER: &[&str] = &[
    "faults.link_down_at_us=500000000",
    "faults.link_down_for_us=100000000",
];
/// A link-down window of 1 us before any frame is sent (the GECs are programming their
/// DP83820s).
const LINK_DOWN_EARLY: &[&str] = &["faults.link_down_at_us=1", "faults.link_down_for_us=1"];

/// Reliable-delivery VIs for the ping-pong.
const RELIABLE: &[&str] = &["via.reliability=reliable-delivery"];
/// The `rdma-read` preset's changes: RDMA read in the engine, reliable VIs.
const RDMA_READ_ON: &[&str] = &[
    "via.reliability=reliable-delivery",
    "card.engine.rdma_read=true",
];
/// Reliable VIs and a 20 us outage in the measured round trip of a 4-byte ping-pong (one
/// warm-up; the measured trip starts at about 108 us).
const RELIABLE_OUTAGE: &[&str] = &[
    "via.reliability=reliable-delivery",
    "faults.link_down_at_us=100",
    "faults.link_down_for_us=20",
];
/// Reliable VIs and a 100 ms outage from the same instant, with a retry limit that
/// outlasts it.
const RELIABLE_LONG_OUTAGE: &[&str] = &[
    "via.reliability=reliable-delivery",
    "faults.link_down_at_us=100",
    "faults.link_down_for_us=100000",
    "card.engine.retx_limit=255",
];

/// The two nodes on a store-and-forward switch.
const SWITCHED: &[&str] = &["topology.switch=store-and-forward"];

/// The generation of node 1's RDMA target entry in card SDRAM flips during the run.
const ATT_FLIP: &[&str] = &[
    "faults.att_flip_at_us=20",
    "faults.att_flip_node=1",
    "faults.att_flip_entry=2",
    "faults.att_flip_bit=176",
];
/// The same flip long after the run (500 s).
const ATT_FLIP_LATER: &[&str] = &[
    "faults.att_flip_at_us=500000000",
    "faults.att_flip_node=1",
    "faults.att_flip_entry=2",
    "faults.att_flip_bit=176",
];

/// The page of node 0's control region and buffers in the 4-byte ping-pong (seed 1).
const PCI_ABORT_OFF: &[&str] = &[
    "faults.pci_abort_node=0",
    "faults.pci_abort_start=0x3349000",
    "faults.pci_abort_bytes=4096",
];
/// Node 0's bridge target-aborts that page.
const PCI_ABORT_N0: &[&str] = &[
    "faults.pci_abort=target",
    "faults.pci_abort_node=0",
    "faults.pci_abort_start=0x3349000",
    "faults.pci_abort_bytes=4096",
];
/// Node 0's bridge target-aborts the page below it.
const PCI_ABORT_BELOW: &[&str] = &[
    "faults.pci_abort=target",
    "faults.pci_abort_node=0",
    "faults.pci_abort_start=0x3348000",
    "faults.pci_abort_bytes=4096",
];

/// Every key that drives the model, with its perturbation and observable.
const CASES: &[Case] = &[
    case("sim.seed", "2", Obs::NextFrame, Changed),
    case("sim.trace", "true", Obs::DmaTraceDigest, Changed),
    case("sim.stepping", "exact", Obs::Events, Up),
    // A third node behind the switch: its card starts up and the switch floods the first
    // frames to it too (more events; the ping-pong's timing is the same).
    on(SWITCHED, "topology.nodes", "3", Obs::Events, Up),
    // A store-and-forward switch between the nodes: each frame is received whole, looked
    // up and sent again.
    case("topology.switch", "store-and-forward", RDMA4, Up),
    on(SWITCHED, "topology.switch_latency_ns", "5000", RDMA4, Up),
    // A port buffer smaller than the high-water mark plus what arrives after the PAUSE:
    // frames are dropped, messages lost (unreliable VIs), the run stalls.
    on(
        SWITCHED,
        "topology.switch_buffer_bytes",
        "6144",
        Obs::Duplex,
        Changed,
    ),
    // Without flow control the switch ignores the nodes' PAUSE frames: their RX FIFOs
    // overflow and the run stalls on lost messages.
    on(
        SWITCHED,
        "topology.switch_flow_control",
        "false",
        Obs::Duplex,
        Changed,
    ),
    on(
        SWITCHED,
        "topology.switch_pause_high_bytes",
        "20480",
        Obs::Duplex,
        Changed,
    ),
    on(
        SWITCHED,
        "topology.switch_pause_low_bytes",
        "1024",
        Obs::Duplex,
        Changed,
    ),
    // A 51 us pause instead of 33.6 ms: re-sent every 25.6 us while the buffer drains.
    on(
        SWITCHED,
        "topology.switch_pause_quanta",
        "100",
        Obs::Duplex,
        Changed,
    ),
    case("host.cpu_clock_mhz", "400", RDMA4, Up),
    case("host.memory_mb", "1", Obs::NextFrame, Changed),
    case("host.costs.vipl_call_cycles", "600", RDMA4, Up),
    case("host.costs.syscall_cycles", "8000", Setup, Up),
    case(
        "host.costs.gettimeofday_cycles",
        "8200",
        Obs::PostRecvSpan,
        Up,
    ),
    case("host.costs.pin_page_cycles", "4000", Setup, Up),
    case("host.costs.descriptor_build_cycles", "2000", Setup, Up),
    case("host.costs.post_link_cycles", "2000", RDMA4, Up),
    case("host.costs.mmio_write_cycles", "1000", RDMA4, Up),
    case("host.costs.mmio_read_cycles", "1000", RDMA4, Up),
    case("host.costs.poll_iteration_cycles", "1000", RDMA4, Up),
    case("host.costs.cache_hit_cycles", "300", RDMA4, Up),
    case("host.costs.cache_miss_cycles", "1120", RDMA4, Up),
    case(
        "host.costs.cache_miss_stream_cycles",
        "400",
        Obs::TouchedOneWay(3000),
        Up,
    ),
    case("host.costs.store_miss_cycles", "1200", Setup, Up),
    case("host.costs.copy_bytes_per_cycle", "1", RDMA4, Up),
    case("host.costs.register_poll_delay_cycles", "8000", Setup, Up),
    case("host.costs.malloc_cycles", "20000", Setup, Up),
    case("host.costs.page_fault_cycles", "24000", Setup, Up),
    case("host.vipl.post_reads_vi_state", "false", RDMA4, Down),
    on(
        &["host.vipl.post_waits_for_card=false"],
        "host.vipl.post_flushes_doorbell",
        "false",
        SR4,
        Changed,
    ),
    case("host.vipl.post_waits_for_card", "false", Setup, Down),
    case("host.vipl.doorbell_names_descriptor", "true", RDMA4, Down),
    case("pci.system.width_bits", "64", SYS_WRITE, Down),
    case("pci.system.clock_mhz", "16.5", SYS_WRITE, Up),
    case("pci.system.burst_bytes", "64", SYS_WRITE, Up),
    case("pci.system.park", "none", SYS_WRITE, Up),
    case("pci.local.width_bits", "64", LOCAL_WRITE, Down),
    case("pci.local.clock_mhz", "16.5", LOCAL_WRITE, Up),
    case("pci.local.burst_bytes", "64", LOCAL_WRITE, Up),
    case("pci.local.park", "none", LOCAL_WRITE, Up),
    case("pci.bridge.devsel", "slow", SYS_WRITE, Up),
    case("pci.bridge.read_mode", "wait-states", SYS_READ, Changed),
    case("pci.bridge.memory_read_latency_ns", "1000", SYS_READ, Up),
    case("pci.bridge.memory_stream_mb_s", "100", SYS_READ, Up),
    // With 512-byte lines at the card, its 512-byte bursts are Memory Read Line, which
    // the bridge prefetches to the end of its own line.
    on(
        &["card.dma.cache_line_bytes=512"],
        "pci.bridge.cache_line_bytes",
        "512",
        SYS_READ,
        Down,
    ),
    case("pci.bridge.mrm_prefetch_bytes", "64", SYS_READ, Up),
    case("pci.bridge.posted_write_latency_ns", "2000", RDMA4, Up),
    case("pci.bridge.posted_write_buffer_bytes", "8", SYS_WRITE, Up),
    on(
        POST_WITHOUT_READS,
        "pci.bridge.cpu_write_buffer_entries",
        "1",
        SR4,
        Changed,
    ),
    on(
        WIDE_SYSTEM,
        "pci.bridge.supports_64bit",
        "false",
        SYS_WRITE,
        Up,
    ),
    case("pci.bridge.cpu_read_latency_ns", "300", RDMA4, Up),
    case("card.core_clock_mhz", "16.5", RDMA4, Up),
    // The L2 pool of 2 MB of SDRAM holds 129984 pages: two 256 MiB buffers no longer
    // register (the host memory is made large enough for them first).
    on(
        &["host.memory_mb=1024"],
        "card.sdram_mb",
        "2",
        Obs::Fits(256 << 20),
        Changed,
    ),
    case("card.sdram_clock_mhz", "50", RDMA4, Up),
    case("card.att_location", "host", RDMA4, Up),
    case("card.dma.latency_timer_cycles", "0", Setup, Up),
    // The recovery time hides the second queued burst; without it, one outstanding
    // burst leaves REQ# off between bursts.
    on(
        &["card.dma.recovery_cycles=0"],
        "card.dma.max_outstanding",
        "1",
        SYS_READ,
        Up,
    ),
    case("card.dma.cache_line_bytes", "512", SYS_READ, Up),
    // The bridge times Memory Write and Invalidate like Memory Write: only the command
    // on the bus changes.
    case(
        "card.dma.write_invalidate",
        "true",
        Obs::DmaCommands(Bus::System, Dir::Write),
        Changed,
    ),
    on(
        WIDE_SYSTEM,
        "card.dma.supports_64bit",
        "false",
        SYS_WRITE,
        Up,
    ),
    case("card.dma.recovery_cycles", "20", SYS_WRITE, Up),
    case("card.pci_target.devsel", "slow", RDMA4, Up),
    case("card.pci_target.write_wait_states", "4", RDMA4, Up),
    case("card.local_target.devsel", "slow", LOCAL_WRITE, Up),
    case("card.local_target.write_wait_states", "4", LOCAL_WRITE, Up),
    case(
        "card.local_target.max_write_burst_bytes",
        "8",
        LOCAL_WRITE,
        Up,
    ),
    on(
        WIDE_LOCAL,
        "card.local_target.supports_64bit",
        "false",
        LOCAL_WRITE,
        Up,
    ),
    case(
        "card.local_target.read_latency_core_clocks",
        "8",
        LOCAL_READ,
        Up,
    ),
    case("card.engine.doorbell_decode_cycles", "500", RDMA4, Up),
    case("card.engine.descriptor_decode_cycles", "100", RDMA4, Up),
    case("card.engine.check_recv_on_post", "false", Setup, Down),
    // Off, every message of the stream costs its doorbell a queue-link read on the bus
    // the data crosses.
    case("card.engine.follow_read_links", "false", Obs::Stream, Down),
    case("card.engine.recv_descriptor_per_frame", "true", SR3000, Up),
    case("card.engine.header_build_cycles", "1000", RDMA4, Up),
    case("card.engine.handoff_cycles", "100", RDMA4, Up),
    case("card.engine.header_check_cycles", "100", RDMA4, Up),
    case("card.engine.send_fifo_bytes", "64", RDMA3000, Up),
    case("card.engine.recv_fifo_bytes", "64", RDMA3000, Up),
    // A reliable ping-pong whose measured round trip meets a 20 us outage: the lost frame
    // is resent after the timeout.
    on(
        RELIABLE_OUTAGE,
        "card.engine.retx_timeout_cycles",
        "66000",
        RDMA4,
        Up,
    ),
    // A 100 ms outage: with the back-off, timeouts of 1, 2, 4, .. ms outlast it by the
    // seventh; a limit of 2 gives up after 1 + 2 + 4 ms (the run fails with a transport
    // error).
    on(
        RELIABLE_LONG_OUTAGE,
        "card.engine.retx_limit",
        "2",
        RDMA4,
        Changed,
    ),
    // A window of 2 frames: the third frame of a 3000-byte message waits for the Ack of
    // the first (every frame asks for one).
    on(
        RELIABLE,
        "card.engine.retx_window_frames",
        "2",
        RDMA3000,
        Up,
    ),
    // On (the rdma-read preset's values), a 4-byte RDMA read runs; off, the published
    // card's, it is refused (VipCreateVi: invalid RDMA read).
    on(
        RDMA_READ_ON,
        "card.engine.rdma_read",
        "false",
        OneWay(Op::RdmaRead, 4),
        Changed,
    ),
    case("card.buffers.tx_slots", "1", RDMA3000, Up),
    case("card.buffers.rx_slots", "1", RDMA3000, Up),
    case("mac.tx_fifo_bytes", "1536", RDMA3000, Up),
    // The second frame of a message overflows a FIFO that holds one: the run stalls
    // with an RX FIFO overflow at the responder.
    case("mac.rx_fifo_bytes", "1536", RDMA3000, Changed),
    on(
        &["mac.dma.recovery_cycles=0"],
        "mac.dma.max_outstanding",
        "1",
        LOCAL_READ,
        Up,
    ),
    // The GEC's buffer RAM ignores the read command: only the command changes.
    case(
        "mac.dma.cache_line_bytes",
        "512",
        Obs::DmaCommands(Bus::Local, Dir::Read),
        Changed,
    ),
    // Whole aligned 512-byte bursts into the buffer RAM go as MWI.
    case(
        "mac.dma.write_invalidate",
        "true",
        Obs::DmaCommands(Bus::Local, Dir::Write),
        Changed,
    ),
    on(
        WIDE_LOCAL,
        "mac.dma.supports_64bit",
        "false",
        LOCAL_READ,
        Up,
    ),
    case("mac.dma.recovery_cycles", "26", LOCAL_READ, Up),
    case("wire.gmii_clock_mhz", "62.5", RDMA4, Up),
    case("wire.cable_m", "100", RDMA4, Up),
    // A smaller MTU cuts a message into more, smaller frames (3000 B: 4 frames, not 3).
    case("wire.mtu_bytes", "1000", RDMA3000, Changed),
    case("wire.min_ifg_bytes", "1024", RDMA3000, Up),
    // A reliable level makes the receiving card acknowledge each message and the send
    // complete on the acknowledgement, not when its frame leaves.
    case("via.reliability", "reliable-delivery", RDMA4, Changed),
    // A fault that is on loses or spoils a frame the ping-pong waits for: the run ends
    // with a stall naming the losses (or, finishing, with other counters).
    case("faults.frame_loss", "1.0", Obs::WireFaults, Changed),
    case("faults.bit_error_rate", "1e-3", Obs::WireFaults, Changed),
    // Frames from node 0 lost instead of from both nodes: the losses named differ. (Not
    // all frames: a connect request unanswered `retx_limit` times fails the connect
    // the same way in both directions.)
    on(
        &["faults.frame_loss=0.3"],
        "faults.direction",
        "0-to-1",
        Obs::WireFaults,
        Changed,
    ),
    // The window moved from after the run to its start, or made to cover it.
    on(
        LINK_DOWN_LATER,
        "faults.link_down_at_us",
        "1",
        Obs::WireFaults,
        Changed,
    ),
    on(
        LINK_DOWN_EARLY,
        "faults.link_down_for_us",
        "100000000",
        Obs::WireFaults,
        Changed,
    ),
    // Every frame delivered twice or held back: counted (and the receiving card sees
    // the copies, or the frames late).
    case("faults.duplicate", "1.0", Obs::WireFaults, Changed),
    case("faults.reorder", "1.0", Obs::WireFaults, Changed),
    // Every frame held: released when the line is idle the ping-pong finishes; held up
    // to 20 us, set-up frames overtake one another and it cannot.
    on(
        &["faults.reorder=1.0", "faults.reorder_hold_us=0"],
        "faults.reorder_hold_us",
        "20",
        Obs::WireFaults,
        Changed,
    ),
    // A flip in the generation of the responder's RDMA target entry (index 2, registered
    // by 19.4 us) at 20 us refuses every ping: the run stalls naming the flip. Moved
    // after the run, onto the other node, onto an unused entry or onto a reserved bit,
    // the run changes (finishes, or stalls elsewhere).
    on(
        ATT_FLIP_LATER,
        "faults.att_flip_at_us",
        "20",
        Obs::WireFaults,
        Changed,
    ),
    on(
        ATT_FLIP,
        "faults.att_flip_node",
        "0",
        Obs::WireFaults,
        Changed,
    ),
    on(
        ATT_FLIP,
        "faults.att_flip_entry",
        "1000",
        Obs::WireFaults,
        Changed,
    ),
    on(
        ATT_FLIP,
        "faults.att_flip_bit",
        "150",
        Obs::WireFaults,
        Changed,
    ),
    // Node 0's host bridge aborts the page that holds its descriptors and buffers in
    // the 4-byte ping-pong (frame 0x3349000 with seed 1): the card's first DMA there
    // fails and the run cannot finish. Off, on the other node, moved to page 0, or on
    // the page below only, it finishes.
    on(
        PCI_ABORT_OFF,
        "faults.pci_abort",
        "target",
        Obs::WireFaults,
        Changed,
    ),
    on(
        PCI_ABORT_N0,
        "faults.pci_abort_node",
        "1",
        Obs::WireFaults,
        Changed,
    ),
    on(
        PCI_ABORT_N0,
        "faults.pci_abort_start",
        "0",
        Obs::WireFaults,
        Changed,
    ),
    on(
        PCI_ABORT_BELOW,
        "faults.pci_abort_bytes",
        "8192",
        Obs::WireFaults,
        Changed,
    ),
    // A 4 KiB message above a 1 KiB eager limit goes in synchronous mode: request, reply,
    // registration and RDMA write instead of one copied message.
    case("mpi.eager_limit_bytes", "1024", Obs::Mpi(4096), Up),
    // Twice the eager buffers: twice the descriptors built and posted in MPI_Init, and a
    // larger bounce region to register.
    case("mpi.buffers_per_peer", "16", Obs::MpiSetup, Up),
    // Credits returned after every 2 reposted buffers instead of 4: more credit messages
    // from the receiver of a one-way burst.
    case("mpi.credit_threshold", "2", Obs::MpiCredits, Up),
    // Registrations kept: the 64 KiB synchronous transfers skip VipRegisterMem and
    // VipDeregisterMem after the first.
    case("mpi.registration", "cache", Obs::Mpi(65536), Down),
    // A 1 KiB put goes by RDMA write instead of inside the sync message.
    case("bsp.rdma_put_min_bytes", "512", Obs::BspPut(1024), Changed),
];

/// Keys that are accepted but drive nothing: no perturbation changed any observable
/// above. Each must be wired into the model (then move it to [`CASES`] with its test) or
/// removed from the configuration; `no_key_drives_nothing` fails while one is listed.
const DRIVES_NOTHING: &[&str] = &[];

/// Keys the `hvia` contract names (`cli.md`) that the model accepts at one value only
/// until the issue that builds them: any other value is refused before a run, naming the
/// key and why (`reserved_keys_are_refused_naming_themselves`).
/// None today.
const RESERVED: &[(&str, &str, &str)] = &[];

/// A model run; several observables may share one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Run {
    /// A ping-pong: operation (true: RDMA write), size, trace, touch the data.
    PingPong(bool, u32, bool, bool),
    /// An RDMA-read ping-pong of this size.
    ReadPingPong(u32),
    /// A 4 KB DMA run, traced when `sim.trace` is on.
    Dma(Bus, Dir),
    /// The feasibility check of a ping-pong size.
    Fits(u32),
    /// A 4-byte RDMA-write ping-pong that may stall (its wire-fault counters or losses).
    Faults,
    /// An MPI ping-pong of one size.
    Mpi(u32),
    /// A burst of eager MPI messages one way.
    MpiBurst,
    /// A BSP superstep with one put of this size.
    BspPut(u32),
    /// The bidirectional stream ([`Obs::Duplex`]).
    Duplex,
    /// The one-way stream ([`Obs::Stream`]).
    Stream,
}

impl Obs {
    fn run(self) -> Run {
        match self {
            OneWay(Op::RdmaRead, size) => Run::ReadPingPong(size),
            OneWay(op, size) => Run::PingPong(op == Op::RdmaWrite, size, false, false),
            Setup | Obs::NextFrame | Obs::Events => Run::PingPong(true, 4, false, false),
            Obs::PostRecvSpan => Run::PingPong(false, 4, true, false),
            Obs::TouchedOneWay(size) => Run::PingPong(true, size, false, true),
            Obs::Dma(bus, dir) | Obs::DmaCommands(bus, dir) => Run::Dma(bus, dir),
            Obs::DmaTraceDigest => Run::Dma(Bus::System, Dir::Read),
            Obs::Fits(size) => Run::Fits(size),
            Obs::WireFaults => Run::Faults,
            Obs::Mpi(size) => Run::Mpi(size),
            Obs::MpiSetup => Run::Mpi(4),
            Obs::MpiCredits => Run::MpiBurst,
            Obs::BspPut(size) => Run::BspPut(size),
            Obs::Duplex => Run::Duplex,
            Obs::Stream => Run::Stream,
        }
    }
}

/// What one run gave.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Outcome {
    one_way_ps: u64,
    setup_ps: u64,
    post_recv_ps: u64,
    next_frame: u64,
    dma_ps: u64,
    dma_commands: String,
    dma_trace_digest: u64,
    fits: String,
    events: u64,
    wire_faults: String,
    control_messages: u64,
    duplex: String,
    stream_bytes_per_s: u64,
}

/// A result to compare: a number, a text, or the run's error.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Value {
    Num(u64),
    Text(String),
    Failed(String),
}

fn value(outcome: &Result<Outcome, String>, obs: Obs) -> Value {
    let o = match outcome {
        Ok(o) => o,
        Err(e) => return Value::Failed(e.clone()),
    };
    match obs {
        OneWay(..) | Obs::TouchedOneWay(_) => Value::Num(o.one_way_ps),
        Setup => Value::Num(o.setup_ps),
        Obs::PostRecvSpan => Value::Num(o.post_recv_ps),
        Obs::NextFrame => Value::Num(o.next_frame),
        Obs::Dma(..) => Value::Num(o.dma_ps),
        Obs::DmaCommands(..) => Value::Text(o.dma_commands.clone()),
        Obs::DmaTraceDigest => Value::Num(o.dma_trace_digest),
        Obs::Fits(_) => Value::Text(o.fits.clone()),
        Obs::Events => Value::Num(o.events),
        Obs::WireFaults => Value::Text(o.wire_faults.clone()),
        Obs::Mpi(_) | Obs::BspPut(_) => Value::Num(o.one_way_ps),
        Obs::MpiSetup => Value::Num(o.setup_ps),
        Obs::MpiCredits => Value::Num(o.control_messages),
        Obs::Duplex => Value::Text(o.duplex.clone()),
        Obs::Stream => Value::Num(o.stream_bytes_per_s),
    }
}

/// A ping-pong through the whole system, as `run_pingpong` makes it, but with the
/// programs paying for writing and checking the payload.
fn touched_pingpong(cfg: &SystemConfig, size: u32) -> Result<u64, String> {
    use host_driver::programs::PingPongParams;
    use host_driver::programs::{rdma_pingpong_initiator, rdma_pingpong_responder};
    let mut sys = System::build(cfg, false).map_err(|e| e.to_string())?;
    let mut a = PingPongParams::new(size, 1, sys.macs[1]);
    a.warmup = 1;
    a.touch_data = true;
    a.wait_timeout = host_driver::Timeout::Infinite;
    let b = PingPongParams {
        peer: sys.macs[0],
        ..a
    };
    for (n, initiator) in [(0, true), (1, false)] {
        let cpu = sys.cpu_mut(n).ok_or("no CPU")?;
        if initiator {
            cpu.load(move |v| rdma_pingpong_initiator(v, a));
        } else {
            cpu.load(move |v| rdma_pingpong_responder(v, b));
        }
    }
    sys.start();
    match sys.run_programs() {
        RunEnd::Finished | RunEnd::ProgramFailed => {}
        RunEnd::Stalled(stall) => return Err(stall.to_string()),
    }
    let mut reports = Vec::new();
    for n in 0..2 {
        match sys.cpu_mut(n).and_then(host_driver::HostCpu::take_outcome) {
            Some(Ok(r)) => reports.push(r),
            Some(Err(e)) => return Err(format!("node {n}: {e}")),
            None => return Err(format!("node {n}: no outcome")),
        }
    }
    Ok(reports[0].mean_elapsed().0 / 2)
}

/// The MPI and BSP runs (`hvia mpi`, `hvia bsp`) on two nodes.
fn library_run(cfg: &SystemConfig, run: Run, o: &mut Outcome) -> Result<(), String> {
    use std::cell::RefCell;
    use std::rc::Rc;
    use testbenches::system::run_spmd;
    use vmpi::programs::{mpi_pingpong, Bench};
    use vmpi::{Comm, MpiStats, Rank, Source, Tag, TagSel};
    let mpi = cfg.mpi_config();
    let sinks: Vec<Rc<RefCell<MpiStats>>> = (0..2).map(|_| Rc::default()).collect();
    let s2 = sinks.clone();
    let reports =
        match run {
            Run::Mpi(size) => {
                let bench = Bench {
                    sizes: vec![size],
                    iterations: 1,
                    warmup: 1,
                };
                run_spmd(cfg, move |v, rank, macs| {
                    let sink = s2[usize::from(rank.0)].clone();
                    mpi_pingpong(v, rank, macs, mpi, bench.clone(), sink)
                })
            }
            Run::MpiBurst => run_spmd(cfg, move |v, rank, macs| {
                let sink = s2[usize::from(rank.0)].clone();
                async move {
                    let mut c = Comm::init(v, rank, macs, mpi).await?;
                    let buf = c.vipl().malloc(64, 64).await.map_err(|e| {
                        host_driver::ProgramError::Vipl {
                            call: "malloc",
                            error: e,
                        }
                    })?;
                    if rank == Rank(0) {
                        let mut reqs = Vec::new();
                        for _ in 0..24 {
                            reqs.push(c.isend(buf, 4, Rank(1), Tag(1)).await?);
                        }
                        c.waitall(&reqs).await?;
                    } else {
                        for _ in 0..24 {
                            c.recv(buf, 4, Source::Rank(Rank(0)), TagSel::Any).await?;
                        }
                    }
                    *sink.borrow_mut() = c.stats();
                    let v = c.finalize().await?;
                    Ok(host_driver::ProgramReport {
                        finished: v.now(),
                        ..host_driver::ProgramReport::default()
                    })
                }
            }),
            Run::BspPut(size) => {
                let bsp = cfg.bsp_config();
                run_spmd(cfg, move |v, rank, macs| async move {
                    let fail = |_| host_driver::ProgramError::Protocol("bsp");
                    let mut b = vbsp::Bsp::begin(v, rank, macs, bsp).await.map_err(fail)?;
                    let area = b.comm().vipl().malloc(65536, 64).await.map_err(|e| {
                        host_driver::ProgramError::Vipl {
                            call: "malloc",
                            error: e,
                        }
                    })?;
                    b.push_reg(area, 65536).await.map_err(fail)?;
                    b.sync().await.map_err(fail)?;
                    let start = b.comm().vipl().now();
                    if rank == Rank(0) {
                        b.put(1, area, area, 0, size).await.map_err(fail)?;
                    }
                    b.sync().await.map_err(fail)?;
                    let end = b.comm().vipl().now();
                    let v = b.end().await.map_err(fail)?;
                    Ok(host_driver::ProgramReport {
                        iterations: vec![host_driver::IterationRecord {
                            index: 0,
                            bytes: size,
                            start,
                            end,
                            verified_bytes: 0,
                            warmup: false,
                        }],
                        finished: v.now(),
                        ..host_driver::ProgramReport::default()
                    })
                })
            }
            _ => unreachable!("not a library run"),
        }
        .map(|(r, _)| r)
        .map_err(|e| e.to_string())?;
    match run {
        Run::Mpi(_) => {
            o.one_way_ps = reports[0].mean_elapsed().0 / 2;
            o.setup_ps = reports[0].setup_done.0;
        }
        Run::BspPut(_) => o.one_way_ps = reports[0].mean_elapsed().0,
        _ => o.control_messages = sinks[1].borrow().control_messages,
    }
    Ok(())
}

fn execute(cfg: &SystemConfig, run: Run) -> Result<Outcome, String> {
    let mut o = Outcome::default();
    match run {
        Run::Mpi(_) | Run::MpiBurst | Run::BspPut(_) => library_run(cfg, run, &mut o)?,
        Run::PingPong(rdma, size, trace, true) => {
            assert!(rdma && !trace, "only untraced RDMA writes touch their data");
            o.one_way_ps = touched_pingpong(cfg, size)?;
        }
        Run::ReadPingPong(size) => {
            let spec = PingPongSpec {
                op: Op::RdmaRead,
                size,
                iterations: 1,
                warmup: 1,
                trace: false,
                recv_post: testbenches::system::RecvPost::Timed,
            };
            let r = run_pingpong(cfg, spec).map_err(|e| e.to_string())?;
            o.one_way_ps = r.one_way.0;
        }
        Run::PingPong(rdma, size, trace, false) => {
            let op = if rdma { Op::RdmaWrite } else { Op::SendRecv };
            let spec = PingPongSpec {
                op,
                size,
                iterations: 1,
                warmup: 1,
                trace,
                recv_post: testbenches::system::RecvPost::Timed,
            };
            let r = run_pingpong(cfg, spec).map_err(|e| e.to_string())?;
            o.one_way_ps = r.one_way.0;
            o.events = r.stats.events;
            o.setup_ps = r.initiator.setup_done.0;
            if trace {
                let responder = r.system.nodes[1].cpu;
                let spans: Vec<u64> = r
                    .system
                    .kernel
                    .trace()
                    .spans()
                    .iter()
                    .filter(|s| {
                        s.component == responder
                            && s.stage == host_driver::programs::POST_RECV_TIMED
                    })
                    .map(|s| s.end.0 - s.start.0)
                    .collect();
                assert_eq!(spans.len(), 1, "one timed VipPostRecv in 2 round trips");
                o.post_recv_ps = spans[0];
            }
            let mut mem = r.system.world.store[0].mem.clone();
            o.next_frame = mem.alloc_frame().map_err(|e| e.to_string())?;
        }
        Run::Dma(bus, dir) => {
            let args = DmaArgs {
                bus: match bus {
                    Bus::System => BusArg::System,
                    Bus::Local => BusArg::Local,
                },
                direction: match dir {
                    Dir::Read => DirectionArg::Read,
                    Dir::Write => DirectionArg::Write,
                },
                bytes: 4096,
                burst: None,
                offset: 0,
                stats: None,
            };
            let r = throughput(&args, cfg).map_err(|e| format!("{e:?}"))?;
            o.dma_ps = r.elapsed.0;
            o.dma_trace_digest = r.trace_digest;
            o.dma_commands = r
                .accounting
                .iter()
                .flat_map(|a| &a.rows)
                .filter(|row| row.what.starts_with("address phase"))
                .map(|row| row.what.clone())
                .collect::<Vec<_>>()
                .join(", ");
        }
        Run::Faults => {
            let spec = PingPongSpec {
                op: Op::RdmaWrite,
                size: 4,
                iterations: 1,
                warmup: 1,
                trace: false,
                recv_post: testbenches::system::RecvPost::Timed,
            };
            o.wire_faults = match run_pingpong(cfg, spec) {
                Ok(r) => format!(
                    "finished; 0-to-1 {:?}; 1-to-0 {:?}; ATT bit flips {} {}; aborts {:?}",
                    r.system.wire_faults(0),
                    r.system.wire_faults(1),
                    r.system.att_bit_flips(0),
                    r.system.att_bit_flips(1),
                    (0..2)
                        .filter_map(|n| r.system.system_bus(n))
                        .map(|b| (b.stats().target_aborts, b.stats().master_aborts))
                        .collect::<Vec<_>>()
                ),
                Err(RunError::Stalled(stall) | RunError::Lost { stall, .. }) => {
                    format!("stalled; losses {:?}", stall.losses)
                }
                Err(e) => return Err(e.to_string()),
            };
        }
        Run::Duplex => {
            use host_driver::programs::StreamParams;
            use testbenches::system::traffic::run_bidirectional;
            let s = StreamParams {
                size: 65_536,
                messages: 3,
                window: 8,
            };
            o.duplex = match run_bidirectional(cfg, s) {
                Ok((there, back)) => format!(
                    "finished at {} ps; DP83820 PAUSE frames {}; p99 {} / {} ps",
                    there.stats.simulated.0,
                    there.pause_frames,
                    there.percentile(0.99),
                    back.percentile(0.99)
                ),
                Err(RunError::Stalled(stall) | RunError::Lost { stall, .. }) => {
                    format!("stalled; losses {:?}", stall.losses)
                }
                Err(e) => return Err(e.to_string()),
            };
        }
        Run::Stream => {
            use host_driver::programs::StreamParams;
            use testbenches::system::traffic::run_stream;
            let s = StreamParams {
                size: 65_536,
                messages: 12,
                window: 8,
            };
            let run = run_stream(cfg, s).map_err(|e| e.to_string())?;
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let bytes_per_s = (run.aggregate_mb_s * 1e6).round() as u64;
            o.stream_bytes_per_s = bytes_per_s;
        }
        Run::Fits(size) => {
            o.fits = match feasible::ping_pong_fits(cfg, size) {
                Ok(()) => "fits".into(),
                Err(p) => format!("{}: {}", p.key, p.reason),
            };
        }
    }
    Ok(o)
}

/// The default preset with `sets` applied as `--set`s, validated.
fn config(sets: &[String]) -> Result<SystemConfig, String> {
    SystemConfig::load(&ConfigSource::Preset(DEFAULT_PRESET.into()), sets)
        .map_err(|e| e.to_string())
}

/// Every key of the configuration, as `hvia config --show` lists them.
fn config_keys() -> Vec<String> {
    let cfg = SystemConfig::from_preset(DEFAULT_PRESET).expect("the default preset loads");
    cfg.flatten()
        .expect("the default preset flattens")
        .into_iter()
        .map(|(k, _)| k)
        .collect()
}

#[test]
fn the_table_names_every_key_exactly_once() {
    let keys: BTreeSet<String> = config_keys().into_iter().collect();
    let mut named: BTreeMap<&str, usize> = BTreeMap::new();
    for key in CASES
        .iter()
        .map(|c| c.key)
        .chain(DRIVES_NOTHING.iter().copied())
        .chain(RESERVED.iter().map(|r| r.0))
    {
        *named.entry(key).or_default() += 1;
    }
    let missing: Vec<&String> = keys
        .iter()
        .filter(|k| !named.contains_key(k.as_str()))
        .collect();
    let gone: Vec<&&str> = named.keys().filter(|k| !keys.contains(**k)).collect();
    let twice: Vec<&&str> = named
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(k, _)| k)
        .collect();
    assert!(
        missing.is_empty() && gone.is_empty() && twice.is_empty(),
        "every configuration key needs exactly one entry in CASES (a perturbation that \
         changes a result) or DRIVES_NOTHING;\n  keys without an entry: {missing:?}\n  \
         entries for keys that no longer exist: {gone:?}\n  keys named more than once: {twice:?}"
    );
}

#[test]
fn every_key_changes_a_result() {
    // The configurations: each case's base and its base plus the perturbation.
    let mut failures = Vec::new();
    let mut jobs: BTreeSet<(Vec<String>, Run)> = BTreeSet::new();
    let mut plans = Vec::new();
    for c in CASES {
        let base: Vec<String> = c.base.iter().map(|s| (*s).to_owned()).collect();
        let mut perturbed = base.clone();
        perturbed.push(format!("{}={}", c.key, c.value));
        let before = config(&base).map(|cfg| {
            cfg.flatten()
                .ok()
                .and_then(|f| f.into_iter().find(|(k, _)| k == c.key))
                .map(|(_, v)| v)
        });
        match (&before, config(&perturbed)) {
            (Err(e), _) => {
                failures.push(format!("{}: the base {:?} is refused: {e}", c.key, c.base))
            }
            (_, Err(e)) => failures.push(format!("{}: `{}` is refused: {e}", c.key, c.value)),
            (Ok(Some(v)), Ok(_)) if parse_same(v, c.value) => failures.push(format!(
                "{}: the perturbation `{}` is the base's own value",
                c.key, c.value
            )),
            (Ok(_), Ok(_)) => {
                jobs.insert((base.clone(), c.obs.run()));
                jobs.insert((perturbed.clone(), c.obs.run()));
                plans.push((c, base, perturbed));
            }
        }
    }
    let jobs: Vec<(Vec<String>, Run)> = jobs.into_iter().collect();
    let results: BTreeMap<(Vec<String>, Run), Result<Outcome, String>> = jobs
        .par_iter()
        .with_max_len(1)
        .map(|(sets, run)| {
            let cfg = config(sets).expect("checked above");
            ((sets.clone(), *run), execute(&cfg, *run))
        })
        .collect();
    for (c, base, perturbed) in plans {
        let run = c.obs.run();
        let before = value(&results[&(base, run)], c.obs);
        let after = value(&results[&(perturbed, run)], c.obs);
        let what = format!(
            "{}={} (base {:?}), {:?}: {before:?} -> {after:?}",
            c.key, c.value, c.base, c.obs
        );
        if let Value::Failed(e) = &before {
            failures.push(format!("{what}: the base run failed: {e}"));
            continue;
        }
        let ok = match (c.expect, &before, &after) {
            (Changed, b, a) => b != a,
            (Up, Value::Num(b), Value::Num(a)) => a > b,
            (Down, Value::Num(b), Value::Num(a)) => a < b,
            _ => false,
        };
        if ok {
            println!("{what}");
        } else {
            failures.push(format!("{what}: expected {:?}", c.expect));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} keys do not change their result:\n  {}",
        failures.len(),
        CASES.len(),
        failures.join("\n  ")
    );
}

/// Whether the text `--set` value `value` is the same as the shown value `shown`.
fn parse_same(shown: &str, value: &str) -> bool {
    let num = |s: &str| s.trim().trim_matches('"').parse::<f64>().ok();
    match (num(shown), num(value)) {
        (Some(a), Some(b)) => a == b,
        _ => shown.trim_matches('"') == value.trim_matches('"'),
    }
}

#[test]
fn no_key_drives_nothing() {
    assert!(
        DRIVES_NOTHING.is_empty(),
        "{} configuration keys are accepted but drive nothing (no result changes with \
         them; see DRIVES_NOTHING in this file): wire each into the model or remove it: \
         {DRIVES_NOTHING:?}",
        DRIVES_NOTHING.len()
    );
}

#[test]
fn reserved_keys_are_refused_naming_themselves() {
    for (key, value, why) in RESERVED {
        let set = format!("{key}={value}");
        let err = SystemConfig::load(&ConfigSource::Preset(DEFAULT_PRESET.into()), &[set])
            .expect_err("a reserved value must be refused");
        let text = format!("{err}");
        assert!(text.contains(key) && text.contains(why), "{key}: {text}");
    }
}
