//! What the events of a run's life say: its start, status, steps and end, a handoff, a
//! plan, a checkpoint and a reloaded definition.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::outcome::{RunStatus, RunTotals, StartedRunStatus};
use crate::engine::plan::{PlanStep, PlanStepStatus};
use crate::engine::{ErrorCode, Limit};
use crate::provider::Message;

/// Where a run is in its life: not yet going, going, or ended (spelt as its status).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Phase {
    Queued,
    InProgress,
    #[serde(untagged)]
    Ended(RunStatus),
}

impl From<RunStatus> for Phase {
    fn from(status: RunStatus) -> Self {
        Phase::Ended(status)
    }
}

impl JsonSchema for Phase {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Phase".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut names = vec!["queued", "in_progress"];
        names.extend(RunStatus::names(RunStatus::ends_a_started_run));
        schemars::json_schema!({
            "type": "string",
            "enum": names,
            "description": "Where a run is in its life.",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunCreated {
    pub status: Phase,
    /// The opening messages (the rendered prompt, a chat line); empty on resume.
    pub initial_messages: Vec<Message>,
    /// The session, on root runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatusChanged {
    pub previous_status: Phase,
    pub current_status: Phase,
}

/// A step's number (unique and increasing within a run) and title.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StepDetails {
    pub step: u64,
    pub title: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepCreated {
    pub step_id: String,
    pub details: StepDetails,
}

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepEnd {
    Completed,
    Failed,
    /// The run paused inside it (a question for the person); it is not a failure.
    Paused,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepCompleted {
    pub step_id: String,
    pub details: StepDetails,
    pub status: StepEnd,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Handoff {
    pub from: String,
    pub to: String,
    pub tool_name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanUpdated {
    pub plan: Vec<PlanStep>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanStepChanged {
    pub plan_step_id: String,
    pub description: String,
    pub previous_status: PlanStepStatus,
    pub status: PlanStepStatus,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunCompleted {
    #[schemars(with = "StartedRunStatus")]
    pub status: RunStatus,
    /// `[{role: "assistant", text}]`.
    pub final_messages: Vec<Message>,
    /// The parsed answer of an agent with an output schema.
    pub structured: Option<Value>,
    pub totals: RunTotals,
    pub warnings: Vec<String>,
}

impl RunCompleted {
    /// The answer's text.
    pub fn output(&self) -> Option<&str> {
        self.final_messages
            .iter()
            .find_map(|message| match message {
                Message::Assistant(reply) => Some(reply.text.as_str()),
                _ => None,
            })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunFailed {
    #[schemars(with = "StartedRunStatus")]
    pub status: RunStatus,
    pub error: Failure,
    pub totals: RunTotals,
    pub warnings: Vec<String>,
}

/// Why a run did not complete.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Failure {
    #[schemars(with = "String")]
    pub code: ErrorCode,
    pub message: String,
    pub details: FailureDetails,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FailureDetails {
    /// The bound that stopped the run (`limit_reached`), e.g. `max_tool_calls`.
    #[schemars(with = "Option<String>")]
    pub limit: Option<Limit>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointSaved {
    /// `step-N`.
    pub name: String,
    pub step: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Reloaded {
    /// The top-level keys that differ.
    pub changes: Vec<String>,
    pub step: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReloadFailed {
    /// The problems of the saved file, one rendered diagnostic each.
    pub diagnostics: Vec<String>,
}
