//! The mapping from `[mpi]` and `[bsp]` onto the libraries' settings
//! (`vmpi::MpiConfig`, `vbsp::BspConfig`): the one place those keys become parameters.

use super::schema::{MpiRegistration, SystemConfig, ViaReliability};
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
            ..MpiConfig::default()
        }
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
