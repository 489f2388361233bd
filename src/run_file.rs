//! The library's front door: run an agent file in a few lines, through the same session
//! layer as `runner exec` (validation, inputs, MCP servers, compile, run hooks,
//! checkpoints), with the run's events delivered to the subscribers you give. For many
//! runs on one runtime, cancelling, answering and resuming, use `runner::session`.
//!
//! ```no_run
//! use runner::RunFile;
//!
//! let outcome = RunFile::new("agents/review.yaml")
//!     .var("diff", "--- a/x\n+++ b/x\n")
//!     .run()?;
//! println!("{:?}: {}", outcome.status, outcome.output.unwrap_or_default());
//! # Ok::<(), runner::NotStarted>(())
//! ```

use std::path::PathBuf;
use std::sync::Arc;

use crate::engine::ErrorCode;
use crate::engine::events::EventSink;
use crate::engine::outcome::RunOutcome;
use crate::session::{InputText, Inputs, RunRequest, RunSettings, Stop, blocking};

/// Why a run never started: the file, its inputs, or its MCP servers.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct NotStarted {
    /// The result code `runner exec` would report (`invalid_agent`, `invalid_input`, …).
    pub code: ErrorCode,
    /// What is wrong; for the file's problems, its `file:line:col` diagnostics.
    pub message: String,
}

impl From<Stop> for NotStarted {
    fn from(stop: Stop) -> Self {
        NotStarted {
            code: stop.code,
            message: stop.printed.unwrap_or(stop.message),
        }
    }
}

/// One run of an agent file.
pub struct RunFile {
    path: PathBuf,
    vars: Vec<String>,
    input: String,
    sinks: Vec<Arc<dyn EventSink>>,
}

impl RunFile {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        RunFile {
            path: path.into(),
            vars: Vec::new(),
            input: String::new(),
            sinks: Vec::new(),
        }
    }

    /// An input value, typed by the file's declaration like `--var NAME=VALUE`.
    pub fn var(mut self, name: &str, value: &str) -> Self {
        self.vars.push(format!("{name}={value}"));
        self
    }

    /// The input text (`{{ input }}`; the first message when the agent has no `prompt`).
    pub fn input(mut self, text: impl Into<String>) -> Self {
        self.input = text.into();
        self
    }

    /// Receives every event of the run (and of its sub-agents) as it happens.
    pub fn subscribe(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.sinks.push(sink);
        self
    }

    /// Runs to the end on a runtime of its own (call it outside any async runtime), through
    /// the session layer as `runner exec` does, `run_start` and `run_end` hooks included (a
    /// refusing `run_start` hook is `NotStarted` with code `hook`). No run directory is
    /// written. The session is checkpointed as the file says, so `runner resume` can
    /// continue it.
    pub fn run(self) -> Result<RunOutcome, NotStarted> {
        let request = RunRequest {
            inputs: Inputs::Vars {
                file: None,
                vars: self.vars,
            },
            input: InputText::Text(self.input),
            settings: RunSettings {
                sinks: self.sinks,
                // The subscribers get every event as it happens.
                no_event_log: true,
                ..RunSettings::default()
            },
            ..RunRequest::new(self.path)
        };
        Ok(blocking::run(request)?.outcome)
    }
}
