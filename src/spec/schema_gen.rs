//! Generates `schemas/agent.schema.json` from the Rust types.
//!
//! Draft-07 is used because it is the draft editors' YAML language servers understand best.

use schemars::generate::SchemaSettings;
use schemars::transform::{Transform, transform_subschemas};
use schemars::{Schema, SchemaGenerator, json_schema};
use serde_json::Value;

use super::agent::AgentSpec;
use super::loadable::{IntegerBounds, MarkLoadedTypes};

/// The schema's `$id`, so editors and tools can refer to it.
pub const SCHEMA_ID: &str = "https://runner.dev/schemas/agent.schema.json";

/// The agent file's JSON Schema as a value, as published.
pub fn agent_schema() -> Value {
    generate(false)
}

/// The schema `runner validate` checks against: the published one, with the private
/// keyword that checks what JSON Schema cannot say (see [`super::loadable`]).
///
/// Read from the committed file, built into the binary: generating it from the types cost
/// a millisecond of every command's start, parsing it a third of that. A test keeps the
/// file current, and another keeps this equal to the schema generated with the keyword.
pub fn checked_agent_schema() -> Value {
    let published: Value = serde_json::from_str(PUBLISHED)
        .expect("schemas/agent.schema.json is JSON (a test keeps it current)");
    let mut schema = Schema::try_from(published).expect("the agent schema is an object");
    MarkLoadedTypes.transform(&mut schema);
    schema.to_value()
}

/// `schemas/agent.schema.json`, as committed.
const PUBLISHED: &str = include_str!("../../schemas/agent.schema.json");

fn generate(checked: bool) -> Value {
    schema_for::<AgentSpec>(SCHEMA_ID, checked)
}

/// The schema of `T` as runner publishes schemas: draft-07, `null` not offered for optional
/// keys, integers bounded by their Rust types; `checked` adds the private keyword of
/// [`super::loadable`]. Test files' schema is made the same way.
pub fn schema_for<T: schemars::JsonSchema>(id: &str, checked: bool) -> Value {
    let mut settings = SchemaSettings::draft07()
        .with_transform(AbsentIsNotNull)
        .with_transform(IntegerBounds);
    if checked {
        // Last: it knows integer nodes by `"type": "integer"`, which AbsentIsNotNull leaves.
        settings = settings.with_transform(MarkLoadedTypes);
    }
    let mut schema = settings.into_generator().into_root_schema_for::<T>();
    schema.insert("$id".into(), id.into());
    schema.to_value()
}

/// The agent file's JSON Schema, pretty-printed with a trailing newline, as committed.
pub fn agent_schema_text() -> String {
    let mut text = serde_json::to_string_pretty(&agent_schema()).unwrap_or_default();
    text.push('\n');
    text
}

/// The schema of a user-written JSON Schema: an object (its meta-schema check happens later,
/// with diagnostics that point into it).
pub fn json_schema_object(_generator: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "description": "A JSON Schema.",
        "additionalProperties": true
    })
}

/// Optional keys are written by leaving them out; `key: null` is almost always a slip
/// (an empty `key:` line), so the schema does not offer `null` for them.
#[derive(Clone)]
struct AbsentIsNotNull;

impl Transform for AbsentIsNotNull {
    fn transform(&mut self, schema: &mut Schema) {
        transform_subschemas(self, schema);
        let Some(object) = schema.as_object_mut() else {
            return;
        };
        if let Some(Value::Array(types)) = object.get_mut("type") {
            types.retain(|t| t != "null");
            if types.len() == 1 {
                let single = types.remove(0);
                object.insert("type".into(), single);
            }
        }
        let is_null = |v: &Value| v.get("type").and_then(Value::as_str) == Some("null");
        if let Some(Value::Array(branches)) = object.get("anyOf")
            && branches.len() == 2
            && branches.iter().any(is_null)
        {
            let kept = branches.iter().find(|b| !is_null(b)).cloned();
            if let Some(Value::Object(kept)) = kept {
                object.remove("anyOf");
                for (key, value) in kept {
                    object.entry(key).or_insert(value);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_checked_schema_read_from_the_committed_file_is_the_generated_one() {
        assert_eq!(super::checked_agent_schema(), super::generate(true));
    }
}
