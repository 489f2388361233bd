//! One turn of tool calls: in flight on disk first, run by the scheduler with their
//! events, then their results (and effects: a question, a handoff, a sub-agent trace)
//! folded into the state.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::boundary::{SavePoint, save_checkpoint};
use crate::engine::agent::{Agent, Halt, HaltReason, RunContext};
use crate::engine::budget::LimitHit;
use crate::engine::effect::ToolEffect;
use crate::engine::events::{ToolCallCreated, ToolCompleted, ToolStarted};
use crate::engine::external::SubmittedOutput;
use crate::engine::pending::{ApprovalCall, Pending};
use crate::engine::scheduler::{CallObserver, SchedulePolicy, run_calls};
use crate::engine::state::AgentState;
use crate::engine::subagent::CallerRun;
use crate::engine::thread;
use crate::engine::toolset::TurnTools;
use crate::provider::{Message, ToolCall};
use crate::tools::ToolOutput;

/// Whether running `call` again after a power cut does no harm. A call of a tool the agent
/// does not have is answered with an error and runs nothing.
fn rerun_harmless(agent: &Agent, call: &ToolCall) -> bool {
    agent
        .tools
        .iter()
        .find(|tool| tool.name() == call.name)
        .is_none_or(|tool| tool.rerun_harmless())
}

/// Runs the tool calls of one reply and appends their results, in call order. Returns the
/// handoff tool that was called, if any.
pub async fn run_tools(
    agent: &Agent,
    calls: &[ToolCall],
    state: AgentState,
    ctx: &RunContext,
    step_id: &str,
) -> Result<(AgentState, Option<String>), Halt> {
    run_turn(agent, calls, state, ctx, step_id, (Vec::new(), &[])).await
}

/// Runs calls settled on `runner resume` (approved by a person, or made again once their
/// server's form was answered), in the step `step_id`, as [`run_tools`] does but without
/// deciding or counting them again.
/// External calls among them get the outputs submitted for them (`outputs`) as results.
pub async fn run_approved_tools(
    agent: &Agent,
    (calls, outputs): (&[ToolCall], &[SubmittedOutput]),
    state: AgentState,
    ctx: &RunContext,
    step_id: &str,
) -> Result<(AgentState, Option<String>), Halt> {
    let approved = calls.iter().map(|call| call.id.clone()).collect();
    run_turn(agent, calls, state, ctx, step_id, (approved, outputs)).await
}

async fn run_turn(
    agent: &Agent,
    calls: &[ToolCall],
    state: AgentState,
    ctx: &RunContext,
    step_id: &str,
    (approved, outputs): (Vec<String>, &[SubmittedOutput]),
) -> Result<(AgentState, Option<String>), Halt> {
    for call in calls {
        ctx.emitter.emit(ToolCallCreated {
            step_id: step_id.to_string(),
            tool_call: call.clone(),
        });
    }
    let policy = SchedulePolicy {
        parallel: agent.parallel_tools,
        tool_timeout: ctx.budget.tool_timeout(),
        max_output_chars: ctx.budget.max_output_chars(),
        deadline: ctx.budget.deadline(),
        max_calls: agent.max_calls_per_turn,
        sequential: agent.sequential.clone(),
        after_tools: agent.after_tools(),
    };
    let observer = EventObserver {
        ctx,
        step_id,
        approved: &approved,
    };
    let caller = CallerRun {
        ctx: ctx.clone().governed_by(agent),
        step_id: step_id.to_string(),
        model: agent.model(),
    };
    let tools = TurnTools::new(&agent.tools, caller)
        .approving(approved.iter().cloned())
        .submitting(outputs);
    // The calls in flight are on disk before they run: a resume after a crash knows them.
    let in_flight = Pending::ToolsInFlight {
        calls: calls.to_vec(),
    };
    let before = SavePoint::BeforeCalls {
        pending: &in_flight,
        rerun_harmless: calls.iter().all(|call| rerun_harmless(agent, call)),
    };
    let state = save_checkpoint(ctx, state, before)?;
    let (results, hit) = run_calls(
        calls,
        &tools,
        &agent.depends_on,
        &policy,
        &observer,
        &ctx.cancel,
    )
    .await;
    let mut state = state.with_tool_calls(results.iter().filter(|r| r.counted).count() as u64);
    let mut handoff = None;
    let mut input_required = None;
    let mut approvals = Vec::new();
    let mut external = Vec::new();
    let mut messages = Vec::with_capacity(results.len());
    for result in results {
        match result.effect {
            // Not run: the call waits for a person's decision, which settles it on resume.
            Some(ToolEffect::ApprovalRequired { rule }) => {
                approvals.push(ApprovalCall {
                    call: result.call,
                    rule,
                });
                continue;
            }
            // Not run: the client runs it, and its output settles it on resume.
            Some(ToolEffect::OutputRequired { arguments }) => {
                let mut call = result.call;
                if let Some(arguments) = arguments {
                    call.arguments = arguments.into();
                }
                external.push(call);
                continue;
            }
            // An unanswered question has no result yet: the answer becomes it on resume.
            Some(ToolEffect::InputRequired { question, id }) => {
                let call = result.call;
                let pending = Pending::InputRequired { question, id, call };
                input_required.get_or_insert(HaltReason::InputRequired(Box::new(pending)));
                continue;
            }
            // The call is made again on resume, with the form's answer ready.
            Some(ToolEffect::FormRequired(form)) => {
                let pending = Pending::FormRequired {
                    call: result.call,
                    form,
                };
                input_required.get_or_insert(HaltReason::InputRequired(Box::new(pending)));
                continue;
            }
            Some(ToolEffect::SubAgentWaiting {
                agent,
                prompt,
                state,
                pending,
            }) => {
                let call = result.call;
                let pending = Pending::SubAgent {
                    call,
                    agent,
                    prompt,
                    state,
                    pending,
                };
                input_required.get_or_insert(HaltReason::InputRequired(Box::new(pending)));
                continue;
            }
            // The remote task waits for an answer: sent to it on resume.
            Some(ToolEffect::RemoteWaiting { question, task, .. }) => {
                let pending = Pending::Remote {
                    call: result.call,
                    question,
                    task: *task,
                };
                input_required.get_or_insert(HaltReason::InputRequired(Box::new(pending)));
                continue;
            }
            Some(ToolEffect::SubAgent(trace)) => state = state.with_subagent_trace(*trace),
            Some(ToolEffect::Handoff { tool }) => {
                handoff.get_or_insert(tool);
            }
            None => {}
        }
        messages.push(Message::tool_result(
            &result.call,
            result_for_model(&result.output),
            !result.output.success,
        ));
    }
    let waiting = Waiting {
        question: input_required,
        approvals,
        external,
    };
    let (state, reason) = pause_reason(
        thread::add(ctx, state, Some(step_id), messages),
        waiting,
        (ctx, step_id),
    );
    if let Some(reason) = reason {
        return Err(Halt::new(state, reason));
    }
    if ctx.interrupted() {
        return Err(Halt::new(state, HaltReason::Interrupted));
    }
    if let Some(hit) = hit {
        return Err(Halt::new(state, HaltReason::Limit(hit)));
    }
    Ok((state, handoff))
}

