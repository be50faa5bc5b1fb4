//! The mapping from `[host.costs]` onto `host_driver::CpuCosts`, and its range checks:
//! the one place a host cost key becomes a model parameter.

use host_driver::{ByteRate, CpuCosts};
use sim_kernel::Cycles;

use super::schema::{HostCostsConfig, SystemConfig};
use super::validate::{in_range, Problem};

impl SystemConfig {
    /// The CPU cost table of every host, from `[host.costs]`.
    #[must_use]
    pub fn cpu_costs(&self) -> CpuCosts {
        let c = &self.host.costs;
        let cy = |v: u32| Cycles(u64::from(v));
        CpuCosts {
            vipl_call: cy(c.vipl_call_cycles),
            syscall: cy(c.syscall_cycles),
            gettimeofday: cy(c.gettimeofday_cycles),
            pin_page: cy(c.pin_page_cycles),
            descriptor_build: cy(c.descriptor_build_cycles),
            post_link: cy(c.post_link_cycles),
            mmio_write: cy(c.mmio_write_cycles),
            mmio_read: cy(c.mmio_read_cycles),
            poll_iteration: cy(c.poll_iteration_cycles),
            cache_hit: cy(c.cache_hit_cycles),
            cache_miss: cy(c.cache_miss_cycles),
            cache_miss_stream: cy(c.cache_miss_stream_cycles),
            store_miss: cy(c.store_miss_cycles),
            copy: ByteRate {
                cycles: 1,
                per_bytes: u64::from(c.copy_bytes_per_cycle),
            },
            register_poll_delay: cy(c.register_poll_delay_cycles),
            malloc: cy(c.malloc_cycles),
            page_fault: cy(c.page_fault_cycles),
        }
    }
}

/// Every cost is at most 10^7 cycles (12.5 ms at 800 MHz: a sane bound for one action);
/// a copy moves 1 to 64 bytes a cycle.
pub(super) fn check(c: &HostCostsConfig) -> Result<(), Problem> {
    const MAX: u32 = 10_000_000;
    let why = " cycles (a sane bound for one host action)";
    for (key, v) in [
        ("host.costs.vipl_call_cycles", c.vipl_call_cycles),
        ("host.costs.syscall_cycles", c.syscall_cycles),
        ("host.costs.gettimeofday_cycles", c.gettimeofday_cycles),
        ("host.costs.pin_page_cycles", c.pin_page_cycles),
        (
            "host.costs.descriptor_build_cycles",
            c.descriptor_build_cycles,
        ),
        ("host.costs.post_link_cycles", c.post_link_cycles),
        ("host.costs.mmio_write_cycles", c.mmio_write_cycles),
        ("host.costs.mmio_read_cycles", c.mmio_read_cycles),
        ("host.costs.poll_iteration_cycles", c.poll_iteration_cycles),
        ("host.costs.cache_hit_cycles", c.cache_hit_cycles),
        ("host.costs.cache_miss_cycles", c.cache_miss_cycles),
        (
            "host.costs.cache_miss_stream_cycles",
            c.cache_miss_stream_cycles,
        ),
        ("host.costs.store_miss_cycles", c.store_miss_cycles),
        (
            "host.costs.register_poll_delay_cycles",
            c.register_poll_delay_cycles,
        ),
        ("host.costs.malloc_cycles", c.malloc_cycles),
        ("host.costs.page_fault_cycles", c.page_fault_cycles),
    ] {
        in_range(key, v, 0, MAX, why)?;
    }
    // A polling loop must cost something, or a poll could spin without time passing.
    in_range(
        "host.costs.poll_iteration_cycles",
        c.poll_iteration_cycles,
        1,
        MAX,
        " (a polling loop turn takes time)",
    )?;
    in_range(
        "host.costs.copy_bytes_per_cycle",
        c.copy_bytes_per_cycle,
        1,
        64,
        " bytes",
    )
}
