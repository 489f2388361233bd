//! `GET /api/sessions`, `GET|DELETE /api/sessions/{id}`, and continuing a session:
//! `POST /api/sessions/{id}/answer` (a paused one) and `POST /api/sessions/{id}/resume`
//! (an interrupted, failed or limited one), as `runner resume` does. Sessions are those of
//! the server's store: `.runner/sessions` in its working directory, or NATS (`--nats`),
//! where other servers see them too.

use std::time::Duration;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::api_runs::{Started, started};
use super::body::json_body;
use super::error::ApiError;
use super::ids::checked;
use super::redact::clean_value;
use super::server::Shared;
use crate::checkpoint::{CheckpointStore, SessionStatus};
use crate::engine::events::{ActionStatus, RequiresAction};
use crate::engine::run::required_action;
use crate::engine::{ErrorCode, RunStatus};
use crate::session::run_dir::runs_dir;
use crate::session::{self, Answer, ResumeData, ResumeRequest, SubmittedOutput};

/// How long an answer waits for the run that paused to finish its checkpoint.
const PAUSE_SETTLES: Duration = Duration::from_secs(10);

/// The answer to what a paused session waits for: one of the four.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerRequest {
    /// The answer to an `ask_user` question.
    pub answer: Option<String>,
    /// The values of an MCP server's form.
    pub form: Option<Value>,
    /// Calls waiting for approval to run: their ids, or `all`.
    #[serde(default)]
    pub approve: Vec<String>,
    /// Calls waiting for approval not to run; the model is told the reason.
    #[serde(default)]
    pub deny: Vec<Denial>,
    /// The outputs of the external tools' calls the session waits on, one per call.
    #[serde(default)]
    pub tool_outputs: Vec<ToolOutput>,
}

/// The output of an external tool's call (as the agent-events reference's
/// `submit_tool_outputs` names it): any JSON; a string is the text the model reads.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolOutput {
    pub tool_call_id: String,
    pub output: Value,
}

/// A call not to run, and the reason its model is told.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Denial {
    pub id: String,
    pub reason: Option<String>,
}

impl Denial {
    fn into_session(self) -> session::Denial {
        session::Denial::new(self.id, self.reason)
    }
}

impl AnswerRequest {
    fn into_answer(self) -> Result<Answer, ApiError> {
        let decides = !self.approve.is_empty() || !self.deny.is_empty();
        let submits = !self.tool_outputs.is_empty();
        match (self.answer, self.form, decides, submits) {
            (Some(text), None, false, false) => Ok(Answer::Text(text)),
            (None, Some(form), false, false) => Ok(Answer::Form(form)),
            (None, None, true, false) => Ok(Answer::Decide {
                approve: self.approve,
                deny: self.deny.into_iter().map(Denial::into_session).collect(),
            }),
            (None, None, false, true) => Ok(Answer::Outputs(
                self.tool_outputs
                    .into_iter()
                    .map(|o| SubmittedOutput::new(o.tool_call_id, o.output))
                    .collect(),
            )),
            _ => Err(ApiError::code(
                ErrorCode::InvalidAnswer,
                "give one of `answer` (a question), `form` (a form), `approve`/`deny` \
                 (calls waiting for approval), or `tool_outputs` (external calls)",
            )),
        }
    }
}

/// Blocking store work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| ApiError::code(ErrorCode::Internal, error.to_string()))?
}

pub async fn list(State(server): State<Shared>) -> Result<Json<Value>, ApiError> {
    let store = server.store.clone();
    let sessions = blocking(move || Ok(store.list()?)).await?;
    Ok(Json(clean_value(json!(sessions))))
}

/// A session's metadata (status, runs, thread tree), and the run going in it here.
pub async fn show(
    State(server): State<Shared>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id = checked(&id)?.to_string();
    let going = server.runs.going_in(&id).map(|run| run.run_id.clone());
    let store = server.store.clone();
    let (metadata, waits_for) = blocking(move || {
        let metadata = store
            .metadata(&id)?
            .ok_or_else(|| ApiError::not_found(format!("no session `{id}`")))?;
        let waits_for = match metadata.status {
            SessionStatus::Ended(RunStatus::InputRequired) => waits_for(store.as_ref(), &id)?,
            _ => None,
        };
        Ok((metadata, waits_for))
    })
    .await?;
    let mut value = json!(metadata);
    value["running"] = json!(going);
    value["waits_for"] = json!(waits_for);
    Ok(Json(clean_value(value)))
}

