//! An A2A client over the JSON-RPC binding: what `runner` calls a remote agent with.
//!
//! Every request goes to the URL the agent file names (never to a URL the remote card
//! advertises, so the headers, which carry tokens, reach only the host the user chose), with
//! the file's headers, `A2A-Version: 1.0` and, when a trace is active, `traceparent`.
//! Everything read back is bounded: the card and a plain answer by [`MAX_BODY_BYTES`], a
//! server-sent event by [`MAX_EVENT_BYTES`], a stream by [`MAX_EVENTS`].

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::a2a::{
    AGENT_CARD_PATH, AgentCard, CancelTaskRequest, JsonRpcRequest, JsonRpcResponse, Method,
    PROTOCOL_VERSION, RequestId, SendMessageRequest, SendMessageResponse, StreamResponse,
    VERSION_HEADER,
};
use crate::trace_env::ChildTrace;

/// The most bytes read of a card or of a non-streamed response.
pub const MAX_BODY_BYTES: usize = 4 << 20;
/// The most bytes of one server-sent event (one line of `data:` or several).
pub const MAX_EVENT_BYTES: usize = 1 << 20;
/// The most events one streamed call may carry.
pub const MAX_EVENTS: usize = 10_000;

/// Why a call failed, as a sentence for the tool result (never with a header's value).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ClientError(pub String);

/// A remote agent at one URL, with the headers every request carries.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    url: reqwest::Url,
    headers: HeaderMap,
    /// The trace of the run that calls (its span goes as `traceparent`).
    trace: ChildTrace,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The headers carry tokens: only their names are shown.
        let names: Vec<&str> = self.headers.keys().map(HeaderName::as_str).collect();
        f.debug_struct("Client")
            .field("url", &self.url.as_str())
            .field("headers", &names)
            .finish()
    }
}

impl Client {
    /// A client of the agent at `url` (http or https), connecting within `connect_timeout`.
    pub fn new(
        url: &str,
        headers: &[(String, String)],
        connect_timeout: Duration,
    ) -> Result<Self, ClientError> {
        let parsed = check_url(url)?;
        let http = crate::provider::http_client(connect_timeout, url).map_err(ClientError)?;
        Ok(Client {
            http,
            url: parsed,
            headers: header_map(headers)?,
            trace: ChildTrace::default(),
        })
    }

    /// The same client, calling for a run in `trace`: the remote agent's spans join it.
    pub fn in_trace(self, trace: ChildTrace) -> Self {
        Client { trace, ..self }
    }

    /// The URL requests go to.
    pub fn url(&self) -> &str {
        self.url.as_str()
    }

    /// The agent's card, from `{url}/.well-known/agent-card.json`.
    pub async fn card(&self) -> Result<AgentCard, ClientError> {
        let base = format!("{}/", self.url.as_str().trim_end_matches('/'));
        let card_url = format!("{base}{AGENT_CARD_PATH}");
        let response = self
            .http
            .get(&card_url)
            .headers(self.request_headers())
            .send()
            .await
            .map_err(|e| {
                ClientError(format!(
                    "cannot fetch the agent card at {card_url}: {}",
                    chain(&e)
                ))
            })?;
        let status = response.status();
        let body = read_bounded(response, MAX_BODY_BYTES).await?;
        if !status.is_success() {
            return Err(ClientError(format!(
                "the agent card at {card_url} answered HTTP {status}"
            )));
        }
        serde_json::from_slice(&body).map_err(|e| {
            ClientError(format!(
                "the agent card at {card_url} is not an A2A 1.0 card: {e}"
            ))
        })
    }

    /// Sends a message, streamed (`SendStreamingMessage`) or not (`SendMessage`); each event
    /// (for `SendMessage`, its one result) goes to `on_event`, which may stop the call.
    pub async fn send(
        &self,
        request: &SendMessageRequest,
        streaming: bool,
        on_event: &mut (dyn FnMut(StreamResponse) -> Result<(), ClientError> + Send),
    ) -> Result<(), ClientError> {
        if !streaming {
            let result: SendMessageResponse = self.call(Method::SendMessage, request).await?;
            return on_event(match result {
                SendMessageResponse::Task(task) => StreamResponse::Task(task),
                SendMessageResponse::Message(message) => StreamResponse::Message(message),
            });
        }
        let response = self.post(Method::SendStreamingMessage, request).await?;
        let is_stream = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_stream {
            // A JSON-RPC error comes back as a plain JSON response.
            let body = read_bounded(response, MAX_BODY_BYTES).await?;
            let answer: JsonRpcResponse<StreamResponse> = parse_response(&body)?;
            return on_event(result_of(answer)?);
        }
        read_stream(response, on_event).await
    }

