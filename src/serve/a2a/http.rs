//! The routes: `GET /a2a/{agent}/.well-known/agent-card.json` (the card) and
//! `POST /a2a/{agent}` (JSON-RPC), behind the server's token rule and body limit (they are
//! among its API routes), and the Host and Origin checks of `origin`.

use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use super::card::card_of;
use super::stream::http_error;
use super::{A2a, MAX_MESSAGE, rpc};
use crate::a2a::{ErrorCode, JsonRpcError, JsonRpcRequest, PROTOCOL_VERSION, VERSION_HEADER};
use crate::serve::agents::AgentEntry;
use crate::serve::error::ApiError;
use crate::serve::redact::clean_value;

pub fn routes<S: Clone + Send + Sync + 'static>(a2a: Arc<A2a>) -> Router<S> {
    Router::new()
        .route("/a2a/{agent}/.well-known/agent-card.json", get(card))
        .route("/a2a/{agent}", post(call))
        .with_state(a2a)
}

async fn card(
    State(a2a): State<Arc<A2a>>,
    Path(agent): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    a2a.allowed
        .check(&headers)
        .map_err(|why| ApiError::new(StatusCode::FORBIDDEN, "forbidden", why))?;
    let entry = a2a.agent(&agent).await.map_err(ApiError::not_found)?;
    let base = format!("http://{}", host(&headers, &a2a));
    let card = card_of(&entry, &base, a2a.token);
    let value = serde_json::to_value(card).unwrap_or_default();
    Ok(Json(clean_value(value)).into_response())
}

async fn call(
    State(a2a): State<Arc<A2a>>,
    Path(agent): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    if let Err(why) = a2a.allowed.check(&headers) {
        let error = JsonRpcError::new(ErrorCode::InvalidRequest, why);
        return http_error(StatusCode::FORBIDDEN, None, error);
    }
    let request = match request_of(&headers, body) {
        Ok(request) => request,
        Err((status, error)) => return http_error(status, None, error),
    };
    let entry = match a2a.agent(&agent).await {
        Ok(entry) => entry,
        Err(message) => {
            let error = JsonRpcError::new(ErrorCode::InvalidRequest, message);
            return http_error(StatusCode::NOT_FOUND, request.id, error);
        }
    };
    // The run is a child of the span the request's `traceparent` names, if any.
    let settings = a2a.server.settings_for(&headers);
    rpc::handle(&a2a, &entry, request, settings).await
}

/// The JSON-RPC request of the body: bounded, JSON, a request of the version spoken.
fn request_of(
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<JsonRpcRequest, (StatusCode, JsonRpcError)> {
    let refuse = |status, kind, message: String| (status, JsonRpcError::new(kind, message));
    let version = headers.get(VERSION_HEADER).and_then(|v| v.to_str().ok());
    if let Some(version) = version.filter(|v| !v.is_empty() && *v != PROTOCOL_VERSION) {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            ErrorCode::VersionNotSupported,
            format!("A2A {version} is not spoken here: this server speaks A2A {PROTOCOL_VERSION}"),
        ));
    }
    let bytes = body.map_err(|rejection| match rejection.status() {
        StatusCode::PAYLOAD_TOO_LARGE => refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::InvalidRequest,
            format!("the request is over {MAX_MESSAGE} bytes"),
        ),
        status => refuse(status, ErrorCode::InvalidRequest, rejection.body_text()),
    })?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|error| {
        refuse(
            StatusCode::OK,
            ErrorCode::ParseError,
            format!("the body is not JSON: {error}"),
        )
    })?;
    let request: JsonRpcRequest = serde_json::from_value(value).map_err(|error| {
        refuse(
            StatusCode::OK,
            ErrorCode::InvalidRequest,
            format!("not a JSON-RPC request: {error}"),
        )
    })?;
    if request.jsonrpc != "2.0" {
        return Err(refuse(
            StatusCode::OK,
            ErrorCode::InvalidRequest,
            "`jsonrpc` must be \"2.0\"".into(),
        ));
    }
    Ok(request)
}

/// The address the client reached: its `Host`, else the one listened on.
fn host(headers: &HeaderMap, a2a: &A2a) -> String {
    headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .filter(|host| !host.is_empty() && !host.contains(['/', '"', ' ']))
        .map_or_else(|| a2a.allowed.listen.to_string(), str::to_string)
}

impl A2a {
    /// The valid agent file named `name` (the first, as the MCP tools take it).
    pub async fn agent(&self, name: &str) -> Result<AgentEntry, String> {
        let server = self.server.clone();
        let entries = tokio::task::spawn_blocking(move || server.catalog.list())
            .await
            .map_err(|error| error.to_string())??;
        if let Some(entry) = entries.iter().find(|e| e.valid && e.name == name) {
            return Ok(entry.clone());
        }
        if let Some(invalid) = entries.iter().find(|e| e.name == name) {
            return Err(format!(
                "agent `{name}` ({}) is not valid:\n{}",
                invalid.file,
                invalid.diagnostics.join("\n")
            ));
        }
        let names: Vec<&str> = entries
            .iter()
            .filter(|e| e.valid)
            .map(|e| e.name.as_str())
            .collect();
        Err(format!(
            "no agent `{name}` is served (served: {})",
            names.join(", ")
        ))
    }
}