/// What a paused session waits for, as the `thread.run.requires_action` event its last
/// run ended with said it (the question, the form, or the calls and their ids): read from
/// the session's checkpoint, so a server that did not host that run (another one sharing
/// the sessions over NATS) says it too.
fn waits_for(store: &dyn CheckpointStore, id: &str) -> Result<Option<Value>, ApiError> {
    let Some(checkpoint) = store.load(id)? else {
        return Ok(None);
    };
    let resumable = ResumeData::read(id, &checkpoint)
        .map_err(|error| ApiError::code(ErrorCode::InvalidCheckpoint, error.to_string()))?;
    let action = resumable.engine.as_ref().and_then(required_action);
    Ok(action.map(|required_action| {
        json!(RequiresAction {
            status: ActionStatus::RequiresAction,
            required_action,
            checkpoint_name: Some(format!("step-{}", checkpoint.step)),
        })
    }))
}

/// Deletes a session and its runs' directories; refused while a run holds it.
pub async fn delete(
    State(server): State<Shared>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let id = checked(&id)?.to_string();
    if let Some(run) = server.runs.going_in(&id) {
        return Err(ApiError::code(
            ErrorCode::SessionInUse,
            format!(
                "session `{id}` is running (run `{}`): cancel it first",
                run.run_id
            ),
        ));
    }
    let store = server.store.clone();
    blocking(move || {
        let metadata = store
            .metadata(&id)?
            .ok_or_else(|| ApiError::not_found(format!("no session `{id}`")))?;
        store.delete(&id)?;
        for run in metadata.run_ids {
            // A run id is one plain name: metadata that says otherwise deletes nothing.
            let dir = runs_dir().join(&run);
            if crate::checkpoint::check_session_id(&run).is_ok() && dir.is_dir() {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

pub async fn answer(
    State(server): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Started>), ApiError> {
    let id = checked(&id)?.to_string();
    let answer = json_body::<AnswerRequest>(body)?.into_answer()?;
    // The run that paused may still be writing its last checkpoint.
    if let Some(run) = server.runs.going_in(&id) {
        run.wait_ended(PAUSE_SETTLES).await;
    }
    continue_session(server, id, Some(answer), &headers).await
}

pub async fn resume(
    State(server): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<(StatusCode, Json<Started>), ApiError> {
    let id = checked(&id)?.to_string();
    continue_session(server, id, None, &headers).await
}

/// A new run of session `id`, with its history and the answer to what it waits for; a
/// child of the span the request's `traceparent` names.
async fn continue_session(
    server: Shared,
    id: String,
    answer: Option<Answer>,
    headers: &HeaderMap,
) -> Result<(StatusCode, Json<Started>), ApiError> {
    if let Some(run) = server.runs.going_in(&id) {
        return Err(ApiError::code(
            ErrorCode::SessionInUse,
            format!("session `{id}` is running (run `{}`)", run.run_id),
        ));
    }
    let exists = {
        let (id, store) = (id.clone(), server.store.clone());
        blocking(move || Ok(store.exists(&id)?)).await?
    };
    if !exists {
        return Err(ApiError::not_found(format!("no session `{id}`")));
    }
    let slot = server.slots.take().await?;
    let handle = session::resume(ResumeRequest {
        session_id: id,
        run_id: None,
        answer,
        branch: None,
        sessions: server.sessions.clone(),
        settings: server.settings_for(headers),
    })
    .await?;
    let run = server.runs.host(handle, slot);
    Ok((
        StatusCode::CREATED,
        Json(started(&run.run_id, &run.session_id)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(body: Value) -> Result<Answer, String> {
        let request: AnswerRequest = serde_json::from_value(body).map_err(|e| e.to_string())?;
        request.into_answer().map_err(|error| error.code)
    }

    #[test]
    fn an_answer_is_exactly_one_of_text_form_or_decisions() {
        assert!(matches!(answer(json!({"answer": "yes"})), Ok(Answer::Text(t)) if t == "yes"));
        assert!(matches!(
            answer(json!({"form": {"a": 1}})),
            Ok(Answer::Form(_))
        ));
        let decided = answer(json!({"approve": ["c1"], "deny": [{"id": "c2", "reason": "no"}]}));
        assert!(matches!(
            decided,
            Ok(Answer::Decide { approve, deny })
                if approve == ["c1"] && deny == [session::Denial::new("c2", Some("no".into()))]
        ));
        for wrong in [json!({}), json!({"answer": "yes", "approve": ["all"]})] {
            assert_eq!(answer(wrong).unwrap_err(), "invalid_answer");
        }
    }
}
