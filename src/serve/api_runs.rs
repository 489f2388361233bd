//! `POST /api/runs`, `GET /api/runs/{id}`, `GET /api/runs/{id}/transcript`,
//! `POST /api/runs/{id}/cancel`.

use std::path::PathBuf;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::body::json_body;
use super::error::ApiError;
use super::ids::checked;
use super::redact::{clean_text, clean_value};
use super::server::Shared;
use crate::engine::ErrorCode;
use crate::output::render::{Format, render};
use crate::output::transcript::parse;
use crate::session::prepare::load;
use crate::session::run_dir::runs_dir;
use crate::session::{self, InputText, Inputs, RunRequest, Stop};

/// A new run.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartRun {
    /// The agent's name (or its file, as `GET /api/agents` lists it).
    pub agent: String,
    /// The input values, checked against the agent's `inputs`.
    #[serde(default)]
    pub inputs: Map<String, Value>,
    /// The input text (`{{ input }}`; the first message when the agent has no `prompt`).
    #[serde(default)]
    pub input: String,
    /// The new session's id; absent: a new one.
    pub session: Option<String>,
    /// `PROVIDER/NAME` instead of the file's model.
    pub model: Option<String>,
}

/// A run that started.
#[derive(Serialize, JsonSchema)]
pub struct Started {
    pub run_id: String,
    pub session_id: String,
}

pub async fn start(
    State(server): State<Shared>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Started>), ApiError> {
    let request: StartRun = json_body(body)?;
    if let Some(session) = &request.session {
        checked(session)?;
    }
    let wanted = request.agent.clone();
    let catalog = server.clone();
    let found = tokio::task::spawn_blocking(move || catalog.catalog.find(&wanted))
        .await
        .map_err(|error| ApiError::code(ErrorCode::Internal, error.to_string()))?;
    let agent = found.map_err(ApiError::not_found)?;
    if !agent.valid {
        return Err(ApiError::code(
            ErrorCode::InvalidAgent,
            agent.diagnostics.join("\n"),
        ));
    }
    let file = agent.file.clone();
    let checked = server.clone();
    tokio::task::spawn_blocking(move || {
        let spec = load(&PathBuf::from(&file))?;
        checked
            .refuse_unreachable_sessions(&spec, &file)
            .map_err(|message| Stop::invalid(ErrorCode::InvalidAgent, message))
    })
    .await
    .map_err(|error| ApiError::code(ErrorCode::Internal, error.to_string()))??;
    let slot = server.slots.take().await?;
    let handle = session::start(RunRequest {
        inputs: Inputs::Values(request.inputs),
        input: InputText::Text(request.input),
        session_id: request.session,
        model: request.model,
        sessions: server.new_run_sessions(),
        settings: server.settings_for(&headers),
        ..RunRequest::new(PathBuf::from(&agent.file))
    })
    .await?;
    let run = server.runs.host(handle, slot);
    Ok((
        StatusCode::CREATED,
        Json(started(&run.run_id, &run.session_id)),
    ))
}

pub fn started(run_id: &str, session_id: &str) -> Started {
    Started {
        run_id: run_id.to_string(),
        session_id: session_id.to_string(),
    }
}

/// The result envelope (`result.json`'s shape); while the run goes, `status: running`.
pub async fn show(
    State(server): State<Shared>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id = checked(&id)?;
    let envelope = match server.runs.get(id) {
        Some(run) => match run.result() {
            Some(result) => serde_json::to_value(&*result).unwrap_or_default(),
            None => json!({
                "version": 1,
                "status": "running",
                "agent_file": run.agent_file.display().to_string(),
                "run_id": run.run_id,
                "session_id": run.session_id,
            }),
        },
        None => from_disk(id)?,
    };
    Ok(Json(clean_value(envelope)))
}

/// The `result.json` of a run this server no longer holds (ended before a restart, or
/// long ago).
fn from_disk(id: &str) -> Result<Value, ApiError> {
    let path = runs_dir().join(id).join("result.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|_| ApiError::not_found(format!("no run `{id}` (in {})", runs_dir().display())))?;
    serde_json::from_str(&text).map_err(|error| {
        ApiError::code(ErrorCode::Internal, format!("{}: {error}", path.display()))
    })
}

#[derive(Deserialize)]
pub struct TranscriptQuery {
    format: Option<String>,
}

/// The run's transcript: `text`, `markdown` (the default) or `json` (its parsed tree), as
/// `runner render` gives it.
pub async fn transcript(
    State(server): State<Shared>,
    Path(id): Path<String>,
    Query(query): Query<TranscriptQuery>,
) -> Result<Response, ApiError> {
    let id = checked(&id)?;
    let format = match query.format.as_deref().unwrap_or("markdown") {
        "text" => Format::Text,
        "markdown" => Format::Markdown,
        "json" => Format::Json,
        other => {
            return Err(ApiError::bad_request(format!(
                "format `{other}`: expected text, markdown or json"
            )));
        }
    };
    let going = server
        .runs
        .get(id)
        .is_some_and(|run| run.result().is_none());
    let path = runs_dir().join(id).join("transcript.txt");
    let text = std::fs::read_to_string(&path)
        .map_err(|_| ApiError::not_found(format!("no transcript of run `{id}`")))?;
    let parsed = parse(&text).map_err(|error| match going {
        true => ApiError::new(
            StatusCode::CONFLICT,
            "not_ready",
            "the run is going: its transcript is complete once the step ends",
        ),
        false => ApiError::code(ErrorCode::Internal, format!("{}:{error}", path.display())),
    })?;
    let content_type = match format {
        Format::Text => "text/plain; charset=utf-8",
        Format::Markdown => "text/markdown; charset=utf-8",
        Format::Json => "application/json",
    };
    let rendered = clean_text(&render(&parsed, format, false));
    Ok(([(header::CONTENT_TYPE, content_type)], rendered).into_response())
}

/// Stops a run going here: it ends `interrupted`, checkpointed, and can be resumed.
pub async fn cancel(
    State(server): State<Shared>,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<Started>), ApiError> {
    let id = checked(&id)?;
    let run = server
        .runs
        .get(id)
        .ok_or_else(|| ApiError::not_found(format!("no run `{id}` going here")))?;
    if let Some(result) = run.result() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "not_running",
            format!("run `{id}` has ended: {}", result.status.name()),
        ));
    }
    run.cancel();
    Ok((
        StatusCode::ACCEPTED,
        Json(started(&run.run_id, &run.session_id)),
    ))
}