    /// Cancels a task (`CancelTask`).
    pub async fn cancel(&self, task_id: &str) -> Result<(), ClientError> {
        let request = CancelTaskRequest {
            tenant: None,
            id: task_id.to_string(),
            metadata: None,
        };
        self.call::<Value>(Method::CancelTask, &request)
            .await
            .map(|_| ())
    }

    async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        params: &impl Serialize,
    ) -> Result<T, ClientError> {
        let response = self.post(method, params).await?;
        let body = read_bounded(response, MAX_BODY_BYTES).await?;
        result_of(parse_response(&body)?)
    }

    async fn post(
        &self,
        method: Method,
        params: &impl Serialize,
    ) -> Result<reqwest::Response, ClientError> {
        let params = serde_json::to_value(params).map_err(|e| ClientError(e.to_string()))?;
        let request = JsonRpcRequest::new(RequestId::Number(1), method.name(), params);
        let response = self
            .http
            .post(self.url.clone())
            .headers(self.request_headers())
            .json(&request)
            .send()
            .await
            .map_err(|e| ClientError(format!("cannot reach {}: {}", self.url, chain(&e))))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let body = read_bounded(response, MAX_BODY_BYTES)
            .await
            .unwrap_or_default();
        match parse_response::<Value>(&body).ok().and_then(|r| r.error) {
            Some(error) => Err(rpc_error(&error)),
            None => Err(ClientError(format!("{} answered HTTP {status}", self.url))),
        }
    }

    fn request_headers(&self) -> HeaderMap {
        let mut headers = self.headers.clone();
        headers.insert(
            HeaderName::from_static("a2a-version"),
            HeaderValue::from_static(PROTOCOL_VERSION),
        );
        // A trace in progress continues at the remote agent; a header the file sets wins.
        for (name, value) in self.trace.headers() {
            if let Ok(value) = HeaderValue::from_str(&value) {
                headers
                    .entry(HeaderName::from_static(name))
                    .or_insert(value);
            }
        }
        debug_assert!(VERSION_HEADER.eq_ignore_ascii_case("a2a-version"));
        headers
    }
}

/// `url` when it is http or https.
pub fn check_url(url: &str) -> Result<reqwest::Url, ClientError> {
    match reqwest::Url::parse(url) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => Ok(parsed),
        Ok(parsed) => Err(ClientError(format!(
            "`url` must be http or https, not `{}`",
            parsed.scheme()
        ))),
        Err(error) => Err(ClientError(format!("`url` is not a valid URL: {error}"))),
    }
}

/// The file's headers as sensitive values (never printed by reqwest's debug output).
fn header_map(headers: &[(String, String)]) -> Result<HeaderMap, ClientError> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| ClientError(format!("header `{name}` is not a valid header name")))?;
        // The message never repeats the value: it usually carries a token.
        let mut value = HeaderValue::from_str(value).map_err(|_| {
            ClientError(format!(
                "the value of header `{name}` is not a valid header value (after rendering)"
            ))
        })?;
        value.set_sensitive(true);
        map.insert(header, value);
    }
    Ok(map)
}

fn parse_response<T: DeserializeOwned>(body: &[u8]) -> Result<JsonRpcResponse<T>, ClientError> {
    serde_json::from_slice(body).map_err(|e| {
        ClientError(format!(
            "the remote agent's answer is not an A2A 1.0 JSON-RPC response: {e}"
        ))
    })
}

fn result_of<T>(response: JsonRpcResponse<T>) -> Result<T, ClientError> {
    match (response.result, response.error) {
        (_, Some(error)) => Err(rpc_error(&error)),
        (Some(result), None) => Ok(result),
        (None, None) => Err(ClientError(
            "the remote agent's answer has neither result nor error".into(),
        )),
    }
}

fn rpc_error(error: &crate::a2a::JsonRpcError) -> ClientError {
    ClientError(format!(
        "the remote agent answered error {}: {}",
        error.code, error.message
    ))
}

