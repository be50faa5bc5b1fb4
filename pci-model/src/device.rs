//! A simple memory-like device target: a component that holds bytes for its address
//! range, takes posted writes and answers reads after a fixed latency.
//!
//! It stands in for the card's BAR (registers, doorbells) in tests and for the FPGA on
//! the local bus in the `dma --bus local` scenario; the real card (nic-model) implements
//! the same messages. Its read latency is counted in clocks of the bus domain from the
//! edge it receives `TargetRead`: 0 means it answers at once, and the data is on the bus
//! in the following clock (a zero-wait-state read).

use crate::msg::PciMsg;
use sim_kernel::{ComponentId, Ctx, Cycles, Time};

/// A memory-like PCI target component.
#[derive(Clone, Debug)]
pub struct SimpleTarget {
    bus: ComponentId,
    base: u64,
    bytes: Vec<u8>,
    read_latency: Cycles,
    max_read_bytes: u64,
    /// Every `TargetWrite` received: (when, address, length).
    pub writes: Vec<(Time, u64, usize)>,
    /// Every `TargetRead` received: (when, address).
    pub reads: Vec<(Time, u64)>,
    /// Writes outside its range, dropped (warned and counted).
    pub dropped_writes: u64,
    /// Messages of a kind a target does not take (a wiring bug), dropped.
    pub wrong_inputs: u64,
}

impl SimpleTarget {
    /// A target for `[base, base + size)` on bus component `bus`, answering reads
    /// `read_latency` bus clocks after it sees them with at most `max_read_bytes` bytes
    /// (0: whatever the master wants).
    #[must_use]
    pub fn new(
        bus: ComponentId,
        base: u64,
        size: usize,
        read_latency: Cycles,
        max_read_bytes: u64,
    ) -> Self {
        Self {
            bus,
            base,
            bytes: vec![0; size],
            read_latency,
            max_read_bytes,
            writes: Vec::new(),
            reads: Vec::new(),
            dropped_writes: 0,
            wrong_inputs: 0,
        }
    }

    /// Its contents.
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Its contents, to fill before a run.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.bytes
    }

    /// Handles one message.
    pub fn handle<M: From<PciMsg>>(&mut self, msg: PciMsg, ctx: &mut Ctx<'_, M>) {
        match msg {
            PciMsg::TargetWrite { addr, data } => {
                self.writes.push((ctx.now(), addr, data.len()));
                if let Some(dst) = self.range_mut(addr, data.len()) {
                    dst.copy_from_slice(&data);
                } else {
                    tracing::warn!(target: "pci::bus", addr, "write outside the simple target dropped");
                    self.dropped_writes += 1;
                }
            }
            PciMsg::TargetRead { tag, addr, len, .. } => {
                self.reads.push((ctx.now(), addr));
                let want = if self.max_read_bytes > 0 {
                    len.min(self.max_read_bytes)
                } else {
                    len
                };
                let off = usize::try_from(addr.saturating_sub(self.base)).unwrap_or(usize::MAX);
                let n = usize::try_from(want)
                    .unwrap_or(0)
                    .min(self.bytes.len().saturating_sub(off));
                let data = self
                    .bytes
                    .get(off..off + n)
                    .map(<[u8]>::to_vec)
                    .unwrap_or_default();
                ctx.send_after(
                    self.bus,
                    Cycles(1 + self.read_latency.0),
                    PciMsg::TargetReadData { tag, data }.into(),
                );
            }
            PciMsg::Tick { .. }
            | PciMsg::WatchedWrite { .. }
            | PciMsg::Request(_)
            | PciMsg::TransactionDone(_)
            | PciMsg::TargetReadData { .. }
            | PciMsg::TargetAbort { .. }
            | PciMsg::TargetWriteRetry { .. }
            | PciMsg::CpuWrite { .. }
            | PciMsg::CpuWritePosted { .. }
            | PciMsg::CpuRead { .. }
            | PciMsg::CpuReadData { .. }
            | PciMsg::DmaStart(_)
            | PciMsg::DmaDone(_) => {
                tracing::error!(target: "pci::bus", ?msg, "not a target input: dropped");
                self.wrong_inputs += 1;
            }
        }
    }

    fn range_mut(&mut self, addr: u64, len: usize) -> Option<&mut [u8]> {
        let off = usize::try_from(addr.checked_sub(self.base)?).ok()?;
        self.bytes.get_mut(off..off.checked_add(len)?)
    }
}
