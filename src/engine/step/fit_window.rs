//! Fitting the history into the model's context window before a call (the agent's
//! `context`), or after the model refused a request as too long.

use crate::engine::ErrorCode;
use crate::engine::agent::{Agent, Halt, HaltReason, RunContext};
use crate::engine::context::{ContextPolicy, compact, estimate_message};
use crate::engine::events::{ContextCompacted, Notice};
use crate::engine::state::AgentState;
use crate::spec::context::ContextStrategy;

use super::metering::count_call;

/// Why the history is fitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// Before a call: compacted only when the estimate is past the threshold.
    Estimate,
    /// The model refused the request as too long: compacted whatever the estimate said.
    Refused,
}

/// The state with a history that fits, and whether it was compacted (an
/// `agent.context.compacted` event): as it was when it fits, or when it cannot be made
/// shorter (a refused request then fails with the model's own error); a halt when the
/// estimate is past the threshold under `strategy: fail`. `fixed` gives the estimated size
/// of the request without its messages (its system prompt and tools): estimated only when
/// there is a window to fit, since it serialises every tool.
pub async fn fit_window(
    agent: &Agent,
    policy: &ContextPolicy,
    state: AgentState,
    ctx: &RunContext,
    fixed: impl FnOnce() -> u64,
    trigger: Trigger,
) -> Result<(AgentState, bool), Halt> {
    let index = state.model_chain.map_or(0, |position| position.index);
    let limit = policy.limit(index);
    // Without a known window there is nothing to estimate against before a call.
    if trigger == Trigger::Estimate && limit.is_none() {
        return Ok((state, false));
    }
    let fixed = fixed();
    let before = fixed + ctx.history_size(&state.messages);
    let target = match (trigger, limit) {
        (Trigger::Estimate, Some(limit)) if before > limit => limit / 2,
        (Trigger::Estimate, _) => return Ok((state, false)),
        (Trigger::Refused, Some(limit)) => (limit / 2).min(before / 2),
        (Trigger::Refused, None) => before / 2,
    };
    match (policy.strategy, trigger) {
        (ContextStrategy::Fail, Trigger::Estimate) => {
            let why = too_long(before, policy, index);
            return Err(Halt::failed(state, ErrorCode::ContextOverflow, why));
        }
        // The model's own refusal says it best.
        (ContextStrategy::Fail, Trigger::Refused) => return Ok((state, false)),
        _ => {}
    }
    let model = agent.model();
    let keep = target.saturating_sub(fixed);
    // A summary is a model call: what the files hold back (a step's end) goes out before
    // the run waits for it.
    ctx.emitter.flush();
    let done = match compact(policy.strategy, &model, &state.messages, keep).await {
        Ok(done) => done,
        Err(error) => {
            // Before a call, the model may take it all the same (a refusal compacts again);
            // after a refusal, the run fails with the model's error.
            ctx.emitter.notify(Notice::Log(format!(
                "context: the history could not be compacted: {error}"
            )));
            return Ok((state, false));
        }
    };
    let mut state = state;
    if let Some(spend) = &done.spend {
        state = state.with_llm_call(&spend.usage);
        if let Err(hit) = count_call(ctx, spend) {
            return Err(Halt::new(state, HaltReason::Limit(hit)));
        }
    }
    let after = fixed + done.messages.iter().map(estimate_message).sum::<u64>();
    ctx.emitter.emit(ContextCompacted {
        strategy: strategy_name(policy.strategy).into(),
        reason: match trigger {
            Trigger::Estimate => "threshold",
            Trigger::Refused => "provider",
        }
        .into(),
        tokens_before: before,
        tokens_after: after,
        removed_messages: done.removed as u64,
        summary: done.summary,
    });
    Ok((state.with_context(done.messages), true))
}

fn strategy_name(strategy: ContextStrategy) -> &'static str {
    match strategy {
        ContextStrategy::Summarize => "summarize",
        ContextStrategy::Truncate => "truncate",
        ContextStrategy::Fail => "fail",
    }
}

/// What is wrong with the request's size, for an error.
fn too_long(before: u64, policy: &ContextPolicy, index: usize) -> String {
    format!(
        "the request would be about {before} tokens, past {}% of the model's window of {} \
         tokens (context: {{ strategy: fail }}); set `context.strategy` to summarize or \
         truncate, or use a model with a larger window",
        (policy.threshold * 100.0).round(),
        policy.window(index).unwrap_or_default(),
    )
}
