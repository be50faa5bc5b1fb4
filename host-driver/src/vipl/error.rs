//! [`VipError`]: the VIPL return codes (VIA 1.0 `VIP_RETURN`) other than `VIP_SUCCESS`,
//! which is `Ok(..)`.
//!
//! Numbered in the order hardware.md lists them, `VIP_SUCCESS` = 0. The mapping from the
//! card's command results ([`CmdResult`], via-abi `bar`) is [`VipError::from_cmd`].

use via_abi::bar::CmdResult;

/// A VIPL return code other than `VIP_SUCCESS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, thiserror::Error)]
pub enum VipError {
    /// `VIP_NOT_DONE`: no completed descriptor (Done calls) / nothing to wait for.
    #[error("VIP_NOT_DONE")]
    NotDone,
    /// `VIP_INVALID_PARAMETER`: a bad handle, address, length or name.
    #[error("VIP_INVALID_PARAMETER")]
    InvalidParameter,
    /// `VIP_ERROR_RESOURCE`: out of a resource, or the card did not answer.
    #[error("VIP_ERROR_RESOURCE")]
    ErrorResource,
    /// `VIP_TIMEOUT`: the timeout passed first.
    #[error("VIP_TIMEOUT")]
    Timeout,
    /// `VIP_REJECT`: the peer rejected the connection.
    #[error("VIP_REJECT")]
    Reject,
    /// `VIP_INVALID_RELIABILITY_LEVEL`: a reliability level the NIC does not support.
    #[error("VIP_INVALID_RELIABILITY_LEVEL")]
    InvalidReliabilityLevel,
    /// `VIP_INVALID_MTU`: a maximum transfer size above the NIC's.
    #[error("VIP_INVALID_MTU")]
    InvalidMtu,
    /// `VIP_INVALID_QOS`: a quality of service the NIC does not support.
    #[error("VIP_INVALID_QOS")]
    InvalidQos,
    /// `VIP_INVALID_PTAG`: a protection tag that was not created (or was destroyed).
    #[error("VIP_INVALID_PTAG")]
    InvalidPtag,
    /// `VIP_INVALID_RDMAREAD`: RDMA read asked for, but the NIC does not support it.
    #[error("VIP_INVALID_RDMAREAD")]
    InvalidRdmaRead,
    /// `VIP_DESCRIPTOR_ERROR`: a descriptor completed with an error in its status.
    #[error("VIP_DESCRIPTOR_ERROR")]
    DescriptorError,
    /// `VIP_INVALID_STATE`: the VI is not in a state that allows the call.
    #[error("VIP_INVALID_STATE")]
    InvalidState,
    /// `VIP_ERROR_NAMESERVICE`: name service failure (no name service is modelled).
    #[error("VIP_ERROR_NAMESERVICE")]
    ErrorNameService,
    /// `VIP_NO_MATCH`: no matching connection request.
    #[error("VIP_NO_MATCH")]
    NoMatch,
}

/// A VIPL result.
pub type VipResult<T> = Result<T, VipError>;

impl VipError {
    /// Every code, in numeric order.
    pub const ALL: [VipError; 14] = [
        VipError::NotDone,
        VipError::InvalidParameter,
        VipError::ErrorResource,
        VipError::Timeout,
        VipError::Reject,
        VipError::InvalidReliabilityLevel,
        VipError::InvalidMtu,
        VipError::InvalidQos,
        VipError::InvalidPtag,
        VipError::InvalidRdmaRead,
        VipError::DescriptorError,
        VipError::InvalidState,
        VipError::ErrorNameService,
        VipError::NoMatch,
    ];

    /// The numeric code (`VIP_SUCCESS` = 0, then the order above from 1).
    #[must_use]
    pub fn code(self) -> u32 {
        Self::ALL
            .iter()
            .position(|e| *e == self)
            .and_then(|i| u32::try_from(i + 1).ok())
            .unwrap_or(u32::MAX)
    }

    /// The code's value: `Ok(())` for 0 (`VIP_SUCCESS`), the error for 1..=14, `None`
    /// for anything else.
    #[must_use]
    pub fn from_code(code: u32) -> Option<VipResult<()>> {
        if code == 0 {
            return Some(Ok(()));
        }
        let i = usize::try_from(code - 1).ok()?;
        Self::ALL.get(i).map(|e| Err(*e))
    }

    /// The VIPL name, e.g. `VIP_INVALID_STATE`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            VipError::NotDone => "VIP_NOT_DONE",
            VipError::InvalidParameter => "VIP_INVALID_PARAMETER",
            VipError::ErrorResource => "VIP_ERROR_RESOURCE",
            VipError::Timeout => "VIP_TIMEOUT",
            VipError::Reject => "VIP_REJECT",
            VipError::InvalidReliabilityLevel => "VIP_INVALID_RELIABILITY_LEVEL",
            VipError::InvalidMtu => "VIP_INVALID_MTU",
            VipError::InvalidQos => "VIP_INVALID_QOS",
            VipError::InvalidPtag => "VIP_INVALID_PTAG",
            VipError::InvalidRdmaRead => "VIP_INVALID_RDMAREAD",
            VipError::DescriptorError => "VIP_DESCRIPTOR_ERROR",
            VipError::InvalidState => "VIP_INVALID_STATE",
            VipError::ErrorNameService => "VIP_ERROR_NAMESERVICE",
            VipError::NoMatch => "VIP_NO_MATCH",
        }
    }

    /// The VIPL return code for a finished card command (`Busy` is not finished: it maps
    /// to `VIP_TIMEOUT`, what the kernel agent reports when it gives up waiting).
    ///
    /// # Errors
    /// Every result but `Ok`.
    pub fn from_cmd(r: CmdResult) -> VipResult<()> {
        match r {
            CmdResult::Ok => Ok(()),
            CmdResult::Busy | CmdResult::TimedOut => Err(VipError::Timeout),
            CmdResult::InvalidParameter => Err(VipError::InvalidParameter),
            CmdResult::NoResources | CmdResult::BadCommand | CmdResult::Unknown(_) => {
                Err(VipError::ErrorResource)
            }
            CmdResult::InvalidState => Err(VipError::InvalidState),
            CmdResult::InvalidPtag => Err(VipError::InvalidPtag),
            CmdResult::Rejected => Err(VipError::Reject),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        assert_eq!(VipError::from_code(0), Some(Ok(())));
        for (i, e) in VipError::ALL.iter().enumerate() {
            assert_eq!(e.code() as usize, i + 1);
            assert_eq!(VipError::from_code(e.code()), Some(Err(*e)));
            assert_eq!(e.to_string(), e.name());
        }
        assert_eq!(VipError::from_code(15), None);
        assert_eq!(VipError::from_code(u32::MAX), None);
    }

    #[test]
    fn card_results_map_to_vipl_codes() {
        assert_eq!(VipError::from_cmd(CmdResult::Ok), Ok(()));
        assert_eq!(
            VipError::from_cmd(CmdResult::InvalidPtag),
            Err(VipError::InvalidPtag)
        );
        assert_eq!(
            VipError::from_cmd(CmdResult::Rejected),
            Err(VipError::Reject)
        );
        assert_eq!(
            VipError::from_cmd(CmdResult::Unknown(0xFFFF_FFFF)),
            Err(VipError::ErrorResource)
        );
    }
}
