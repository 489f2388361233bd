//! `GET /api/agents`, and the answer to a route that does not exist.

use axum::Json;
use axum::extract::State;
use axum::http::Uri;

use super::agents::AgentEntry;
use super::error::ApiError;
use super::redact::clean_value;
use super::server::Shared;

/// Every agent file found, valid or not (with its diagnostics).
pub async fn list(State(server): State<Shared>) -> Result<Json<serde_json::Value>, ApiError> {
    let listed = tokio::task::spawn_blocking(move || server.catalog.list()).await;
    let entries: Vec<AgentEntry> = listed
        .map_err(|error| ApiError::code(crate::engine::ErrorCode::Internal, error.to_string()))?
        .map_err(ApiError::not_found)?;
    let value = serde_json::to_value(entries).unwrap_or_default();
    Ok(Json(clean_value(value)))
}

pub async fn no_route(uri: Uri) -> ApiError {
    ApiError::not_found(format!(
        "no route {} (GET /api/openapi.json lists them)",
        uri.path()
    ))
}
