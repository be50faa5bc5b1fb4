//! The configuration schema: one serde struct per TOML table of a simulated system.
//!
//! Every struct denies unknown fields and has no defaults: a config file names every
//! value, and `configs/*.toml` says where each one comes from. Units are in the key
//! names (`_mhz`, `_bytes`, `_bits`, `_mb`, `_m`); model crates get typed parameter
//! structs built from these. Ranges are checked by [`super::validate`].

use serde::{Deserialize, Serialize};

use super::schema_pci::{
    BridgeConfig, CardTargetConfig, DmaMasterConfig, LocalTargetConfig, MacDmaConfig, Park,
};

/// A whole simulated system: every node is identical and built from these tables.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SystemConfig {
    /// Simulator settings (`[sim]`).
    pub sim: SimConfig,
    /// How the nodes are connected (`[topology]`).
    pub topology: TopologyConfig,
    /// The host of each node (`[host]`).
    pub host: HostConfig,
    /// The two PCI buses of each node and the host bridge (`[pci.system]`, `[pci.local]`,
    /// `[pci.bridge]`).
    pub pci: PciConfig,
    /// The HVIA-GE card's FPGA and SDRAM, its DMA master and its PCI targets (`[card]`,
    /// `[card.dma]`, `[card.pci_target]`, `[card.local_target]`).
    pub card: CardConfig,
    /// The DP83820 gigabit MAC on the card (`[mac]`, `[mac.dma]`).
    pub mac: MacConfig,
    /// The GMII link and the cable (`[wire]`).
    pub wire: WireConfig,
    /// Faults injected on the wire (`[faults]`; all off in every preset).
    pub faults: FaultsConfig,
    /// The VIA service the programs ask for (`[via]`).
    pub via: ViaConfig,
    /// The MPI library over VIPL (`[mpi]`, `hvia mpi`).
    pub mpi: MpiSection,
    /// The BSPlib library over VIPL (`[bsp]`, `hvia bsp`).
    pub bsp: BspSection,
}

/// `[mpi]`: the VMPI library's protocol settings (host software, not hardware).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MpiSection {
    /// Largest message sent eagerly ("ready mode", copied through pre-posted buffers);
    /// larger ones go in synchronous mode (request, reply, RDMA write) \[bytes\].
    pub eager_limit_bytes: u32,
    /// Eager receive buffers each process posts per peer (the sender's credits).
    pub buffers_per_peer: u32,
    /// Reposted buffers owed to a peer at which a credit message goes on its own.
    pub credit_threshold: u32,
    /// How synchronous-mode buffers are registered: `"per-call"` (registered and
    /// deregistered around every transfer) or `"cache"` (kept, found again).
    pub registration: MpiRegistration,
}

/// `mpi.registration`: registration of user buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MpiRegistration {
    /// Registered and deregistered around every transfer.
    #[serde(rename = "per-call")]
    PerCall,
    /// Kept registered and found again by address.
    #[serde(rename = "cache")]
    Cache,
}

/// `[bsp]`: the VBSP library's settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BspSection {
    /// Puts of at least this many bytes go by RDMA write straight into the remote area;
    /// smaller ones are combined into the destination's sync message \[bytes\].
    pub rdma_put_min_bytes: u32,
}

/// `[sim]`: settings of the simulator itself, not of the hardware.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    /// Seed of every random choice; a run is a pure function of config and seed.
    /// At most `i64::MAX` (TOML integers are signed 64-bit).
    pub seed: u64,
    /// Record trace spans and state transitions.
    pub trace: bool,
    /// How the simulator steps: `fast` (default) advances stretches whose outcome is
    /// determined as one event, `exact` steps every clock (the reference). Both give the
    /// same results, which the lockstep tests check.
    pub stepping: SimStepping,
}

/// `sim.stepping`: the simulator's stepping (see [`SimConfig::stepping`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SimStepping {
    /// Every clock of every bus, every iteration of a busy poll.
    Exact,
    /// Idle and quiet bus clocks skipped, busy polls parked until their line changes.
    Fast,
}

