//! Answers on the wire: one JSON-RPC response, or a stream of them as server-sent events
//! (`data: {"jsonrpc": "2.0", "id": ..., "result": {"statusUpdate": ...}}`), the first the
//! task as it is, then its updates until it settles. Every text goes through `runner
//! serve`'s last redaction pass, as its other answers do.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Json;
use axum::http::StatusCode;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::{Stream, stream};
use serde_json::Value;

use super::rpc::Id;
use super::task::{Task, Updates, settled};
use crate::a2a::{JsonRpcError, JsonRpcResponse, StreamResponse};
use crate::serve::redact::clean_value;

/// A stream to open: the task, and where its updates for this client start.
pub struct Opening {
    pub task: Arc<Task>,
    pub from: usize,
}

pub fn json_result(id: Id, result: Value) -> Response {
    json(JsonRpcResponse::success(id, result))
}

pub fn json_error(id: Id, error: JsonRpcError) -> Response {
    json(JsonRpcResponse::failure(id, error))
}

/// An error answered with an HTTP status (the request never reached a method).
pub fn http_error(status: StatusCode, id: Id, error: JsonRpcError) -> Response {
    let mut response = json_error(id, error);
    *response.status_mut() = status;
    response
}

fn json(response: JsonRpcResponse) -> Response {
    let value = serde_json::to_value(response).unwrap_or(Value::Null);
    Json(clean_value(value)).into_response()
}

/// What a stream still has to send.
enum Next {
    /// The task as it is now.
    Task(Opening),
    Updates(Updates),
    Done,
}

pub fn sse(id: Id, opening: Opening) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let events = stream::unfold((Next::Task(opening), id), |(next, id)| async move {
        let (update, next) = match next {
            Next::Task(Opening { task, from }) => {
                let view = task.view(None);
                // A task that is settled already (a resubscribe to a paused one) has
                // nothing more to come.
                let next = match settled(view.status.state) && from == task.position() {
                    true => Next::Done,
                    false => Next::Updates(task.updates(from)),
                };
                (StreamResponse::Task(view), next)
            }
            Next::Updates(mut updates) => match updates.next().await {
                Some(update) => (update, Next::Updates(updates)),
                None => return None,
            },
            Next::Done => return None,
        };
        let response = JsonRpcResponse::success(id.clone(), update);
        let value = clean_value(serde_json::to_value(response).unwrap_or(Value::Null));
        let event = SseEvent::default().data(value.to_string());
        Some((Ok(event), (next, id)))
    });
    Sse::new(events).keep_alive(KeepAlive::default())
}
