//! `GET /api/runs/{id}/events`: the run's events as server-sent events, each the JSON line
//! `events.jsonl` has, with `id:` its line number (from 1). A client that connects late
//! gets the run from its first event; one that reconnects with `Last-Event-ID: N` gets the
//! events after the N-th, none twice. When the run is over the stream ends with one
//! `event: end` (no id) whose data is `{"status": ...}`.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::Stream;
use futures_util::stream;
use serde_json::json;

use super::error::ApiError;
use super::ids::checked;
use super::lines::LineReader;
use super::redact::clean_text;
use super::runs::LiveRun;
use super::server::Shared;
use crate::session::run_dir::runs_dir;
use std::sync::Arc;

/// How long the end of a stream waits for the run's result after its last event.
const RESULT_SETTLES: Duration = Duration::from_secs(10);

/// Where a stream's events come from.
enum Source {
    /// A run this server holds: its lines from the first (or after `Last-Event-ID`), then
    /// the live ones, each serialized and redacted once for every client.
    Live(Arc<LiveRun>, LineReader),
    /// An ended run's `events.jsonl`, and its result's status.
    Disk(std::vec::IntoIter<String>, String),
}

struct Reader {
    source: Source,
    /// The id of the last event sent.
    sent: u64,
    ended: bool,
}

pub async fn stream(
    State(server): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let id = checked(&id)?;
    let after = last_event_id(&headers)?;
    let reader = match server.runs.get(id) {
        Some(run) => {
            let lines = run.lines(usize::try_from(after).unwrap_or(usize::MAX));
            Reader {
                source: Source::Live(run, lines),
                sent: after,
                ended: false,
            }
        }
        None => {
            let mut reader = Reader {
                source: from_disk(id)?,
                sent: 0,
                ended: false,
            };
            reader.skip(after);
            reader
        }
    };
    let events = stream::unfold(reader, |mut reader| async move {
        let event = reader.next().await?;
        Some((Ok(event), reader))
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}

/// `Last-Event-ID`: the id of the last event the client has (0: none).
fn last_event_id(headers: &HeaderMap) -> Result<u64, ApiError> {
    let Some(value) = headers.get("last-event-id") else {
        return Ok(0);
    };
    value
        .to_str()
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .ok_or_else(|| {
            ApiError::bad_request("Last-Event-ID: expected the number of an event's `id:`")
        })
}

fn from_disk(id: &str) -> Result<Source, ApiError> {
    let dir = runs_dir().join(id);
    let text = std::fs::read_to_string(dir.join("events.jsonl"))
        .map_err(|_| ApiError::not_found(format!("no run `{id}` (in {})", runs_dir().display())))?;
    let status = std::fs::read_to_string(dir.join("result.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|result| result["status"].as_str().map(String::from))
        .unwrap_or_else(|| "unknown".into());
    let lines: Vec<String> = text.lines().map(String::from).collect();
    Ok(Source::Disk(lines.into_iter(), status))
}

impl Reader {
    /// Passes over the lines of `events.jsonl` a reconnecting client has.
    fn skip(&mut self, count: u64) {
        if let Source::Disk(lines, _) = &mut self.source {
            let skipped = lines
                .take(usize::try_from(count).unwrap_or(usize::MAX))
                .count();
            self.sent = skipped as u64;
        }
    }

    /// The next event's JSON line, redacted, counted.
    async fn next_line(&mut self) -> Option<Arc<str>> {
        let line = match &mut self.source {
            Source::Live(_, lines) => lines.next().await?,
            Source::Disk(lines, _) => Arc::from(clean_text(&lines.next()?)),
        };
        self.sent += 1;
        Some(line)
    }

    async fn next(&mut self) -> Option<SseEvent> {
        if self.ended {
            return None;
        }
        if let Some(line) = self.next_line().await {
            return Some(SseEvent::default().id(self.sent.to_string()).data(&*line));
        }
        self.ended = true;
        let status = match &self.source {
            Source::Live(run, _) => run
                .wait_ended(RESULT_SETTLES)
                .await
                .map_or_else(|| "unknown".to_string(), |r| r.status.name().to_string()),
            Source::Disk(_, status) => status.clone(),
        };
        Some(
            SseEvent::default()
                .event("end")
                .data(json!({"status": status}).to_string()),
        )
    }
}
