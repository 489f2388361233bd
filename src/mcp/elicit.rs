//! A server's `elicitation/create` (a form it needs filled in mid-call), answered the way
//! `ask_user` is: by the person at the terminal, else by `--answers` (keyed by the server's
//! message), else by the answer a resume brought. With none of them the form is
//! unanswered: the server hears "cancel", and the run pauses on the form (exit 4) until
//! `runner resume --answer` makes the call again with an answer.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::tools::AnswerSource;

/// What the person (or the answers file) said.
#[derive(Debug, Clone, PartialEq)]
pub enum Elicited {
    /// The fields, with the schema's defaults filled in for those not given.
    Accept(Map<String, Value>),
    Decline,
    Cancel,
    /// Nobody could answer: the run pauses on the form.
    Unanswered,
}

/// Asks `sources` in order for the form `schema` (a JSON Schema object of flat fields)
/// that server `server` sent with `message`; `Unanswered` when none answers.
pub fn elicit(
    sources: &[Arc<dyn AnswerSource>],
    server: &str,
    message: &str,
    schema: &Value,
) -> Elicited {
    let question = question(server, message, schema);
    sources
        .iter()
        .find_map(|source| source.answer(&question, Some(message)))
        .map_or(Elicited::Unanswered, |answer| parse(&answer, schema))
}

/// Checks an answer `runner resume --answer` gives a form, before the run goes on:
/// `accept`, `decline`, `cancel`, a JSON object of fields, or a plain value for a form of
/// one field; the fields (with the defaults filled in) must fit the form's schema.
pub fn check_answer(answer: &str, schema: &Value) -> Result<(), String> {
    let text = answer.trim();
    let words = ["accept", "yes", "y", "", "decline", "no", "n", "cancel"];
    let one_field = properties(schema).count() == 1;
    let is_object = matches!(serde_json::from_str(text), Ok(Value::Object(_)));
    if !words.contains(&text.to_ascii_lowercase().as_str()) && !is_object && !one_field {
        return Err(format!(
            "`{text}` is not an answer to this form: give `accept` (the defaults), `decline`, `cancel` or a JSON object of fields"
        ));
    }
    let Elicited::Accept(fields) = parse(text, schema) else {
        return Ok(());
    };
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| format!("the server's form has a schema that cannot be checked: {e}"))?;
    let problems: Vec<String> = validator
        .iter_errors(&Value::Object(fields))
        .map(|error| {
            let at = error.instance_path().to_string();
            match at.is_empty() {
                true => error.to_string(),
                false => format!("{at}: {error}"),
            }
        })
        .collect();
    match problems.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "the answer does not fit the form: {}",
            problems.join("; ")
        )),
    }
}

/// The question as the terminal shows it: the server's message, the fields with their
/// types and defaults, and what may be answered.
pub fn question(server: &str, message: &str, schema: &Value) -> String {
    let fields: Vec<String> = properties(schema)
        .map(|(name, field)| {
            let kind = field.get("type").and_then(Value::as_str).unwrap_or("any");
            match field.get("default") {
                Some(default) => format!("{name} ({kind}, default {default})"),
                None => format!("{name} ({kind})"),
            }
        })
        .collect();
    format!(
        "MCP server `{server}` asks: {message}\n  fields: {}\n  answer `accept` (the defaults), a JSON object of fields, or `decline`",
        if fields.is_empty() {
            "none".to_string()
        } else {
            fields.join(", ")
        }
    )
}

fn properties(schema: &Value) -> impl Iterator<Item = (&String, &Value)> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
}

/// An answer as a decision: `decline`/`no`, `cancel`, `accept`/`yes`/empty (the
/// defaults), or a JSON object of fields (the defaults fill the rest). Anything else is
/// taken as the value of a form's only field, or declined when the form has several.
fn parse(answer: &str, schema: &Value) -> Elicited {
    let text = answer.trim();
    let fields = match text.to_ascii_lowercase().as_str() {
        "decline" | "no" | "n" => return Elicited::Decline,
        "cancel" => return Elicited::Cancel,
        "accept" | "yes" | "y" | "" => Map::new(),
        _ => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(given)) => given,
            _ => match properties(schema).collect::<Vec<_>>().as_slice() {
                [(only, _)] => Map::from_iter([((*only).clone(), Value::from(text))]),
                _ => return Elicited::Decline,
            },
        },
    };
    Elicited::Accept(with_defaults(fields, schema))
}

fn with_defaults(mut fields: Map<String, Value>, schema: &Value) -> Map<String, Value> {
    for (name, field) in properties(schema) {
        if let Some(default) = field.get("default")
            && !fields.contains_key(name)
        {
            fields.insert(name.clone(), default.clone());
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "note": {"type": "string"}
        }})
    }

    #[test]
    fn answers_become_decisions_with_the_defaults_filled_in() {
        let accepted = |fields: Value| Elicited::Accept(fields.as_object().unwrap().clone());
        assert_eq!(
            parse("accept", &schema()),
            accepted(json!({"name": "John Doe", "age": 30}))
        );
        assert_eq!(
            parse(r#"{"age": 41, "note": "hi"}"#, &schema()),
            accepted(json!({"age": 41, "note": "hi", "name": "John Doe"}))
        );
        assert_eq!(parse("No", &schema()), Elicited::Decline);
        assert_eq!(parse("cancel", &schema()), Elicited::Cancel);
        assert_eq!(parse("something", &schema()), Elicited::Decline);
        let one = json!({"properties": {"city": {"type": "string"}}});
        assert_eq!(parse("Paris", &one), accepted(json!({"city": "Paris"})));
    }

    #[test]
    fn with_no_one_to_ask_the_form_is_unanswered() {
        assert_eq!(elicit(&[], "srv", "Who?", &schema()), Elicited::Unanswered);
        let shown = question("srv", "Who?", &schema());
        assert!(
            shown.contains("name (string, default \"John Doe\")"),
            "{shown}"
        );
    }
}
