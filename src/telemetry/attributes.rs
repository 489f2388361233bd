//! The values of span attributes: an agent's, a model call's request parameters, and
//! names as the conventions write them.

use opentelemetry::{Array, KeyValue, StringValue, Value as OtelValue};
use serde::Serialize;
use serde_json::Value;

use crate::engine::events::{Event, RequestParams};

/// The attributes of an `invoke_agent` span.
pub(super) fn agent_attributes(agent: &str, event: &Event) -> Vec<KeyValue> {
    vec![
        KeyValue::new("gen_ai.operation.name", "invoke_agent"),
        KeyValue::new("gen_ai.agent.name", agent.to_string()),
        KeyValue::new("gen_ai.agent.id", event.run_id.clone()),
        KeyValue::new("gen_ai.conversation.id", event.thread_id.clone()),
    ]
}

/// The `gen_ai.request.*` attributes of the parameters a model call was sent with.
pub(super) fn request_attributes(params: &RequestParams) -> Vec<KeyValue> {
    let floats = [
        ("gen_ai.request.temperature", params.temperature),
        ("gen_ai.request.top_p", params.top_p),
        ("gen_ai.request.top_k", params.top_k),
        ("gen_ai.request.frequency_penalty", params.frequency_penalty),
        ("gen_ai.request.presence_penalty", params.presence_penalty),
    ];
    let ints = [
        ("gen_ai.request.max_tokens", params.max_tokens),
        ("gen_ai.request.seed", params.seed),
        ("gen_ai.request.choice.count", params.choice_count),
    ];
    let mut attributes: Vec<KeyValue> = floats
        .into_iter()
        .filter_map(|(key, value)| Some(KeyValue::new(key, value?)))
        .chain(
            ints.into_iter()
                .filter_map(|(key, value)| Some(KeyValue::new(key, value?))),
        )
        .collect();
    if !params.stop_sequences.is_empty() {
        let stops = params.stop_sequences.iter().cloned().map(StringValue::from);
        attributes.push(KeyValue::new(
            "gen_ai.request.stop_sequences",
            OtelValue::Array(Array::String(stops.collect())),
        ));
    }
    attributes
}

/// `text` as an attribute value whose clones share it (an owned one is copied by each).
pub(super) fn shared(text: &str) -> StringValue {
    StringValue::from(std::sync::Arc::<str>::from(text))
}

/// A unit enum's name as it is serialized (`allow`, `pre_tool_use`, `tool_calls`).
pub(super) fn name_of<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(name)) => name,
        Ok(Value::Object(map)) => map
            .values()
            .next()
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        _ => String::new(),
    }
}