/// `[topology]`: how many nodes and how they are connected.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopologyConfig {
    /// Number of nodes (2 ..= 64). 2 may be connected back to back; more need a switch.
    pub nodes: u32,
    /// How the nodes are connected: `"none"` (two nodes back to back),
    /// `"store-and-forward"` or `"cut-through"` (every node on a port of one gigabit
    /// switch, `gige_mac::switch`).
    pub switch: SwitchKind,
    /// The switch's forwarding latency: from a frame's last byte in (FCS checked; in
    /// cut-through mode, from its destination address's last byte) to the frame joining
    /// its output queue \[ns\].
    pub switch_latency_ns: u32,
    /// The switch's packet buffer per output port \[bytes\]; a frame that does not fit is
    /// dropped and counted.
    pub switch_buffer_bytes: u32,
    /// IEEE 802.3x flow control on the switch's ports: obey the nodes' PAUSE frames and
    /// send PAUSE to a node whose frames fill the output buffers.
    pub switch_flow_control: bool,
    /// Bytes of one input's frames waiting in output buffers, or of the output buffer its
    /// frame joins, above which the switch sends that node a PAUSE \[bytes\].
    pub switch_pause_high_bytes: u32,
    /// Bytes of one input's frames waiting (and of the buffers they wait in) below which,
    /// after a PAUSE, the switch sends a PAUSE with `pause_time` 0 (resume) \[bytes\].
    pub switch_pause_low_bytes: u32,
    /// `pause_time` of the switch's PAUSE frames \[quanta of 512 bit times\].
    pub switch_pause_quanta: u32,
}

/// `topology.switch`: what connects the nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SwitchKind {
    /// Two nodes, one cable between them.
    #[serde(rename = "none")]
    None,
    /// A store-and-forward gigabit switch (`gige_mac::switch`), one port per node.
    #[serde(rename = "store-and-forward")]
    StoreAndForward,
    /// A cut-through gigabit switch: a frame starts on an idle output port once its
    /// destination address is in (`gige_mac::ForwardingMode::CutThrough`).
    #[serde(rename = "cut-through")]
    CutThrough,
}

/// `[host]`: the host computer of one node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    /// CPU core clock \[MHz\] (domain `host.cpu`).
    pub cpu_clock_mhz: f64,
    /// Host DRAM size \[MB = 2^20 bytes\].
    pub memory_mb: u32,
    /// What each host-side action costs the CPU (`[host.costs]`).
    pub costs: HostCostsConfig,
    /// How the VIPL library posts a descriptor (`[host.vipl]`).
    pub vipl: ViplConfig,
}

/// `[host.costs]`: the CPU cost of each host-side action, in CPU cycles (the fields of
/// `host_driver::CpuCosts`; bus time is simulated on top, never here).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostCostsConfig {
    /// Entry, checks and return of one VIPL library call \[cycles\].
    pub vipl_call_cycles: u32,
    /// Kernel entry and exit of one kernel-agent request \[cycles\].
    pub syscall_cycles: u32,
    /// One `gettimeofday` system call; its clock is read half-way \[cycles\].
    pub gettimeofday_cycles: u32,
    /// Pinning one 4 KB page during registration \[cycles per page\].
    pub pin_page_cycles: u32,
    /// Computing the fields of one descriptor \[cycles\].
    pub descriptor_build_cycles: u32,
    /// Work-queue bookkeeping of one post \[cycles\].
    pub post_link_cycles: u32,
    /// Issuing one uncached store \[cycles\].
    pub mmio_write_cycles: u32,
    /// Issuing one uncached load \[cycles\].
    pub mmio_read_cycles: u32,
    /// One turn of a polling loop, its load apart \[cycles\].
    pub poll_iteration_cycles: u32,
    /// A cache-hitting access \[cycles per 32-byte line\].
    pub cache_hit_cycles: u32,
    /// The first missing line of an access \[cycles\].
    pub cache_miss_cycles: u32,
    /// Each further missing line of the same access \[cycles per line\].
    pub cache_miss_stream_cycles: u32,
    /// A store to a line that is not cached \[cycles per line\].
    pub store_miss_cycles: u32,
    /// Bytes moved or compared in registers per cycle \[bytes per cycle\].
    pub copy_bytes_per_cycle: u32,
    /// Delay between two reads of a busy card command register \[cycles\].
    pub register_poll_delay_cycles: u32,
    /// One `malloc` \[cycles\].
    pub malloc_cycles: u32,
    /// First touch of one fresh anonymous page \[cycles per page\].
    pub page_fault_cycles: u32,
}

