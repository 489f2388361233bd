//! Checks JSON Schemas written by users (sub-agent `parameters`, `output.schema`,
//! `plan_schema`) before any model sees them.

use serde_json::Value;

/// A problem inside a user-written schema, with the JSON pointer relative to the schema.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaProblem {
    pub pointer: String,
    pub message: String,
}

/// Checks `schema` against its meta-schema and compiles it (bad regexes, unresolvable
/// `$ref`s). `require_object`: tool parameters must describe an object, as every provider's
/// tool calling requires.
pub fn check_user_schema(schema: &Value, require_object: bool) -> Vec<SchemaProblem> {
    if let Err(error) = jsonschema::meta::validate(schema) {
        let pointer = error.instance_path().as_str().to_string();
        let message = if pointer.ends_with("/type") {
            format!(
                "not a valid JSON Schema: {} is not a type; use string, number, integer, boolean, array, object or null",
                error.instance()
            )
        } else {
            format!("not a valid JSON Schema: {error}")
        };
        return vec![SchemaProblem { pointer, message }];
    }
    if let Err(error) = jsonschema::validator_for(schema) {
        return vec![SchemaProblem {
            pointer: String::new(),
            message: format!("the JSON Schema does not compile: {error}"),
        }];
    }
    if require_object && schema.get("type").and_then(Value::as_str) != Some("object") {
        return vec![SchemaProblem {
            pointer: String::new(),
            message: "tool parameters must describe an object (`type: object`)".into(),
        }];
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accepts_an_object_schema() {
        let schema =
            json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]});
        assert_eq!(check_user_schema(&schema, true), vec![]);
    }

    #[test]
    fn rejects_invalid_keywords_with_their_pointer() {
        let problems = check_user_schema(
            &json!({"type": "object", "properties": {"q": {"type": "strng"}}}),
            true,
        );
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].pointer, "/properties/q/type");
    }

    #[test]
    fn parameters_must_be_an_object() {
        let problems = check_user_schema(&json!({"type": "string"}), true);
        assert!(problems[0].message.contains("type: object"));
        assert_eq!(check_user_schema(&json!({"type": "string"}), false), vec![]);
    }
}
