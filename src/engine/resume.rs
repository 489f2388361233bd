//! Answering what a paused run waits on, inside the resumed run: the answer becomes the
//! `ask_user` call's result; a call whose MCP server's form was answered is made again;
//! calls awaiting approval run (approved) or get the denial as
//! their result, in a step of their own; when a sub-agent paused, it is driven on from its
//! saved state with the reply settled in its own run (to any depth), and its answer becomes
//! its call's result. A sub-agent that pauses again pauses the run again.

use std::sync::Arc;
use std::time::Instant;

use super::agent::{Agent, AgentTool, Halt, HaltReason, RemoteAgentTool, RunContext, SubAgentTool};
use super::effect::ToolEffect;
use super::events::{PermissionDecided, ToolCallCreated, ToolCompleted, UserInputProvided};
use super::pending::{ApprovalCall, Pending, RemoteTask};
use super::run::{Settle, handed_chain};
use super::state::AgentState;
use super::step::{StepEnd, end_step, fail_step, result_for_model, run_approved_tools, start_step};
use super::subagent::CallerRun;
use crate::engine::ErrorCode;
use crate::policy::{Decider, Verdict};
use crate::provider::{BoxFuture, Message, ToolCall};
use crate::tools::ToolOutput;

/// The reply to what a paused run waits on.
#[derive(Debug, Clone)]
pub struct Answer {
    pub pending: Pending,
    pub reply: Reply,
}

/// What the person gave a paused run.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// The answer to a question (`--answer`).
    Text(String),
    /// Decisions on the calls awaiting approval (`--approve`, `--deny`).
    Approvals(Decisions),
}

/// A decision for each call awaiting approval, by call id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Decisions {
    /// Every call not denied is approved (`--approve all`).
    pub approve_all: bool,
    pub approve: Vec<String>,
    /// Call id and the reason the model is told.
    pub deny: Vec<(String, String)>,
}

impl Decisions {
    /// `Some(None)`: approved; `Some(Some(reason))`: denied; `None`: no decision.
    pub fn of(&self, call_id: &str) -> Option<Option<String>> {
        if let Some((_, reason)) = self.deny.iter().find(|(id, _)| id == call_id) {
            return Some(Some(reason.clone()));
        }
        (self.approve_all || self.approve.iter().any(|id| id == call_id)).then_some(None)
    }
}

impl Settle for Answer {
    fn settle<'a>(
        &'a self,
        agent: &'a Agent,
        state: AgentState,
        ctx: &'a RunContext,
    ) -> BoxFuture<'a, Result<AgentState, Halt>> {
        Box::pin(async move {
            match (&self.pending, &self.reply) {
                (Pending::InputRequired { question, call, .. }, Reply::Text(answer)) => {
                    ctx.emitter.emit(UserInputProvided {
                        question: question.clone(),
                        answer: answer.clone(),
                        tool_call_id: call.id.clone(),
                        step_id: None,
                    });
                    let result = Message::tool_result(call, answer.clone(), false);
                    Ok(state.with_message(result))
                }
                (Pending::FormRequired { call, form }, Reply::Text(answer)) => {
                    ctx.emitter.emit(UserInputProvided {
                        question: form.question.clone(),
                        answer: answer.clone(),
                        tool_call_id: call.id.clone(),
                        step_id: None,
                    });
                    call_again(agent, state, ctx, call).await
                }
                (Pending::ApprovalRequired { calls }, Reply::Approvals(decisions)) => {
                    settle_approvals(agent, state, ctx, calls, decisions).await
                }
                (
                    Pending::SubAgent {
                        call,
                        prompt,
                        state: waiting,
                        pending,
                        ..
                    },
                    reply,
                ) => {
                    let inner = Answer {
                        pending: (**pending).clone(),
                        reply: reply.clone(),
                    };
                    let sub = SubAgentResume {
                        call,
                        prompt,
                        state: (**waiting).clone(),
                        answer: Arc::new(inner),
                    };
                    sub.run(agent, state, ctx).await
                }
                (
                    Pending::Remote {
                        call,
                        question,
                        task,
                    },
                    Reply::Text(answer),
                ) => {
                    ctx.emitter.emit(UserInputProvided {
                        question: question.clone(),
                        answer: answer.clone(),
                        tool_call_id: call.id.clone(),
                        step_id: None,
                    });
                    let remote = RemoteResume {
                        call,
                        task: task.clone(),
                        answer: answer.clone(),
                    };
                    remote.run(agent, state, ctx).await
                }
                // Calls in flight are settled by the caller before the run (no answer).
                (Pending::ToolsInFlight { .. }, _) => Ok(state),
                (_, reply) => {
                    let message = format!("the session's pause cannot take {reply:?}");
                    Err(Halt::failed(state, ErrorCode::Resume, message))
                }
            }
        })
    }
}

