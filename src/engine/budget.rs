//! Limits of an agent tree (SPEC §2 `limits`, UAP §2.4: unbounded by default). Every model
//! call and tool call is counted on the budget of the agent that made it and on each of its
//! callers' up to the root, so a sub-agent's own bounds and every caller's hold at once.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::limit::Limit;
use super::request_params::RequestParams;
use crate::provider::{Provider, Usage};
use crate::sync::lock;

/// The bounds of a run; `None` is unbounded.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunLimits {
    pub max_llm_calls: Option<u64>,
    pub max_tool_calls: Option<u64>,
    pub max_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
    pub timeout: Option<Duration>,
    pub tool_timeout: Option<Duration>,
    pub max_depth: Option<u32>,
    pub max_output_chars: Option<u64>,
}

/// Dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Price {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
}

impl Price {
    pub fn cost(&self, usage: &Usage) -> f64 {
        (usage.input_tokens as f64 * self.input_per_mtok
            + usage.output_tokens as f64 * self.output_per_mtok)
            / 1e6
    }
}

/// The prices of a model and of each of its fallbacks, by position in the chain (the model
/// itself at 0): a call is costed at the prices of the model that answered it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChainPrices(pub Vec<Option<Price>>);

impl ChainPrices {
    /// A model without fallbacks.
    pub fn single(price: Option<Price>) -> Self {
        ChainPrices(vec![price])
    }

    /// The prices of the model at `index` of the chain, when it has some.
    pub fn at(&self, index: usize) -> Option<Price> {
        self.0.get(index).copied().flatten()
    }
}

/// A model and its prices, when known: what an agent without its own `model` takes from
/// its caller (so what it spends is costed like the caller's calls, fallbacks included),
/// and what a middleware that calls a model meters with.
#[derive(Clone)]
pub struct PricedModel {
    pub provider: Arc<dyn Provider>,
    pub prices: ChainPrices,
    /// The context window of each model of the chain, when known.
    pub windows: Vec<Option<u64>>,
    /// The sampling parameters its calls are sent with (`model.params`), for their events.
    pub params: RequestParams,
}

/// The bound that ended a run (the result's `limit`), and how it was reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitHit {
    pub limit: Limit,
    pub detail: String,
}

impl LimitHit {
    pub fn new(limit: Limit, detail: String) -> Self {
        LimitHit { limit, detail }
    }
}

/// What a run (with its sub-agents) spent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    pub llm_calls: u64,
    pub tool_calls: u64,
    pub usage: Usage,
    /// `None` until a model with pricing was called.
    pub cost_usd: Option<f64>,
}

/// Counters and bounds of one agent's run. A sub-agent's budget has its caller's as its
/// parent: every call it makes is counted on both, and both bounds must hold (the tighter
/// wins), so an agent's own `limits` bound its own run while the root's bound the tree.
pub struct Budget {
    limits: RunLimits,
    started: Instant,
    totals: Mutex<Totals>,
    parent: Option<Arc<Budget>>,
}

impl Budget {
    pub fn new(limits: RunLimits) -> Self {
        Budget {
            limits,
            started: Instant::now(),
            totals: Mutex::new(Totals::default()),
            parent: None,
        }
    }

    /// The budget of a sub-agent's run (or a handoff target's share of one) under `parent`.
    pub fn child(parent: &Arc<Budget>, limits: RunLimits) -> Self {
        Budget {
            parent: Some(parent.clone()),
            ..Budget::new(limits)
        }
    }

    /// A budget that goes on counting from what a session spent before (the whole tree's
    /// totals, checkpointed with the state). Counts that do not fit are refused, not wrapped.
    pub fn resumed(limits: RunLimits, spent: &Totals) -> Result<Self, String> {
        if spent
            .cost_usd
            .is_some_and(|cost| !cost.is_finite() || cost < 0.0)
        {
            return Err("the checkpoint's cost is not a finite, positive number".into());
        }
        spent
            .usage
            .input_tokens
            .checked_add(spent.usage.output_tokens)
            .ok_or("the checkpoint's token counts are out of range")?;
        let budget = Budget::new(limits);
        *lock(&budget.totals) = spent.clone();
        Ok(budget)
    }

    /// This agent's own bounds.
    pub fn limits(&self) -> &RunLimits {
        &self.limits
    }

    /// The deepest level any agent of this chain allows (`max_depth`, the tightest wins).
    pub fn max_depth(&self) -> Option<u32> {
        let parent = self.parent.as_ref().and_then(|p| p.max_depth());
        tighter(self.limits.max_depth, parent)
    }

    /// A single tool call's bound (`tool_timeout`, the tightest of the chain).
    pub fn tool_timeout(&self) -> Option<Duration> {
        let parent = self.parent.as_ref().and_then(|p| p.tool_timeout());
        tighter(self.limits.tool_timeout, parent)
    }

