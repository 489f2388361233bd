//! The session layer: what hosts a run, between the front ends (the CLI, `RunFile`) and the
//! engine.

pub(crate) mod files;
pub(crate) mod hooks;
pub(crate) mod prepare;
pub mod resume;
pub(crate) mod run;
pub(crate) mod run_dir;
pub(crate) mod servers;
pub(crate) mod watch;
