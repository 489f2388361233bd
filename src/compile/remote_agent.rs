//! The engine's [`RemoteAgent`] port over A2A: a message goes out with
//! `SendStreamingMessage` (or `SendMessage` when the agent's card says it does not stream),
//! the task's events are folded into its answer, its question or its failure, and a call
//! that outlives its `timeout` cancels its task with `CancelTask`. `--record` writes each
//! exchange into the cassette, `--replay` answers from it without the network.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::OnceCell;

use crate::a2a::{Message, Part, PartContent, SendMessageRequest, StreamResponse, TaskState};
use crate::a2a_client::cassette::{A2aExchange, A2aRecorder, A2aReplay};
use crate::a2a_client::client::{Client, ClientError};
use crate::engine::remote_port::{
    RemoteAgent, RemoteReply, RemoteRequest, RemoteTask, RemoteUpdate, UpdateSink,
};
use crate::provider::{BoxFuture, CassetteRecorder};
use crate::trace_env::ChildTrace;

/// The most characters of a remote agent's answer (its artifacts' text and data).
pub const MAX_ANSWER_CHARS: usize = 1 << 20;
/// How long cancelling an abandoned task may take.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(5);

/// Where a remote agent's exchanges go or come from.
pub enum Cassette {
    Live,
    Record(Arc<CassetteRecorder>),
    Replay(Arc<A2aReplay>),
}

/// A remote A2A agent.
pub struct A2aRemote {
    client: Client,
    /// Kept to cancel from a thread of its own (see [`RemoteAgent::cancel_blocking`]).
    headers: Vec<(String, String)>,
    timeout: Duration,
    cassette: Cassette,
    recorder: Option<A2aRecorder>,
    /// Whether the agent streams, from its card (read once, at the first call).
    streams: OnceCell<bool>,
}

impl A2aRemote {
    /// The agent at `url`, each request with `headers` and the run's `trace` (a
    /// `traceparent` header), live, recorded or replayed as `cassette` says.
    pub fn new(
        url: &str,
        headers: Vec<(String, String)>,
        timeout: Duration,
        (cassette, trace): (Cassette, ChildTrace),
    ) -> Result<Self, String> {
        let client = Client::new(url, &headers, timeout).map_err(|e| e.0)?;
        let client = client.in_trace(trace);
        let recorder = match &cassette {
            Cassette::Record(file) => Some(A2aRecorder::new(file.clone(), &headers)),
            _ => None,
        };
        Ok(A2aRemote {
            client,
            headers,
            timeout,
            cassette,
            recorder,
            streams: OnceCell::new(),
        })
    }

    async fn live(
        &self,
        request: &RemoteRequest,
        updates: UpdateSink<'_>,
    ) -> Result<RemoteReply, String> {
        let task = request
            .task
            .as_ref()
            .map(|t| (t.task_id.as_str(), t.context_id.as_str()));
        let mut exchange = A2aExchange::new(self.client.url(), &request.text, task);
        let mut fold = Fold::default();
        let sent = tokio::time::timeout(
            self.timeout,
            self.exchange(request, &mut fold, updates, &mut exchange),
        )
        .await;
        let outcome = match sent {
            Ok(Ok(())) => fold.reply(),
            Ok(Err(error)) => Err(clean(error.0)),
            Err(_) => Err(self.gave_up(&fold).await),
        };
        if let Some(recorder) = &self.recorder {
            exchange.error = outcome.as_ref().err().cloned();
            recorder.write(&exchange);
        }
        outcome
    }

    async fn exchange(
        &self,
        request: &RemoteRequest,
        fold: &mut Fold,
        updates: UpdateSink<'_>,
        exchange: &mut A2aExchange,
    ) -> Result<(), ClientError> {
        let streams = *self
            .streams
            .get_or_try_init(|| async {
                self.client
                    .card()
                    .await
                    .map(|card| card.capabilities.streaming.unwrap_or(false))
            })
            .await?;
        let record = self.recorder.is_some();
        let mut on_event = |event: StreamResponse| {
            if record {
                exchange.events.push(event.clone());
            }
            fold.take(event, updates)
        };
        self.client
            .send(&send_request(request), streams, &mut on_event)
            .await
    }