/// A paused sub-agent to drive on, inside a step of its caller's run.
struct SubAgentResume<'a> {
    call: &'a ToolCall,
    prompt: &'a str,
    state: AgentState,
    answer: Arc<Answer>,
}

impl SubAgentResume<'_> {
    async fn run(
        self,
        root: &Agent,
        state: AgentState,
        ctx: &RunContext,
    ) -> Result<AgentState, Halt> {
        let active = match handed_chain(root, &state.handoffs) {
            Ok(active) => active,
            Err(error) => return Err(Halt::failed(state, ErrorCode::Handoff, error.to_string())),
        };
        let owner = active.as_ref().unwrap_or(root);
        let Some(tool) = sub_agent_tool(owner, &self.call.name) else {
            let message = format!(
                "the session waits on sub-agent tool `{}`, which `{}` no longer has",
                self.call.name, owner.name
            );
            return Err(Halt::failed(state, ErrorCode::Resume, message));
        };
        let title = format!("Answer for {}", self.call.name);
        let (state, step_id) = start_step(ctx, state, &title);
        let caller = CallerRun {
            ctx: ctx.clone().governed_by(owner),
            step_id: step_id.clone(),
            model: owner.model(),
        };
        // The call shows again in this step, with the sub-agent's resumed run inside it.
        ctx.emitter.emit(ToolCallCreated {
            step_id: step_id.clone(),
            tool_call: self.call.clone(),
        });
        let started = Instant::now();
        let called = tool
            .resume(
                (self.prompt, self.state),
                self.answer,
                &caller,
                &self.call.id,
            )
            .await;
        ctx.emitter.emit(ToolCompleted {
            step_id: step_id.clone(),
            tool_call_id: self.call.id.clone(),
            tool_name: self.call.name.clone(),
            result: called.output.clone(),
            duration_ms: started.elapsed().as_millis() as u64,
        });
        match called.effect {
            Some(ToolEffect::SubAgentWaiting {
                agent,
                prompt,
                state: waiting,
                pending,
            }) => {
                end_step(ctx, &state, &step_id, &title, StepEnd::Paused);
                let pending = Pending::SubAgent {
                    call: self.call.clone(),
                    agent,
                    prompt,
                    state: waiting,
                    pending,
                };
                Err(Halt::new(
                    state,
                    HaltReason::InputRequired(Box::new(pending)),
                ))
            }
            effect => {
                let state = match effect {
                    Some(ToolEffect::SubAgent(trace)) => state.with_subagent_trace(*trace),
                    _ => state,
                };
                let output = &called.output;
                let result =
                    Message::tool_result(self.call, result_for_model(output), !output.success);
                let state = state.with_message(result);
                end_step(ctx, &state, &step_id, &title, StepEnd::Completed);
                Ok(state)
            }
        }
    }
}

/// A remote agent's task that asked a question, to send the answer to inside a step of
/// the caller's run.
struct RemoteResume<'a> {
    call: &'a ToolCall,
    task: RemoteTask,
    answer: String,
}

impl RemoteResume<'_> {
    async fn run(
        self,
        root: &Agent,
        state: AgentState,
        ctx: &RunContext,
    ) -> Result<AgentState, Halt> {
        let active = match handed_chain(root, &state.handoffs) {
            Ok(active) => active,
            Err(error) => return Err(Halt::failed(state, ErrorCode::Handoff, error.to_string())),
        };
        let owner = active.as_ref().unwrap_or(root);
        let Some(tool) = remote_tool(owner, &self.call.name) else {
            let message = format!(
                "the session waits on remote agent tool `{}`, which `{}` no longer has",
                self.call.name, owner.name
            );
            return Err(Halt::failed(state, ErrorCode::Resume, message));
        };
        let title = format!("Answer for {}", self.call.name);
        let (state, step_id) = start_step(ctx, state, &title);
        let caller = CallerRun {
            ctx: ctx.clone().governed_by(owner),
            step_id: step_id.clone(),
            model: owner.model(),
        };
        ctx.emitter.emit(ToolCallCreated {
            step_id: step_id.clone(),
            tool_call: self.call.clone(),
        });
        let started = Instant::now();
        let called = tool
            .answer(self.task, self.answer, &caller, &self.call.id)
            .await;
        ctx.emitter.emit(ToolCompleted {
            step_id: step_id.clone(),
            tool_call_id: self.call.id.clone(),
            tool_name: self.call.name.clone(),
            result: called.output.clone(),
            duration_ms: started.elapsed().as_millis() as u64,
        });
        match called.effect {
            Some(ToolEffect::RemoteWaiting { question, task, .. }) => {
                end_step(ctx, &state, &step_id, &title, StepEnd::Paused);
                let pending = Pending::Remote {
                    call: self.call.clone(),
                    question,
                    task: *task,
                };
                Err(Halt::new(
                    state,
                    HaltReason::InputRequired(Box::new(pending)),
                ))
            }
            effect => {
                let state = match effect {
                    Some(ToolEffect::SubAgent(trace)) => state.with_subagent_trace(*trace),
                    _ => state,
                };
                let output = &called.output;
                let result =
                    Message::tool_result(self.call, result_for_model(output), !output.success);
                let state = state.with_message(result);
                end_step(ctx, &state, &step_id, &title, StepEnd::Completed);
                Ok(state)
            }
        }
    }
}

