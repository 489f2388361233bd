//! What the events of tool calls say: written, started, progressing, decided, hooked and
//! completed, and the sub-agents a call starts.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::policy::{Decider, HookOutcome, HookPoint, Verdict};
use crate::provider::ToolCall;
use crate::tools::ToolOutput;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallCreated {
    pub step_id: String,
    pub tool_call: ToolCall,
}

/// A tool call the model has finished writing, as its reply has it (its arguments parsed),
/// before it is decided on or run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallWritten {
    pub step_id: String,
    pub tool_call: ToolCall,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolStarted {
    pub step_id: String,
    pub tool_call_id: String,
    pub tool_name: String,
    // The call's arguments, shared with it (not a doc comment: the schema has none here).
    pub input: Arc<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolProgressed {
    pub step_id: String,
    pub tool_call_id: String,
    pub tool_name: String,
    /// Grows as the work goes on, even when the total is unknown.
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// A line a running call's program printed, as it printed it (secrets redacted as in
/// results). At most `MAX_LINES_PER_SECOND` a second per call are shown; the others are
/// counted in the next one's `skipped`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolOutputLine {
    pub step_id: String,
    pub tool_call_id: String,
    pub tool_name: String,
    /// `stdout` or `stderr`.
    pub stream: OutputStream,
    /// The line, without its newline, cut at 500 characters (with `…`); absent on the
    /// last report of a call, which only says how many lines were skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<String>,
    /// Lines not shown (over the bound) since the call's last report.
    pub skipped: u64,
}

/// Which of a program's pipes a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputStream {
    Stdout,
    Stderr,
}

/// A decision on one call of an agent that has `permissions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionDecided {
    /// The step of the call; on `runner resume`, the step that runs the approved calls.
    pub step_id: String,
    pub tool_call_id: String,
    pub tool_name: String,
    /// `allow` (it runs), `deny` (it gets an error), `ask` (nobody could decide: the run
    /// pauses and the call waits for `runner resume --approve/--deny`).
    pub decision: Verdict,
    /// The rule that matched, e.g. `deny: shell:command=git push*`, or `default: VERDICT`.
    pub rule: String,
    /// Who decided: the `rule` alone, or for a call that asked, `terminal`, `always`,
    /// `answers`, `yes` or `resume`.
    pub by: Decider,
    /// Why the call was denied (what the model is told).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One hook's run on one call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HookCompleted {
    pub step_id: String,
    pub tool_call_id: String,
    pub tool_name: String,
    /// `pre_tool_use` or `post_tool_use`.
    pub hook: HookPoint,
    /// The hook's command line.
    pub command: String,
    /// What it did: `no_change`, `allowed`, `denied`, `rewrote`, `replaced`, `annotated`,
    /// or `failed` (its `on_error` decided).
    pub outcome: HookOutcome,
    pub duration_ms: u64,
    /// Why it failed, or the reason it gave for a denial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCompleted {
    pub step_id: String,
    pub tool_call_id: String,
    pub tool_name: String,
    // The call's result, shared with the engine's.
    pub result: Arc<ToolOutput>,
    pub duration_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubAgentStarted {
    /// The caller's step.
    pub planner_step_id: String,
    pub tool_call_id: String,
    /// The sub-agent tool's name.
    pub specialist_id: String,
    /// The rendered prompt.
    pub sub_task_description: String,
    pub sub_agent_run_id: String,
    /// A remote agent's URL (an A2A agent); absent for an agent of the agent file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubAgentCompleted {
    pub planner_step_id: String,
    pub tool_call_id: String,
    pub specialist_id: String,
    pub sub_agent_run_id: String,
    pub result: ToolOutput,
    /// A remote agent's URL (an A2A agent); absent for an agent of the agent file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
}
