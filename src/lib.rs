//! `runner`: a declarative agent runner.
//!
//! The library is usable without the CLI; the `runner` binary is a thin front-end.
//! Flow: `spec` (what the user wrote) → `compile` → `engine` (how it runs), which talks to
//! models through `provider` and acts through `tools` (and MCP servers, `mcp`); `output` is what a run leaves behind.

pub mod agent_test;
pub mod batch;
pub mod checkpoint;
pub mod cli;
pub mod compile;
pub mod engine;
pub mod fsutil;
pub mod log;
pub mod mcp;
pub mod nats;
pub mod output;
pub mod policy;
pub mod protocol;
pub mod provider;
pub mod reload;
mod run_file;
pub(crate) mod secrets;
pub(crate) mod serve;
pub mod session;
pub mod spec;
pub(crate) mod sync;
#[cfg(feature = "testing")]
pub mod testing;
pub mod tools;

pub use engine::{RunOutcome, RunStatus};
pub use run_file::{NotStarted, RunFile};
