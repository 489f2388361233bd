//! The JSON Schema of `events.jsonl` lines (SPEC §4), generated from the event types
//! (`engine::events::Event`) exactly as the agent schema is generated from the spec's types.
//! `schemas/events.schema.json` is this value, committed; a test fails when it is stale.

use schemars::generate::SchemaSettings;
use serde_json::Value;

use crate::engine::events::Event;

/// The schema's `$id`, so tools can refer to it.
pub const EVENTS_SCHEMA_ID: &str = "https://runner.dev/schemas/events.schema.json";

/// The schema of one line of events.jsonl.
pub fn events_schema() -> Value {
    let generator = SchemaSettings::draft07().into_generator();
    let mut schema = generator.into_root_schema_for::<Event>();
    schema.insert("$id".into(), EVENTS_SCHEMA_ID.into());
    schema.to_value()
}

/// The schema pretty-printed with a trailing newline, as committed.
pub fn events_schema_text() -> String {
    let mut text = serde_json::to_string_pretty(&events_schema()).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn event(kind: &str, data: Value) -> Value {
        json!({"type": kind, "timestamp": "2026-11-21T10:00:00.123Z", "runId": "r", "threadId": "t",
               "agent": "a", "depth": 0, "data": data})
    }

    #[test]
    fn the_schema_checks_the_envelope_and_each_types_data() {
        let validator = jsonschema::validator_for(&events_schema()).unwrap();
        let good = event(
            "agent.handoff",
            json!({"from": "a", "to": "b", "toolName": "t"}),
        );
        assert!(validator.is_valid(&good));
        assert!(
            !validator.is_valid(&event("agent.handoff", json!({"from": "a"}))),
            "missing data fields"
        );
        assert!(
            !validator.is_valid(&event("agent.made.up", json!({}))),
            "unknown type"
        );
        let mut no_depth = good.clone();
        no_depth.as_object_mut().unwrap().remove("depth");
        assert!(!validator.is_valid(&no_depth), "missing envelope field");
        let mut bad_time = good;
        bad_time["timestamp"] = json!("yesterday");
        assert!(!validator.is_valid(&bad_time));
    }

    #[test]
    fn an_event_reads_back_as_it_was_written() {
        let line = event(
            "agent.checkpoint.saved",
            json!({"name": "step-2", "step": 2}),
        );
        let read: Event = serde_json::from_value(line.clone()).unwrap();
        assert_eq!(read.kind(), "agent.checkpoint.saved");
        assert_eq!(serde_json::to_value(&read).unwrap(), line);
    }
}
