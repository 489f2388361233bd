//! What a front end asks of the session layer: a new run ([`RunRequest`]), a resumed or
//! branched session ([`ResumeRequest`]), and the settings both share ([`RunSettings`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::Cancel;
use crate::engine::events::EventSink;
pub use crate::engine::external::SubmittedOutput;
use crate::nats::SessionsAt;
use crate::output::progress::ProgressStyle;
use crate::output::result::RunResult;
use crate::telemetry::Telemetry;
use crate::trace_env::Carried;

/// A new run of an agent file (`runner exec`).
pub struct RunRequest {
    pub agent_file: PathBuf,
    pub inputs: Inputs,
    /// `{{ input }}`; the first message when the agent has no `prompt`.
    pub input: InputText,
    /// The run's id; `None`: a new one.
    pub run_id: Option<String>,
    /// The new session's id (1 to 128 ASCII letters, digits, `-`, `_`); `None`: a new one.
    pub session_id: Option<String>,
    /// `PROVIDER/NAME` instead of the file's model (`--model`); the session keeps it.
    pub model: Option<String>,
    /// A scripted model's answers file instead of the file's model (`exec --script`).
    pub script: Option<PathBuf>,
    /// Files the file tools never write besides the definition's (`exec --protect`).
    pub protect: Vec<PathBuf>,
    /// Where the session is kept: `None`, where the file says (`checkpoints:`), or NATS.
    pub sessions: Option<SessionsAt>,
    pub settings: RunSettings,
}

impl RunRequest {
    /// A run of `agent_file` with no inputs, a new session, and the default settings.
    pub fn new(agent_file: impl Into<PathBuf>) -> Self {
        RunRequest {
            agent_file: agent_file.into(),
            inputs: Inputs::Values(Map::new()),
            input: InputText::Text(String::new()),
            run_id: None,
            session_id: None,
            model: None,
            script: None,
            protect: Vec::new(),
            sessions: None,
            settings: RunSettings::default(),
        }
    }
}

/// The agent's input values, typed and checked by the file's `inputs`.
pub enum Inputs {
    /// Values as JSON (a server's request body, a batch line).
    Values(Map<String, Value>),
    /// `--vars FILE` then each `--var NAME=VALUE`, typed by the declarations.
    Vars {
        file: Option<PathBuf>,
        vars: Vec<String>,
    },
}

/// The input text.
pub enum InputText {
    Text(String),
    /// Read from stdin once the file and its inputs are known good (`--input -`).
    Stdin,
}

/// Continue a session (`runner resume`), or branch a new one from one of its steps.
pub struct ResumeRequest {
    pub session_id: String,
    /// The new run's id; `None`: a new one.
    pub run_id: Option<String>,
    /// What the session waits on, if it waits.
    pub answer: Option<Answer>,
    /// Start a new session from the state after this step, with this name.
    pub branch: Option<(u64, String)>,
    /// Where the session is kept.
    pub sessions: SessionsAt,
    pub settings: RunSettings,
}

/// An answer to a paused run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Answer {
    /// The answer to an `ask_user` question.
    Text(String),
    /// The values of an MCP server's form, checked against its schema.
    Form(Value),
    /// Decisions on the calls that wait for approval: ids, or `all` in `approve`; each
    /// denied call with the reason its model is told.
    Decide {
        approve: Vec<String>,
        deny: Vec<Denial>,
    },
    /// The outputs of the external tools' calls the session waits on: one per call, by
    /// call id; each output is the call's result.
    Outputs(Vec<SubmittedOutput>),
}

/// A call waiting for approval that is not to run, and why: the model reads
/// `denied by the user: REASON` as the call's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    pub id: String,
    pub reason: Option<String>,
}

impl Denial {
    /// The call `id` denied for `reason`.
    pub fn new(id: impl Into<String>, reason: Option<String>) -> Self {
        Denial {
            id: id.into(),
            reason,
        }
    }
}

/// How a run is hosted, for new and resumed runs alike.
#[derive(Clone, Default)]
pub struct RunSettings {
    /// The run's directory; `None`: no files (events go to the subscribers only).
    pub run_dir: Option<RunDirOptions>,
    /// Answers for `ask_user` and approvals: a YAML file (`--answers`).
    pub answers: Option<PathBuf>,
    /// Approve every call `permissions` sends to `ask` (`--yes`).
    pub approve_all: bool,
    /// Ask a person at the terminal when there is one (the CLI; never a server).
    pub terminal: bool,
    /// Record every provider exchange to this cassette.
    pub record: Option<PathBuf>,
    /// Serve provider exchanges from this cassette.
    pub replay: Option<PathBuf>,
    /// Watch the agent files and swap saved changes in between steps (`--watch`).
    pub watch: bool,
    /// Accept a reload or a resume that gives the agent more (`--allow-widening`).
    pub allow_widening: bool,
    /// Subscribers of every event, besides the run directory's and the handle's.
    pub sinks: Vec<Arc<dyn EventSink>>,
    /// The handle keeps no events (its readers get none): for a front end that reads the
    /// run directory or its own `sinks` instead (the CLI), so a long run's events are not
    /// held in memory as well.
    pub no_event_log: bool,
    /// The run's stop signal; the front end keeps a clone to cancel it.
    pub cancel: Cancel,
    /// OpenTelemetry export (docs/telemetry.md), when asked for: each run's spans go there.
    /// Set by the binary from `--otel` and the `OTEL_*` variables; not part of the library's
    /// API (its type is internal), so a library caller leaves it `None`.
    #[doc(hidden)]
    pub telemetry: Option<Arc<Telemetry>>,
    /// The span of the caller that asked for the run, when it named one with its request
    /// (`runner serve`: the `traceparent` header): the run's spans are its children, instead
    /// of `TRACEPARENT`'s. Internal like `telemetry`.
    #[doc(hidden)]
    pub caller_trace: Option<Carried>,
}

/// Called once a run's files are written, with its result and directory (the CLI prints
/// the error, CI annotations and the summary line).
pub type Report = Arc<dyn Fn(&RunResult, &Path) + Send + Sync>;

/// A run directory and its files.
#[derive(Clone, Default)]
pub struct RunDirOptions {
    /// The directory; `None`: `.runner/runs/<run_id>`.
    pub dir: Option<PathBuf>,
    /// The transcript here too (`--transcript`).
    pub transcript: Option<PathBuf>,
    /// The JSONL events here too (`--events`; `-`: stdout).
    pub events: Option<String>,
    /// Progress on stderr.
    pub progress: Option<ProgressStyle>,
    /// With progress, the model's text on stderr as it arrives.
    pub stream: bool,
    pub report: Option<Report>,
}
