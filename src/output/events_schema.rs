//! The JSON Schema of `events.jsonl` lines (SPEC §4), built from one table so the schema,
//! `docs/events.md` and the engine's event kinds stay in step. `schemas/events.schema.json`
//! is this value, committed; a test fails when it is stale.

use serde_json::{Map, Value, json};

use crate::engine::events::kind;

/// Every event type with the schema of its `data`.
pub fn event_types() -> Vec<(&'static str, Value)> {
    let step = json!({"type": "object", "required": ["step", "title"],
        "properties": {"step": {"type": "integer"}, "title": {"type": "string"}}});
    let tool_result = json!({"type": "object", "required": ["success", "data", "error", "metadata"],
        "properties": {"success": {"type": "boolean"}, "data": {}, "error": {"type": ["string", "null"]},
                       "metadata": {"type": "object"}}});
    let usage = json!({"type": "object", "required": ["input_tokens", "output_tokens", "total_tokens"],
        "properties": {"input_tokens": {"type": "integer"}, "output_tokens": {"type": "integer"},
                       "total_tokens": {"type": "integer"}}});
    let error = json!({"type": "object", "required": ["code", "message"],
        "properties": {"code": {"type": ["string", "null"]}, "message": {"type": ["string", "null"]}, "details": {}}});
    let string = json!({"type": "string"});
    let plan_status = json!({"enum": ["pending", "in_progress", "completed", "failed"]});
    vec![
        (
            kind::RUN_CREATED,
            data(&[
                ("status", json!({"enum": ["queued", "in_progress"]})),
                ("initialMessages", json!({"type": "array"})),
            ]),
        ),
        (
            kind::STATUS_CHANGED,
            data(&[("currentStatus", string.clone())]),
        ),
        (
            kind::STEP_CREATED,
            data(&[("stepId", string.clone()), ("details", step.clone())]),
        ),
        (
            kind::STEP_COMPLETED,
            data(&[
                ("stepId", string.clone()),
                ("details", step),
                ("status", json!({"enum": ["completed", "failed", "paused"]})),
            ]),
        ),
        (
            kind::MESSAGE_CREATED,
            data(&[(
                "message",
                json!({"type": "object", "required": ["id", "role"]}),
            )]),
        ),
        (
            kind::MESSAGE_DELTA,
            data(&[
                ("messageId", string.clone()),
                ("delta", json!({"type": "object"})),
            ]),
        ),
        (
            kind::MESSAGE_COMPLETED,
            data(&[
                ("stepId", string.clone()),
                (
                    "message",
                    json!({"type": "object", "required": ["id", "role", "content", "toolCalls"]}),
                ),
            ]),
        ),
        (
            kind::TOOL_CALL_CREATED,
            data(&[
                ("stepId", string.clone()),
                (
                    "toolCall",
                    json!({"type": "object", "required": ["id", "name", "arguments"]}),
                ),
            ]),
        ),
        (
            kind::TOOL_STARTED,
            data(&[
                ("stepId", string.clone()),
                ("toolCallId", string.clone()),
                ("toolName", string.clone()),
                ("input", json!({})),
            ]),
        ),
        (
            kind::TOOL_COMPLETED,
            data(&[
                ("stepId", string.clone()),
                ("toolCallId", string.clone()),
                ("toolName", string.clone()),
                ("result", tool_result.clone()),
                ("durationMs", json!({"type": "integer"})),
            ]),
        ),
        (
            kind::SUB_AGENT_STARTED,
            data(&[
                ("plannerStepId", string.clone()),
                ("toolCallId", string.clone()),
                ("specialistId", string.clone()),
                ("subTaskDescription", string.clone()),
                ("subAgentRunId", string.clone()),
            ]),
        ),
        (
            kind::SUB_AGENT_COMPLETED,
            data(&[
                ("plannerStepId", string.clone()),
                ("toolCallId", string.clone()),
                ("specialistId", string.clone()),
                ("subAgentRunId", string.clone()),
                ("result", tool_result),
            ]),
        ),
        (
            kind::REQUIRES_ACTION,
            data(&[
                ("status", json!({"const": "requires_action"})),
                ("required_action", json!({"type": "object"})),
            ]),
        ),
        (
            kind::RUN_FAILED,
            data(&[("status", string.clone()), ("error", error)]),
        ),
        (
            kind::RUN_COMPLETED,
            data(&[
                ("status", json!({"const": "completed"})),
                ("finalMessages", json!({"type": "array"})),
            ]),
        ),
        (
            kind::LLM_USAGE,
            data(&[
                ("model", string.clone()),
                ("usage", usage.clone()),
                ("totalUsage", usage),
                ("costUsd", json!({"type": ["number", "null"]})),
            ]),
        ),
        (kind::CHECKPOINT_SAVED, data(&[("name", string.clone())])),
        (
            kind::HANDOFF,
            data(&[
                ("from", string.clone()),
                ("to", string.clone()),
                ("toolName", string.clone()),
            ]),
        ),
        (
            kind::RELOADED,
            data(&[("changes", json!({"type": "array"}))]),
        ),
        (
            kind::RELOAD_FAILED,
            data(&[("diagnostics", json!({"type": "array"}))]),
        ),
        (
            kind::PLAN_UPDATED,
            data(&[("plan", json!({"type": "array"}))]),
        ),
        (
            kind::PLAN_STEP_STATUS,
            data(&[
                ("planStepId", string.clone()),
                ("description", string.clone()),
                ("previousStatus", plan_status.clone()),
                ("status", plan_status),
            ]),
        ),
        (
            kind::THINKING,
            data(&[("stepId", string), ("reasoning", json!({"type": "string"}))]),
        ),
    ]
}

