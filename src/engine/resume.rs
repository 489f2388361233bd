//! Answering what a paused run waits on, inside the resumed run: the answer becomes the
//! `ask_user` call's result; a call whose MCP server's form was answered is made again;
//! calls awaiting approval run (approved) or get the denial as
//! their result, in a step of their own; external calls get the outputs submitted for
//! them, in a step of their own too; when a sub-agent paused, it is driven on from its
//! saved state with the reply settled in its own run (to any depth), and its answer becomes
//! its call's result. A sub-agent that pauses again pauses the run again.

use std::sync::Arc;
use std::time::Instant;

use super::agent::{Agent, AgentTool, Halt, HaltReason, RemoteAgentTool, RunContext, SubAgentTool};
use super::effect::ToolEffect;
use super::events::{PermissionDecided, ToolCallCreated, ToolCompleted, UserInputProvided};
use super::external::SubmittedOutput;
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
    /// The outputs of the external calls the run waits on (`--tool-output`), one per call.
    Outputs(Vec<SubmittedOutput>),
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
                    Ok(super::thread::add_one(ctx, state, None, result))
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
                (Pending::OutputsRequired { calls }, Reply::Outputs(outputs)) => {
                    let step = ("Tool outputs submitted", calls.as_slice());
                    in_own_step(agent, state, ctx, (step, outputs), |state, _| state).await
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
        let found = AnswerStep::open(root, state, ctx, self.call, "sub-agent", sub_agent_tool);
        let (tool, state, step) = found?;
        let called = tool
            .resume(
                (self.prompt, self.state),
                self.answer,
                &step.caller,
                &self.call.id,
            )
            .await;
        step.result(ctx, self.call, &called.output);
        match called.effect {
            Some(ToolEffect::SubAgentWaiting {
                agent,
                prompt,
                state: waiting,
                pending,
            }) => step.pause(
                ctx,
                state,
                Pending::SubAgent {
                    call: self.call.clone(),
                    agent,
                    prompt,
                    state: waiting,
                    pending,
                },
            ),
            effect => step.complete(ctx, state, self.call, &called.output, effect),
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
        let found = AnswerStep::open(root, state, ctx, self.call, "remote agent", remote_tool);
        let (tool, state, step) = found?;
        let called = tool
            .answer(self.task, self.answer, &step.caller, &self.call.id)
            .await;
        step.result(ctx, self.call, &called.output);
        match called.effect {
            Some(ToolEffect::RemoteWaiting { question, task, .. }) => step.pause(
                ctx,
                state,
                Pending::Remote {
                    call: self.call.clone(),
                    question,
                    task: *task,
                },
            ),
            effect => step.complete(ctx, state, self.call, &called.output, effect),
        }
    }
}

/// The step of the caller's run in which a waiting call (a sub-agent's, a remote
/// agent's) gets its answer: the call shows again in it, with what answers it inside.
struct AnswerStep {
    title: String,
    step_id: String,
    caller: CallerRun,
    started: Instant,
}

impl AnswerStep {
    /// Opens the step for `call`, whose tool `find` looks up (as a `kind` tool) in the
    /// agent that has the run now (a handoff may have passed it on).
    fn open<T>(
        root: &Agent,
        state: AgentState,
        ctx: &RunContext,
        call: &ToolCall,
        kind: &str,
        find: fn(&Agent, &str) -> Option<T>,
    ) -> Result<(T, AgentState, AnswerStep), Halt> {
        let active = match handed_chain(root, &state.handoffs) {
            Ok(active) => active,
            Err(error) => return Err(Halt::failed(state, ErrorCode::Handoff, error.to_string())),
        };
        let owner = active.as_ref().unwrap_or(root);
        let Some(tool) = find(owner, &call.name) else {
            let message = format!(
                "the session waits on {kind} tool `{}`, which `{}` no longer has",
                call.name, owner.name
            );
            return Err(Halt::failed(state, ErrorCode::Resume, message));
        };
        let title = format!("Answer for {}", call.name);
        let (state, step_id) = start_step(ctx, state, &title);
        let caller = CallerRun {
            ctx: ctx.clone().governed_by(owner),
            step_id: step_id.clone(),
            model: owner.model(),
        };
        ctx.emitter.emit(ToolCallCreated {
            step_id: step_id.clone(),
            tool_call: call.clone(),
        });
        let step = AnswerStep {
            title,
            step_id,
            caller,
            started: Instant::now(),
        };
        Ok((tool, state, step))
    }

    /// The call's result, as it came back.
    fn result(&self, ctx: &RunContext, call: &ToolCall, output: &ToolOutput) {
        ctx.emitter.emit(ToolCompleted {
            step_id: self.step_id.clone(),
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            result: Arc::new(output.clone()),
            duration_ms: self.started.elapsed().as_millis() as u64,
        });
    }

    /// The call asks again: the step ends paused and the run waits for `pending`.
    fn pause(
        self,
        ctx: &RunContext,
        state: AgentState,
        pending: Pending,
    ) -> Result<AgentState, Halt> {
        end_step(ctx, &state, &self.step_id, &self.title, StepEnd::Paused);
        Err(Halt::new(
            state,
            HaltReason::InputRequired(Box::new(pending)),
        ))
    }

    /// The call is done: its result joins the history and the step ends.
    fn complete(
        self,
        ctx: &RunContext,
        state: AgentState,
        call: &ToolCall,
        output: &ToolOutput,
        effect: Option<ToolEffect>,
    ) -> Result<AgentState, Halt> {
        let state = match effect {
            Some(ToolEffect::SubAgent(trace)) => state.with_subagent_trace(*trace),
            _ => state,
        };
        let result = Message::tool_result(call, result_for_model(output), !output.success);
        let state = super::thread::add_one(ctx, state, Some(&self.step_id), result);
        end_step(ctx, &state, &self.step_id, &self.title, StepEnd::Completed);
        Ok(state)
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
    in_own_step(root, state, ctx, (step, &[]), decide).await
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
    in_own_step(root, state, ctx, (step, &[]), |state, _| state).await
}

/// Runs `calls` (settled on resume, so not decided or counted again) in a step of their
/// own, as the agent in control (the handoff target, or the root), external calls with
/// the `outputs` submitted for them; `prepare` first adds what else the step shows.
async fn in_own_step(
    root: &Agent,
    state: AgentState,
    ctx: &RunContext,
    ((title, calls), outputs): ((&str, &[ToolCall]), &[SubmittedOutput]),
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
    let state = match run_approved_tools(owner, (calls, outputs), state, ctx, &step_id).await {
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
    let output = Arc::new(ToolOutput::error(reason));
    ctx.emitter.emit(ToolCompleted {
        step_id: step_id.to_string(),
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        result: Arc::clone(&output),
        duration_ms: 0,
    });
    let result = Message::tool_result(call, result_for_model(&output), true);
    super::thread::add_one(ctx, state, Some(step_id), result)
}

fn sub_agent_tool(agent: &Agent, name: &str) -> Option<Arc<SubAgentTool>> {
    agent.tools.iter().find_map(|tool| match tool {
        AgentTool::SubAgent(tool) if tool.name == name => Some(tool.clone()),
        _ => None,
    })
}
