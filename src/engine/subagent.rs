//! Sub-agents as tools (UAP §8) and handoffs (SPEC §5).
//!
//! A sub-agent tool validates the call's arguments against its explicit schema, renders its
//! prompt, builds the sub-agent (inheriting the caller's model when it has none) and runs it
//! from a fresh state, one level deeper, on the run's shared budget. Its events bubble into
//! the same stream with their own run id and `parentRunId`; its run is kept as a trace in
//! the caller's state. A handoff tool only names its target: the engine ends the caller's
//! turn and lets the target continue the same conversation at the same depth.

use std::sync::Arc;

use serde_json::{Value, json};

use super::agent::{Agent, HaltReason, RunContext};
use super::clock::now_ms;
use super::events::kind;
use super::state::AgentState;
use super::trace::{SubagentTrace, ToolExecutionTrace};
use crate::provider::{BoxFuture, Message, Provider};
use crate::tools::{ArgsValidator, Tool, ToolContext, ToolOutput};

/// Builds an agent when it is needed (the compile layer implements it from agent files).
pub trait AgentFactory: Send + Sync {
    /// The agent's name.
    fn name(&self) -> &str;
    /// Builds the agent; `inherited` is the caller's model, used when the agent has none.
    fn build(&self, inherited: &Arc<dyn Provider>) -> Result<Agent, String>;
}

/// Renders a sub-agent's first message from the call's arguments.
pub trait PromptRenderer: Send + Sync {
    fn render(&self, arguments: &Value) -> Result<String, String>;
}

/// What the engine hands a tool about the calling run (through `ToolContext::run`).
pub struct AgentCallEnv {
    pub ctx: RunContext,
    pub step_id: String,
    /// The calling agent's model, inherited by sub-agents without one.
    pub provider: Arc<dyn Provider>,
}

/// Metadata key under which a sub-agent's trace travels back to the engine.
pub const TRACE_KEY: &str = "subagentTrace";
/// Metadata key marking a handoff result.
pub const HANDOFF_KEY: &str = "handoff";

/// A sub-agent exposed as a tool.
pub struct SubAgentTool {
    pub name: String,
    pub description: String,
    pub parameters: Value,
    pub sequential: bool,
    pub validator: ArgsValidator,
    pub prompt: Arc<dyn PromptRenderer>,
    pub agent: Arc<dyn AgentFactory>,
}

impl Tool for SubAgentTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> &Value {
        &self.parameters
    }

    fn sequential(&self) -> bool {
        self.sequential
    }

    fn call<'a>(
        &'a self,
        arguments: Value,
        tool_ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let Some(env) = tool_ctx
                .run
                .as_ref()
                .and_then(|run| run.downcast_ref::<AgentCallEnv>())
            else {
                return ToolOutput::error("a sub-agent tool can only run inside an agent run");
            };
            if let Err(invalid) = self.validator.check(&arguments) {
                return invalid;
            }
            let depth = env.ctx.emitter.depth + 1;
            if let Some(max) = env.ctx.budget.limits().max_depth
                && depth > max
            {
                return ToolOutput::error(format!(
                    "`{}` was not started: it would run at depth {depth}, deeper than limits.max_depth = {max}",
                    self.name
                ));
            }
            let prompt = match self.prompt.render(&arguments) {
                Ok(prompt) => prompt,
                Err(message) => {
                    return ToolOutput::error(format!(
                        "cannot render the prompt of `{}`: {message}",
                        self.name
                    ));
                }
            };
            let agent = match self.agent.build(&env.provider) {
                Ok(agent) => agent,
                Err(message) => {
                    return ToolOutput::error(format!("cannot start `{}`: {message}", self.name));
                }
            };
            run_sub_agent(&agent, &self.name, &prompt, env, &tool_ctx.call_id).await
        })
    }
}

