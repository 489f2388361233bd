//! Rendering the agent's templates with what the file declares, and nothing else.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::CompileError;
use crate::spec::template::{environment_from, render};
use crate::spec::tree::AgentTree;

/// The values a template can read: the inputs, the declared env vars that are set, and the
/// built-ins `agent`, `now`, `input`, `run`.
#[derive(Debug, Clone)]
pub struct TemplateContext {
    values: Map<String, Value>,
}

impl TemplateContext {
    pub fn new(
        inputs: &Map<String, Value>,
        declared_env: &[String],
        env: &dyn Fn(&str) -> Option<String>,
        agent: (&str, Option<&str>),
        input: &str,
        run: (&str, &str),
        now: &str,
    ) -> Self {
        let mut values = inputs.clone();
        let env_values: Map<String, Value> = declared_env
            .iter()
            .filter_map(|name| env(name).map(|value| (name.clone(), Value::String(value))))
            .collect();
        values.insert("env".into(), Value::Object(env_values));
        values.insert(
            "agent".into(),
            json!({"name": agent.0, "description": agent.1}),
        );
        values.insert("now".into(), Value::String(now.to_string()));
        values.insert("input".into(), Value::String(input.to_string()));
        values.insert("run".into(), json!({"id": run.0, "session_id": run.1}));
        TemplateContext { values }
    }

    /// The context of another agent of the same run: its own name, inputs and env vars,
    /// the run's `now`, `input` and `run`.
    pub fn for_agent(
        &self,
        name: &str,
        description: Option<&str>,
        inputs: &Map<String, Value>,
        declared_env: &[String],
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Self {
        let input = self
            .values
            .get("input")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let now = self
            .values
            .get("now")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let run = self.values.get("run").cloned().unwrap_or(Value::Null);
        let run_id = run
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let session = run
            .get("session_id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        TemplateContext::new(
            inputs,
            declared_env,
            env,
            (name, description),
            &input,
            (&run_id, &session),
            &now,
        )
    }

    /// The same context with extra variables (a sub-agent prompt's arguments).
    pub fn with_values(&self, extra: &Map<String, Value>) -> Self {
        let mut values = self.values.clone();
        for (key, value) in extra {
            values.insert(key.clone(), value.clone());
        }
        TemplateContext { values }
    }

    pub fn as_value(&self) -> Value {
        Value::Object(self.values.clone())
    }

    /// The declared env vars whose names `source` mentions, with their values: what a
    /// template takes from the environment (a token for an MCP server, say).
    pub fn env_values_in(&self, source: &str) -> Vec<(String, String)> {
        let Some(Value::Object(env)) = self.values.get("env") else {
            return Vec::new();
        };
        let mentions = |name: &str| {
            source.match_indices(name).any(|(at, _)| {
                let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
                let before = source[..at].chars().next_back().is_some_and(word);
                let after = source[at + name.len()..].chars().next().is_some_and(word);
                !before && !after
            })
        };
        env.iter()
            .filter(|(name, _)| mentions(name))
            .filter_map(|(name, value)| Some((name.clone(), value.as_str()?.to_string())))
            .collect()
    }
}

/// Renders one field of the agent file, its includes taken from the run's agent tree (read
/// when the run started, never again from the disk).
pub fn render_field(
    (file_dir, tree): (&Path, &Arc<AgentTree>),
    field: &str,
    source: &str,
    context: &TemplateContext,
) -> Result<String, CompileError> {
    let env = environment_from(file_dir, tree.clone());
    render(&env, field, source, &context.as_value()).map_err(|error| CompileError::Template {
        field: field.to_string(),
        message: error.to_string(),
    })
}
