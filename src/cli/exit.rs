//! Exit codes (SPEC §3.1): the contract CI pipelines rely on. A command ends as a run does,
//! so its exit is a run's status, and the table of codes is `RunStatus::exit_code`.

/// How a command ended: `Completed` (0) when the agent finished or the files are valid,
/// `Invalid` (2) for a bad command line, and so on.
pub use crate::engine::RunStatus as Exit;
