//! An input whose session completed but whose envelope was never recorded: the batch or
//! the worker died between the run's last checkpoint and its envelope (or a job was
//! published twice and ran once). A resume would be refused (a completed session is not
//! resumed), and running it again would repeat its effects; its envelope is rebuilt from
//! the session instead, which saved everything the envelope says.

use serde_json::Value;

use crate::checkpoint::{CheckpointError, CheckpointStore, SessionStatus};
use crate::engine::ErrorCode;
use crate::engine::clock::new_id;
use crate::engine::state::AgentState;
use crate::output::result::{ResultUsage, RunResult, Status};
use crate::provider::Message;

/// The envelope of `session` when it is completed; `None` when it is not (it goes on).
pub fn completed_result(
    store: &dyn CheckpointStore,
    session: &str,
    agent: &str,
) -> Result<Option<RunResult>, CheckpointError> {
    let Some(checkpoint) = store.load(session)? else {
        return Ok(None);
    };
    if checkpoint.status != SessionStatus::Ended(Status::Completed) {
        return Ok(None);
    }
    let state =
        AgentState::from_json(&checkpoint.state).map_err(|error| CheckpointError::Corrupt {
            path: format!("session {session}").into(),
            reason: error.to_string(),
        })?;
    let run_id = store
        .metadata(session)?
        .and_then(|metadata| metadata.run_ids.last().cloned())
        .unwrap_or_else(new_id);
    let output = final_text(&state);
    let structured = match has_output_schema(checkpoint.pending.as_ref()) {
        true => serde_json::from_str::<Value>(&output).ok(),
        false => None,
    };
    let spent = state.spent_so_far();
    let mut result = RunResult::not_started(
        Status::Completed,
        agent,
        (&run_id, session),
        ErrorCode::Internal,
        String::new(),
    );
    // It completed: no error.
    result.error = None;
    result.output = Some(output);
    result.structured = structured;
    result.steps = state.step;
    result.llm_calls = spent.llm_calls;
    result.tool_calls = spent.tool_calls;
    result.usage = ResultUsage {
        input_tokens: spent.usage.input_tokens,
        output_tokens: spent.usage.output_tokens,
        total_tokens: spent.usage.total_tokens,
        cost_usd: spent.cost_usd,
    };
    result.warnings = vec![format!(
        "rebuilt from session `{session}`, which completed before its envelope was recorded (the process that ran it died in between); nothing ran again"
    )];
    Ok(Some(result))
}

/// The answer: the text of the last assistant message.
fn final_text(state: &AgentState) -> String {
    state
        .messages
        .iter()
        .rev()
        .find_map(|message| match message {
            Message::Assistant(assistant) => Some(assistant.text.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// Whether the definition the session runs under declares an output schema (its answer
/// is then the structured output's JSON).
fn has_output_schema(pending: Option<&Value>) -> bool {
    pending
        .and_then(|p| p.pointer("/definition/output"))
        .is_some_and(|output| !output.is_null())
}