fn remote_tool(agent: &Agent, name: &str) -> Option<Arc<RemoteAgentTool>> {
    agent.tools.iter().find_map(|tool| match tool {
        AgentTool::Remote(tool) if tool.name == name => Some(tool.clone()),
        _ => None,
    })
}

/// Runs the approved calls and answers the denied ones, in a step of their own, as the
/// agent that made them (the handoff target in control, or the root).
async fn settle_approvals(
    root: &Agent,
    state: AgentState,
    ctx: &RunContext,
    calls: &[ApprovalCall],
    decisions: &Decisions,
) -> Result<AgentState, Halt> {
    let approved: Vec<ToolCall> = calls
        .iter()
        .filter(|waiting| decisions.of(&waiting.call.id).flatten().is_none())
        .map(|waiting| waiting.call.clone())
        .collect();
    let decide = |mut state: AgentState, step_id: &str| {
        for waiting in calls {
            let denied = decisions.of(&waiting.call.id).flatten();
            ctx.emitter.emit(PermissionDecided {
                step_id: step_id.to_string(),
                tool_call_id: waiting.call.id.clone(),
                tool_name: waiting.call.name.clone(),
                decision: if denied.is_some() {
                    Verdict::Deny
                } else {
                    Verdict::Allow
                },
                rule: waiting.rule.clone(),
                by: Decider::Resume,
                reason: denied.clone(),
            });
            if let Some(reason) = denied {
                state = deny(ctx, state, step_id, &waiting.call, reason);
            }
        }
        state
    };
    let step = ("Calls decided on resume", approved.as_slice());
    in_own_step(root, state, ctx, step, decide).await
}

/// Makes again the call whose server's form the resume answered (the answer waits for
/// the form among the run's answer sources).
async fn call_again(
    root: &Agent,
    state: AgentState,
    ctx: &RunContext,
    call: &ToolCall,
) -> Result<AgentState, Halt> {
    let title = format!("{} again, with the form answered", call.name);
    let step = (title.as_str(), std::slice::from_ref(call));
    in_own_step(root, state, ctx, step, |state, _| state).await
}

/// Runs `calls` (settled on resume, so not decided or counted again) in a step of their
/// own, as the agent in control (the handoff target, or the root); `prepare` first adds
/// what else the step shows.
async fn in_own_step(
    root: &Agent,
    state: AgentState,
    ctx: &RunContext,
    (title, calls): (&str, &[ToolCall]),
    prepare: impl FnOnce(AgentState, &str) -> AgentState,
) -> Result<AgentState, Halt> {
    let active = match handed_chain(root, &state.handoffs) {
        Ok(active) => active,
        Err(error) => return Err(Halt::failed(state, ErrorCode::Handoff, error.to_string())),
    };
    let owner = active.as_ref().unwrap_or(root);
    let (state, step_id) = start_step(ctx, state, title);
    let state = prepare(state, &step_id);
    let ctx = &ctx.clone().governed_by(owner);
    let state = match run_approved_tools(owner, calls, state, ctx, &step_id).await {
        Ok((state, _handoff)) => state,
        Err(halt) => return Err(fail_step(ctx, halt, &step_id, title)),
    };
    end_step(ctx, &state, &step_id, title, StepEnd::Completed);
    Ok(state)
}

/// A call denied on resume: shown in the step, its denial the result for the model.
fn deny(
    ctx: &RunContext,
    state: AgentState,
    step_id: &str,
    call: &ToolCall,
    reason: String,
) -> AgentState {
    ctx.emitter.emit(ToolCallCreated {
        step_id: step_id.to_string(),
        tool_call: call.clone(),
    });
    let output = ToolOutput::error(reason);
    ctx.emitter.emit(ToolCompleted {
        step_id: step_id.to_string(),
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        result: output.clone(),
        duration_ms: 0,
    });
    state.with_message(Message::tool_result(call, result_for_model(&output), true))
}

fn sub_agent_tool(agent: &Agent, name: &str) -> Option<Arc<SubAgentTool>> {
    agent.tools.iter().find_map(|tool| match tool {
        AgentTool::SubAgent(tool) if tool.name == name => Some(tool.clone()),
        _ => None,
    })
}
