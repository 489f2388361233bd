//! What each event says: one variant per event type, each with the typed payload that is
//! its `data` (SPEC §4, `docs/events.md`). `schemas/events.schema.json` is generated from
//! these types, and every subscriber (transcript, progress, result, JSONL) matches on them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::outcome::{RunStatus, RunTotals, StartedRunStatus};
use crate::engine::plan::{PlanStep, PlanStepStatus};
use crate::engine::request_params::RequestParams;
use crate::engine::{ErrorCode, Limit};
use crate::policy::{Decider, HookOutcome, HookPoint, Verdict};
use crate::provider::{FinishReason, Message, ToolCall, Usage};
use crate::tools::ToolOutput;

/// Declares the event types once: the enum, and the name of each type on the wire.
macro_rules! event_types {
    ($($(#[$doc:meta])* $name:literal => $variant:ident($payload:ty),)*) => {
        /// The payload of one event, tagged with its type (`{"type": …, "data": …}`).
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
        #[serde(tag = "type", content = "data")]
        #[non_exhaustive]
        pub enum EventData {
            $($(#[$doc])* #[serde(rename = $name)] $variant($payload),)*
        }

        impl EventData {
            /// The event's type, e.g. `agent.run.created`.
            pub fn kind(&self) -> &'static str {
                match self {
                    $(EventData::$variant(_) => $name,)*
                }
            }

            /// Serializes the payload alone (the envelope writes the type first).
            pub(super) fn serialize_payload<S: serde::Serializer>(
                &self,
                serializer: S,
            ) -> Result<S::Ok, S::Error> {
                match self {
                    $(EventData::$variant(payload) => payload.serialize(serializer),)*
                }
            }
        }

        $(impl From<$payload> for EventData {
            fn from(payload: $payload) -> Self {
                EventData::$variant(payload)
            }
        })*
    };
}

event_types! {
    /// A run (root, sub-agent, or one chat turn) starts: the first event of every run.
    "agent.run.created" => RunCreated(RunCreated),
    /// A run starts and ends.
    "agent.run.status.changed" => StatusChanged(StatusChanged),
    /// A strategy step starts.
    "agent.run.step.created" => StepCreated(StepCreated),
    /// A step ends (closes its transcript block).
    "agent.run.step.completed" => StepCompleted(StepCompleted),
    /// A message joins the thread: a user or tool message, or the assistant message a model
    /// call starts.
    "thread.message.created" => MessageCreated(MessageCreated),
    /// Streamed text, thinking or tool-call pieces arrive, or a broken call restarts.
    "thread.message.delta" => MessageDelta(MessageDelta),
    /// The model's reply is complete.
    "thread.message.completed" => MessageCompleted(MessageCompleted),
    /// After each model call.
    "agent.llm.usage" => LlmUsage(LlmUsage),
    /// A model call failed with an error worth retrying, and is tried again after a wait.
    "agent.llm.retry" => LlmRetry(LlmRetry),
    /// A model call moved to another model of the fallback chain (or back to the first).
    "agent.llm.fallback" => LlmFallback(LlmFallback),
    /// The history was compacted to fit the model's context window.
    "agent.context.compacted" => ContextCompacted(ContextCompacted),
    /// react: the reasoning of a step.
    "agent.reasoning.created" => ReasoningCreated(ReasoningCreated),
    /// The model finished writing a tool call (its reply is complete), before it runs.
    "thread.run.step.tool_call.completed_by_llm" => ToolCallWritten(ToolCallWritten),
    /// The model asked for a tool call.
    "thread.run.step.tool_call.created" => ToolCallCreated(ToolCallCreated),
    /// A tool call starts running.
    "agent.tool.execution.started" => ToolStarted(ToolStarted),
    /// A running tool call reported how far it has got (an MCP server's progress).
    "agent.tool.progress" => ToolProgressed(ToolProgressed),
    /// A line a running program printed (`shell`), bounded; the whole output is in the result.
    "agent.tool.output" => ToolOutputLine(ToolOutputLine),
    /// `permissions` (and whoever approved) decided whether a call runs.
    "agent.tool.permission.decided" => PermissionDecided(PermissionDecided),
    /// A `pre_tool_use` or `post_tool_use` hook ran on a call.
    "agent.tool.hook.completed" => HookCompleted(HookCompleted),
    /// A tool call finished (also refused or timed out).
    "agent.tool.execution.completed" => ToolCompleted(ToolCompleted),
    /// A sub-agent tool starts its agent (emitted by the caller).
    "agent.sub_agent.invocation.started" => SubAgentStarted(SubAgentStarted),
    /// The sub-agent finished.
    "agent.sub_agent.invocation.completed" => SubAgentCompleted(SubAgentCompleted),
    /// A handoff tool was called; the target takes over.
    "agent.handoff" => Handoff(Handoff),
    /// plan: a (new) plan was made.
    "agent.plan.updated" => PlanUpdated(PlanUpdated),
    /// plan: a step moved.
    "agent.plan.step.status.changed" => PlanStepChanged(PlanStepChanged),
    /// The run answered: its last event.
    "thread.run.completed" => RunCompleted(RunCompleted),
    /// The run ended without an answer: its last event.
    "thread.run.failed" => RunFailed(RunFailed),
    /// `ask_user` found no answer; the run pauses after its final checkpoint.
    "thread.run.requires_action" => RequiresAction(RequiresAction),
    /// An answer: at once, inside the step that asked, or on resume (first event of the run).
    "agent.user_input.provided" => UserInputProvided(UserInputProvided),
    /// After each step of the root agent, when checkpoints are on.
    "agent.checkpoint.saved" => CheckpointSaved(CheckpointSaved),
    /// A saved definition took over at a step boundary (or between chat turns).
    "agent.definition.reloaded" => Reloaded(Reloaded),
    /// The saved file is invalid; the run goes on with the previous definition.
    "agent.definition.reload_failed" => ReloadFailed(ReloadFailed),
}

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

/// The only author of model messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Assistant,
}

/// Who a message of the thread is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MessageRole {
    System,
    User,
    Assistant,
    /// A tool call's result, as the model gets it back.
    Tool,
}

/// A message that joined the thread: the assistant message a model call starts (no
/// `provider`, `model` or `params` on the others).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageCreated {
    /// The step it joined in; absent for a run's opening message (before its first step).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_id: Option<String>,
    pub message: MessageStarted,
    /// The provider the call goes to (`openai`, `anthropic`, `ollama`, `scripted`, ...);
    /// absent from events written before it was added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The model the call is sent for (the server may answer with another: `agent.llm.usage`
    /// names that one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The sampling parameters the call is sent with, those that were set; absent when none
    /// were (and from events written before it was added).
    #[serde(default, skip_serializing_if = "RequestParams::is_empty")]
    pub params: RequestParams,
}

