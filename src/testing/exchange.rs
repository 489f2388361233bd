//! What the mock server receives ([`MockRequest`]) and what it answers
//! ([`MockResponse`]): a wire-neutral [`Reply`], an error body in the request's wire
//! format, or raw bytes, plus the faults to inject while sending it.

use std::time::Duration;

use serde_json::{Value, json};

use super::reply::Reply;

/// Which API a request was made to (from its path).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    OpenAi,
    /// The OpenAI Responses API.
    Responses,
    Anthropic,
    Unknown,
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct MockRequest {
    /// 1-based position among all requests to this server.
    pub number: usize,
    pub method: String,
    /// Path with query string.
    pub path: String,
    /// Lower-cased names.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Null` when it is not JSON).
    pub body: Value,
}

impl MockRequest {
    /// The tool results a Chat Completions request sends back: (call id, content), in order.
    pub fn tool_results(&self) -> Vec<(String, String)> {
        let messages = self.body["messages"].as_array().map(Vec::as_slice);
        let tool = messages
            .unwrap_or_default()
            .iter()
            .filter(|m| m["role"] == "tool");
        tool.map(|m| {
            let id = m["tool_call_id"].as_str().unwrap_or_default().to_string();
            (id, m["content"].as_str().unwrap_or_default().to_string())
        })
        .collect()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn wire(&self) -> Wire {
        let path = self.path.split('?').next().unwrap_or("");
        if path.ends_with("/chat/completions") {
            Wire::OpenAi
        } else if path.ends_with("/responses") {
            Wire::Responses
        } else if path.ends_with("/messages") {
            Wire::Anthropic
        } else {
            Wire::Unknown
        }
    }

    /// The stop sequences asked for (`stop` or Anthropic's `stop_sequences`).
    pub fn stop_sequences(&self) -> Vec<String> {
        let stop = match self.wire() {
            Wire::Anthropic => &self.body["stop_sequences"],
            _ => &self.body["stop"],
        };
        match stop {
            Value::String(one) => vec![one.clone()],
            Value::Array(many) => many
                .iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The system prompt, in any wire format.
    pub fn system_prompt(&self) -> Option<String> {
        match self.wire() {
            Wire::Responses => match &self.body["instructions"] {
                Value::String(s) => Some(s.clone()),
                _ => self
                    .conversation()
                    .iter()
                    .find(|m| m["role"] == "system" || m["role"] == "developer")
                    .map(|m| content_text(&m["content"])),
            },
            Wire::Anthropic => match &self.body["system"] {
                Value::String(s) => Some(s.clone()),
                Value::Array(blocks) => {
                    Some(blocks.iter().filter_map(|b| b["text"].as_str()).collect())
                }
                _ => None,
            },
            _ => self.body["messages"]
                .as_array()?
                .iter()
                .find(|m| m["role"] == "system" || m["role"] == "developer")
                .map(|m| content_text(&m["content"])),
        }
    }

    /// The text of the last user message (tool results excluded).
    pub fn last_user_text(&self) -> Option<String> {
        if let Value::String(input) = &self.body["input"] {
            return Some(input.clone()); // the Responses API's plain-text input
        }
        self.conversation()
            .iter()
            .rev()
            .filter(|m| m["role"] == "user")
            .find_map(|m| {
                let text = content_text(&m["content"]);
                (!text.is_empty()).then_some(text)
            })
    }

    /// The messages (Chat Completions, Anthropic) or input items (Responses).
    pub fn conversation(&self) -> &[Value] {
        let list = match self.wire() {
            Wire::Responses => &self.body["input"],
            _ => &self.body["messages"],
        };
        list.as_array().map_or(&[], Vec::as_slice)
    }

    /// Whether the client asked for a stream.
    pub fn wants_stream(&self) -> bool {
        self.body["stream"] == Value::Bool(true)
    }

    pub fn model(&self) -> &str {
        self.body["model"].as_str().unwrap_or("mock-model")
    }
}

/// Text of an OpenAI `content` (string or parts, Responses `input_text`/`output_text`
/// parts included) or Anthropic content blocks.
fn content_text(content: &Value) -> String {
    let is_text = |p: &&Value| {
        ["text", "input_text", "output_text"].contains(&p["type"].as_str().unwrap_or(""))
    };
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(is_text)
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[derive(Debug, Clone)]
enum Body {
    /// Answer in the request's wire format.
    Reply(Reply),
    /// An error body in the request's wire format.
    Error(String),
    /// Exactly these bytes, one HTTP chunk each.
    Raw {
        content_type: String,
        chunks: Vec<Vec<u8>>,
    },
}

/// One scripted answer, with its faults.
#[derive(Debug, Clone)]
pub struct MockResponse {
    status: u16,
    pub(crate) headers: Vec<(String, String)>,
    body: Body,
    pub(crate) chunk_delay: Duration,
    pub(crate) drop_after: Option<usize>,
    split_every: Option<usize>,
}

impl MockResponse {
    fn new(status: u16, body: Body) -> Self {
        MockResponse {
            status,
            headers: Vec::new(),
            body,
            chunk_delay: Duration::ZERO,
            drop_after: None,
            split_every: None,
        }
    }

    /// A model answer, rendered in the request's wire format (streamed or not, as asked).
    pub fn reply(reply: Reply) -> Self {
        Self::new(200, Body::Reply(reply))
    }

    /// Whether this is a model answer that calls a tool.
    pub fn calls_tools(&self) -> bool {
        matches!(&self.body, Body::Reply(reply) if !reply.tool_calls.is_empty())
    }

    /// Shorthand for `reply(Reply::text(text))`.
    pub fn text(text: impl Into<String>) -> Self {
        Self::reply(Reply::text(text))
    }

    /// An HTTP error with the API's error body shape for the request's wire format.
    pub fn error(status: u16, message: impl Into<String>) -> Self {
        Self::new(status, Body::Error(message.into()))
    }

    /// The refusal of a request longer than the model's context window, as each kind of
    /// server sends it: OpenAI's Chat Completions (`context_length_exceeded`) and Responses
    /// API, Anthropic's `prompt is too long`, and llama.cpp's `exceed_context_size_error`
    /// (its OpenAI-compatible server: `Wire::Unknown` here).
    pub fn context_length_exceeded(wire: Wire) -> Self {
        let body = match wire {
            Wire::OpenAi => serde_json::json!({"error": {
                "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9001 tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
            Wire::Responses => serde_json::json!({"error": {
                "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
                "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}}),
            Wire::Anthropic => serde_json::json!({"type": "error", "error": {
                "type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}}),
            Wire::Unknown => serde_json::json!({"error": {
                "code": 400, "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error", "n_prompt_tokens": 9001, "n_ctx": 8192}}),
        };
        Self::json(400, &body)
    }

    /// A 200 `text/event-stream` with exactly these bytes (fixtures, malformed data).
    pub fn sse(body: impl Into<Vec<u8>>) -> Self {
        Self::raw(200, "text/event-stream", body)
    }

    /// A 200 stream sent as these chunks, in order.
    pub fn sse_chunks(chunks: Vec<Vec<u8>>) -> Self {
        Self::new(
            200,
            Body::Raw {
                content_type: "text/event-stream".into(),
                chunks,
            },
        )
    }

    /// Any status, content type and body bytes.
    pub fn raw(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self::new(
            status,
            Body::Raw {
                content_type: content_type.into(),
                chunks: vec![body.into()],
            },
        )
    }

    /// A JSON body with this status.
    pub fn json(status: u16, body: &Value) -> Self {
        Self::raw(status, "application/json", body.to_string())
    }

    pub fn status(mut self, status: u16) -> Self {
        self.status = status;
        self
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// Adds `Retry-After: value` (seconds or an HTTP date).
    pub fn retry_after(self, value: &str) -> Self {
        self.header("retry-after", value)
    }

    /// Waits this long before each chunk after the first.
    pub fn chunk_delay(mut self, delay: Duration) -> Self {
        self.chunk_delay = delay;
        self
    }

    /// Cuts the connection after sending `n` body chunks (no proper end of body).
    pub fn drop_after(mut self, n: usize) -> Self {
        self.drop_after = Some(n);
        self
    }

    /// Re-cuts the body into chunks of `n` bytes (mid-line, mid-character), to test
    /// incremental parsing.
    pub fn split_every(mut self, n: usize) -> Self {
        self.split_every = Some(n.max(1));
        self
    }

    /// Status, content type, chunks (and whether to stream them) for `req`.
    pub(crate) fn render(&self, req: &MockRequest) -> (u16, String, Vec<Vec<u8>>, bool) {
        let (content_type, chunks) = match &self.body {
            Body::Raw {
                content_type,
                chunks,
            } => (content_type.clone(), chunks.clone()),
            Body::Error(message) => {
                let body = match req.wire() {
                    Wire::Anthropic => {
                        json!({"type": "error", "error": {"type": error_type(self.status), "message": message}})
                    }
                    _ => {
                        json!({"error": {"message": message, "type": error_type(self.status), "param": null, "code": null}})
                    }
                };
                (
                    "application/json".into(),
                    vec![body.to_string().into_bytes()],
                )
            }
            Body::Reply(reply) => {
                let reply = &reply.stopped_at(&req.stop_sequences());
                let (model, n) = (req.model(), req.number);
                match (req.wire(), req.wants_stream()) {
                    (Wire::Anthropic, true) => (
                        "text/event-stream".into(),
                        bytes(reply.anthropic_events(model, n)),
                    ),
                    (Wire::Anthropic, false) => (
                        "application/json".into(),
                        vec![reply.anthropic_json(model, n).to_string().into_bytes()],
                    ),
                    (Wire::Responses, true) => (
                        "text/event-stream".into(),
                        bytes(reply.responses_events(model, n)),
                    ),
                    (Wire::Responses, false) => (
                        "application/json".into(),
                        vec![reply.responses_json(model, n).to_string().into_bytes()],
                    ),
                    (_, true) => (
                        "text/event-stream".into(),
                        bytes(reply.openai_events(model, n)),
                    ),
                    (_, false) => (
                        "application/json".into(),
                        vec![reply.openai_json(model, n).to_string().into_bytes()],
                    ),
                }
            }
        };
        let chunks = match self.split_every {
            Some(n) => chunks.concat().chunks(n).map(<[u8]>::to_vec).collect(),
            None => chunks,
        };
        let streamed = content_type.starts_with("text/event-stream");
        (self.status, content_type, chunks, streamed)
    }
}

fn bytes(events: Vec<String>) -> Vec<Vec<u8>> {
    events.into_iter().map(String::into_bytes).collect()
}

fn error_type(status: u16) -> &'static str {
    match status {
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        500..=599 => "api_error",
        _ => "invalid_request_error",
    }
}