async fn run_sub_agent(
    agent: &Agent,
    tool_name: &str,
    prompt: &str,
    env: &AgentCallEnv,
    call_id: &str,
) -> ToolOutput {
    // Same budget, stop signal and warnings; no checkpoints of its own.
    let child = RunContext {
        emitter: env.ctx.emitter.child(&agent.name),
        checkpoints: None,
        ..env.ctx.clone()
    };
    let run_id = child.emitter.run_id.clone();
    let started = now_ms();
    env.ctx.emitter.emit(
        kind::SUB_AGENT_STARTED,
        json!({"plannerStepId": env.step_id, "toolCallId": call_id, "specialistId": tool_name,
               "subTaskDescription": prompt, "subAgentRunId": run_id}),
    );
    child.emitter.emit(
        kind::RUN_CREATED,
        json!({"status": "in_progress", "initialMessages": [Message::user(prompt)]}),
    );
    let outcome = agent
        .generate(Some(Message::user(prompt)), AgentState::initial(), &child)
        .await;
    let (output, final_state) = match outcome {
        Ok((turn, state)) => {
            child.emitter.emit(
                kind::RUN_COMPLETED,
                json!({"status": "completed", "finalMessages": [Message::assistant(turn.output.clone())]}),
            );
            let data = turn.structured.unwrap_or(Value::String(turn.output));
            (ToolOutput::ok(data), state)
        }
        Err(halt) => {
            let (code, message) = match &halt.reason {
                HaltReason::Limit(hit) => (
                    "limit_reached".to_string(),
                    format!("stopped at `{}`: {}", hit.name, hit.detail),
                ),
                HaltReason::Failed { code, message } => (code.clone(), message.clone()),
                HaltReason::Interrupted => ("interrupted".to_string(), "interrupted".to_string()),
                // Pausing the whole tree for a sub-agent's question is not supported yet.
                HaltReason::Reloaded => ("reloaded".to_string(), "reloaded".to_string()),
                HaltReason::InputRequired { question, .. } => (
                    "input_required".to_string(),
                    format!(
                        "it asked the user \"{question}\", and sub-agents cannot wait for answers"
                    ),
                ),
            };
            child.emitter.emit(
                kind::RUN_FAILED,
                json!({"status": "failed", "error": {"code": code, "message": message}}),
            );
            (
                ToolOutput::error(format!("`{tool_name}` failed: {message}")),
                *halt.state,
            )
        }
    };
    let trace = SubagentTrace {
        subagent_id: run_id.clone(),
        subagent_type: agent.name.clone(),
        parent_tool_call_id: call_id.to_string(),
        prompt: prompt.to_string(),
        start_time: started,
        end_time: now_ms(),
        success: output.success,
        result: output.success.then(|| text_of(&output.data)),
        error: output.error.clone(),
        tool_executions: tool_executions(&final_state),
        usage: Some(final_state.usage),
    };
    env.ctx.emitter.emit(
        kind::SUB_AGENT_COMPLETED,
        json!({"plannerStepId": env.step_id, "toolCallId": call_id, "specialistId": tool_name,
               "subAgentRunId": run_id, "result": output}),
    );
    let mut output = output;
    if let Ok(trace) = serde_json::to_value(&trace) {
        output.metadata.insert(TRACE_KEY.into(), trace);
    }
    output
}

fn text_of(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The tool calls a run made, paired with their results, from its history.
fn tool_executions(state: &AgentState) -> Vec<ToolExecutionTrace> {
    let mut executions = Vec::new();
    for message in &state.messages {
        if let Message::Assistant(assistant) = message {
            for call in &assistant.tool_calls {
                let result = state.messages.iter().find_map(|m| match m {
                    Message::Tool(result) if result.tool_call_id == call.id => Some(result),
                    _ => None,
                });
                executions.push(ToolExecutionTrace {
                    tool_name: call.name.clone(),
                    tool_call_id: Some(call.id.clone()),
                    arguments: call.arguments.clone(),
                    result: result.map(|r| r.content.clone()).unwrap_or_default(),
                    is_error: result.is_some_and(|r| r.is_error),
                    duration: None,
                });
            }
        }
    }
    executions
}

/// A transfer of the conversation to another agent.
pub struct HandoffTool {
    pub name: String,
    pub description: String,
    pub target: Arc<dyn AgentFactory>,
    parameters: Value,
}

impl HandoffTool {
    pub fn new(name: String, description: String, target: Arc<dyn AgentFactory>) -> Self {
        HandoffTool {
            name,
            description,
            target,
            parameters: json!({"type": "object", "properties": {
                "reason": {"type": "string", "description": "Why the conversation is handed over."}
            }}),
        }
    }
}

impl Tool for HandoffTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> &Value {
        &self.parameters
    }

    fn sequential(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, _arguments: Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let mut output = ToolOutput::ok(Value::String(format!(
                "Handed over to {}.",
                self.target.name()
            )));
            output
                .metadata
                .insert(HANDOFF_KEY.into(), Value::String(self.name.clone()));
            output
        })
    }
}
