//! The `error.code` of a result that did not complete (and of the `thread.run.failed`
//! event, and of `error[code]` on stderr): a documented contract, listed in
//! `docs/running.md` (a test checks the list against this enum).

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::provider::ErrorKind;

/// Why a run did not complete, or never started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    // How the engine ends a run that started.
    /// A bound ended the run (`limit` names it).
    LimitReached,
    /// SIGINT or SIGTERM, or a library caller's cancel.
    Interrupted,
    /// A question (or an approval) had nobody to answer it.
    InputRequired,
    /// A model call failed after its retries: `provider_<kind>` (`provider_rate_limited`).
    Provider(ErrorKind),
    /// The final answer never matched `output.schema`.
    StructuredOutput,
    /// Replies in a row had no valid XML action.
    XmlFormat,
    /// The final answer was cut off, under `answer: { truncated: fail }`.
    Truncated,
    /// The final answer was empty, under `answer: { empty: fail }`.
    EmptyAnswer,
    /// A request would fill more than `context.threshold` of the model's window, under
    /// `context: { strategy: fail }`.
    ContextOverflow,
    /// A `stop_when` condition could not be evaluated.
    StopWhen,
    /// A plan step failed in a way a new plan cannot help.
    PlanStepFailed,
    /// A handoff target could not take over.
    Handoff,
    /// What a resume must settle first could not be settled.
    Resume,
    /// A checkpoint could not be written.
    CheckpointWrite,
    /// An MCP server could not start, died or never answered.
    McpServer,
    /// A `run_start` hook refused the run.
    Hook,
    /// A `command` middleware failed, under `on_error: fail`.
    Middleware,
    /// A bug: the run ended where it cannot.
    Internal,
    // Why a run never started (`invalid`, exit 2, unless said otherwise).
    /// The agent file is not valid.
    InvalidAgent,
    /// An input is missing or does not fit its declaration, or there is nothing to say.
    InvalidInput,
    /// `--model` (or the agent's model) cannot be used.
    InvalidModel,
    /// A session id that is not valid, or a session that cannot be resumed.
    InvalidSession,
    /// `--from-checkpoint` names no checkpoint that can be read.
    InvalidCheckpoint,
    /// The cassette of `--record` or `--replay` cannot be used.
    InvalidCassette,
    /// The `--answers` file cannot be read.
    InvalidAnswers,
    /// An answer given on resume does not fit the question.
    InvalidAnswer,
    /// The events file of `--events` cannot be written.
    InvalidEvents,
    /// A batch record that cannot be run.
    InvalidBatch,
    /// A resume would widen the definition the session started with (`--allow-widening`).
    WidenedDefinition,
    /// `exec --session` names a session that exists already.
    SessionExists,
    /// Another process holds the session.
    SessionInUse,
    /// The session's checkpoints cannot be read.
    Checkpoint,
    /// The checkpoint directory cannot be used.
    CheckpointDir,
    /// The run directory cannot be created.
    RunDir,
    /// The runtime (threads, signals) could not start.
    Runtime,
    /// `--watch` cannot watch the agent file.
    Watch,
    /// A batch's child run left no result.
    BatchChild,
    /// A batch's budget was spent before the input started (`limit_reached`).
    BatchBudget,
    /// The batch's (or the worker's) own directory could not be written: the machine's
    /// failure, not the input's (a worker hands the job back for another machine).
    BatchDir,
}

/// Every code but the provider's (one per [`ErrorKind`]), in the order of `docs/running.md`.
const NAMED: [ErrorCode; 38] = [
    ErrorCode::LimitReached,
    ErrorCode::Interrupted,
    ErrorCode::InputRequired,
    ErrorCode::StructuredOutput,
    ErrorCode::XmlFormat,
    ErrorCode::Truncated,
    ErrorCode::EmptyAnswer,
    ErrorCode::ContextOverflow,
    ErrorCode::StopWhen,
    ErrorCode::PlanStepFailed,
    ErrorCode::Handoff,
    ErrorCode::Resume,
    ErrorCode::CheckpointWrite,
    ErrorCode::McpServer,
    ErrorCode::Hook,
    ErrorCode::Middleware,
    ErrorCode::Internal,
    ErrorCode::InvalidAgent,
    ErrorCode::InvalidInput,
    ErrorCode::InvalidModel,
    ErrorCode::InvalidSession,
    ErrorCode::InvalidCheckpoint,
    ErrorCode::InvalidCassette,
    ErrorCode::InvalidAnswers,
    ErrorCode::InvalidAnswer,
    ErrorCode::InvalidEvents,
    ErrorCode::InvalidBatch,
    ErrorCode::WidenedDefinition,
    ErrorCode::SessionExists,
    ErrorCode::SessionInUse,
    ErrorCode::Checkpoint,
    ErrorCode::CheckpointDir,
    ErrorCode::RunDir,
    ErrorCode::Runtime,
    ErrorCode::Watch,
    ErrorCode::BatchChild,
    ErrorCode::BatchBudget,
    ErrorCode::BatchDir,
];

