//! The mapping from `[mpi]` and `[bsp]` onto the libraries' settings
//! (`vmpi::MpiConfig`, `vbsp::BspConfig`): the one place those keys become parameters.

use super::schema::{MpiRegistration, SystemConfig, ViaReliability};
use sim_kernel::Duration;
use vbsp::BspConfig;
use via_abi::bar::Reliability;
use vmpi::{MpiConfig, Registration};

impl SystemConfig {
    /// The MPI library's settings: `[mpi]`, with reliable VIs: reliable delivery, or
    /// reliable reception when `via.reliability` asks for it. MPI promises every
    /// message (MPI 1.1 section 3.4), so it cannot run on unreliable VIs, whose lost
    /// frames (a switch port's full buffer under many-to-one traffic) fail a message
    /// for good; `via.reliability = "unreliable"` (the published ping-pong's) is raised.
    #[must_use]
    pub fn mpi_config(&self) -> MpiConfig {
        let m = &self.mpi;
        MpiConfig {
            eager_limit: m.eager_limit_bytes,
            buffers_per_peer: u16::try_from(m.buffers_per_peer).unwrap_or(u16::MAX),
            credit_threshold: u16::try_from(m.credit_threshold).unwrap_or(u16::MAX),
            registration: match m.registration {
                MpiRegistration::PerCall => Registration::PerCall,
                MpiRegistration::Cache => Registration::Cache,
            },
            reliability: match self.via.reliability {
                ViaReliability::ReliableReception => Reliability::ReliableReception,
                _ => Reliability::ReliableDelivery,
            },
            progress_timeout: self.progress_base(),
            byte_time: self.slowest_byte_time(),
            ..MpiConfig::default()
        }
    }

    /// The library's base budget for a wait that sees no completion (50 ms on the
    /// published system), stretched by how much slower than it this system's slowest
    /// clock is (a 1 MHz host CPU does the same work 800 times slower).
    fn progress_base(&self) -> Duration {
        let base = MpiConfig::default().progress_timeout;
        let published = SystemConfig::from_preset(super::DEFAULT_PRESET).ok();
        let slowdown = published.map_or(1.0, |p| {
            [
                p.host.cpu_clock_mhz / self.host.cpu_clock_mhz,
                p.pci.system.clock_mhz / self.pci.system.clock_mhz,
                p.card.core_clock_mhz / self.card.core_clock_mhz,
                p.wire.gmii_clock_mhz / self.wire.gmii_clock_mhz,
            ]
            .into_iter()
            .filter(|r| r.is_finite())
            .fold(1.0f64, f64::max)
        });
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        Duration((base.0 as f64 * slowdown).ceil() as u64)
    }

    /// Time per byte on the slowest of the data's links: the GMII (a byte a clock) and
    /// the system PCI bus (its width a clock), at least 1 ps.
    fn slowest_byte_time(&self) -> Duration {
        let gmii = 1e6 / self.wire.gmii_clock_mhz;
        let pci =
            1e6 / (self.pci.system.clock_mhz * f64::from(self.pci.system.width_bits / 8).max(1.0));
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Duration(gmii.max(pci).ceil().max(1.0) as u64)
    }

    /// The BSPlib library's settings: `[bsp]` over [`SystemConfig::mpi_config`].
    #[must_use]
    pub fn bsp_config(&self) -> BspConfig {
        BspConfig {
            mpi: self.mpi_config(),
            rdma_put_min: self.bsp.rdma_put_min_bytes,
        }
    }
}
