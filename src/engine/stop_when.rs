//! `stop_when`: a minijinja expression checked after each step.

use serde_json::{Value, json};

use super::budget::Totals;
use super::state::AgentState;

/// A compiled `stop_when` expression.
pub struct StopWhen {
    source: String,
    env: minijinja::Environment<'static>,
}

/// The most instructions one check of `stop_when` may run.
const FUEL: u64 = 100_000;

impl StopWhen {
    /// Compiles `source`; `runner validate` has already checked it, so an error here is rare.
    pub fn new(source: &str) -> Result<Self, String> {
        let mut env = minijinja::Environment::new();
        // An expression over a few numbers needs little; a loop in it ends here.
        env.set_fuel(Some(FUEL));
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
        // The template engine can panic on some inputs (`divisibleby(0)`): that is the
        // expression failing, not the run.
        let evaluated = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            expression.eval(minijinja::value::Serde(context))
        }));
        match evaluated {
            Ok(result) => result
                .map(|value| value.is_true())
                .map_err(|e| format!("`stop_when` failed: {e}")),
            Err(_) => Err("`stop_when` failed: the expression engine could not evaluate it".into()),
        }
    }
}
