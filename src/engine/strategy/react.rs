//! `react`: each step is a reasoning call without tools (its text goes into
//! `state.reasoning` and shows as thinking), then an action call with the tools. The run
//! ends when an action call makes no tool call.

use serde_json::json;

use super::tool_loop::tool_title;
use super::{Answer, ExecutionStrategy, action_options, bound_reached, conclude};
use crate::engine::agent::{Agent, GenerateResult, RunContext};
use crate::engine::events::kind;
use crate::engine::state::AgentState;
use crate::engine::step::{
    CallOptions, after_step, call_model, end_step, fail_step, run_tools, start_step,
};
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
                ..CallOptions::default()
            };
            let mut state = state;
            let mut steps = 0;
            let mut attempts = 0;
            loop {
                if let Some(max) = self.max_steps
                    && steps >= max
                {
                    return Err(bound_reached(
                        state,
                        "max_steps",
                        format!("{max} reasoning steps"),
                    ));
                }
                steps += 1;
                state = state.next_step();
                let title = "Reason and act";
                let step_id = start_step(ctx, &state, title);
                let (reasoning, next) = call_model(agent, state, ctx, &reason_options, &step_id)
                    .await
                    .map_err(|halt| fail_step(ctx, halt, &step_id, title))?;
                state = next.with_reasoning(reasoning.text.clone());
                ctx.emitter.emit(
                    kind::THINKING,
                    json!({"stepId": step_id, "reasoning": reasoning.text}),
                );

                let mut options = action_options(agent);
                options.system_suffix =
                    Some(format!("Your reasoning for this step:\n{}", reasoning.text));
                let (response, next) = call_model(agent, state, ctx, &options, &step_id)
                    .await
                    .map_err(|halt| fail_step(ctx, halt, &step_id, title))?;
                state = next;
                if response.tool_calls.is_empty() {
                    let (answer, next) = conclude(agent, response.text, state, &mut attempts)
                        .map_err(|halt| fail_step(ctx, halt, &step_id, title))?;
                    state = next;
                    match answer {
                        Answer::Final(turn) => {
                            end_step(ctx, &state, &step_id, "Answer", true);
                            return Ok((turn, state));
                        }
                        Answer::Retry(next) => {
                            end_step(
                                ctx,
                                &next,
                                &step_id,
                                "Answer did not match the output schema",
                                false,
                            );
                            state = after_step(agent, next, ctx)?;
                            continue;
                        }
                    }
                }
                let title = tool_title(&response.tool_calls);
                let (next, handoff) = run_tools(agent, &response.tool_calls, state, ctx, &step_id)
                    .await
                    .map_err(|halt| fail_step(ctx, halt, &step_id, &title))?;
                state = next;
                end_step(ctx, &state, &step_id, &title, true);
                if let Some(tool) = handoff {
                    return Ok((super::handed_over(tool), state));
                }
                state = after_step(agent, state, ctx)?;
            }
        })
    }
}
