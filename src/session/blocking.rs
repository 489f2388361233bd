//! The session API for callers outside any async runtime (the CLI, `RunFile`): each call
//! runs on a runtime of its own, which ends with it.

use tokio::runtime::Runtime;

use super::{Ended, ResumeRequest, RunRequest, Stop};
use crate::engine::ErrorCode;
use crate::output::result::Status;

/// Runs `request` to its end.
pub fn run(request: RunRequest) -> Result<Ended, Stop> {
    let runtime = runtime()?;
    runtime.block_on(async { super::start(request).await?.outcome().await })
}

/// Resumes (or branches) a session and runs it to its end.
pub fn resume(request: ResumeRequest) -> Result<Ended, Stop> {
    let runtime = runtime()?;
    runtime.block_on(async { super::resume(request).await?.outcome().await })
}

/// The runtime of a blocking call: two workers (a run mostly waits on I/O).
pub fn runtime() -> Result<Runtime, Stop> {
    super::servers::runtime().map_err(|message| Stop {
        status: Status::Failed,
        ..Stop::invalid(ErrorCode::Runtime, message)
    })
}