/// `[host.vipl]`: the card-register accesses of a post (VipPostSend, VipPostRecv).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ViplConfig {
    /// Before ringing, read the VI's state from its doorbell window on the card.
    pub post_reads_vi_state: bool,
    /// After ringing, read the doorbell window back (flushes the posted doorbell writes
    /// to the card before the call returns).
    pub post_flushes_doorbell: bool,
    /// After ringing, read the doorbell window until the card has taken the post
    /// (`POSTS_PENDING` clear); the first read is the flush.
    pub post_waits_for_card: bool,
    /// Every doorbell names its descriptor, so the card does not read the previous
    /// descriptor's Next link (what-if; false: only a queue's first post does).
    pub doorbell_names_descriptor: bool,
}

/// `[pci]`: the two PCI buses of a node and the host bridge.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PciConfig {
    /// The system bus between host bridge and card (`[pci.system]`, domain `pci.system`).
    pub system: PciBusConfig,
    /// The card's local bus between FPGA and DP83820 (`[pci.local]`, domain `pci.local`).
    pub local: PciBusConfig,
    /// The host bridge on the system bus: the target of the card's DMA into host memory
    /// (`[pci.bridge]`).
    pub bridge: BridgeConfig,
}

/// One PCI bus.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PciBusConfig {
    /// Data path width \[bits\]: 32 or 64.
    pub width_bits: u32,
    /// Bus clock \[MHz\].
    pub clock_mhz: f64,
    /// Longest DMA burst a master issues \[bytes\]; a power of two.
    pub burst_bytes: u32,
    /// What the arbiter does with GNT# when nobody requests: `"last-master"` or `"none"`.
    pub park: Park,
}

impl PciBusConfig {
    /// Bytes moved per data phase (width / 8).
    #[must_use]
    pub const fn bytes_per_data_phase(&self) -> u32 {
        self.width_bits / 8
    }
}

/// Where the address translation table lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttLocation {
    /// In the card's SDRAM, read by the ATT manager (the published HVIA-GE design).
    Card,
    /// In host memory, read by the card with DMA (the software-VIA what-if).
    Host,
}

/// `[card]`: the HVIA-GE FPGA and its SDRAM.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CardConfig {
    /// FPGA core clock \[MHz\] (domain `card.core`).
    pub core_clock_mhz: f64,
    /// Card SDRAM size \[MB = 2^20 bytes\].
    pub sdram_mb: u32,
    /// Card SDRAM clock \[MHz\] (domain `card.sdram`).
    pub sdram_clock_mhz: f64,
    /// Where the ATT lives: `"card"` or `"host"`.
    pub att_location: AttLocation,
    /// The card's DMA master on the system bus (`[card.dma]`); its burst is
    /// `pci.system.burst_bytes`.
    pub dma: DmaMasterConfig,
    /// The card as a PCI target on the system bus: its BAR (`[card.pci_target]`).
    pub pci_target: CardTargetConfig,
    /// The FPGA as a target on the local bus: the buffer RAM the DP83820 reads and
    /// writes (`[card.local_target]`).
    pub local_target: LocalTargetConfig,
    /// The VIA protocol engine's processing times and queues (`[card.engine]`).
    pub engine: EngineConfig,
    /// The TX/RX frame buffers between the engine and the GEC (`[card.buffers]`).
    pub buffers: BuffersConfig,
}

