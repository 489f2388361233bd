//! What the events of a run that waits say: the action it requires (an answer, tool
//! outputs, approvals) and the answer provided.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequiresAction {
    pub status: ActionStatus,
    #[serde(rename = "required_action")]
    pub required_action: RequiredAction,
    /// The checkpoint to resume from (`step-N`); `null` without checkpoints.
    pub checkpoint_name: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActionStatus {
    RequiresAction,
}

/// What the run waits for: an answer to a question, or decisions on tool calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequiredAction {
    #[serde(rename = "type")]
    pub kind: ActionKind,
    /// The question; for `tool_approval`, what needs approving, in a sentence; for
    /// `submit_tool_outputs`, which outputs it waits for.
    pub question: String,
    /// The id `ask_user` gave the question, if any.
    pub id: Option<String>,
    /// The `ask_user` call, or the first call awaiting approval or an output.
    pub tool_call_id: String,
    /// The sub-agent that asked, when it was not the run's own agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// `tool_approval`: every call awaiting a decision.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<AwaitingApproval>,
    /// `submit_tool_outputs`: the external calls whose outputs the run waits for, as the
    /// agent-events reference shapes them.
    #[serde(
        rename = "submit_tool_outputs",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub submit_tool_outputs: Option<SubmitToolOutputs>,
}

/// The calls of external tools a run waits to have outputs for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubmitToolOutputs {
    pub tool_calls: Vec<ExternalCall>,
}

/// A call of an external tool: what the program running the agent runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExternalCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    /// `ask_user` (or an MCP server's form) waits for `runner resume --answer`.
    UserInput,
    /// Calls `permissions` sent to `ask` wait for `runner resume --approve/--deny`.
    ToolApproval,
    /// Calls of external tools wait for `runner resume --tool-output CALL_ID=JSON`.
    SubmitToolOutputs,
}

/// A call awaiting approval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AwaitingApproval {
    pub id: String,
    pub name: String,
    pub arguments: Value,
    /// The rule that asked, e.g. `ask: write_file`.
    pub rule: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserInputProvided {
    pub question: String,
    pub answer: String,
    pub tool_call_id: String,
    /// The step whose `ask_user` call the answer came to at once (terminal, answers file);
    /// absent for an answer given on `runner resume`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_id: Option<String>,
}
