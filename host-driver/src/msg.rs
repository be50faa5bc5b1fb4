//! [`HostMsg`]: the messages a [`HostCpu`](crate::HostCpu) receives besides the PCI
//! completions it gets from the host bridge ([`PciMsg::CpuWritePosted`],
//! [`PciMsg::CpuReadData`]), and [`HostIncoming`], the union of both for systems that
//! route them through one call.
//!
//! | variant | from | meaning |
//! |---|---|---|
//! | `Start` | the testbench (`Kernel::post`) | begin running the loaded program |
//! | `Wake` | the CPU itself | the cost of the current operation has been paid |

use pci_model::PciMsg;

/// Messages of the host side (one enum per crate, see ARCHITECTURE.md).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostMsg {
    /// Start the program loaded into the CPU (ignored if none is loaded or it already runs).
    Start,
    /// The CPU's own wake-up at the end of an operation's cost; stale generations are ignored.
    Wake {
        /// Generation of the wake-up (the CPU keeps at most one outstanding).
        generation: u64,
    },
}

/// Everything a [`HostCpu`](crate::HostCpu) handles, for [`HostCpu::handle`](crate::HostCpu::handle).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostIncoming {
    /// A completion from the host bridge.
    Pci(PciMsg),
    /// A host message.
    Host(HostMsg),
}

impl From<PciMsg> for HostIncoming {
    fn from(m: PciMsg) -> Self {
        HostIncoming::Pci(m)
    }
}

impl From<HostMsg> for HostIncoming {
    fn from(m: HostMsg) -> Self {
        HostIncoming::Host(m)
    }
}
