//! The bounds that can end a run (`limit_reached`), each named as the result's `limit` and
//! the event's `details.limit` name it, and set by one key of the agent file.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A bound that ended a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Limit {
    /// `limits.max_llm_calls`.
    MaxLlmCalls,
    /// `limits.max_tool_calls`.
    MaxToolCalls,
    /// `limits.max_tokens`.
    MaxTokens,
    /// `limits.max_cost_usd`.
    MaxCostUsd,
    /// `limits.timeout`.
    Timeout,
    /// `execution.max_iterations` (the `loop` strategy).
    MaxIterations,
    /// `execution.max_steps` (the `react` strategy).
    MaxSteps,
    /// `execution.max_plans` (the `plan` strategy).
    MaxPlans,
    /// `execution.max_step_calls` (the `plan` strategy).
    MaxStepCalls,
    /// `stop_when`: a condition the agent file states, not a bound to raise.
    StopWhen,
}

impl Limit {
    pub const ALL: [Limit; 10] = [
        Limit::MaxLlmCalls,
        Limit::MaxToolCalls,
        Limit::MaxTokens,
        Limit::MaxCostUsd,
        Limit::Timeout,
        Limit::MaxIterations,
        Limit::MaxSteps,
        Limit::MaxPlans,
        Limit::MaxStepCalls,
        Limit::StopWhen,
    ];

    /// The name in the result (`max_tokens`), the key's last part.
    pub fn name(self) -> &'static str {
        match self {
            Limit::MaxLlmCalls => "max_llm_calls",
            Limit::MaxToolCalls => "max_tool_calls",
            Limit::MaxTokens => "max_tokens",
            Limit::MaxCostUsd => "max_cost_usd",
            Limit::Timeout => "timeout",
            Limit::MaxIterations => "max_iterations",
            Limit::MaxSteps => "max_steps",
            Limit::MaxPlans => "max_plans",
            Limit::MaxStepCalls => "max_step_calls",
            Limit::StopWhen => "stop_when",
        }
    }

    /// The key of the agent file that sets the bound (`limits.max_tokens`); `None` for
    /// `stop_when`, which is no bound to raise.
    pub fn yaml_key(self) -> Option<String> {
        let section = match self {
            Limit::MaxLlmCalls
            | Limit::MaxToolCalls
            | Limit::MaxTokens
            | Limit::MaxCostUsd
            | Limit::Timeout => "limits",
            Limit::MaxIterations | Limit::MaxSteps | Limit::MaxPlans | Limit::MaxStepCalls => {
                "execution"
            }
            Limit::StopWhen => return None,
        };
        Some(format!("{section}.{}", self.name()))
    }

    /// Whether raising the bound widens what the agent may do (a `limits` key, which a
    /// resume takes only with `--allow-widening`).
    pub fn widens(self) -> bool {
        self.yaml_key()
            .is_some_and(|key| key.starts_with("limits."))
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_limit_serialises_as_its_name() {
        for limit in Limit::ALL {
            let json = serde_json::to_value(limit).unwrap();
            assert_eq!(json, limit.name());
            assert_eq!(serde_json::from_value::<Limit>(json).unwrap(), limit);
        }
    }

    #[test]
    fn each_bound_knows_its_key() {
        assert_eq!(
            Limit::MaxTokens.yaml_key().as_deref(),
            Some("limits.max_tokens")
        );
        assert_eq!(
            Limit::MaxSteps.yaml_key().as_deref(),
            Some("execution.max_steps")
        );
        assert_eq!(Limit::StopWhen.yaml_key(), None);
        assert!(Limit::Timeout.widens() && !Limit::MaxPlans.widens());
    }

    /// The exit code table of `docs/running.md` names every bound, and nothing else.
    #[test]
    fn the_documented_limits_are_the_limits() {
        let doc = include_str!("../../docs/running.md");
        let row = doc
            .lines()
            .find(|line| line.starts_with("| 3 | `limit_reached` |"))
            .expect("docs/running.md has the row of exit code 3");
        let listed = row
            .split("names it (")
            .nth(1)
            .and_then(|rest| rest.split(')').next())
            .expect("the row says what `limit` names");
        let documented: Vec<&str> = listed.split(", ").map(|n| n.trim_matches('`')).collect();
        let names: Vec<&str> = Limit::ALL.map(Limit::name).to_vec();
        let mut sorted = (documented.clone(), names.clone());
        sorted.0.sort();
        sorted.1.sort();
        assert_eq!(sorted.0, sorted.1, "docs/running.md lists {documented:?}");
    }
}
