//! Where a task's runs come from: a new run of the agent (a new task), or the session
//! resumed (with the answer to what it waits for, or to go on after an interrupt or an
//! error). Each run is one of `runner serve`'s hosted runs (its `-j` slots and queue, its
//! run directory), so `/api/runs` shows it and SIGTERM interrupts it, checkpointed.

use std::path::PathBuf;
use std::sync::Arc;

use super::A2a;
use super::follow::follow;
use super::inputs::RunInputs;
use super::task::Task;
use crate::a2a::{ErrorCode as A2aError, JsonRpcError, Message};
use crate::checkpoint::CheckpointStore;
use crate::engine::ErrorCode;
use crate::engine::events::RequiredAction;
use crate::engine::run::required_action;
use crate::serve::agents::AgentEntry;
use crate::session::prepare::load;
use crate::session::{
    self, Answer, InputText, Inputs, ResumeData, ResumeRequest, RunHandle, RunRequest, RunSettings,
    Stop,
};

impl A2a {
    /// The agent file's spec, checked as `POST /api/runs` checks it; whether it declares
    /// `inputs:`.
    pub async fn check_agent(&self, entry: &AgentEntry) -> Result<bool, JsonRpcError> {
        let (server, file) = (self.server.clone(), entry.file.clone());
        let checked = tokio::task::spawn_blocking(move || {
            let spec = load(&PathBuf::from(&file))?;
            server
                .refuse_unreachable_sessions(&spec, &file)
                .map_err(|message| Stop::invalid(ErrorCode::InvalidAgent, message))?;
            Ok::<bool, Stop>(!spec.inputs.is_empty())
        })
        .await
        .map_err(|error| internal(error.to_string()))?;
        checked.map_err(of_stop)
    }

    /// A new run of `task`'s agent with `inputs`, in a new session (or `session_id`).
    pub async fn start_run(
        &self,
        entry: &AgentEntry,
        session_id: Option<String>,
        inputs: RunInputs,
        settings: RunSettings,
    ) -> Result<(RunHandle, tokio::sync::OwnedSemaphorePermit), JsonRpcError> {
        let slot = self.slot().await?;
        let handle = session::start(RunRequest {
            inputs: Inputs::Values(inputs.values),
            input: InputText::Text(inputs.text),
            session_id,
            sessions: self.server.new_run_sessions(),
            settings,
            ..RunRequest::new(PathBuf::from(&entry.file))
        })
        .await
        .map_err(of_stop)?;
        Ok((handle, slot))
    }

    /// A new run of session `session_id`, with `answer` to what it waits for.
    pub async fn resume_run(
        &self,
        session_id: &str,
        answer: Option<Answer>,
        settings: RunSettings,
    ) -> Result<(RunHandle, tokio::sync::OwnedSemaphorePermit), JsonRpcError> {
        if let Some(run) = self.server.runs.going_in(session_id) {
            return Err(JsonRpcError::new(
                A2aError::UnsupportedOperation,
                format!("session `{session_id}` is running (run `{}`)", run.run_id),
            ));
        }
        let slot = self.slot().await?;
        let handle = session::resume(ResumeRequest {
            session_id: session_id.to_string(),
            run_id: None,
            answer,
            branch: None,
            sessions: self.server.sessions.clone(),
            settings,
        })
        .await
        .map_err(of_stop)?;
        Ok((handle, slot))
    }

    /// Hosts the run of `handle` as `task`'s, with the client's `message` that started it.
    pub fn launch(
        &self,
        task: &Arc<Task>,
        (handle, slot): (RunHandle, tokio::sync::OwnedSemaphorePermit),
        message: Message,
    ) {
        let (events, cancel) = (handle.events(), handle.canceller());
        let run_id = handle.run_id().to_string();
        let run = self.server.runs.host(handle, slot);
        task.add_message(message);
        task.run_started(run_id, cancel);
        follow(task.clone(), events, run);
    }

    async fn slot(&self) -> Result<tokio::sync::OwnedSemaphorePermit, JsonRpcError> {
        self.server
            .slots
            .take()
            .await
            .map_err(|error| internal(format!("{}: {}", error.code, error.message)))
    }

    /// What the paused session `session_id` waits for, read from its checkpoint (the
    /// server may not have hosted the run that paused: it restarted since).
    pub async fn paused_on(&self, session_id: &str) -> Result<RequiredAction, JsonRpcError> {
        let (store, id) = (self.server.store.clone(), session_id.to_string());
        let read = tokio::task::spawn_blocking(move || paused_on(store.as_ref(), &id))
            .await
            .map_err(|error| internal(error.to_string()))?;
        read?.ok_or_else(|| {
            internal(format!(
                "session `{session_id}` is paused, but its checkpoint does not say on what"
            ))
        })
    }
}

fn paused_on(
    store: &dyn CheckpointStore,
    id: &str,
) -> Result<Option<RequiredAction>, JsonRpcError> {
    let checkpoint = store
        .load(id)
        .map_err(|error| internal(error.to_string()))?;
    let Some(checkpoint) = checkpoint else {
        return Ok(None);
    };
    let resumable =
        ResumeData::read(id, &checkpoint).map_err(|error| internal(error.to_string()))?;
    Ok(resumable.engine.as_ref().and_then(required_action))
}

/// A run that could not start, as a JSON-RPC error: the client's mistakes (inputs, an
/// answer, a session) are invalid params, a session held elsewhere an unsupported operation
/// now; the message keeps the result's error code.
pub fn of_stop(stop: Stop) -> JsonRpcError {
    let kind = match stop.code {
        ErrorCode::InvalidInput | ErrorCode::InvalidAnswer | ErrorCode::InvalidSession => {
            A2aError::InvalidParams
        }
        ErrorCode::SessionInUse | ErrorCode::SessionExists => A2aError::UnsupportedOperation,
        _ => A2aError::InternalError,
    };
    let code = stop.code.name();
    let mut error = JsonRpcError::new(kind, format!("{code}: {}", stop.message));
    if error.data.is_none() {
        error.data = Some(serde_json::json!({"code": code}));
    }
    error
}

pub fn internal(message: String) -> JsonRpcError {
    JsonRpcError::new(A2aError::InternalError, message)
}