/// What a turn's calls left waiting.
struct Waiting {
    question: Option<HaltReason>,
    approvals: Vec<ApprovalCall>,
    external: Vec<ToolCall>,
}

/// Why the turn pauses, if it does: a question first, else the calls awaiting approval,
/// else the external calls awaiting their outputs. A resume settles one of them, so the
/// calls of the others are answered as not run (the model can make them again).
fn pause_reason(
    state: AgentState,
    waiting: Waiting,
    (ctx, step_id): (&RunContext, &str),
) -> (AgentState, Option<HaltReason>) {
    let Waiting {
        question,
        approvals,
        external,
    } = waiting;
    let pause = |pending: Pending| Some(HaltReason::InputRequired(Box::new(pending)));
    let (reason, not_run) = match (question, approvals.is_empty(), external.is_empty()) {
        (None, true, true) => return (state, None),
        (Some(question), _, _) => {
            let waiting = approvals.into_iter().map(|waiting| waiting.call);
            (Some(question), waiting.chain(external).collect())
        }
        (None, false, _) => (
            pause(Pending::ApprovalRequired { calls: approvals }),
            external,
        ),
        (None, true, false) => (
            pause(Pending::OutputsRequired { calls: external }),
            Vec::new(),
        ),
    };
    let not_run = not_run.iter().map(|call| {
        let text = "Error: not run: the run paused on another call of this turn first; call it again if it is still needed";
        Message::tool_result(call, text, true)
    });
    (thread::add(ctx, state, Some(step_id), not_run), reason)
}

/// The text the model gets back for a tool result.
pub fn result_for_model(output: &ToolOutput) -> String {
    if output.success {
        match &output.data {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        }
    } else {
        let mut text = format!(
            "Error: {}",
            output.error.as_deref().unwrap_or("the tool failed")
        );
        match &output.data {
            Value::Null => {}
            Value::String(data) if data.is_empty() => {}
            Value::String(data) => text.push_str(&format!("\n{data}")),
            other => text.push_str(&format!("\n{other}")),
        }
        text
    }
}

struct EventObserver<'a> {
    ctx: &'a RunContext,
    step_id: &'a str,
    /// Calls approved on resume: counted when they were first made.
    approved: &'a [String],
}

impl CallObserver for EventObserver<'_> {
    fn admit(&self, call: &ToolCall) -> Result<(), LimitHit> {
        self.ctx.budget.check_time()?;
        if self.approved.contains(&call.id) {
            return Ok(());
        }
        self.ctx.budget.reserve_tool_call()
    }

    fn started(&self, call: &ToolCall) {
        self.ctx.emitter.emit(ToolStarted {
            step_id: self.step_id.to_string(),
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            input: Arc::clone(&call.arguments),
        });
    }

    fn finished(&self, call: &ToolCall, output: &Arc<ToolOutput>, duration: Duration) {
        self.ctx.emitter.emit(ToolCompleted {
            step_id: self.step_id.to_string(),
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            result: Arc::clone(output),
            duration_ms: duration.as_millis() as u64,
        });
    }
}
