//! What each event says: one variant per event type, each with the typed payload that is
//! its `data` (SPEC §4, `docs/events.md`). `schemas/events.schema.json` is generated from
//! these types, and every subscriber (transcript, progress, result, JSONL) matches on them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

mod action;
mod message;
mod run;
mod tool;

pub use action::*;
pub use message::*;
pub use run::*;
pub use tool::*;

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