/// Reads a body up to `limit` bytes; more is an error, not a cut.
async fn read_bounded(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, ClientError> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| ClientError(format!("reading the answer: {}", chain(&e))))?
    {
        if body.len() + chunk.len() > limit {
            return Err(ClientError(format!(
                "the remote agent's answer is larger than {limit} bytes"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Reads a stream of server-sent events, each the JSON-RPC response of one event.
async fn read_stream(
    mut response: reqwest::Response,
    on_event: &mut (dyn FnMut(StreamResponse) -> Result<(), ClientError> + Send),
) -> Result<(), ClientError> {
    let mut events = SseEvents::default();
    let mut count = 0;
    loop {
        let chunk = response
            .chunk()
            .await
            .map_err(|e| ClientError(format!("the remote agent's stream broke: {}", chain(&e))))?;
        let done = chunk.is_none();
        let data = match chunk {
            Some(chunk) => events.feed(&chunk)?,
            None => events.finish(),
        };
        for data in data {
            count += 1;
            if count > MAX_EVENTS {
                return Err(ClientError(format!(
                    "the remote agent sent more than {MAX_EVENTS} events"
                )));
            }
            let answer: JsonRpcResponse<StreamResponse> = parse_response(data.as_bytes())?;
            on_event(result_of(answer)?)?;
        }
        if done {
            return Ok(());
        }
    }
}

/// The `data` of server-sent events, as they complete; a line or an event larger than
/// [`MAX_EVENT_BYTES`] is an error.
#[derive(Default)]
struct SseEvents {
    line: Vec<u8>,
    data: String,
    has_data: bool,
}

impl SseEvents {
    fn feed(&mut self, mut chunk: &[u8]) -> Result<Vec<String>, ClientError> {
        let mut complete = Vec::new();
        while let Some(nl) = memchr::memchr(b'\n', chunk) {
            self.line.extend_from_slice(&chunk[..nl]);
            chunk = &chunk[nl + 1..];
            let line = std::mem::take(&mut self.line);
            complete.extend(self.line_done(&line)?);
        }
        self.line.extend_from_slice(chunk);
        if self.line.len() + self.data.len() > MAX_EVENT_BYTES {
            return Err(too_large());
        }
        Ok(complete)
    }

    fn finish(&mut self) -> Vec<String> {
        let line = std::mem::take(&mut self.line);
        let mut complete: Vec<String> = self.line_done(&line).ok().flatten().into_iter().collect();
        complete.extend(self.line_done(b"").ok().flatten());
        complete
    }

    fn line_done(&mut self, line: &[u8]) -> Result<Option<String>, ClientError> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            let had = std::mem::take(&mut self.has_data);
            let data = std::mem::take(&mut self.data);
            return Ok(had.then_some(data));
        }
        let Some(value) = line.strip_prefix(b"data:") else {
            return Ok(None); // `event:`, `id:`, comments: nothing the JSON-RPC binding uses
        };
        let value = value.strip_prefix(b" ").unwrap_or(value);
        if self.data.len() + value.len() > MAX_EVENT_BYTES {
            return Err(too_large());
        }
        if self.has_data {
            self.data.push('\n');
        }
        self.data.push_str(&String::from_utf8_lossy(value));
        self.has_data = true;
        Ok(None)
    }
}

fn too_large() -> ClientError {
    ClientError(format!(
        "the remote agent sent an event larger than {MAX_EVENT_BYTES} bytes"
    ))
}

/// An error and its causes, without type names.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks_and_lines() {
        let mut events = SseEvents::default();
        assert!(events.feed(b"data: {\"a\"").unwrap().is_empty());
        let done = events.feed(b":1}\r\n\r\ndata: 2\n").unwrap();
        assert_eq!(done, vec!["{\"a\":1}".to_string()]);
        assert_eq!(events.finish(), vec!["2".to_string()]);
    }

    #[test]
    fn an_endless_line_is_refused() {
        let mut events = SseEvents::default();
        let long = vec![b'x'; MAX_EVENT_BYTES + 1];
        assert_eq!(events.feed(&long).unwrap_err(), too_large());
    }

    #[test]
    fn the_debug_output_never_shows_a_header_value() {
        let headers = [("Authorization".to_string(), "Bearer s3cret".to_string())];
        let client = Client::new("http://127.0.0.1:9/a", &headers, Duration::from_secs(1)).unwrap();
        let shown = format!("{client:?}");
        assert!(
            shown.contains("authorization") && !shown.contains("s3cret"),
            "{shown}"
        );
    }

    #[test]
    fn only_http_urls() {
        assert!(
            check_url("file:///etc/passwd")
                .unwrap_err()
                .0
                .contains("http or https")
        );
    }
}