    /// How much of a tool's output the model sees (`max_output_chars`, the tightest).
    pub fn max_output_chars(&self) -> Option<u64> {
        let parent = self.parent.as_ref().and_then(|p| p.max_output_chars());
        tighter(self.limits.max_output_chars, parent)
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// When the first `timeout` of the chain expires; a call in flight is abandoned then.
    pub fn deadline(&self) -> Option<Instant> {
        let own = self.limits.timeout.map(|timeout| self.started + timeout);
        tighter(own, self.parent.as_ref().and_then(|p| p.deadline()))
    }

    /// This run's totals (with its sub-agents').
    pub fn totals(&self) -> Totals {
        lock(&self.totals).clone()
    }

    /// The whole tree's totals: the root's.
    pub fn tree_totals(&self) -> Totals {
        match &self.parent {
            Some(parent) => parent.tree_totals(),
            None => self.totals(),
        }
    }

    /// Refuses a new model call when a bound of the chain is already reached.
    pub fn before_llm_call(&self) -> Result<(), LimitHit> {
        let totals = self.totals();
        if let Some(max) = self.limits.max_llm_calls
            && totals.llm_calls >= max
        {
            return Err(LimitHit::new(
                Limit::MaxLlmCalls,
                format!("{max} model calls made"),
            ));
        }
        self.check_spend(&totals)?;
        self.check_own_time()?;
        self.parent.as_ref().map_or(Ok(()), |p| p.before_llm_call())
    }

    /// Counts a finished model call on the whole chain; errors when it crossed a bound.
    pub fn after_llm_call(&self, usage: &Usage, price: Option<Price>) -> Result<(), LimitHit> {
        let totals = {
            let mut totals = lock(&self.totals);
            totals.llm_calls = totals.llm_calls.saturating_add(1);
            totals.usage = totals.usage.plus(usage);
            if let Some(price) = price {
                totals.cost_usd = Some(totals.cost_usd.unwrap_or(0.0) + price.cost(usage));
            }
            totals.clone()
        };
        let parent = self
            .parent
            .as_ref()
            .map_or(Ok(()), |p| p.after_llm_call(usage, price));
        self.check_spend(&totals).and(parent)
    }

    /// Reserves one tool call on the whole chain; errors when a `max_tool_calls` is reached.
    pub fn reserve_tool_call(&self) -> Result<(), LimitHit> {
        {
            let mut totals = lock(&self.totals);
            if let Some(max) = self.limits.max_tool_calls
                && totals.tool_calls >= max
            {
                return Err(LimitHit::new(
                    Limit::MaxToolCalls,
                    format!("{max} tool calls made"),
                ));
            }
            totals.tool_calls = totals.tool_calls.saturating_add(1);
        }
        let reserved = self
            .parent
            .as_ref()
            .map_or(Ok(()), |p| p.reserve_tool_call());
        if reserved.is_err() {
            // Refused above: the call does not run, so it does not count here either.
            lock(&self.totals).tool_calls -= 1;
        }
        reserved
    }

    /// Errors once the first `timeout` of the chain has passed.
    pub fn check_time(&self) -> Result<(), LimitHit> {
        self.check_own_time()?;
        self.parent.as_ref().map_or(Ok(()), |p| p.check_time())
    }

    fn check_own_time(&self) -> Result<(), LimitHit> {
        match self.limits.timeout {
            Some(timeout) if self.elapsed() >= timeout => Err(timeout_hit(timeout)),
            _ => Ok(()),
        }
    }
    fn check_spend(&self, totals: &Totals) -> Result<(), LimitHit> {
        if let Some(max) = self.limits.max_tokens
            && totals.usage.total_tokens > max
        {
            return Err(LimitHit::new(
                Limit::MaxTokens,
                format!(
                    "{} tokens used, the bound is {max}",
                    totals.usage.total_tokens
                ),
            ));
        }
        if let (Some(max), Some(cost)) = (self.limits.max_cost_usd, totals.cost_usd)
            && cost > max
        {
            return Err(LimitHit::new(
                Limit::MaxCostUsd,
                format!("${cost:.4} spent, the bound is ${max}"),
            ));
        }
        Ok(())
    }
}

/// The `timeout` bound, reached.
pub fn timeout_hit(timeout: Duration) -> LimitHit {
    LimitHit::new(
        Limit::Timeout,
        format!(
            "the run took longer than {}",
            crate::spec::duration::HumanDuration(timeout)
        ),
    )
}

/// The tighter of two optional bounds.
fn tighter<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Poisons `budget`'s counters: a thread panics while it holds them.
    fn poison(budget: &Budget) {
        std::thread::scope(|scope| {
            let _ = scope
                .spawn(|| {
                    let _held = budget.totals.lock();
                    panic!("poisons the budget's lock on purpose");
                })
                .join();
        });
        assert!(budget.totals.is_poisoned());
    }

    #[test]
    fn a_poisoned_budget_lock_never_lets_a_limit_pass() {
        let root = Arc::new(Budget::new(RunLimits {
            max_llm_calls: Some(2),
            max_tool_calls: Some(1),
            max_tokens: Some(100),
            ..RunLimits::default()
        }));
        poison(&root);
        // A sub-agent without bounds of its own, under the poisoned root.
        let child = Budget::child(&root, RunLimits::default());

        assert!(child.before_llm_call().is_ok());
        assert!(child.after_llm_call(&Usage::new(10, 10), None).is_ok());
        assert!(child.before_llm_call().is_ok());
        let crossed = child.after_llm_call(&Usage::new(60, 60), None);
        assert!(crossed.is_err(), "140 tokens cross max_tokens: 100");
        assert!(child.before_llm_call().is_err(), "max_llm_calls: 2 reached");
        assert!(root.before_llm_call().is_err(), "max_llm_calls: 2 reached");

        assert!(child.reserve_tool_call().is_ok());
        assert!(
            child.reserve_tool_call().is_err(),
            "max_tool_calls: 1 reached"
        );
        assert!(
            root.reserve_tool_call().is_err(),
            "max_tool_calls: 1 reached"
        );

        let spent = root.totals();
        assert_eq!((spent.llm_calls, spent.tool_calls), (2, 1));
        assert_eq!(spent.usage.total_tokens, 140);
        assert_eq!(child.totals(), spent, "the child counted the same calls");
    }
}
