//! Metering a model call: the budget counts it, and its usage is an event.

use crate::engine::agent::RunContext;
use crate::engine::budget::LimitHit;
use crate::engine::events::LlmUsage;
use crate::engine::middleware::Spend;

/// Counts a model call on the budget and emits its usage; errors when it crossed a bound.
pub(super) fn count_call(ctx: &RunContext, spend: &Spend) -> Result<(), LimitHit> {
    let counted = ctx.budget.after_llm_call(&spend.usage, spend.price);
    let totals = ctx.budget.tree_totals();
    ctx.emitter.emit(LlmUsage {
        model: spend.model.clone(),
        usage: spend.usage,
        total_usage: totals.usage,
        cost_usd: totals.cost_usd,
    });
    counted
}