    /// The call ran out of time: its task is cancelled, and the error says so.
    async fn gave_up(&self, fold: &Fold) -> String {
        let limit = crate::spec::duration::HumanDuration(self.timeout);
        let Some(task) = &fold.task else {
            return format!("no answer within {limit} (a2a.timeout)");
        };
        match tokio::time::timeout(CANCEL_TIMEOUT, self.client.cancel(&task.task_id)).await {
            Ok(Ok(())) => format!("no answer within {limit} (a2a.timeout); its task was cancelled"),
            Ok(Err(error)) => format!(
                "no answer within {limit} (a2a.timeout); cancelling its task failed: {error}"
            ),
            Err(_) => {
                format!("no answer within {limit} (a2a.timeout); cancelling its task timed out")
            }
        }
    }

    fn replayed(
        &self,
        replay: &A2aReplay,
        request: &RemoteRequest,
        updates: UpdateSink<'_>,
    ) -> Result<RemoteReply, String> {
        let exchange = replay.answer(self.client.url(), &request.text)?;
        let mut fold = Fold::default();
        for event in exchange.events {
            fold.take(event, updates).map_err(|e| e.0)?;
        }
        match exchange.error {
            Some(error) => Err(error),
            None => fold.reply(),
        }
    }
}

impl RemoteAgent for A2aRemote {
    fn url(&self) -> &str {
        self.client.url()
    }

    fn send<'a>(
        &'a self,
        request: RemoteRequest,
        updates: UpdateSink<'a>,
    ) -> BoxFuture<'a, Result<RemoteReply, String>> {
        Box::pin(async move {
            match &self.cassette {
                Cassette::Replay(replay) => self.replayed(replay, &request, updates),
                Cassette::Live | Cassette::Record(_) => self.live(&request, updates).await,
            }
        })
    }

    /// Runs in a thread of its own, with its own runtime and connection: the call is being
    /// dropped, possibly on a runtime that is shutting down.
    fn cancel_blocking(&self, task_id: &str) {
        if matches!(self.cassette, Cassette::Replay(_)) {
            return;
        }
        let (url, headers, task_id) = (
            self.client.url().to_string(),
            self.headers.clone(),
            task_id.to_string(),
        );
        let cancelling = std::thread::spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            runtime.block_on(async {
                let Ok(client) = Client::new(&url, &headers, CANCEL_TIMEOUT) else {
                    return;
                };
                if let Err(error) = tokio::time::timeout(CANCEL_TIMEOUT, client.cancel(&task_id))
                    .await
                    .unwrap_or_else(|_| Err(ClientError("timed out".into())))
                {
                    tracing::warn!(url = %url, "cancelling the remote task failed: {error}");
                }
            });
        });
        let _ = cancelling.join();
    }
}

/// The message of a request: a new task's, or a follow-up on the task that asked.
fn send_request(request: &RemoteRequest) -> SendMessageRequest {
    let part = match &request.data {
        Some(data) => Part::data(data.clone()),
        None => Part::text(request.text.clone()),
    };
    let mut message = Message::user(crate::engine::clock::new_id(), vec![part]);
    if let Some(task) = &request.task {
        message.task_id = Some(task.task_id.clone());
        message.context_id = Some(task.context_id.clone());
    }
    SendMessageRequest {
        tenant: None,
        message,
        configuration: None,
        metadata: None,
    }
}

/// What the events of one call add up to.
#[derive(Default)]
struct Fold {
    task: Option<RemoteTask>,
    state: Option<TaskState>,
    /// The text of the last status message (a question, a failure's reason).
    status_text: Option<String>,
    /// The artifacts' parts, by artifact id, in order of arrival.
    artifacts: Vec<(String, Vec<Part>)>,
    /// An answer sent as a message instead of a task.
    message: Option<Message>,
    chars: usize,
}

impl Fold {
    fn take(&mut self, event: StreamResponse, updates: UpdateSink<'_>) -> Result<(), ClientError> {
        match event {
            StreamResponse::Task(task) => {
                let remote = RemoteTask {
                    task_id: task.id.clone(),
                    context_id: task.context_id.clone(),
                };
                for artifact in task.artifacts {
                    self.artifact(artifact.artifact_id, artifact.parts, false)?;
                }
                self.status(remote, task.status, updates);
            }
            StreamResponse::StatusUpdate(update) => {
                let remote = RemoteTask {
                    task_id: update.task_id,
                    context_id: update.context_id,
                };
                self.status(remote, update.status, updates);
            }
            StreamResponse::ArtifactUpdate(update) => {
                self.artifact(
                    update.artifact.artifact_id,
                    update.artifact.parts,
                    update.append,
                )?;
            }
            StreamResponse::Message(message) => {
                self.chars += message.text().map_or(0, |t| t.chars().count());
                self.bounded()?;
                self.message = Some(message);
            }
        }
        Ok(())
    }

