//! Parameter values arrive as text; the tool's JSON Schema says what they are.

use serde_json::{Map, Value};

use super::parser::trim_value;

/// Converts each `(name, text)` by the type of `properties.name` in `schema`: integer,
/// number, boolean (any case), array or object (JSON inside the tag), string (one leading
/// and one trailing line break dropped). Unknown names stay strings; the tool's own
/// validation refuses them.
pub fn coerce_params(
    params: &[(String, String)],
    schema: &Value,
) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    for (name, text) in params {
        let kind = schema
            .pointer(&format!(
                "/properties/{}/type",
                name.replace('~', "~0").replace('/', "~1")
            ))
            .and_then(Value::as_str)
            .unwrap_or("string");
        let trimmed = text.trim();
        let wrong = |what: &str| {
            format!(
                "parameter `{name}` must be {what}, but `{}` is not",
                shorten(trimmed)
            )
        };
        let value = match kind {
            "integer" => trimmed
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| wrong("an integer"))?,
            "number" => {
                let number: f64 = trimmed.parse().map_err(|_| wrong("a number"))?;
                serde_json::Number::from_f64(number)
                    .map(Value::Number)
                    .ok_or_else(|| wrong("a finite number"))?
            }
            "boolean" => match trimmed.to_ascii_lowercase().as_str() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => return Err(wrong("true or false")),
            },
            "array" | "object" => {
                let value: Value =
                    serde_json::from_str(trimmed).map_err(|_| wrong(&format!("a JSON {kind}")))?;
                let fits = if kind == "array" {
                    value.is_array()
                } else {
                    value.is_object()
                };
                if !fits {
                    return Err(wrong(&format!("a JSON {kind}")));
                }
                value
            }
            _ => Value::String(trim_value(text)),
        };
        out.insert(name.clone(), value);
    }
    Ok(out)
}

fn shorten(text: &str) -> String {
    if text.chars().count() > 40 {
        format!("{}…", text.chars().take(40).collect::<String>())
    } else {
        text.to_string()
    }
}
