//! `runner validate`'s advice on unbounded agents (UAP §2.4, infinite by default): the
//! runner sets no bound of its own, so a file that sets none runs until the model stops.
//! That is the file's choice, not an error; validate says so once per file it is given,
//! at the root agent (sub-agents run inside their callers' limits). `runner exec` does
//! not repeat it.

use serde_json::{Map, Value};

use super::super::diagnostic::{Code, Diagnostic};
use super::{FileContext, Validator};

/// `limits` keys that bound a run's model calls, tokens, cost or time.
const LIMIT_BOUNDS: &[&str] = &["max_llm_calls", "max_tokens", "max_cost_usd", "timeout"];

impl Validator {
    /// Warns when nothing bounds the root agent of `file`.
    pub(super) fn check_bounded(&mut self, file: &FileContext<'_>, agent: &Map<String, Value>) {
        if is_bounded(agent) {
            return;
        }
        let at = if agent.contains_key("limits") {
            "/limits"
        } else {
            ""
        };
        self.diagnostics.push(
            Diagnostic::warning(
                file.path,
                file.doc.key_position(at),
                Code::Unbounded,
                at,
                "nothing bounds this agent's model calls, tokens, cost or time: a run goes on until the model stops".into(),
            )
            .with_hint("add e.g. `limits: {max_llm_calls: 50, timeout: 10m}` (or `max_tokens`, `max_cost_usd`)"),
        );
    }
}

/// Whether a key of `limits` or of the strategy, or a scripted model (which ends with
/// its script), bounds the agent's model calls.
fn is_bounded(agent: &Map<String, Value>) -> bool {
    let limits = agent.get("limits").and_then(Value::as_object);
    if limits.is_some_and(|l| LIMIT_BOUNDS.iter().any(|key| l.contains_key(*key))) {
        return true;
    }
    let scripted = agent
        .get("model")
        .and_then(|m| m.get("provider"))
        .and_then(Value::as_str)
        == Some("scripted");
    if scripted {
        return true;
    }
    let execution = agent.get("execution").and_then(Value::as_object);
    let has = |key: &str| execution.is_some_and(|e| e.contains_key(key));
    match execution
        .and_then(|e| e.get("strategy"))
        .and_then(Value::as_str)
        .unwrap_or("loop")
    {
        "loop" => has("max_iterations"),
        "react" => has("max_steps"),
        // Plans, their steps and each step's calls: all three bound the calls.
        "plan" => has("max_plans") && has("max_plan_steps") && has("max_step_calls"),
        _ => false,
    }
}
