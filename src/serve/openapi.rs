//! `GET /api/openapi.json`: the API as an OpenAPI 3.0 document. Every body's schema is
//! generated from the Rust type the server reads or writes (schemars, as the agent and
//! event schemas are); only the list of routes is written here.

use axum::Json;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};

use super::agents::AgentEntry;
use super::api_runs::{StartRun, Started};
use super::api_sessions::AnswerRequest;
use super::error::ErrorBody;
use crate::engine::events::Event;

pub async fn document() -> Json<Value> {
    Json(openapi())
}

/// The document.
pub fn openapi() -> Value {
    let mut generator = SchemaGenerator::new(SchemaSettings::openapi3());
    let schema = |name: &str, value: Value| json!({"description": name, "content": {"application/json": {"schema": value}}});
    let start = generator.subschema_for::<StartRun>().to_value();
    let started = generator.subschema_for::<Started>().to_value();
    let answer = generator.subschema_for::<AnswerRequest>().to_value();
    let agents = generator.subschema_for::<Vec<AgentEntry>>().to_value();
    let error = generator.subschema_for::<ErrorBody>().to_value();
    let event = generator.subschema_for::<Event>().to_value();
    let object = json!({"type": "object"});
    let errors = || {
        json!({
            "default": schema("An error: its code and message", error.clone()),
        })
    };
    let with = |mut responses: Value, status: &str, response: Value| {
        responses[status] = response;
        responses
    };
    let id = json!([{"name": "id", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,128}$"}}]);
    let paths = json!({
        "/api/agents": {"get": {
            "summary": "The agent files served, valid or not",
            "responses": with(errors(), "200", schema("The agents", agents)),
        }},
        "/api/runs": {"post": {
            "summary": "Start a run",
            "requestBody": {"required": true, "content": {"application/json": {"schema": start}}},
            "responses": with(errors(), "201", schema("The run started", started.clone())),
        }},
        "/api/runs/{id}": {"get": {
            "summary": "The result envelope (result.json), `status: running` while it goes",
            "parameters": id,
            "responses": with(errors(), "200", schema("The envelope", object.clone())),
        }},
        "/api/runs/{id}/events": {"get": {
            "summary": "The run's events as server-sent events (each the JSON of one events.jsonl line); `Last-Event-ID` resumes",
            "parameters": id,
            "responses": with(errors(), "200", json!({"description": "text/event-stream of events", "content": {"text/event-stream": {"schema": event}}})),
        }},
        "/api/runs/{id}/transcript": {"get": {
            "summary": "The run's transcript: ?format=text|markdown|json",
            "parameters": id,
            "responses": with(errors(), "200", json!({"description": "The rendered transcript"})),
        }},
        "/api/runs/{id}/cancel": {"post": {
            "summary": "Interrupt a run going here",
            "parameters": id,
            "responses": with(errors(), "202", schema("The run, being interrupted", started.clone())),
        }},
        "/api/sessions": {"get": {
            "summary": "The sessions of .runner/sessions",
            "responses": with(errors(), "200", schema("The sessions", json!({"type": "array", "items": object.clone()}))),
        }},
        "/api/sessions/{id}": {
            "get": {"summary": "A session's metadata", "parameters": id,
                    "responses": with(errors(), "200", schema("The metadata", object.clone()))},
            "delete": {"summary": "Delete a session and its runs", "parameters": id,
                       "responses": with(errors(), "204", json!({"description": "Deleted"}))},
        },
        "/api/sessions/{id}/answer": {"post": {
            "summary": "Answer what a paused session waits for; a new run continues it",
            "parameters": id,
            "requestBody": {"required": true, "content": {"application/json": {"schema": answer}}},
            "responses": with(errors(), "201", schema("The run started", started.clone())),
        }},
        "/api/sessions/{id}/resume": {"post": {
            "summary": "Continue an interrupted, failed or limited session",
            "parameters": id,
            "responses": with(errors(), "201", schema("The run started", started)),
        }},
    });
    let schemas: Map<String, Value> = generator.take_definitions(true);
    json!({
        "openapi": "3.0.3",
        "info": {"title": "runner serve", "version": env!("CARGO_PKG_VERSION")},
        "paths": paths,
        "components": {"schemas": schemas},
    })
}
