//! Checks of a final answer: JSON against the output schema.

use serde_json::Value;

use crate::engine::agent::Agent;

/// Why a final answer is not the structured answer the output schema asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Mismatch {
    NotJson,
    /// What the schema's validator said, each with where.
    Invalid(Vec<String>),
    /// The schema itself does not compile.
    BadSchema(String),
}

impl Mismatch {
    /// What the model is told, so it can answer again.
    pub fn feedback(&self) -> String {
        match self {
            Mismatch::NotJson => "Your answer must be a JSON value matching the output schema, \
                                  with no other text."
                .to_string(),
            Mismatch::Invalid(problems) => format!(
                "Your answer does not match the output schema: {}. Answer again with corrected JSON only.",
                problems.join("; ")
            ),
            Mismatch::BadSchema(_) => format!("Error: {self}."),
        }
    }
}

/// For a person: what was wrong with the last answer.
impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mismatch::NotJson => f.write_str("the answer is not JSON"),
            Mismatch::Invalid(problems) => write!(
                f,
                "the answer does not match the output schema: {}",
                problems.join("; ")
            ),
            Mismatch::BadSchema(error) => write!(f, "the output schema does not compile: {error}"),
        }
    }
}

/// Checks a final answer against the output schema. `Ok(None)`: no schema.
pub fn check_structured(agent: &Agent, text: &str) -> Result<Option<Value>, Mismatch> {
    let Some(schema) = &agent.output_schema else {
        return Ok(None);
    };
    let value = parse_json_answer(text).ok_or(Mismatch::NotJson)?;
    let validator =
        jsonschema::validator_for(schema).map_err(|e| Mismatch::BadSchema(e.to_string()))?;
    let problems: Vec<String> = validator
        .iter_errors(&value)
        .map(|error| format!("{} at `{}`", error, error.instance_path().as_str()))
        .collect();
    if problems.is_empty() {
        Ok(Some(value))
    } else {
        Err(Mismatch::Invalid(problems))
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
