//! The loop that `loop` and `react` share: bounded steps, each ending in an action call
//! whose reply runs tools or answers, until an answer, a handoff or a reload; after an
//! answer that did not match the output schema, the answer call (no tools, the schema asked
//! for). What differs between the two is behind [`ActionSteps`]: the bound, the step
//! titles, and what a step does before its action call (`react` reasons first).

use super::reply::{Next, act_on_reply, answer_options, bound_reached};
use crate::engine::Limit;
use crate::engine::agent::{Agent, Halt, RunContext, StrategyResult};
use crate::engine::state::AgentState;
use crate::engine::step::{CallOptions, call_model, fail_step, start_step};
use crate::provider::BoxFuture;

/// A strategy's bound on its steps (`max_iterations`, `max_steps`).
pub(crate) struct StepBound {
    /// The bound, reported as the limit reached.
    pub limit: Limit,
    pub max: Option<u64>,
    /// What is counted, after the number: "iterations".
    pub counted: &'static str,
}

/// What a strategy built on [`run_steps`] decides.
pub(crate) trait ActionSteps: Sync {
    fn bound(&self) -> StepBound;

    /// The title of a step; `answering`: the answer call's.
    fn title(&self, answering: bool) -> &'static str;

    /// What a step does before its action call, and the call's options (not for the
    /// answer call).
    fn prepare<'a>(
        &'a self,
        agent: &'a Agent,
        state: AgentState,
        ctx: &'a RunContext,
        step_id: &'a str,
    ) -> BoxFuture<'a, Result<(AgentState, CallOptions), Halt>>;
}

/// Runs steps until the strategy ends or halts; each step is closed, whatever ends it.
pub(crate) async fn run_steps(
    steps: &dyn ActionSteps,
    agent: &Agent,
    state: AgentState,
    ctx: &RunContext,
) -> StrategyResult {
    let bound = steps.bound();
    let mut state = state;
    let (mut taken, mut attempts, mut answering) = (0, 0, false);
    loop {
        if let Some(max) = bound.max
            && taken >= max
        {
            let detail = format!("{max} {}", bound.counted);
            return Err(bound_reached(state, bound.limit, detail));
        }
        taken += 1;
        let title = steps.title(answering);
        let (next, step_id) = start_step(ctx, state, title);
        let prepared = match answering {
            true => Ok((next, answer_options(agent))),
            false => steps.prepare(agent, next, ctx, &step_id).await,
        };
        let (next, options) = prepared.map_err(|halt| fail_step(ctx, halt, &step_id, title))?;
        let (response, next) = call_model(agent, next, ctx, &options, &step_id)
            .await
            .map_err(|halt| fail_step(ctx, halt, &step_id, title))?;
        let reply = (step_id.as_str(), &options);
        match act_on_reply(agent, ctx, response, next, reply, &mut attempts).await? {
            Next::Done(end, state) => return Ok((end, state)),
            Next::Again(next) => state = next,
            Next::Answer(next) => (state, answering) = (next, true),
        }
    }
}