    fn status(
        &mut self,
        task: RemoteTask,
        status: crate::a2a::TaskStatus,
        updates: UpdateSink<'_>,
    ) {
        let text = status.message.as_ref().and_then(Message::text);
        let state = serde_json::to_value(status.state)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let text = text.map(|t| clean(crate::provider::shorten(&t, 4_000)));
        updates(RemoteUpdate {
            task: task.clone(),
            state,
            message: text.clone(),
        });
        self.task = Some(task);
        self.state = Some(status.state);
        self.status_text = text;
    }

    fn artifact(&mut self, id: String, parts: Vec<Part>, append: bool) -> Result<(), ClientError> {
        self.chars += parts.iter().map(part_chars).sum::<usize>();
        self.bounded()?;
        match self.artifacts.iter_mut().find(|(known, _)| *known == id) {
            Some((_, known)) if append => known.extend(parts),
            Some((_, known)) => *known = parts,
            None => self.artifacts.push((id, parts)),
        }
        Ok(())
    }

    fn bounded(&self) -> Result<(), ClientError> {
        match self.chars > MAX_ANSWER_CHARS {
            true => Err(ClientError(format!(
                "the remote agent's answer is longer than {MAX_ANSWER_CHARS} characters"
            ))),
            false => Ok(()),
        }
    }

    /// How the call ended, once its events are all in.
    fn reply(self) -> Result<RemoteReply, String> {
        if let Some(message) = &self.message
            && self.task.is_none()
        {
            return Ok(RemoteReply::Completed(clean_value(answer(&message.parts))));
        }
        let (Some(task), Some(state)) = (self.task, self.state) else {
            return Err("the remote agent answered no task and no message".into());
        };
        let said = self.status_text.unwrap_or_default();
        match state {
            TaskState::Completed => {
                let parts: Vec<Part> = self
                    .artifacts
                    .into_iter()
                    .flat_map(|(_, parts)| parts)
                    .collect();
                match parts.is_empty() {
                    true => Ok(RemoteReply::Completed(Value::String(said))),
                    false => Ok(RemoteReply::Completed(clean_value(answer(&parts)))),
                }
            }
            TaskState::InputRequired => Ok(RemoteReply::InputRequired {
                task,
                question: said,
            }),
            TaskState::Failed
            | TaskState::Rejected
            | TaskState::Canceled
            | TaskState::AuthRequired => {
                let state = serde_json::to_value(state)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                let message = match said.is_empty() {
                    true => "(no message)".to_string(),
                    false => said,
                };
                Ok(RemoteReply::Failed { state, message })
            }
            other => Err(format!(
                "the remote agent's answer ended with its task still {other:?}"
            )),
        }
    }
}

fn part_chars(part: &Part) -> usize {
    match &part.content {
        PartContent::Text(text) | PartContent::Url(text) | PartContent::Raw(text) => {
            text.chars().count()
        }
        PartContent::Data(value) => value.to_string().chars().count(),
    }
}

/// The answer from its parts: one data part is that JSON value; otherwise the text, with
/// data parts as JSON and files by their name or URL.
fn answer(parts: &[Part]) -> Value {
    if let [part] = parts
        && let PartContent::Data(value) = &part.content
    {
        return value.clone();
    }
    let texts: Vec<String> = parts
        .iter()
        .map(|part| match &part.content {
            PartContent::Text(text) => text.clone(),
            PartContent::Data(value) => value.to_string(),
            PartContent::Url(url) => format!("[file: {url}]"),
            PartContent::Raw(_) => {
                format!("[file: {}]", part.filename.as_deref().unwrap_or("bytes"))
            }
        })
        .collect();
    Value::String(texts.join("\n"))
}

/// `text` without the secrets the process knows (the entry's header values among them): a
/// remote agent that echoes its token gives nothing away to the events or the transcript.
fn clean(text: String) -> String {
    crate::secrets::replace(&text, "[REDACTED]").unwrap_or(text)
}

/// [`clean`] over every string of a JSON answer.
fn clean_value(value: Value) -> Value {
    match value {
        Value::String(text) => Value::String(clean(text)),
        Value::Array(items) => Value::Array(items.into_iter().map(clean_value).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .into_iter()
                .map(|(k, v)| (k, clean_value(v)))
                .collect(),
        ),
        other => other,
    }
}
