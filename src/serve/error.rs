//! Every error the API answers: `{"error": {"code", "message"}}` with an HTTP status. A
//! run's problem keeps the code of the result envelope (`engine::ErrorCode`); what only HTTP
//! has (an unknown route or id, a missing token, a full queue) has a code of its own.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::Serialize;

use super::redact::clean_text;
use crate::checkpoint::CheckpointError;
use crate::engine::ErrorCode;
use crate::session::Stop;

/// An error answer.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: String,
    pub message: String,
}

/// The body of an error answer.
#[derive(Serialize, JsonSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Serialize, JsonSchema)]
pub struct ErrorDetail {
    /// The result envelope's `error.code` (`invalid_input`, `session_in_use`, ...), or one
    /// of the API's own: `not_found`, `unauthorized`, `bad_request`, `body_too_large`,
    /// `busy`, `shutting_down`.
    pub code: String,
    /// What went wrong, where, and what to do.
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, code: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code: code.into(),
            message: message.into(),
        }
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    /// A run's code, with the HTTP status that fits it.
    pub fn code(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(status_of(code), code.name(), message)
    }
}

/// The HTTP status of a result's error code: a session held by another run is a conflict,
/// a problem of the machine is the server's, everything else is the request's.
fn status_of(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::SessionInUse | ErrorCode::SessionExists => StatusCode::CONFLICT,
        ErrorCode::Internal
        | ErrorCode::Runtime
        | ErrorCode::RunDir
        | ErrorCode::CheckpointDir
        | ErrorCode::CheckpointWrite
        | ErrorCode::Checkpoint
        | ErrorCode::McpServer
        | ErrorCode::Watch => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::BAD_REQUEST,
    }
}

impl From<Stop> for ApiError {
    /// A run that never started: its code, and the located diagnostics when there are.
    fn from(stop: Stop) -> Self {
        let message = stop.printed.unwrap_or(stop.message);
        ApiError::code(stop.code, message.trim_end().to_string())
    }
}

impl From<CheckpointError> for ApiError {
    fn from(error: CheckpointError) -> Self {
        ApiError::code(error.code(), error.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code,
                message: clean_text(&self.message),
            },
        };
        (self.status, Json(body)).into_response()
    }
}
