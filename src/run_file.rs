//! The library's front door: run an agent file in a few lines, exactly as `runner exec`
//! prepares and drives it (validation, inputs, MCP servers, compile, checkpoints), with the
//! run's events delivered to the subscribers you give.
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

use crate::cli::prepare::{Prepared, Request, Stop, initial_state, inputs, load, state_dirs};
use crate::cli::session_store::SessionFiles;
use crate::compile::BuildOptions;
use crate::compile::run_limits;
use crate::engine::ErrorCode;
use crate::engine::budget::Budget;
use crate::engine::clock::new_id;
use crate::engine::events::{Emitter, EventBus, EventSink};
use crate::engine::outcome::RunOutcome;
use crate::engine::run::{RunStart, drive};
use crate::provider::Message;

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

    /// Runs to the end on a runtime of its own (call it outside any async runtime). The
    /// session is checkpointed as the file says, so `runner resume` can continue it.
    pub fn run(self) -> Result<RunOutcome, NotStarted> {
        let spec = load(&self.path)?;
        let inputs = inputs(&spec, None, &self.vars)?;
        let ids = (new_id(), new_id());
        let checkpoints = SessionFiles::open(
            &spec,
            &self.path,
            &ids.1,
            inputs.clone(),
            self.input.clone(),
        )
        .map_err(|message| Stop::invalid(ErrorCode::CheckpointDir, message))?;
        let prepared = Prepared::start(Request {
            agent_file: self.path.clone(),
            state_dirs: state_dirs(&spec, None),
            spec,
            inputs,
            input_text: self.input,
            ids: ids.clone(),
            model_override: None,
            build: BuildOptions::default(),
            human: Default::default(),
            protect: Vec::new(),
            tree: None,
        })?;
        let agent = prepared.compile()?;
        let opening = prepared.opening()?;
        let emitter = Emitter::root(EventBus::new(self.sinks), &agent.name, ids.0, ids.1.clone());
        let budget = Arc::new(Budget::new(run_limits(&prepared.spec.limits)));
        let ctx = prepared.context(emitter, budget, (checkpoints, None));
        let start = RunStart {
            opening: vec![Message::user(opening)],
            settle: None,
            session_id: Some(ids.1),
        };
        let state = initial_state(&prepared.spec);
        Ok(prepared.runtime.block_on(drive(&agent, start, state, &ctx)))
    }
}
