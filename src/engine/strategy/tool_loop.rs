//! `loop`: call the model, run the tool calls it made, repeat until a reply has none.

use super::reply::{Next, act_on_reply, action_options, answer_options, bound_reached};
use crate::engine::Limit;
use crate::engine::agent::{Agent, ExecutionStrategy, GenerateResult, RunContext};
use crate::engine::state::AgentState;
use crate::engine::step::{call_model, fail_step, start_step};
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
            let (act, answer) = (action_options(agent), answer_options(agent));
            let mut answering = false;
            let mut state = state;
            let mut iterations = 0;
            let mut attempts = 0;
            loop {
                if let Some(max) = self.max_iterations
                    && iterations >= max
                {
                    return Err(bound_reached(
                        state,
                        Limit::MaxIterations,
                        format!("{max} iterations"),
                    ));
                }
                iterations += 1;
                let (next, step_id) = start_step(ctx, state, TITLE_CALL);
                let options = if answering { &answer } else { &act };
                let (response, next) = call_model(agent, next, ctx, options, &step_id)
                    .await
                    .map_err(|halt| fail_step(ctx, halt, &step_id, TITLE_CALL))?;
                let reply = (step_id.as_str(), options);
                match act_on_reply(agent, ctx, response, next, reply, &mut attempts).await? {
                    Next::Done(turn, state) => return Ok((turn, state)),
                    Next::Again(next) => state = next,
                    Next::Answer(next) => (state, answering) = (next, true),
                }
            }
        })
    }
}
