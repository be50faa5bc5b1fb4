//! BSP programs: the probe of the BSP cost parameters (`probe`) and LU decomposition on
//! a grid of processes (`lu`).

pub mod lu;
pub mod probe;

pub use lu::{bsp_lu, lu_matrix, lu_reference, LuParams, LuSink};
pub use probe::{bsp_probe, fit, BspCost, ProbeParams};

use crate::bsp::BspError;
use host_driver::ProgramError;

fn bsp_err(e: BspError) -> ProgramError {
    tracing::warn!(target: "host::bsp", %e, "BSP call failed");
    match e {
        BspError::Mpi(m) => m.into(),
        _ => ProgramError::Protocol("BSP call failed"),
    }
}

fn vipl_err(call: &'static str) -> impl FnOnce(host_driver::VipError) -> ProgramError {
    move |error| ProgramError::Vipl { call, error }
}
