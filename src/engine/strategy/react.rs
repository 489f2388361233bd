//! `react`: each step is a reasoning call without tools (its text goes into
//! `state.reasoning` and shows as thinking), then an action call with the tools. The run
//! ends when an action call makes no tool call.

use super::reply::action_options;
use super::steps::{ActionSteps, StepBound, run_steps};
use crate::engine::Limit;
use crate::engine::agent::{Agent, ExecutionStrategy, Halt, RunContext, StrategyResult};
use crate::engine::events::ReasoningCreated;
use crate::engine::state::AgentState;
use crate::engine::step::{CallOptions, call_model};
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
    ) -> BoxFuture<'a, StrategyResult> {
        Box::pin(run_steps(self, agent, state, ctx))
    }
}

impl ActionSteps for ReactStrategy {
    fn bound(&self) -> StepBound {
        StepBound {
            limit: Limit::MaxSteps,
            max: self.max_steps,
            counted: "reasoning steps",
        }
    }

    /// The answer call has no reasoning first.
    fn title(&self, answering: bool) -> &'static str {
        match answering {
            true => "Give the answer",
            false => "Reason and act",
        }
    }

    /// The reasoning call (no tools, kept out of the history), whose text the action call
    /// is given.
    fn prepare<'a>(
        &'a self,
        agent: &'a Agent,
        state: AgentState,
        ctx: &'a RunContext,
        step_id: &'a str,
    ) -> BoxFuture<'a, Result<(AgentState, CallOptions), Halt>> {
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
            let (reasoning, state) =
                call_model(agent, state, ctx, &reason_options, step_id).await?;
            let state = state.with_reasoning(reasoning.text.clone());
            ctx.emitter.emit(ReasoningCreated {
                step_id: step_id.to_string(),
                reasoning: reasoning.text.clone(),
            });
            let mut options = action_options(agent);
            options.system_suffix =
                Some(format!("Your reasoning for this step:\n{}", reasoning.text));
            Ok((state, options))
        })
    }
}