const PROVIDER: &str = "provider_";

impl ErrorCode {
    /// Every code, the provider's one per `ErrorKind`.
    pub fn all() -> impl Iterator<Item = ErrorCode> {
        NAMED
            .into_iter()
            .chain(ErrorKind::ALL.into_iter().map(ErrorCode::Provider))
    }

    /// The name in the result (`invalid_agent`, `provider_rate_limited`).
    pub fn name(self) -> Cow<'static, str> {
        Cow::Borrowed(match self {
            ErrorCode::LimitReached => "limit_reached",
            ErrorCode::Interrupted => "interrupted",
            ErrorCode::InputRequired => "input_required",
            ErrorCode::StructuredOutput => "structured_output",
            ErrorCode::XmlFormat => "xml_format",
            ErrorCode::Truncated => "truncated",
            ErrorCode::EmptyAnswer => "empty_answer",
            ErrorCode::ContextOverflow => "context_overflow",
            ErrorCode::StopWhen => "stop_when",
            ErrorCode::PlanStepFailed => "plan_step_failed",
            ErrorCode::Handoff => "handoff",
            ErrorCode::Resume => "resume",
            ErrorCode::CheckpointWrite => "checkpoint_write",
            ErrorCode::McpServer => "mcp_server",
            ErrorCode::Hook => "hook",
            ErrorCode::Middleware => "middleware",
            ErrorCode::Internal => "internal",
            ErrorCode::InvalidAgent => "invalid_agent",
            ErrorCode::InvalidInput => "invalid_input",
            ErrorCode::InvalidModel => "invalid_model",
            ErrorCode::InvalidSession => "invalid_session",
            ErrorCode::InvalidCheckpoint => "invalid_checkpoint",
            ErrorCode::InvalidCassette => "invalid_cassette",
            ErrorCode::InvalidAnswers => "invalid_answers",
            ErrorCode::InvalidAnswer => "invalid_answer",
            ErrorCode::InvalidEvents => "invalid_events",
            ErrorCode::InvalidBatch => "invalid_batch",
            ErrorCode::WidenedDefinition => "widened_definition",
            ErrorCode::SessionExists => "session_exists",
            ErrorCode::SessionInUse => "session_in_use",
            ErrorCode::Checkpoint => "checkpoint",
            ErrorCode::CheckpointDir => "checkpoint_dir",
            ErrorCode::RunDir => "run_dir",
            ErrorCode::Runtime => "runtime",
            ErrorCode::Watch => "watch",
            ErrorCode::BatchChild => "batch_child",
            ErrorCode::BatchBudget => "batch_budget",
            ErrorCode::BatchDir => "batch_dir",
            ErrorCode::Provider(kind) => return Cow::Owned(format!("{PROVIDER}{}", kind.as_str())),
        })
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl FromStr for ErrorCode {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let provider = text.strip_prefix(PROVIDER).and_then(ErrorKind::parse);
        let named = || NAMED.into_iter().find(|code| code.name() == text);
        provider
            .map(ErrorCode::Provider)
            .or_else(named)
            .ok_or_else(|| format!("`{text}` is not an error code"))
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = Cow::<str>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A code is its name: `code == "invalid_agent"`.
impl PartialEq<&str> for ErrorCode {
    fn eq(&self, name: &&str) -> bool {
        self.name() == *name
    }
}

impl From<ErrorKind> for ErrorCode {
    fn from(kind: ErrorKind) -> Self {
        ErrorCode::Provider(kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_reads_back_from_its_name() {
        for code in ErrorCode::all() {
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json, code.to_string());
            assert_eq!(serde_json::from_value::<ErrorCode>(json).unwrap(), code);
        }
        let rate = ErrorCode::Provider(ErrorKind::RateLimited);
        assert_eq!(rate.to_string(), "provider_rate_limited");
        assert!("provider_nonsense".parse::<ErrorCode>().is_err());
    }

    /// `docs/running.md` lists every code, and nothing else, in the table of its section
    /// "Error codes".
    #[test]
    fn the_documented_codes_are_the_codes() {
        let doc = include_str!("../../docs/running.md");
        let section = doc
            .split("### Error codes")
            .nth(1)
            .and_then(|rest| rest.split("\n#").next())
            .expect("docs/running.md has a section `### Error codes`");
        let documented: Vec<&str> = section
            .lines()
            .filter_map(|line| line.strip_prefix("| `")?.split('`').next())
            .collect();
        let codes: Vec<String> = ErrorCode::all().map(|code| code.to_string()).collect();
        for code in &codes {
            assert!(
                documented.contains(&code.as_str()),
                "`{code}` is not in docs/running.md"
            );
        }
        for name in &documented {
            assert!(
                codes.iter().any(|code| code == name),
                "docs/running.md lists `{name}`, which is no error code"
            );
        }
        assert_eq!(documented.len(), codes.len(), "a code is listed twice");
    }
}
