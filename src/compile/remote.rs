//! Remote agent tools from the agent file (`- name: ..., a2a: {url: ...}`): the message
//! template, the argument check and the A2A client behind the engine's port.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::mcp::remember_tokens;
use super::remote_agent::{A2aRemote, Cassette};
use super::subagents::tool_prompt;
use super::{BuildOptions, CompileError, CompileInput, render_field};
use crate::engine::agent::RemoteAgentTool;
use crate::spec::tools::RemoteAgentTool as RemoteSpec;
use crate::tools::ArgsValidator;

/// How long one call may take when the entry sets no `timeout`.
pub const DEFAULT_REMOTE_TIMEOUT: Duration = Duration::from_secs(300);

/// The parameters of an entry without `parameters`: one message, sent as it is.
fn default_parameters() -> Value {
    json!({
        "type": "object",
        "properties": {"message": {"type": "string", "description": "The message for the agent."}},
        "required": ["message"]
    })
}

pub fn remote_tool(
    input: &CompileInput<'_>,
    spec: &RemoteSpec,
) -> Result<Arc<RemoteAgentTool>, CompileError> {
    let error = |message: String| CompileError::Tool {
        name: spec.name.clone(),
        message,
    };
    let parameters = match &spec.parameters {
        Some(parameters) => parameters.0.clone(),
        None => default_parameters(),
    };
    let validator = ArgsValidator::at_first_call(parameters.clone());
    let source = match (&spec.prompt, &spec.parameters) {
        (Some(prompt), _) => Some(prompt.clone()),
        (None, None) => Some("{{ message }}".to_string()),
        (None, Some(_)) => None,
    };
    let headers = spec
        .a2a
        .headers
        .iter()
        .map(|(name, value)| {
            // Headers carry credentials: no tool result, event or cassette may show them.
            remember_tokens(input, value, true);
            let field = format!("a2a.headers.{name}");
            Ok((
                name.clone(),
                render_field(input.templates(), &field, value, input.context)?,
            ))
        })
        .collect::<Result<Vec<_>, CompileError>>()?;
    for (_, value) in &headers {
        crate::log::secret(value);
    }
    let timeout = spec
        .a2a
        .timeout
        .as_ref()
        .map_or(DEFAULT_REMOTE_TIMEOUT, |t| t.0);
    let calls = (cassette(input.build), input.build.trace.clone());
    let agent = A2aRemote::new(&spec.a2a.url, headers, timeout, calls).map_err(error)?;
    Ok(Arc::new(RemoteAgentTool {
        name: spec.name.clone(),
        description: spec.description.clone(),
        prompt: source.map(|source| tool_prompt(input, Some(source), &parameters)),
        parameters,
        sequential: spec.sequential,
        validator,
        agent: Arc::new(agent),
    }))
}

/// What `--record` and `--replay` make of a remote agent.
fn cassette(build: &BuildOptions) -> Cassette {
    match (&build.a2a_replay, &build.models.record) {
        (Some(replay), _) => Cassette::Replay(replay.clone()),
        (None, Some(record)) => Cassette::Record(record.clone()),
        (None, None) => Cassette::Live,
    }
}
