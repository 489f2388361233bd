//! Sub-agents as tools (UAP §8) and handoffs (SPEC §5).
//!
//! A sub-agent tool validates the call's arguments against its explicit schema, renders its
//! prompt, builds the sub-agent (inheriting the caller's model when it has none) and runs it
//! from a fresh state, one level deeper, on the run's shared budget. Its events bubble into
//! the same stream with their own run id and `parentRunId`; its run is kept as a trace in
//! the caller's state. A handoff tool only names its target: the engine ends the caller's
//! turn and lets the target continue the same conversation at the same depth.

use std::sync::Arc;

use serde_json::Value;

use super::agent::{Agent, HandoffTool, RunContext, SubAgentTool};
use super::budget::PricedModel;
use super::clock::now_ms;
use super::effect::ToolEffect;
use super::events::{SubAgentCompleted, SubAgentStarted};
use super::outcome::{RunOutcome, RunStatus};
use super::pending::Pending;
use super::run::{RunStart, Settle, drive};
use super::scheduler::Called;
use super::state::AgentState;
use super::trace::{SubagentTrace, ToolExecutionTrace};
use crate::provider::Message;
use crate::tools::ToolOutput;

/// The calling run, as the engine's own tools need it.
#[derive(Clone)]
pub struct CallerRun {
    pub ctx: RunContext,
    pub step_id: String,
    /// The calling agent's model, inherited by sub-agents without one.
    pub model: PricedModel,
}

impl SubAgentTool {
    /// Runs one call: checks the arguments and the depth bound, renders the prompt, builds
    /// the sub-agent and drives its run one level below `caller`.
    pub async fn run(&self, arguments: Value, caller: &CallerRun, call_id: &str) -> Called {
        if let Err(invalid) = self.validator.check(&arguments) {
            return invalid.into();
        }
        if let Some(refused) = self.too_deep(caller, caller.ctx.budget.max_depth()) {
            return refused;
        }
        let prompt = match self.prompt.render(&arguments) {
            Ok(prompt) => prompt,
            Err(message) => {
                let message = format!("cannot render the prompt of `{}`: {message}", self.name);
                return ToolOutput::error(message).into();
            }
        };
        match self.agent.build(&caller.model) {
            Ok(agent) => match self.too_deep(caller, agent.limits.max_depth) {
                Some(refused) => refused,
                None => {
                    let start = RunStart {
                        opening: vec![Message::user(&prompt)],
                        ..RunStart::default()
                    };
                    let run = SubRun {
                        agent: &agent,
                        prompt: &prompt,
                        state: AgentState::initial(),
                        start,
                    };
                    run_sub_agent(&self.name, run, caller, call_id).await
                }
            },
            Err(message) => {
                ToolOutput::error(format!("cannot start `{}`: {message}", self.name)).into()
            }
        }
    }
}

impl SubAgentTool {
    /// The refusal when the sub-agent would run deeper than `max_depth` allows (the
    /// callers' bound, or its own), counting the root as depth 0.
    fn too_deep(&self, caller: &CallerRun, max_depth: Option<u32>) -> Option<Called> {
        let depth = caller.ctx.emitter.depth + 1;
        let max = max_depth.filter(|max| depth > *max)?;
        let message = format!(
            "`{}` was not started: it would run at depth {depth}, deeper than limits.max_depth = {max}",
            self.name
        );
        Some(ToolOutput::error(message).into())
    }

    /// Drives a sub-agent that paused on a question on from where it waited, once `settle`
    /// (the answer) is applied inside its run; `prompt` is the one it was started with.
    pub async fn resume(
        &self,
        (prompt, state): (&str, AgentState),
        settle: Arc<dyn Settle>,
        caller: &CallerRun,
        call_id: &str,
    ) -> Called {
        let agent = match self.agent.build(&caller.model) {
            Ok(agent) => agent,
            Err(message) => {
                return ToolOutput::error(format!("cannot start `{}`: {message}", self.name))
                    .into();
            }
        };
        let start = RunStart {
            settle: Some(settle),
            ..RunStart::default()
        };
        let run = SubRun {
            agent: &agent,
            prompt,
            state,
            start,
        };
        run_sub_agent(&self.name, run, caller, call_id).await
    }
}

/// One run of a sub-agent: from a fresh state with its prompt, or on from where it paused.
struct SubRun<'a> {
    agent: &'a Agent,
    prompt: &'a str,
    state: AgentState,
    start: RunStart,
}

