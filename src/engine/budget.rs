//! Limits shared by a whole agent tree (SPEC §2 `limits`, UAP §2.4: unbounded by default).
//! Every model call and tool call of the root and all sub-agents is counted here, so a
//! sub-agent cannot spend past the root's bound.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::provider::Usage;

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

/// The bound that ended a run; its name goes into the result's `limit`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitHit {
    pub name: String,
    pub detail: String,
}

impl LimitHit {
    pub fn new(name: &str, detail: String) -> Self {
        LimitHit {
            name: name.to_string(),
            detail,
        }
    }
}

/// Totals of the whole tree.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Totals {
    pub llm_calls: u64,
    pub tool_calls: u64,
    pub usage: Usage,
    /// `None` until a model with pricing was called.
    pub cost_usd: Option<f64>,
}

/// Counters and bounds of one run tree.
pub struct Budget {
    limits: RunLimits,
    started: Instant,
    totals: Mutex<Totals>,
}

impl Budget {
    pub fn new(limits: RunLimits) -> Self {
        Budget {
            limits,
            started: Instant::now(),
            totals: Mutex::new(Totals::default()),
        }
    }

    /// A budget that goes on counting from a resumed state's totals.
    pub fn resumed(limits: RunLimits, state: &super::state::AgentState) -> Self {
        let budget = Budget::new(limits);
        if let Ok(mut totals) = budget.totals.lock() {
            totals.llm_calls = state.llm_calls;
            totals.tool_calls = state.tool_calls;
            totals.usage = state.usage;
        }
        budget
    }

    pub fn limits(&self) -> &RunLimits {
        &self.limits
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Time left before `timeout` (None: unbounded).
    pub fn remaining(&self) -> Option<Duration> {
        self.limits
            .timeout
            .map(|t| t.saturating_sub(self.elapsed()))
    }

    pub fn totals(&self) -> Totals {
        self.totals.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// Refuses a new model call when a bound is already reached.
    pub fn before_llm_call(&self) -> Result<(), LimitHit> {
        let totals = self.totals();
        if let Some(max) = self.limits.max_llm_calls
            && totals.llm_calls >= max
        {
            return Err(LimitHit::new(
                "max_llm_calls",
                format!("{max} model calls made"),
            ));
        }
        self.check_spend(&totals)?;
        self.check_time()
    }

    /// Counts a finished model call; errors when it crossed a bound.
    pub fn after_llm_call(&self, usage: &Usage, price: Option<Price>) -> Result<(), LimitHit> {
        let totals = {
            let Ok(mut totals) = self.totals.lock() else {
                return Ok(());
            };
            totals.llm_calls += 1;
            totals.usage = super::state::add_usage(&totals.usage, usage);
            if let Some(price) = price {
                totals.cost_usd = Some(totals.cost_usd.unwrap_or(0.0) + price.cost(usage));
            }
            totals.clone()
        };
        self.check_spend(&totals)
    }

    /// Reserves one tool call; errors when `max_tool_calls` is reached.
    pub fn reserve_tool_call(&self) -> Result<(), LimitHit> {
        let Ok(mut totals) = self.totals.lock() else {
            return Ok(());
        };
        if let Some(max) = self.limits.max_tool_calls
            && totals.tool_calls >= max
        {
            return Err(LimitHit::new(
                "max_tool_calls",
                format!("{max} tool calls made"),
            ));
        }
        totals.tool_calls += 1;
        Ok(())
    }

    pub fn check_time(&self) -> Result<(), LimitHit> {
        match self.limits.timeout {
            Some(timeout) if self.elapsed() >= timeout => Err(LimitHit::new(
                "timeout",
                format!(
                    "the run took longer than {}",
                    crate::spec::duration::HumanDuration(timeout)
                ),
            )),
            _ => Ok(()),
        }
    }

    fn check_spend(&self, totals: &Totals) -> Result<(), LimitHit> {
        if let Some(max) = self.limits.max_tokens
            && totals.usage.total_tokens > max
        {
            return Err(LimitHit::new(
                "max_tokens",
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
                "max_cost_usd",
                format!("${cost:.4} spent, the bound is ${max}"),
            ));
        }
        Ok(())
    }
}
