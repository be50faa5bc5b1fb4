//! Tests of the ATT manager through the kernel: a small system ([`harness`]), translations
//! computed ahead against the woken manager ([`ahead`]), the
//! property test against a naive reference ([`props`]), refusals and registration bytes
//! ([`refusals`]), hand-counted timing ([`timing`]), the host-memory what-if ([`host`]) and
//! bit flips in the table's SDRAM ([`flips`]).

mod ahead;
mod flips;
mod harness;
mod host;
mod props;
mod refusals;
mod timing;