/// `[card.engine]`: the VIA protocol engine. Cycle counts are FPGA core-clock cycles.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineConfig {
    /// Cycles to decode a doorbell and dispatch it \[cycles\].
    pub doorbell_decode_cycles: u32,
    /// Cycles to decode and check a fetched VI descriptor \[cycles\].
    pub descriptor_decode_cycles: u32,
    /// Check a posted receive descriptor (read, format, buffer translations) before
    /// taking its doorbell.
    pub check_recv_on_post: bool,
    /// Keep a queue tail's Next link when a read of that descriptor finds it already
    /// written, so the queue's next doorbell needs no queue-link read.
    pub follow_read_links: bool,
    /// Read and translate a message's receive descriptor again for every frame.
    pub recv_descriptor_per_frame: bool,
    /// Cycles to assemble a frame's headers before its first word moves \[cycles\].
    pub header_build_cycles: u32,
    /// Cycles from a frame's last word in the TX buffer to the GEC seeing it \[cycles\].
    pub handoff_cycles: u32,
    /// Cycles to check a received header after reading it \[cycles\].
    pub header_check_cycles: u32,
    /// Send FIFO size \[bytes\].
    pub send_fifo_bytes: u32,
    /// Recv FIFO size \[bytes\].
    pub recv_fifo_bytes: u32,
    /// Reliable VIs: a sender's retransmission timeout, from its oldest unacknowledged
    /// frame's transmission (or the last Ack that moved its window) \[cycles\].
    pub retx_timeout_cycles: u32,
    /// Reliable VIs: timeouts in a row, without an Ack that moved the window, after
    /// which the connection is given up (the VI goes to `error`) \[timeouts\].
    pub retx_limit: u8,
    /// Reliable VIs: data frames a sender may have unacknowledged; every quarter of it
    /// a frame asks the receiver for an Ack \[frames\].
    pub retx_window_frames: u32,
    /// The engine implements RDMA read (VIA 1.0 optional; the published card does not).
    pub rdma_read: bool,
}

/// `[card.buffers]`: the frame buffers in the FPGA's buffer RAM.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuffersConfig {
    /// TX frame buffers \[frames\].
    pub tx_slots: u32,
    /// RX frame buffers \[frames\].
    pub rx_slots: u32,
}

/// `[mac]`: the DP83820 gigabit MAC.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MacConfig {
    /// Transmit FIFO size \[bytes\].
    pub tx_fifo_bytes: u32,
    /// Receive FIFO size \[bytes\].
    pub rx_fifo_bytes: u32,
    /// The DP83820 as the DMA master of the local bus (`[mac.dma]`); its burst is
    /// `pci.local.burst_bytes`.
    pub dma: MacDmaConfig,
}

/// `[wire]`: the GMII link, the frames on it and the cable.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireConfig {
    /// GMII clock \[MHz\], one byte per clock (domain `wire.gmii`).
    pub gmii_clock_mhz: f64,
    /// Largest Ethernet frame without FCS \[bytes\].
    pub mtu_bytes: u32,
    /// Cable length between the two PHYs \[m\].
    pub cable_m: f64,
    /// Minimum inter-frame gap \[bytes\].
    pub min_ifg_bytes: u32,
}

