//! `loop`: call the model, run the tool calls it made, repeat until a reply has none.

use super::reply::action_options;
use super::steps::{ActionSteps, StepBound, run_steps};
use crate::engine::Limit;
use crate::engine::agent::{Agent, ExecutionStrategy, Halt, RunContext, StrategyResult};
use crate::engine::state::AgentState;
use crate::engine::step::CallOptions;
use crate::provider::BoxFuture;

/// The default strategy.
#[derive(Debug, Clone, Default)]
pub struct LoopStrategy {
    /// The most model calls of this agent before `limit_reached`.
    pub max_iterations: Option<u64>,
}

impl ExecutionStrategy for LoopStrategy {
    fn name(&self) -> &str {
        "loop"
    }

    fn execute<'a>(
        &'a self,
        agent: &'a Agent,
        state: AgentState,
        ctx: &'a RunContext,
    ) -> BoxFuture<'a, StrategyResult> {
        Box::pin(run_steps(self, agent, state, ctx))
    }
}

impl ActionSteps for LoopStrategy {
    fn bound(&self) -> StepBound {
        StepBound {
            limit: Limit::MaxIterations,
            max: self.max_iterations,
            counted: "iterations",
        }
    }

    fn title(&self, _answering: bool) -> &'static str {
        "Model call"
    }

    /// Nothing before the action call.
    fn prepare<'a>(
        &'a self,
        agent: &'a Agent,
        state: AgentState,
        _ctx: &'a RunContext,
        _step_id: &'a str,
    ) -> BoxFuture<'a, Result<(AgentState, CallOptions), Halt>> {
        Box::pin(async move { Ok((state, action_options(agent))) })
    }
}
