//! The session layer: what hosts a run, between the front ends (the CLI's `exec`,
//! `resume`, `chat`; `RunFile`; a server) and the engine. One API for all of them:
//!
//! * [`start`] a run from a [`RunRequest`], or [`resume()`] (or branch) a session from a
//!   [`ResumeRequest`], and get a [`RunHandle`]: the run's events from the first
//!   ([`RunHandle::events`]), [`RunHandle::cancel`], [`RunHandle::answer`] to a pause, and
//!   the outcome ([`RunHandle::outcome`]: the `result.json` envelope and the final state).
//! * The run is a task of the caller's tokio runtime: many handles share one runtime, each
//!   run with its own MCP servers, budget, checkpoints and stop signal ([`Cancel`]).
//!   Nothing here is process-wide: signals are the front end's to watch (the CLI cancels
//!   its handle on SIGINT/SIGTERM).
//! * [`blocking`] is the same for callers outside any runtime (the CLI, `RunFile`).
//! * [`Conversation`] holds a chat: one prepared agent, each turn a run of the same path.
//! * [`thread`] walks the thread tree of a sessions directory: a session's branches, the
//!   one checked out, a node's history.
//!
//! `docs/library.md` has an example; `docs/architecture.md` the path of one run.

pub mod blocking;
mod cancel;
mod conversation;
mod event_log;
pub(crate) mod files;
mod handle;
pub(crate) mod hooks;
mod new_run;
pub(crate) mod prepare;
mod request;
pub(crate) mod resume;
mod resume_data;
pub(crate) mod run;
pub(crate) mod run_dir;
pub(crate) mod servers;
mod sources;
pub mod thread;
pub(crate) mod watch;

pub use cancel::Cancel;
pub use conversation::Conversation;
pub use event_log::EventStream;
pub use handle::{Ended, RunHandle};
pub use prepare::Stop;
pub use request::{
    Answer, Denial, InputText, Inputs, Report, ResumeRequest, RunDirOptions, RunRequest,
    RunSettings, SubmittedOutput,
};
pub use resume::INTERRUPTED_CALL;
pub use resume_data::{ResumeData, UnreadableResumeData};
// The types a request names that are defined below this layer.
pub use crate::nats::SessionsAt;
pub use crate::output::progress::ProgressStyle;

use crate::engine::clock::new_id;

/// Starts a new run of `request.agent_file` on the current tokio runtime. A problem found
/// before the run starts (the file, its inputs, the session, its MCP servers, a refusing
/// `run_start` hook) is the returned [`Stop`]; from then on the handle has the run.
pub async fn start(request: RunRequest) -> Result<RunHandle, Stop> {
    let run_id = request.run_id.clone().unwrap_or_else(new_id);
    let session_id = request.session_id.clone().unwrap_or_else(new_id);
    let launch = new_run::launch_of(&request, (run_id, session_id))?;
    run::launch(launch, request.settings).await
}

/// Resumes a session (or branches a new one from one of its steps) on the current tokio
/// runtime: a new run, with the session's history and what it waited for settled.
pub async fn resume(request: ResumeRequest) -> Result<RunHandle, Stop> {
    let run_id = request.run_id.clone().unwrap_or_else(new_id);
    let launch = resume::launch_of(&request, run_id)?;
    run::launch(launch, request.settings).await
}
