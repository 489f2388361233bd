//! Checks of a final answer: JSON against the output schema.

use serde_json::Value;

use crate::engine::agent::Agent;

/// Checks a final answer against the output schema. `Ok(None)`: no schema.
/// `Err(feedback)`: what to tell the model so it can try again.
pub fn check_structured(agent: &Agent, text: &str) -> Result<Option<Value>, String> {
    let Some(schema) = &agent.output_schema else {
        return Ok(None);
    };
    let value = parse_json_answer(text).ok_or_else(|| {
        "Your answer must be a JSON value matching the output schema, with no other text."
            .to_string()
    })?;
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| format!("the output schema does not compile: {e}"))?;
    let problems: Vec<String> = validator
        .iter_errors(&value)
        .map(|error| format!("{} at `{}`", error, error.instance_path().as_str()))
        .collect();
    if problems.is_empty() {
        Ok(Some(value))
    } else {
        Err(format!(
            "Your answer does not match the output schema: {}. Answer again with corrected JSON only.",
            problems.join("; ")
        ))
    }
}

/// A JSON answer, bare or inside a ```json fence.
pub fn parse_json_answer(text: &str) -> Option<Value> {
    let trimmed = text.trim();
    if let Ok(value) = serde_json::from_str(trimmed) {
        return Some(value);
    }
    let start = trimmed.find("```")?;
    let after = &trimmed[start + 3..];
    let body_start = after.find('\n')? + 1;
    let body = &after[body_start..];
    let end = body.find("```")?;
    serde_json::from_str(body[..end].trim()).ok()
}
