//! `loop`: call the model, run the tool calls it made, repeat until a reply has none.

use super::{Answer, ExecutionStrategy, action_options, bound_reached, conclude};
use crate::engine::agent::{Agent, GenerateResult, RunContext};
use crate::engine::state::AgentState;
use crate::engine::step::{after_step, call_model, end_step, fail_step, run_tools, start_step};
use crate::provider::BoxFuture;

/// The default strategy.
#[derive(Debug, Clone, Default)]
pub struct LoopStrategy {
    /// The most model calls of this agent before `limit_reached`.
    pub max_iterations: Option<u64>,
}

const TITLE_CALL: &str = "Model call";

impl ExecutionStrategy for LoopStrategy {
    fn name(&self) -> &str {
        "loop"
    }

    fn execute<'a>(
        &'a self,
        agent: &'a Agent,
        state: AgentState,
        ctx: &'a RunContext,
    ) -> BoxFuture<'a, GenerateResult> {
        Box::pin(async move {
            let options = action_options(agent);
            let mut state = state;
            let mut iterations = 0;
            let mut attempts = 0;
            loop {
                if let Some(max) = self.max_iterations
                    && iterations >= max
                {
                    return Err(bound_reached(
                        state,
                        "max_iterations",
                        format!("{max} iterations"),
                    ));
                }
                iterations += 1;
                state = state.next_step();
                let step_id = start_step(ctx, &state, TITLE_CALL);
                let (response, next) = call_model(agent, state, ctx, &options, &step_id)
                    .await
                    .map_err(|halt| fail_step(ctx, halt, &step_id, TITLE_CALL))?;
                state = next;
                if response.tool_calls.is_empty() {
                    let (answer, next) = conclude(agent, response.text, state, &mut attempts)
                        .map_err(|halt| fail_step(ctx, halt, &step_id, TITLE_CALL))?;
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

/// "Called read_file, shell" for a step's title.
pub(crate) fn tool_title(calls: &[crate::provider::ToolCall]) -> String {
    let mut names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
    names.dedup();
    format!("Called {}", names.join(", "))
}
