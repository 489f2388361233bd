//! Answering the question a paused run waits on, inside the resumed run: the answer becomes
//! the `ask_user` call's result, or, when a sub-agent asked, that sub-agent is driven on from
//! its saved state with the answer settled in its own run (to any depth), and its answer
//! becomes its call's result. A sub-agent that asks again pauses the run again.

use std::sync::Arc;
use std::time::Instant;

use super::agent::{Agent, AgentTool, Halt, HaltReason, RunContext, SubAgentTool};
use super::effect::ToolEffect;
use super::events::{ToolCallCreated, ToolCompleted, UserInputProvided};
use super::pending::Pending;
use super::run::{Settle, handed_chain};
use super::state::AgentState;
use super::step::{StepEnd, end_step, result_for_model, start_step};
use super::subagent::CallerRun;
use crate::provider::{BoxFuture, Message, ToolCall};

/// The answer to what a paused run waits on.
#[derive(Debug, Clone)]
pub struct Answer {
    pub pending: Pending,
    pub answer: String,
}

impl Settle for Answer {
    fn settle<'a>(
        &'a self,
        agent: &'a Agent,
        state: AgentState,
        ctx: &'a RunContext,
    ) -> BoxFuture<'a, Result<AgentState, Halt>> {
        Box::pin(async move {
            match &self.pending {
                Pending::InputRequired { question, call, .. } => {
                    ctx.emitter.emit(UserInputProvided {
                        question: question.clone(),
                        answer: self.answer.clone(),
                        tool_call_id: call.id.clone(),
                        step_id: None,
                    });
                    let result = Message::tool_result(call, self.answer.clone(), false);
                    Ok(state.with_message(result))
                }
                Pending::SubAgent {
                    call,
                    prompt,
                    state: waiting,
                    pending,
                    ..
                } => {
                    let inner = Answer {
                        pending: (**pending).clone(),
                        answer: self.answer.clone(),
                    };
                    let sub = SubAgentResume {
                        call,
                        prompt,
                        state: (**waiting).clone(),
                        answer: Arc::new(inner),
                    };
                    sub.run(agent, state, ctx).await
                }
                // Calls in flight are settled by the caller before the run (no answer).
                Pending::ToolsInFlight { .. } => Ok(state),
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
            Err(message) => return Err(Halt::failed(state, "handoff", message)),
        };
        let owner = active.as_ref().unwrap_or(root);
        let Some(tool) = sub_agent_tool(owner, &self.call.name) else {
            let message = format!(
                "the session waits on sub-agent tool `{}`, which `{}` no longer has",
                self.call.name, owner.name
            );
            return Err(Halt::failed(state, "resume", message));
        };
        let title = format!("Answer for {}", self.call.name);
        let (state, step_id) = start_step(ctx, state, &title);
        let caller = CallerRun {
            ctx: ctx.clone(),
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

fn sub_agent_tool(agent: &Agent, name: &str) -> Option<Arc<SubAgentTool>> {
    agent.tools.iter().find_map(|tool| match tool {
        AgentTool::SubAgent(tool) if tool.name == name => Some(tool.clone()),
        _ => None,
    })
}
