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
/// keyword that checks what JSON Schema cannot say (see [`super::loadable`]), and without
/// the keywords that only annotate (descriptions, titles, examples, defaults: no check and
/// no diagnostic reads them).
///
/// Read from a committed file built into the binary: generating it from the types cost a
/// millisecond of every command's start. It was the published file (72 KB, most of it
/// descriptions for editors and indentation, with the keyword added after parsing); this
/// one is 21 KB of compact JSON, kept as text: the checker parses the parts a file uses
/// (`schema_check/sections.rs`). A test keeps it equal to the generated schema.
pub(crate) const CHECKED_AGENT_SCHEMA: &str = include_str!("agent.checked.json");

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
    use serde_json::{Value, json};

    /// The checked agent schema, generated: what `agent.checked.json` holds.
    fn checked_schema_text() -> String {
        let mut schema = super::generate(true);
        without_annotations(&mut schema);
        let mut text = schema.to_string();
        text.push('\n');
        text
    }

    /// Keywords that only annotate a schema: no validator reads them, and no diagnostic.
    const ANNOTATIONS: [&str; 4] = ["description", "title", "examples", "default"];

    /// Keywords whose value maps names to schemas: its keys are names, not keywords (a
    /// property may be called `description`).
    const NAMED_SCHEMAS: [&str; 3] = ["properties", "definitions", "patternProperties"];

    /// Keywords whose value is data, not a schema.
    const DATA: [&str; 2] = ["enum", "const"];

    /// `schema` without its annotations, at any depth.
    fn without_annotations(schema: &mut Value) {
        let Value::Object(object) = schema else {
            return;
        };
        object.retain(|keyword, _| !ANNOTATIONS.contains(&keyword.as_str()));
        for (keyword, value) in object.iter_mut() {
            let keyword = keyword.as_str();
            if DATA.contains(&keyword) {
                continue;
            }
            match value {
                Value::Object(named) if NAMED_SCHEMAS.contains(&keyword) => {
                    named.values_mut().for_each(without_annotations);
                }
                Value::Array(schemas) => schemas.iter_mut().for_each(without_annotations),
                other => without_annotations(other),
            }
        }
    }

    /// `UPDATE_CHECKED_SCHEMA=1 cargo test --lib checked_schema` writes the file anew.
    #[test]
    fn the_checked_schema_built_in_is_the_generated_one() {
        let generated = checked_schema_text();
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/spec/agent.checked.json");
        if std::env::var_os("UPDATE_CHECKED_SCHEMA").is_some() {
            std::fs::write(path, &generated).unwrap();
        }
        assert!(
            super::CHECKED_AGENT_SCHEMA == generated,
            "src/spec/agent.checked.json is stale: run `UPDATE_CHECKED_SCHEMA=1 cargo test --lib checked_schema`"
        );
    }

    #[test]
    fn annotations_go_and_names_and_data_stay() {
        let mut schema = json!({
            "description": "an agent",
            "properties": {
                "description": {"type": "string", "description": "what it does", "default": ""},
                "mode": {"enum": [{"description": "data"}], "title": "Mode"},
            },
            "definitions": {"Tool": {"anyOf": [{"const": {"title": "data"}, "examples": [1]}]}},
            "items": {"description": "one", "type": "object"},
        });
        without_annotations(&mut schema);
        let kept = json!({
            "properties": {
                "description": {"type": "string"},
                "mode": {"enum": [{"description": "data"}]},
            },
            "definitions": {"Tool": {"anyOf": [{"const": {"title": "data"}}]}},
            "items": {"type": "object"},
        });
        assert_eq!(schema, kept);
    }
}
