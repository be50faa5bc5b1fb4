//! Tests of the ATT manager through the kernel: a small system ([`harness`]), the
//! property test against a naive reference ([`props`]), refusals and registration bytes
//! ([`refusals`]), hand-counted timing ([`timing`]) and the host-memory what-if ([`host`]).

mod harness;
mod host;
mod props;
mod refusals;
mod timing;
