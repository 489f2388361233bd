//! How a run ended: its status, error and totals, and the state to go on from. The
//! driver (`run.rs`) produces it; the terminal events and the checkpoint carry its parts.
//!
//! [`RunStatus`] is the one list of the ways a run ends, and its exit code (SPEC §3.1) is
//! written here once: the result envelope, the events, a session's status, a batch and
//! every command of the CLI (`cli::Exit`) take it from here.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error_code::ErrorCode;
use super::limit::Limit;
use super::pending::Pending;
use super::state::AgentState;
use crate::provider::Usage;

/// How a run ended, or a command: the exit code of a process is its [`exit_code`].
///
/// [`exit_code`]: RunStatus::exit_code
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunStatus {
    /// 0: the agent finished, or the files are valid.
    Completed,
    /// 1: provider error after retries, structured output never valid, internal error (a
    /// panic, which prints `error[internal]` instead of ending the process with 101).
    Failed,
    /// 2: the run never started: bad command line, invalid agent file, missing API key.
    /// The engine never ends a run so; the front ends do, before it starts.
    Invalid,
    /// 3: an execution or limits bound, or stop_when, ended the run.
    LimitReached,
    /// 4: the agent asked the user and no answer was available.
    InputRequired,
    /// 130: SIGINT/SIGTERM.
    Interrupted,
}

impl RunStatus {
    /// Every status, in the order the result's schema lists them.
    pub const ALL: [RunStatus; 6] = [
        RunStatus::Completed,
        RunStatus::Failed,
        RunStatus::Invalid,
        RunStatus::LimitReached,
        RunStatus::InputRequired,
        RunStatus::Interrupted,
    ];

    /// The name in the result envelope, the events and a session (`limit_reached`).
    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Invalid => "invalid",
            RunStatus::LimitReached => "limit_reached",
            RunStatus::InputRequired => "input_required",
            RunStatus::Interrupted => "interrupted",
        }
    }

    /// The exit code of a process that ended so (SPEC §3.1): the contract CI pipelines
    /// rely on.
    pub fn exit_code(self) -> u8 {
        match self {
            RunStatus::Completed => 0,
            RunStatus::Failed => 1,
            RunStatus::Invalid => 2,
            RunStatus::LimitReached => 3,
            RunStatus::InputRequired => 4,
            RunStatus::Interrupted => 130,
        }
    }

    /// Whether a run that started can end so (all but `invalid`).
    pub fn ends_a_started_run(self) -> bool {
        self != RunStatus::Invalid
    }

    /// The names of the statuses `keep` keeps, for a schema.
    pub(crate) fn names(keep: impl Fn(RunStatus) -> bool) -> Vec<&'static str> {
        RunStatus::ALL
            .into_iter()
            .filter(|status| keep(*status))
            .map(RunStatus::name)
            .collect()
    }
}

impl From<RunStatus> for std::process::ExitCode {
    fn from(status: RunStatus) -> Self {
        std::process::ExitCode::from(status.exit_code())
    }
}

/// The schema of a result's (or a test case's) status: any of them. Named `Status`, as
/// the test file schema has always called it.
impl JsonSchema for RunStatus {
    fn schema_name() -> Cow<'static, str> {
        "Status".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "enum": RunStatus::names(|_| true),
            "description": "How a run ended.",
        })
    }
}

/// The schema of the status in the terminal events: a run that started never ends
/// `invalid`.
pub struct StartedRunStatus;

impl JsonSchema for StartedRunStatus {
    fn schema_name() -> Cow<'static, str> {
        "RunStatus".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "enum": RunStatus::names(RunStatus::ends_a_started_run),
            "description": "How a run ended (the CLI adds `invalid` for runs that never started).",
        })
    }
}

/// `{"code", "message"}` of a run that did not complete.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunError {
    #[schemars(with = "String")]
    pub code: ErrorCode,
    pub message: String,
}

/// What the terminal event carries about the whole run tree (the result is folded from it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunTotals {
    pub steps: u64,
    pub llm_calls: u64,
    pub tool_calls: u64,
    pub usage: Usage,
    pub cost_usd: Option<f64>,
}

/// How a run ended, with the state to checkpoint or continue from.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    pub status: RunStatus,
    pub state: AgentState,
    pub output: Option<String>,
    pub structured: Option<Value>,
    pub error: Option<RunError>,
    /// The bound that stopped the run (`limit_reached`).
    pub limit: Option<Limit>,
    /// What a resume must settle first (the question of an `input_required` run).
    pub pending: Option<Pending>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::RunStatus;

    #[test]
    fn every_status_is_spelt_by_its_name() {
        for status in RunStatus::ALL {
            let name = json!(status.name());
            assert_eq!(serde_json::to_value(status).unwrap(), name);
            assert_eq!(serde_json::from_value::<RunStatus>(name).unwrap(), status);
        }
    }

    #[test]
    fn the_exit_codes_are_the_specs() {
        let codes: Vec<u8> = RunStatus::ALL.map(RunStatus::exit_code).to_vec();
        assert_eq!(codes, [0, 1, 2, 3, 4, 130]);
    }
}
