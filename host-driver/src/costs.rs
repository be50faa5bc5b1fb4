//! The host CPU cost model: what a Pentium III 800 MHz (P6 core, 32-byte lines, 100 MHz
//! front-side bus, 440BX-class chipset, PC100 SDRAM) under Linux 2.4 pays for each thing
//! a VIPL program does. One CPU cycle is 1.25 ns.
//!
//! None of these values is published for HVIA-GE: each is an assumption with its reason
//! (instruction counts of a VIPL library that rings hardware doorbells, P6 latencies from
//! Intel's optimization manual, Linux 2.4 kernel paths). Bus time is *not* here: a
//! memory-mapped write waits for the host bridge to post it and a memory-mapped read
//! stalls for the whole PCI read, both simulated by `pci-model`. [`CpuCosts::docs`] lists
//! every value with its unit and source for reports.
//!
//! | name | default | ns | source |
//! |---|---|---|---|
//! | `vipl_call` | 60 cycles | 75 | assumption: ~60 instructions (argument checks, handle lookup, return) at ~1 IPC |
//! | `syscall` | 800 cycles | 1000 | assumption: Linux 2.4 `int 0x80` entry/exit + ioctl dispatch + copy_from_user |
//! | `gettimeofday` | 820 cycles | 1025 | assumption: measured by T. Maeda, "Kernel Mode Linux", Linux Journal 6516, table 2 (a real system call on i386 Linux 2.4) |
//! | `pin_page` | 400 cycles | 500 | assumption: Linux 2.4 `get_user_pages` walk + page lock, per 4 KB page |
//! | `descriptor_build` | 20 cycles | 25 | assumption: field computations of one descriptor (stores costed apart) |
//! | `post_link` | 20 cycles | 25 | assumption: work-queue bookkeeping of a post (tail, Next link) |
//! | `mmio_write` | 10 cycles | 12.5 | assumption: issuing one uncached store (then the bridge's posting is simulated) |
//! | `mmio_read` | 10 cycles | 12.5 | assumption: issuing one uncached load (then the PCI read stall is simulated) |
//! | `poll_iteration` | 10 cycles | 12.5 | assumption: one turn of a done/flag loop (compare, branch, call), load apart |
//! | `cache_hit` | 3 cycles | 3.75 | Intel P6 optimization manual: 3-cycle L1 load-use latency |
//! | `cache_miss` | 112 cycles | 140 | assumption: 100 MHz FSB request + snoop + PC100 page miss (tRP+tRCD+CL = 60 ns) + return |
//! | `cache_miss_stream` | 40 cycles | 50 | assumption: a further sequential 32-byte line, ~640 MB/s from PC100 (800 MB/s peak) |
//! | `store_miss` | 12 cycles | 15 | assumption: the store buffer hides most of the read-for-ownership |
//! | `copy` | 1 cycle / 4 B | 0.31 / B | assumption: `rep movsd`, one dword per clock from the cache |
//! | `register_poll_delay` | 800 cycles | 1000 | assumption: the kernel agent `udelay(1)`s between reads of a busy command register |
//! | `malloc` | 200 cycles | 250 | assumption: glibc 2.2 `malloc` fast path |
//! | `page_fault` | 2400 cycles | 3000 | assumption: Linux 2.4 anonymous page fault incl. clearing 4 KB |

use sim_kernel::Cycles;

/// One CPU cycle of the Pentium III 800 MHz \[ps\] (the `host.cpu` domain period).
pub const CPU_PERIOD_PS: u64 = 1_250;

/// A cost proportional to a byte count: `cycles` per `per_bytes` bytes, rounded up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteRate {
    /// Cycles charged per `per_bytes` bytes \[cycles\].
    pub cycles: u64,
    /// Bytes those cycles pay for \[bytes\] (0 is read as 1).
    pub per_bytes: u64,
}

impl ByteRate {
    /// The cost of `bytes` bytes, rounded up to whole cycles (saturating).
    #[must_use]
    pub fn cost(&self, bytes: u64) -> Cycles {
        let num = u128::from(bytes) * u128::from(self.cycles);
        let den = u128::from(self.per_bytes.max(1));
        Cycles(u64::try_from(num.div_ceil(den)).unwrap_or(u64::MAX))
    }
}

