//! `react`: each step is a reasoning call without tools (its text goes into
//! `state.reasoning` and shows as thinking), then an action call with the tools. The run
//! ends when an action call makes no tool call.

use super::reply::{Next, act_on_reply, action_options, answer_options, bound_reached};
use crate::engine::Limit;
use crate::engine::agent::{Agent, ExecutionStrategy, GenerateResult, RunContext};
use crate::engine::events::ReasoningCreated;
use crate::engine::state::AgentState;
use crate::engine::step::{CallOptions, call_model, fail_step, start_step};
use crate::provider::BoxFuture;

pub const DEFAULT_REASONING_PROMPT: &str = "Before acting, think about the next step: what you know, what is missing, and \
which single action moves the task forward. Write your reasoning only; do not call tools and do not answer yet.";

#[derive(Debug, Clone, Default)]
pub struct ReactStrategy {
    pub max_steps: Option<u64>,
    /// Rendered `reasoning_prompt` (default: `DEFAULT_REASONING_PROMPT`).
    pub reasoning_prompt: Option<String>,
}

impl ExecutionStrategy for ReactStrategy {
    fn name(&self) -> &str {
        "react"
    }

    fn execute<'a>(
        &'a self,
        agent: &'a Agent,
        state: AgentState,
        ctx: &'a RunContext,
    ) -> BoxFuture<'a, GenerateResult> {
        Box::pin(async move {
            let reason_options = CallOptions {
                offer_tools: false,
                system_suffix: Some(
                    self.reasoning_prompt
                        .clone()
                        .unwrap_or_else(|| DEFAULT_REASONING_PROMPT.into()),
                ),
                unrecorded: true,
                reasoning: true,
                ..CallOptions::default()
            };
            let mut state = state;
            let mut steps = 0;
            let mut attempts = 0;
            let mut answering = false;
            loop {
                if let Some(max) = self.max_steps
                    && steps >= max
                {
                    return Err(bound_reached(
                        state,
                        Limit::MaxSteps,
                        format!("{max} reasoning steps"),
                    ));
                }
                steps += 1;
                if answering {
                    // The answer call: no reasoning first, no tools.
                    let title = "Give the answer";
                    let (next, step_id) = start_step(ctx, state, title);
                    let options = answer_options(agent);
                    let (response, next) = call_model(agent, next, ctx, &options, &step_id)
                        .await
                        .map_err(|halt| fail_step(ctx, halt, &step_id, title))?;
                    let reply = (step_id.as_str(), &options);
                    match act_on_reply(agent, ctx, response, next, reply, &mut attempts).await? {
                        Next::Done(turn, state) => return Ok((turn, state)),
                        Next::Again(next) | Next::Answer(next) => state = next,
                    }
                    continue;
                }
                let title = "Reason and act";
                let (next, step_id) = start_step(ctx, state, title);
                let (reasoning, next) = call_model(agent, next, ctx, &reason_options, &step_id)
                    .await
                    .map_err(|halt| fail_step(ctx, halt, &step_id, title))?;
                state = next.with_reasoning(reasoning.text.clone());
                ctx.emitter.emit(ReasoningCreated {
                    step_id: step_id.clone(),
                    reasoning: reasoning.text.clone(),
                });

                let mut options = action_options(agent);
                options.system_suffix =
                    Some(format!("Your reasoning for this step:\n{}", reasoning.text));
                let (response, next) = call_model(agent, state, ctx, &options, &step_id)
                    .await
                    .map_err(|halt| fail_step(ctx, halt, &step_id, title))?;
                let reply = (step_id.as_str(), &options);
                match act_on_reply(agent, ctx, response, next, reply, &mut attempts).await? {
                    Next::Done(turn, state) => return Ok((turn, state)),
                    Next::Again(next) => state = next,
                    Next::Answer(next) => (state, answering) = (next, true),
                }
            }
        })
    }
}
