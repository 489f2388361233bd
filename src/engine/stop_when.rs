//! `stop_when`: a minijinja expression checked after each step.

use serde_json::{Value, json};

use super::budget::Totals;
use super::state::AgentState;

/// A compiled `stop_when` expression.
pub struct StopWhen {
    source: String,
    env: minijinja::Environment<'static>,
}

impl StopWhen {
    /// Compiles `source`; `runner validate` has already checked it, so an error here is rare.
    pub fn new(source: &str) -> Result<Self, String> {
        let env = minijinja::Environment::new();
        env.compile_expression(source)
            .map_err(|e| format!("`stop_when` does not compile: {e}"))?;
        Ok(StopWhen {
            source: source.to_string(),
            env,
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// True when the run should stop.
    pub fn check(
        &self,
        state: &AgentState,
        totals: &Totals,
        elapsed_ms: u64,
    ) -> Result<bool, String> {
        let context = json!({
            "step": state.step,
            "usage": {
                "input_tokens": totals.usage.input_tokens,
                "output_tokens": totals.usage.output_tokens,
                "total_tokens": totals.usage.total_tokens,
                "cost_usd": totals.cost_usd,
            },
            "llm_calls": totals.llm_calls,
            "tool_calls": totals.tool_calls,
            "elapsed_ms": elapsed_ms,
            "metadata": Value::Object(state.metadata.clone()),
        });
        let expression = self
            .env
            .compile_expression(&self.source)
            .map_err(|e| format!("`stop_when` does not compile: {e}"))?;
        expression
            .eval(minijinja::value::Serde(context))
            .map(|value| value.is_true())
            .map_err(|e| format!("`stop_when` failed: {e}"))
    }
}