async fn run_sub_agent(
    tool_name: &str,
    run: SubRun<'_>,
    caller: &CallerRun,
    call_id: &str,
) -> Called {
    let SubRun {
        agent,
        prompt,
        state,
        start,
    } = run;
    let child = caller.ctx.child(agent);
    let run_id = child.emitter.run_id.to_string();
    let started = now_ms();
    caller.ctx.emitter.emit(SubAgentStarted {
        planner_step_id: caller.step_id.clone(),
        tool_call_id: call_id.to_string(),
        specialist_id: tool_name.to_string(),
        sub_task_description: prompt.to_string(),
        sub_agent_run_id: run_id.clone(),
        remote: None,
    });
    let outcome = drive(agent, start, state, &child).await;
    let called = match outcome.pending.clone() {
        Some(pending) if outcome.status == RunStatus::InputRequired => {
            waiting(tool_name, agent, prompt, outcome, pending)
        }
        _ => {
            let run = Finished {
                agent,
                prompt,
                run_id: &run_id,
                started,
            };
            finished(tool_name, run, call_id, outcome)
        }
    };
    caller.ctx.emitter.emit(SubAgentCompleted {
        planner_step_id: caller.step_id.clone(),
        tool_call_id: call_id.to_string(),
        specialist_id: tool_name.to_string(),
        sub_agent_run_id: run_id,
        result: called.output.clone(),
        remote: None,
    });
    called
}

/// A sub-agent that paused on a question: the whole run pauses, its state waiting with it.
fn waiting(
    tool_name: &str,
    agent: &Agent,
    prompt: &str,
    outcome: RunOutcome,
    pending: Pending,
) -> Called {
    let message = outcome.error.as_ref().map_or("", |e| e.message.as_str());
    let output = ToolOutput::error(format!("`{tool_name}` waits for an answer: {message}"));
    let effect = ToolEffect::SubAgentWaiting {
        agent: agent.name.clone(),
        prompt: prompt.to_string(),
        pending: Box::new(pending),
        state: Box::new(outcome.state),
    };
    Called {
        output,
        effect: Some(effect),
    }
}

/// The run of a sub-agent that ended, as its trace needs it.
struct Finished<'a> {
    agent: &'a Agent,
    prompt: &'a str,
    run_id: &'a str,
    started: u64,
}

/// A sub-agent's run that ended: its answer (or why it failed) and its trace.
fn finished(tool_name: &str, run: Finished<'_>, call_id: &str, outcome: RunOutcome) -> Called {
    let output = match (outcome.status, &outcome.error) {
        (RunStatus::Completed, _) => {
            let text = outcome.output.clone().unwrap_or_default();
            ToolOutput::ok(outcome.structured.clone().unwrap_or(Value::String(text)))
        }
        (_, error) => {
            let message = error.as_ref().map_or("it failed", |e| e.message.as_str());
            ToolOutput::error(format!("`{tool_name}` failed: {message}"))
        }
    };
    let state = &outcome.state;
    let trace = SubagentTrace {
        subagent_id: run.run_id.to_string(),
        subagent_type: run.agent.name.clone(),
        parent_tool_call_id: call_id.to_string(),
        prompt: run.prompt.to_string(),
        start_time: run.started,
        end_time: now_ms(),
        success: output.success,
        result: output.success.then(|| text_of(&output.data)),
        error: output.error.clone(),
        tool_executions: tool_executions(state),
        usage: Some(state.usage),
    };
    Called {
        output,
        effect: Some(ToolEffect::SubAgent(Box::new(trace))),
    }
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
    for message in state.messages.iter() {
        if let Message::Assistant(assistant) = message {
            for call in &assistant.tool_calls {
                let result = state.messages.iter().find_map(|m| match m {
                    Message::Tool(result) if result.tool_call_id == call.id => Some(result),
                    _ => None,
                });
                executions.push(ToolExecutionTrace {
                    tool_name: call.name.clone(),
                    tool_call_id: Some(call.id.clone()),
                    arguments: Value::clone(&call.arguments),
                    result: result.map(|r| r.content.clone()).unwrap_or_default(),
                    is_error: result.is_some_and(|r| r.is_error),
                    duration: None,
                });
            }
        }
    }
    executions
}

impl HandoffTool {
    /// The call's result; the driver hands the conversation over after the turn.
    pub fn hand_over(&self) -> Called {
        let text = format!("Handed over to {}.", self.target.name());
        Called {
            output: ToolOutput::ok(Value::String(text)),
            effect: Some(ToolEffect::Handoff {
                tool: self.name.clone(),
            }),
        }
    }
}
