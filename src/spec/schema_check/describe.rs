//! Words for what a schema wants and what a document holds: "a whole number from 1 to
//! 4294967295", "the text `abc`", and the hints that say what to write instead.

use serde_json::Value;

/// Which side of its range a number fell off.
#[derive(Clone, Copy)]
pub(super) enum Bound {
    Below,
    Above,
}

/// What to write instead; a bound of `limits` can also be left out (absent is unbounded).
pub(super) fn range_hint(path: &str, bound: Bound, advice: &str) -> String {
    let is_limit = path
        .rsplit_once('/')
        .is_some_and(|(parent, _)| parent.ends_with("/limits"));
    match bound {
        Bound::Above if is_limit => format!(
            "write {advice}, or leave `{}` out for no limit",
            key_name(path)
        ),
        _ => format!("write {advice}"),
    }
}

/// The last key of a JSON pointer, unescaped.
pub(super) fn key_name(path: &str) -> String {
    let last = path.rsplit_once('/').map_or(path, |(_, last)| last);
    last.replace("~1", "/").replace("~0", "~")
}

/// "a whole number from 1 to 4294967295", from a schema node's type and bounds.
pub(super) fn describe_range(schema: &Value) -> String {
    let kind = match schema.get("type").and_then(Value::as_str) {
        Some("integer") => "a whole number",
        _ => "a number",
    };
    match (schema.get("minimum"), schema.get("maximum")) {
        (Some(min), Some(max)) => format!("{kind} from {min} to {max}"),
        (Some(min), None) => format!("{kind} of at least {min}"),
        (None, Some(max)) => format!("{kind} of at most {max}"),
        (None, None) => kind.to_string(),
    }
}

pub(super) fn type_names(expected: &Value) -> Vec<String> {
    match expected {
        Value::String(name) => vec![name.clone()],
        Value::Array(items) => items
            .iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect(),
        _ => Vec::new(),
    }
}

pub(super) fn describe_types(names: &[String]) -> String {
    let mut words: Vec<&str> = names
        .iter()
        .map(|name| match name.as_str() {
            "object" => "a mapping",
            "array" => "a list",
            "string" => "text",
            "integer" => "a whole number",
            "number" => "a number",
            "boolean" => "a boolean (true/false)",
            "null" => "nothing",
            _ => "a value",
        })
        .collect();
    words.dedup();
    match words.len() {
        0 => "another kind of value".into(),
        1 => words[0].into(),
        _ => {
            let last = words.pop().unwrap_or_default();
            format!("{} or {last}", words.join(", "))
        }
    }
}

pub(super) fn describe_value(value: &Value) -> String {
    match value {
        Value::Null => "nothing".into(),
        Value::Bool(flag) => format!("`{flag}`"),
        Value::Number(number) => format!("the number {number}"),
        Value::String(text) => format!("the text `{}`", shorten(text)),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "a mapping".into(),
    }
}

pub(super) fn show_value(value: &Value) -> String {
    match value {
        Value::String(text) => format!("`{}`", shorten(text)),
        other => format!("`{other}`"),
    }
}

pub(super) fn shorten(text: &str) -> String {
    if text.chars().count() > 40 {
        format!("{}…", text.chars().take(40).collect::<String>())
    } else {
        text.to_string()
    }
}

pub(super) fn required_hint(key: &str) -> Option<String> {
    match key {
        "parameters" => Some(
            "a sub-agent tool needs an explicit JSON Schema of its arguments, e.g. \
             `parameters: {type: object, properties: {query: {type: string}}, required: [query]}`"
                .into(),
        ),
        "name" => Some("every agent and tool needs a `name`".into()),
        _ => None,
    }
}

/// `tools: [read_file]` is a common slip; say how to write it.
pub(super) fn tool_shorthand_hint(path: &str, instance: &Value) -> Option<String> {
    let text = instance.as_str()?;
    let (parent, index) = path.rsplit_once('/')?;
    if parent.ends_with("/tools") && index.parse::<usize>().is_ok() {
        Some(format!(
            "a built-in tool is written `- builtin: {text}`; a sub-agent is a mapping with name, description, parameters and agent"
        ))
    } else {
        None
    }
}