/// An object schema requiring these properties (others are allowed: consumers must ignore
/// fields they do not know).
fn data(required: &[(&str, Value)]) -> Value {
    let properties: Map<String, Value> = required
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    let names: Vec<&str> = required.iter().map(|(k, _)| *k).collect();
    json!({"type": "object", "required": names, "properties": properties})
}

/// The schema of one line of events.jsonl.
pub fn events_schema() -> Value {
    let types = event_types();
    let names: Vec<&str> = types.iter().map(|(name, _)| *name).collect();
    let per_type: Vec<Value> = types
        .iter()
        .map(|(name, data)| json!({"if": {"properties": {"type": {"const": name}}}, "then": {"properties": {"data": data}}}))
        .collect();
    json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": "https://runner.dev/schemas/events.schema.json",
        "title": "runner event (one line of events.jsonl)",
        "type": "object",
        "required": ["type", "timestamp", "runId", "threadId", "agent", "depth", "data"],
        "properties": {
            "type": {"enum": names},
            "timestamp": {"type": "string", "pattern": "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$",
                          "description": "RFC 3339, milliseconds, UTC"},
            "runId": {"type": "string", "description": "The agent run; a sub-agent run has its own"},
            "threadId": {"type": "string", "description": "The conversation (the session id)"},
            "agent": {"type": "string", "description": "The name of the agent that emitted the event"},
            "depth": {"type": "integer", "minimum": 0, "description": "0 for the root agent, +1 per sub-agent level; a handoff keeps the depth"},
            "parentRunId": {"type": "string", "description": "The run that started this sub-agent run"},
            "data": {"type": "object"}
        },
        "additionalProperties": false,
        "allOf": per_type
    })
}

/// The schema pretty-printed with a trailing newline, as committed.
pub fn events_schema_text() -> String {
    let mut text = serde_json::to_string_pretty(&events_schema()).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: &str, data: Value) -> Value {
        json!({"type": kind, "timestamp": "2026-11-21T10:00:00.123Z", "runId": "r", "threadId": "t",
               "agent": "a", "depth": 0, "data": data})
    }

    #[test]
    fn the_schema_checks_the_envelope_and_each_types_data() {
        let validator = jsonschema::validator_for(&events_schema()).unwrap();
        let good = event(
            kind::HANDOFF,
            json!({"from": "a", "to": "b", "toolName": "t"}),
        );
        assert!(validator.is_valid(&good));
        assert!(
            !validator.is_valid(&event(kind::HANDOFF, json!({"from": "a"}))),
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
}
