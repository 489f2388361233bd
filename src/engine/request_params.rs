//! The sampling parameters a model call was sent with, as the agent file set them
//! (`model.params`), under the names of the OpenTelemetry GenAI conventions
//! (`gen_ai.request.temperature`, ...): one shape for every wire, whatever each calls them
//! (`max_tokens`, `max_completion_tokens`, `max_output_tokens`; `stop`, `stop_sequences`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The request parameters that were set; a field is absent when the call did not set it
/// (the server's default applies).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// `max_tokens`, `max_completion_tokens` or `max_output_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f64>,
    /// `stop` or `stop_sequences`; for the text tool protocol, the closing tags `runner`
    /// sends when the file sets none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop_sequences: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// `n`: how many choices were asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choice_count: Option<i64>,
}

impl RequestParams {
    /// The parameters among a request body's `params` (values of another type than the
    /// parameter's are left out: the server refuses them, and the call fails).
    pub fn from_body(params: &Map<String, Value>) -> Self {
        let float = |name: &str| params.get(name).and_then(Value::as_f64);
        let int = |names: &[&str]| names.iter().find_map(|n| params.get(*n)?.as_i64());
        let stop = ["stop", "stop_sequences"]
            .iter()
            .find_map(|name| params.get(*name))
            .map(strings)
            .unwrap_or_default();
        RequestParams {
            temperature: float("temperature"),
            max_tokens: int(&["max_tokens", "max_completion_tokens", "max_output_tokens"]),
            top_p: float("top_p"),
            top_k: float("top_k"),
            frequency_penalty: float("frequency_penalty"),
            presence_penalty: float("presence_penalty"),
            stop_sequences: stop,
            seed: int(&["seed"]),
            choice_count: int(&["n"]),
        }
    }

    /// These, with `stop` as the stop sequences when none were set (the request's own,
    /// which the file's `params` would have replaced).
    pub fn with_stop(&self, stop: &[String]) -> Self {
        let mut params = self.clone();
        if params.stop_sequences.is_empty() {
            params.stop_sequences = stop.to_vec();
        }
        params
    }

    pub fn is_empty(&self) -> bool {
        *self == RequestParams::default()
    }
}

/// A stop parameter's texts: one string or a list of them.
fn strings(value: &Value) -> Vec<String> {
    match value {
        Value::String(text) => vec![text.clone()],
        Value::Array(items) => items
            .iter()
            .filter_map(|item| item.as_str().map(String::from))
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn each_wire_name_maps_to_one_parameter() {
        let Value::Object(body) = json!({"temperature": 0.2, "max_output_tokens": 300,
            "stop": "END", "n": 2, "seed": 7, "top_k": 40, "logit_bias": {}})
        else {
            unreachable!()
        };
        let params = RequestParams::from_body(&body);
        assert_eq!(params.temperature, Some(0.2));
        assert_eq!(params.max_tokens, Some(300));
        assert_eq!(params.stop_sequences, ["END"]);
        assert_eq!((params.choice_count, params.seed), (Some(2), Some(7)));
        assert_eq!(params.top_k, Some(40.0));
        assert!(params.top_p.is_none());
        let tags = ["</a>".to_string()];
        assert_eq!(params.with_stop(&tags).stop_sequences, ["END"]);
        assert_eq!(
            RequestParams::default().with_stop(&tags).stop_sequences,
            tags
        );
        assert!(RequestParams::from_body(&Map::new()).is_empty());
    }
}