impl MessageCreated {
    /// Whether it starts a model call (the assistant message whose text is to come), rather
    /// than announcing a message that is whole.
    pub fn starts_model_call(&self) -> bool {
        self.message.role == MessageRole::Assistant && self.message.metadata.in_progress
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageStarted {
    pub id: String,
    pub role: MessageRole,
    /// The text of a message that is whole (user, tool, an assistant message the strategy
    /// restates); absent for a model call's reply, which streams and is in
    /// `thread.message.completed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// A tool message: the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// A tool message: the tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A tool message: the call failed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// `inProgress: true` for a model call's reply (its content is to come), else false.
    pub metadata: InProgress,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InProgress {
    pub in_progress: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageDelta {
    pub message_id: String,
    pub delta: Delta,
}

/// A piece of streamed text or thinking, or a restart: consumers drop what they showed of
/// the failed attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Delta {
    #[serde(rename_all = "camelCase")]
    Chunk { content_chunk: String },
    /// The model's reasoning, where the server streams it (Anthropic thinking, reasoning
    /// content of OpenAI-compatible servers, Responses reasoning summaries).
    #[serde(rename_all = "camelCase")]
    Thinking { thinking_chunk: String },
    /// Pieces of tool calls as the model writes them: a call's `id` and `name` when it
    /// starts, then its arguments' text in pieces.
    #[serde(rename_all = "camelCase")]
    ToolCalls {
        tool_calls_chunk: Vec<ToolCallChunk>,
    },
    Reset {
        reset: bool,
        attempt: u32,
        reason: String,
    },
}

/// A piece of one tool call of a streaming reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallChunk {
    /// The call's position among the reply's calls (0, 1, ...).
    pub index: usize,
    /// Set on the piece that starts the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Set on the piece that starts the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The next piece of the arguments' JSON text, on the pieces after the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_chunk: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageCompleted {
    pub step_id: String,
    pub message: ModelMessage,
    pub purpose: Purpose,
    /// The server's id of the response (`chatcmpl-...`, `resp_...`, `msg_...`); absent when
    /// it gave none (and from events written before it was added).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelMessage {
    pub id: String,
    pub role: Role,
    pub content: String,
    pub thinking: Vec<String>,
    pub tool_calls: Vec<ToolCall>,
    pub finish_reason: FinishReason,
}

/// What a model call was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    /// react's reasoning call: the transcript shows its text once, as thinking.
    Reasoning,
    Reply,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LlmRetry {
    /// The assistant message the call is for.
    pub message_id: String,
    /// The attempt about to start (2, 3, ...).
    pub attempt: u32,
    /// How long runner waits before it (backoff, or the server's `Retry-After`).
    pub wait_ms: u64,
    /// Why the attempt before it failed.
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextCompacted {
    /// `summarize` or `truncate`.
    pub strategy: String,
    /// What set it off: `threshold` (the estimate before a call) or `provider` (the model
    /// refused the request as too long).
    pub reason: String,
    /// The estimated size of the request before and after, in tokens.
    pub tokens_before: u64,
    pub tokens_after: u64,
    /// Messages taken out of the history (summarised or dropped).
    pub removed_messages: u64,
    /// The summary that replaced them (`summarize`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LlmFallback {
    /// The assistant message the call is for.
    pub message_id: String,
    /// The model the call leaves (`provider/name`).
    pub from: String,
    /// The model that takes the call, and the calls after it until the cooldown is over.
    pub to: String,
    /// Why: the error of `from` after its retries, or that the cooldown is over.
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LlmUsage {
    pub model: String,
    /// This call.
    pub usage: Usage,
    /// The whole run tree so far.
    pub total_usage: Usage,
    /// `null` without pricing.
    pub cost_usd: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningCreated {
    pub step_id: String,
    pub reasoning: String,
}

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
    pub input: Value,
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
    pub result: ToolOutput,
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