/// What each host-side action costs on the CPU (see the module table for sources).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuCosts {
    /// Entry, argument checks, handle lookup and return of one VIPL library call \[cycles\].
    pub vipl_call: Cycles,
    /// Kernel entry and exit of one kernel-agent request (ioctl) \[cycles\].
    pub syscall: Cycles,
    /// One `gettimeofday` system call \[cycles\]; it reads the clock half-way through.
    pub gettimeofday: Cycles,
    /// Pinning and looking up one 4 KB page during memory registration \[cycles per page\].
    pub pin_page: Cycles,
    /// Computing the fields of one descriptor, besides its memory stores \[cycles\].
    pub descriptor_build: Cycles,
    /// Work-queue bookkeeping of one post (tail pointer, Next link) \[cycles\].
    pub post_link: Cycles,
    /// Issuing one uncached memory-mapped store \[cycles\]; the wait for the bridge to post
    /// it is simulated on top.
    pub mmio_write: Cycles,
    /// Issuing one uncached memory-mapped load \[cycles\]; the stall for the PCI read is
    /// simulated on top.
    pub mmio_read: Cycles,
    /// One iteration of a polling loop, besides its memory load \[cycles\].
    pub poll_iteration: Cycles,
    /// A load or store that hits the cache \[cycles per 32-byte line\].
    pub cache_hit: Cycles,
    /// A load of a line that is not cached, or was invalidated by a DMA write since the
    /// CPU last read it: the first such line of an access \[cycles\].
    pub cache_miss: Cycles,
    /// Each further missing line of the same access (sequential streaming) \[cycles\].
    pub cache_miss_stream: Cycles,
    /// A store to a line that is not cached (read for ownership behind the store buffer)
    /// \[cycles\].
    pub store_miss: Cycles,
    /// Moving or comparing bytes in registers, on top of the line accesses.
    pub copy: ByteRate,
    /// Delay between two reads of a busy card command register \[cycles\].
    pub register_poll_delay: Cycles,
    /// One `malloc` \[cycles\].
    pub malloc: Cycles,
    /// First touch of one fresh anonymous page (fault, allocation, clearing) \[cycles per page\].
    pub page_fault: Cycles,
}

impl Default for CpuCosts {
    fn default() -> Self {
        Self {
            vipl_call: Cycles(60),
            syscall: Cycles(800),
            gettimeofday: Cycles(820),
            pin_page: Cycles(400),
            descriptor_build: Cycles(20),
            post_link: Cycles(20),
            mmio_write: Cycles(10),
            mmio_read: Cycles(10),
            poll_iteration: Cycles(10),
            cache_hit: Cycles(3),
            cache_miss: Cycles(112),
            cache_miss_stream: Cycles(40),
            store_miss: Cycles(12),
            copy: ByteRate {
                cycles: 1,
                per_bytes: 4,
            },
            register_poll_delay: Cycles(800),
            malloc: Cycles(200),
            page_fault: Cycles(2_400),
        }
    }
}

/// One row of the cost table: for reports and config comments.
#[derive(Clone, Debug, PartialEq)]
pub struct CostDoc {
    /// Field name in [`CpuCosts`].
    pub name: &'static str,
    /// Value \[cycles\] (for `copy`: cycles per `per_bytes`).
    pub cycles: u64,
    /// Unit of the value.
    pub unit: &'static str,
    /// The same in nanoseconds at 800 MHz (for `copy`: per byte).
    pub ns: f64,
    /// Where the value comes from.
    pub source: &'static str,
}

