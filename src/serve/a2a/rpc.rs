//! The JSON-RPC methods of one agent's endpoint: `SendMessage` (answered once the task has
//! settled: completed, failed, canceled or input-required; at once with
//! `returnImmediately`), `SendStreamingMessage` and `SubscribeToTask` (server-sent events:
//! the task, then its status and artifact updates until it settles), `GetTask`,
//! `CancelTask`. Push notifications, `ListTasks` and the extended card are not served.
//! 0.3's method names are refused with a `VersionNotSupported` error.

use std::time::Duration;

use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::A2a;
use super::send::{Sent, state_name};
use super::stream::{self, Opening};
use super::task::settled;
use crate::a2a::{
    CancelTaskRequest, ErrorCode, GetTaskRequest, JsonRpcError, JsonRpcRequest, Method, RequestId,
    SendMessageRequest, SendMessageResponse, SubscribeToTaskRequest, TaskState,
};
use crate::serve::agents::AgentEntry;
use crate::session::RunSettings;

/// How long `CancelTask` waits for the run to stop, checkpointed.
const CANCEL_WAIT: Duration = Duration::from_secs(10);

/// Answers `request` to `entry`'s endpoint; a run it starts is hosted with `settings`.
pub async fn handle(
    a2a: &A2a,
    entry: &AgentEntry,
    request: JsonRpcRequest,
    settings: RunSettings,
) -> Response {
    let id = request.id.clone();
    match dispatch(a2a, entry, request, settings).await {
        Ok(Answer::Result(value)) => stream::json_result(id, value),
        Ok(Answer::Stream(opening)) => stream::sse(id, opening).into_response(),
        Err(error) => stream::json_error(id, error),
    }
}

enum Answer {
    Result(Value),
    Stream(Opening),
}

async fn dispatch(
    a2a: &A2a,
    entry: &AgentEntry,
    request: JsonRpcRequest,
    settings: RunSettings,
) -> Result<Answer, JsonRpcError> {
    let Some(method) = Method::from_name(&request.method) else {
        return Err(unknown(&request.method));
    };
    let params = request.params.unwrap_or(Value::Object(Default::default()));
    match method {
        Method::SendMessage => {
            let request: SendMessageRequest = params_of(params)?;
            let configuration = request.configuration.clone().unwrap_or_default();
            let Sent { task, from } = a2a.send(entry, request, settings.clone()).await?;
            if !configuration.return_immediately {
                task.updates(from).settle().await;
            }
            let view = task.view(configuration.history_length);
            Ok(Answer::Result(to_value(SendMessageResponse::Task(view))))
        }
        Method::SendStreamingMessage => {
            let request: SendMessageRequest = params_of(params)?;
            let Sent { task, from } = a2a.send(entry, request, settings.clone()).await?;
            Ok(Answer::Stream(Opening { task, from }))
        }
        Method::GetTask => {
            let request: GetTaskRequest = params_of(params)?;
            let task = a2a.task_of(entry, &request.id)?;
            Ok(Answer::Result(to_value(task.view(request.history_length))))
        }
        Method::CancelTask => {
            let request: CancelTaskRequest = params_of(params)?;
            let task = a2a.task_of(entry, &request.id)?;
            cancel(&task).await?;
            Ok(Answer::Result(to_value(task.view(None))))
        }
        Method::SubscribeToTask => {
            let request: SubscribeToTaskRequest = params_of(params)?;
            let task = a2a.task_of(entry, &request.id)?;
            let state = task.state();
            if state.is_terminal() {
                return Err(JsonRpcError::new(
                    ErrorCode::UnsupportedOperation,
                    format!(
                        "task `{}` has ended ({}): there is nothing to follow; GetTask returns it",
                        task.id,
                        state_name(state)
                    ),
                ));
            }
            let from = task.position();
            Ok(Answer::Stream(Opening { task, from }))
        }
        Method::CreateTaskPushNotificationConfig
        | Method::GetTaskPushNotificationConfig
        | Method::ListTaskPushNotificationConfigs
        | Method::DeleteTaskPushNotificationConfig => Err(JsonRpcError::new(
            ErrorCode::PushNotificationNotSupported,
            "this server sends no push notifications: stream the task, or poll it with GetTask",
        )),
        Method::GetExtendedAgentCard => Err(JsonRpcError::new(
            ErrorCode::ExtendedCardNotConfigured,
            "this agent has no extended card: its card is the one at its well-known path",
        )),
        Method::ListTasks => Err(JsonRpcError::new(
            ErrorCode::UnsupportedOperation,
            "ListTasks is not served: GET /api/sessions lists the sessions (contexts)",
        )),
    }
}

/// Stops the task's run (it ends interrupted, checkpointed: the task `canceled`); a task
/// that waits for input is canceled at once (its session stays paused).
async fn cancel(task: &std::sync::Arc<super::task::Task>) -> Result<(), JsonRpcError> {
    let state = task.state();
    if state.is_terminal() {
        return Err(JsonRpcError::new(
            ErrorCode::TaskNotCancelable,
            format!("task `{}` has ended ({})", task.id, state_name(state)),
        ));
    }
    if state == TaskState::InputRequired {
        let text = format!(
            "canceled by the client while waiting for input; its session stays paused \
             (POST /api/sessions/{}/answer continues it)",
            task.context_id
        );
        let parts = vec![crate::a2a::Part::text(text)];
        task.status(super::follow::status(task, TaskState::Canceled, parts));
        return Ok(());
    }
    let from = task.position();
    task.cancel_run();
    let mut updates = task.updates(from);
    let _ = tokio::time::timeout(CANCEL_WAIT, updates.settle()).await;
    if !settled(task.state()) {
        return Err(JsonRpcError::new(
            ErrorCode::InternalError,
            format!("task `{}` did not stop within {CANCEL_WAIT:?}", task.id),
        ));
    }
    Ok(())
}

fn params_of<T: DeserializeOwned>(params: Value) -> Result<T, JsonRpcError> {
    serde_json::from_value(params)
        .map_err(|error| JsonRpcError::new(ErrorCode::InvalidParams, format!("params: {error}")))
}

fn to_value(value: impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

fn unknown(method: &str) -> JsonRpcError {
    if Method::is_legacy(method) {
        return JsonRpcError::new(
            ErrorCode::VersionNotSupported,
            format!(
                "`{method}` is a method of A2A 0.3: this server speaks A2A 1.0 (SendMessage, \
                 SendStreamingMessage, GetTask, CancelTask, SubscribeToTask)"
            ),
        );
    }
    JsonRpcError::new(ErrorCode::MethodNotFound, format!("no method `{method}`"))
}

/// The id a response carries back.
pub type Id = Option<RequestId>;