/// `[faults]`: faults injected on the wire between the two nodes (`gige_mac::fault`),
/// decided per frame by each node's transmitter from a random stream derived from
/// `sim.seed` and the direction. All off (zeros) is a perfect link.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultsConfig {
    /// Probability that a frame is lost on the wire \[0, 1\] (in `direction`).
    pub frame_loss: f64,
    /// Probability that a bit of a frame is inverted on the wire, per bit
    /// \[0, 1e-3\] (in `direction`); the receiving DP83820 drops the frame with a CRC
    /// error.
    pub bit_error_rate: f64,
    /// Which direction(s) `frame_loss` and `bit_error_rate` apply to: `"both"`,
    /// `"0-to-1"` or `"1-to-0"` (the link-down window is the whole link's).
    pub direction: FaultDirection,
    /// When the link goes down \[us of simulated time\]; 0 = never.
    pub link_down_at_us: u64,
    /// How long it stays down \[us\]; 0 = never (both or neither are 0). Frames whose
    /// transmission overlaps the window are lost (cut short if they started before it).
    pub link_down_for_us: u64,
    /// Probability that a frame is delivered twice \[0, 1\] (in `direction`): the copy
    /// follows it on the far end's line after an inter-frame gap.
    pub duplicate: f64,
    /// Probability that a frame is held back \[0, 1\] (in `direction`) and delivered
    /// after the next frame of its direction (or when the line goes idle).
    pub reorder: f64,
    /// The longest a held frame waits for the next one \[us\]; then it goes alone, late.
    /// 0: it goes as soon as its transmitter's line is idle after it.
    pub reorder_hold_us: u64,
    /// When one bit of an ATT L1 entry in card SDRAM inverts \[us of simulated time\];
    /// 0 = never (`nic_model::att::AttBitFlip`).
    pub att_flip_at_us: u64,
    /// The node whose card takes the flip (0 or 1).
    pub att_flip_node: u32,
    /// The L1 entry that takes the flip (its index, the low 20 bits of a memory handle).
    pub att_flip_entry: u32,
    /// The bit of the 24-byte entry that inverts, 0..192 (bit `b % 8` of byte `b / 8`).
    pub att_flip_bit: u32,
    /// How a node's host bridge answers DMA into `pci_abort_start` ..
    /// `+ pci_abort_bytes`: `"none"`, `"target"` (Target-Abort) or `"master"` (not
    /// claimed: Master-Abort) (`pci_model::abort`).
    pub pci_abort: PciAbort,
    /// The node whose host bridge aborts (0 or 1).
    pub pci_abort_node: u32,
    /// First host physical address of the range \[bytes; a multiple of 4096\].
    pub pci_abort_start: u64,
    /// Length of the range \[bytes; a multiple of 4096, more than 0 when `pci_abort` is
    /// not `"none"`\].
    pub pci_abort_bytes: u64,
}

/// `faults.pci_abort`: how the host bridge answers DMA into the chosen range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PciAbort {
    /// No fault.
    #[serde(rename = "none")]
    None,
    /// The bridge claims the access and ends it with Target-Abort.
    #[serde(rename = "target")]
    Target,
    /// The bridge does not claim the access: Master-Abort.
    #[serde(rename = "master")]
    Master,
}

/// `[via]`: what the host programs ask of VIA.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ViaConfig {
    /// The reliability level of the ping-pong's VIs (`VipCreateVi` attributes, both
    /// sides): `"unreliable"`, `"reliable-delivery"` or `"reliable-reception"`.
    pub reliability: ViaReliability,
}

/// `via.reliability`: a VIA 1.0 reliability level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ViaReliability {
    /// Unreliable delivery: a send completes when its frames are sent.
    #[serde(rename = "unreliable")]
    Unreliable,
    /// Reliable delivery: a send completes when the remote card acknowledged it.
    #[serde(rename = "reliable-delivery")]
    ReliableDelivery,
    /// Reliable reception: a send completes when the data is in the remote memory.
    #[serde(rename = "reliable-reception")]
    ReliableReception,
}

impl ViaReliability {
    /// The level as the VI attributes carry it.
    #[must_use]
    pub const fn level(self) -> via_abi::bar::Reliability {
        match self {
            ViaReliability::Unreliable => via_abi::bar::Reliability::Unreliable,
            ViaReliability::ReliableDelivery => via_abi::bar::Reliability::ReliableDelivery,
            ViaReliability::ReliableReception => via_abi::bar::Reliability::ReliableReception,
        }
    }
}

/// `faults.direction`: which way the random wire faults apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FaultDirection {
    /// Both directions, each with its own random stream.
    #[serde(rename = "both")]
    Both,
    /// Frames node 0 sends to node 1 only.
    #[serde(rename = "0-to-1")]
    ZeroToOne,
    /// Frames node 1 sends to node 0 only.
    #[serde(rename = "1-to-0")]
    OneToZero,
}

impl FaultDirection {
    /// Whether frames sent by node `from` are subject to the random faults.
    #[must_use]
    pub const fn applies_from(self, from: usize) -> bool {
        match self {
            FaultDirection::Both => true,
            FaultDirection::ZeroToOne => from == 0,
            FaultDirection::OneToZero => from == 1,
        }
    }

    /// The config word (`both`, `0-to-1`, `1-to-0`).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            FaultDirection::Both => "both",
            FaultDirection::ZeroToOne => "0-to-1",
            FaultDirection::OneToZero => "1-to-0",
        }
    }
}