impl CpuCosts {
    /// Every cost with its unit, its time at 800 MHz and its source.
    #[must_use]
    #[allow(clippy::cast_precision_loss)]
    pub fn docs(&self) -> Vec<CostDoc> {
        let ns = |c: Cycles| c.0 as f64 * CPU_PERIOD_PS as f64 / 1000.0;
        let row = |name, c: Cycles, unit, source| CostDoc {
            name,
            cycles: c.0,
            unit,
            ns: ns(c),
            source,
        };
        let copy_ns = self.copy.cycles as f64 * CPU_PERIOD_PS as f64
            / 1000.0
            / self.copy.per_bytes.max(1) as f64;
        vec![
            row(
                "vipl_call",
                self.vipl_call,
                "cycles",
                "assumption: ~60 instructions (checks, handle lookup, return) at ~1 IPC",
            ),
            row(
                "syscall",
                self.syscall,
                "cycles",
                "assumption: Linux 2.4 int 0x80 entry/exit + ioctl dispatch + copy_from_user",
            ),
            row(
                "gettimeofday",
                self.gettimeofday,
                "cycles",
                "assumption: 820 cycles measured by Maeda (Linux Journal 6516); a real syscall on i386 Linux 2.4",
            ),
            row(
                "pin_page",
                self.pin_page,
                "cycles/page",
                "assumption: Linux 2.4 get_user_pages walk + page lock",
            ),
            row(
                "descriptor_build",
                self.descriptor_build,
                "cycles",
                "assumption: field computations of one descriptor",
            ),
            row(
                "post_link",
                self.post_link,
                "cycles",
                "assumption: work-queue bookkeeping of one post",
            ),
            row(
                "mmio_write",
                self.mmio_write,
                "cycles",
                "assumption: issuing an uncached store; bridge posting simulated",
            ),
            row(
                "mmio_read",
                self.mmio_read,
                "cycles",
                "assumption: issuing an uncached load; PCI read stall simulated",
            ),
            row(
                "poll_iteration",
                self.poll_iteration,
                "cycles",
                "assumption: one turn of a polling loop, load apart",
            ),
            row(
                "cache_hit",
                self.cache_hit,
                "cycles/line",
                "Intel P6 optimization manual: 3-cycle L1 load-use latency",
            ),
            row(
                "cache_miss",
                self.cache_miss,
                "cycles",
                "assumption: FSB + snoop + PC100 page miss + return, ~140 ns",
            ),
            row(
                "cache_miss_stream",
                self.cache_miss_stream,
                "cycles/line",
                "assumption: sequential 32-byte lines at ~640 MB/s",
            ),
            row(
                "store_miss",
                self.store_miss,
                "cycles/line",
                "assumption: store buffer hides most of the RFO",
            ),
            CostDoc {
                name: "copy",
                cycles: self.copy.cycles,
                unit: "cycles per 4 bytes",
                ns: copy_ns,
                source: "assumption: rep movsd, one dword per clock from the cache",
            },
            row(
                "register_poll_delay",
                self.register_poll_delay,
                "cycles",
                "assumption: udelay(1) between reads of a busy register",
            ),
            row(
                "malloc",
                self.malloc,
                "cycles",
                "assumption: glibc 2.2 malloc fast path",
            ),
            row(
                "page_fault",
                self.page_fault,
                "cycles/page",
                "assumption: Linux 2.4 anonymous fault incl. clearing 4 KB",
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_rate_rounds_up_and_saturates() {
        let r = ByteRate {
            cycles: 1,
            per_bytes: 4,
        };
        assert_eq!(r.cost(0), Cycles(0));
        assert_eq!(r.cost(1), Cycles(1));
        assert_eq!(r.cost(8), Cycles(2));
        assert_eq!(r.cost(9), Cycles(3));
        let zero = ByteRate {
            cycles: 3,
            per_bytes: 0,
        };
        assert_eq!(zero.cost(2), Cycles(6));
        let big = ByteRate {
            cycles: u64::MAX,
            per_bytes: 1,
        };
        assert_eq!(big.cost(u64::MAX), Cycles(u64::MAX));
    }

    #[test]
    fn docs_list_every_cost_in_ns_at_800_mhz() {
        let d = CpuCosts::default().docs();
        assert_eq!(d.len(), 17);
        let miss = d.iter().find(|r| r.name == "cache_miss").unwrap();
        assert!((miss.ns - 140.0).abs() < 1e-9);
        assert!(d.iter().all(|r| !r.source.is_empty()));
    }
}
