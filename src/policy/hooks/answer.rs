//! What a hook may answer at each point. Answers are read strictly: a key a point does not
//! take is garbage (a misspelt `"decison": "deny"` must not let a call through).

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::HookFailure;

/// A decision a hook can take on a call, or on the run (`run_start`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookDecision {
    Allow,
    Deny,
}

/// `pre_tool_use`: `{"decision": "allow"|"deny", "reason": "…", "arguments": {…}}`, every
/// key optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreToolAnswer {
    pub decision: Option<HookDecision>,
    /// Why it denied (the model is told).
    pub reason: Option<String>,
    /// The arguments the call runs with instead.
    pub arguments: Option<Map<String, Value>>,
}

/// `post_tool_use`: `{"data": …, "error": "…", "note": "…"}`, every key optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostToolAnswer {
    /// Replaces the result's data.
    #[serde(default, deserialize_with = "present")]
    pub data: Option<Value>,
    /// Makes the result a failure with this error.
    pub error: Option<String>,
    /// Added to what the model reads.
    pub note: Option<String>,
}

/// `run_start`: `{"decision": "deny", "reason": "…"}` refuses the run.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunStartAnswer {
    pub decision: Option<HookDecision>,
    pub reason: Option<String>,
}

/// Reads a hook's answer as the kind its point takes; no answer is the empty one.
pub fn read<T: DeserializeOwned + Default>(answer: Option<Value>) -> Result<T, HookFailure> {
    match answer {
        None => Ok(T::default()),
        Some(value) => {
            serde_json::from_value(value).map_err(|e| HookFailure::Garbage(e.to_string()))
        }
    }
}

/// `"data": null` replaces the data with null; only a missing key leaves it alone.
fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_misspelt_key_is_garbage_not_silence() {
        let answer = read::<PreToolAnswer>(Some(json!({"decison": "deny"})));
        assert!(matches!(answer, Err(HookFailure::Garbage(m)) if m.contains("decison")));
    }

    #[test]
    fn null_data_replaces_and_missing_data_keeps() {
        let replaced: PostToolAnswer = read(Some(json!({"data": null}))).unwrap();
        assert_eq!(replaced.data, Some(Value::Null));
        let kept: PostToolAnswer = read(Some(json!({"note": "n"}))).unwrap();
        assert_eq!(kept.data, None);
    }
}
