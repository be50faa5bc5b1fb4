//! The mapping from `[mpi]` and `[bsp]` onto the libraries' settings
//! (`vmpi::MpiConfig`, `vbsp::BspConfig`): the one place those keys become parameters.

use super::schema::{MpiRegistration, SystemConfig};
use vbsp::BspConfig;
use vmpi::{MpiConfig, Registration};

impl SystemConfig {
    /// The MPI library's settings: `[mpi]`, with the VIs at `via.reliability`.
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
            reliability: self.via.reliability.level(),
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
