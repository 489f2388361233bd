//! Test support shared by the unit tests, the integration tests of the binary and the
//! benchmarks: chiefly a mock model server speaking every wire format over loopback
//! HTTP. Not part of the stable API.

mod exchange;
#[doc(hidden)]
pub mod mock_server;
mod reply;
pub mod strict;
