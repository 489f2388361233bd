//! One error type for every provider, classified by [`ErrorKind`] so the retry layer
//! and the engine decide on the kind, never on message text.
//!
//! Messages come from servers and quote them whole; the HTTP client passes every error
//! through [`ProviderError::redact`] with the API key, which also
//! shortens the message, before it reaches anyone, so a server that echoes the key
//! cannot leak it.

use std::fmt;
use std::time::Duration;

use super::types::ModelRequest;

/// What went wrong, at the granularity callers act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The env var named by `api_key_env` is unset or empty. Raised before any request.
    MissingKey,
    /// 401/403: the key was refused.
    Auth,
    /// 400/422 and other 4xx: the request itself is wrong; retrying cannot help.
    BadRequest,
    /// 404: unknown model or wrong `base_url`.
    NotFound,
    /// 429 or a rate-limit error inside a stream.
    RateLimited,
    /// 409, 5xx, 529, overloaded: the server failed; worth retrying.
    Server,
    /// Connection refused/reset, DNS, TLS, a body cut off at the transport level.
    Network,
    /// The request or the gap between two chunks took longer than configured (or 408).
    Timeout,
    /// The stream ended without its terminal event (`[DONE]`, finish_reason, message_stop).
    IncompleteStream,
    /// The server sent something that is not the wire format (malformed JSON, ...).
    Protocol,
    /// A scripted provider was asked for more responses than its script holds.
    ScriptExhausted,
    /// A replayed run made a request the cassette has no answer for.
    ReplayMiss,
    /// Bad provider configuration or an unreadable/unwritable cassette.
    Config,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::MissingKey => "missing_key",
            ErrorKind::Auth => "auth",
            ErrorKind::BadRequest => "bad_request",
            ErrorKind::NotFound => "not_found",
            ErrorKind::RateLimited => "rate_limited",
            ErrorKind::Server => "server",
            ErrorKind::Network => "network",
            ErrorKind::Timeout => "timeout",
            ErrorKind::IncompleteStream => "incomplete_stream",
            ErrorKind::Protocol => "protocol",
            ErrorKind::ScriptExhausted => "script_exhausted",
            ErrorKind::ReplayMiss => "replay_miss",
            ErrorKind::Config => "config",
        }
    }

    /// Parses [`ErrorKind::as_str`] back (used by cassettes).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    pub const ALL: [ErrorKind; 13] = [
        ErrorKind::MissingKey,
        ErrorKind::Auth,
        ErrorKind::BadRequest,
        ErrorKind::NotFound,
        ErrorKind::RateLimited,
        ErrorKind::Server,
        ErrorKind::Network,
        ErrorKind::Timeout,
        ErrorKind::IncompleteStream,
        ErrorKind::Protocol,
        ErrorKind::ScriptExhausted,
        ErrorKind::ReplayMiss,
        ErrorKind::Config,
    ];
}

/// A failed model call: kind, the provider's own message, an optional hint on what to
/// do, and what the retry layer needs (status, `Retry-After`).
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderError {
    pub kind: ErrorKind,
    /// Which provider failed ("openai", "anthropic", ...).
    pub provider: String,
    pub message: String,
    pub status: Option<u16>,
    pub hint: Option<String>,
    /// The server's `Retry-After`, when it sent one.
    pub retry_after: Option<Duration>,
    /// How many attempts were made (set by the retry layer; 1 without it).
    pub attempts: u32,
}

impl ProviderError {
    pub fn new(kind: ErrorKind, provider: impl Into<String>, message: impl Into<String>) -> Self {
        ProviderError {
            kind,
            provider: provider.into(),
            message: message.into(),
            status: None,
            hint: None,
            retry_after: None,
            attempts: 1,
        }
    }

    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn with_retry_after(mut self, retry_after: Option<Duration>) -> Self {
        self.retry_after = retry_after;
        self
    }

    /// Worth another attempt: rate limits, server errors, network trouble, timeouts and
    /// streams cut short. Never auth, bad requests or configuration.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::RateLimited
                | ErrorKind::Server
                | ErrorKind::Network
                | ErrorKind::Timeout
                | ErrorKind::IncompleteStream
        )
    }

    /// A refusal of a request longer than the model's context window: a 4xx (or an error in
    /// a stream) whose message says so, on every wire.
    pub fn is_context_overflow(&self) -> bool {
        self.kind == ErrorKind::BadRequest
            && self
                .status
                .is_none_or(|status| (400..=499).contains(&status))
            && context_overflow(&self.message)
    }

    /// Classifies an HTTP error status, adding the standard hints.
    pub fn from_status(
        provider: &str,
        status: u16,
        message: String,
        key_env: Option<&str>,
    ) -> Self {
        // llama.cpp answers a request that breaks its chat template with a 400 (older
        // builds: a 500).
        let unreadable =
            (status == 400 || (500..=599).contains(&status)) && unreadable_request(&message);
        let overflow = (400..=499).contains(&status) && context_overflow(&message);
        let kind = match status {
            _ if unreadable => ErrorKind::BadRequest,
            401 | 403 => ErrorKind::Auth,
            404 => ErrorKind::NotFound,
            408 => ErrorKind::Timeout,
            429 => ErrorKind::RateLimited,
            409 | 500..=599 => ErrorKind::Server,
            _ => ErrorKind::BadRequest,
        };
        let err = ProviderError::new(kind, provider, message).with_status(status);
        let var = key_env.unwrap_or("the api_key_env variable");
        match status {
            401 => err.with_hint(format!("check the variable named by api_key_env ({var})")),
            403 => err.with_hint(format!(
                "the key in {var} is not allowed to use this model or endpoint"
            )),
            404 => err.with_hint("check the model name and base_url"),
            _ if unreadable => err.with_hint(format!(
                "the server could not read the request; HTTP {status} is not retried, since the \
                 same request fails the same way"
            )),
            _ if overflow => err.with_hint(
                "the conversation does not fit the model's context window: shorten the prompt or \
                 the tool results (limits.max_output_chars, the prune_tool_outputs or summarize \
                 middleware), or use a model or server with a bigger window (llama.cpp: --ctx-size)",
            ),
            400 | 422 => err.with_hint("check model.params and the model's supported features"),
            _ => err,
        }
    }

    /// A refused request says what was sent, in outline: which roles, calls and options
    /// the server could not take.
    pub fn about_request(mut self, req: &ModelRequest) -> Self {
        if self.kind == ErrorKind::BadRequest {
            let sent = format!("runner sent {}", req.outline());
            self.hint = Some(match self.hint.take() {
                Some(hint) => format!("{hint}; {sent}"),
                None => sent,
            });
        }
        self
    }
}

/// Whether a server error's message says the request itself could not be read: llama.cpp
/// answers 500 when a request breaks its chat template or its JSON parser.
fn unreadable_request(message: &str) -> bool {
    const SIGNS: [&str; 7] = [
        "parse error",
        "failed to parse",
        "json.exception",
        "must alternate",
        "raise_exception",
        "chat template",
        "invalid request",
    ];
    let message = message.to_ascii_lowercase();
    SIGNS.iter().any(|sign| message.contains(sign))
}

/// Whether an error's message says the conversation is longer than the model's context
/// window (OpenAI's `context_length_exceeded`, Anthropic's "prompt is too long",
/// llama.cpp's "exceeds the available context size").
fn context_overflow(message: &str) -> bool {
    const SIGNS: [&str; 6] = [
        "context_length_exceeded",
        "maximum context length",
        "context size",
        "context window",
        "prompt is too long",
        "exceed_context_size",
    ];
    let message = message.to_ascii_lowercase();
    SIGNS.iter().any(|sign| message.contains(sign))
}

impl ProviderError {
    /// Classifies an error reported inside a 200 stream: OpenAI-style
    /// `{"error":{"message","type","code"}}` (Groq adds `status_code`, OpenRouter uses a
    /// numeric `code`) or Anthropic's `{"type":"error","error":{"type":"overloaded_error"}}`.
    pub fn from_stream_error(provider: &str, v: &serde_json::Value) -> Self {
        let err = v.get("error").unwrap_or(v);
        let message = message_from_json(v).unwrap_or_else(|| v.to_string());
        let status = ["status_code", "status", "code"]
            .iter()
            .find_map(|k| err.get(*k).and_then(|c| c.as_u64()))
            .and_then(|s| u16::try_from(s).ok())
            .filter(|s| (400..600).contains(s));
        let label = ["type", "code"]
            .iter()
            .filter_map(|k| err.get(*k).and_then(|c| c.as_str()))
            .collect::<Vec<_>>()
            .join(" ");
        let mut e = match status {
            Some(status) => ProviderError::from_status(provider, status, message, None),
            None => ProviderError::new(classify_label(&label), provider, message),
        };
        if !label.is_empty() {
            e.message = format!("{} [{}]", e.message, label);
        }
        e
    }
}

/// Error kind from an error's `type`/`code` words.
fn classify_label(label: &str) -> ErrorKind {
    let has = |w: &str| label.contains(w);
    if has("rate_limit") || has("quota") {
        ErrorKind::RateLimited
    } else if has("authentication") || has("permission") || has("invalid_api_key") {
        ErrorKind::Auth
    } else if has("not_found") {
        ErrorKind::NotFound
    } else if has("timeout") {
        ErrorKind::Timeout
    } else if has("invalid_request") || has("tool_use_failed") || has("context_length") {
        ErrorKind::BadRequest
    } else {
        // overloaded_error, api_error, server_error and anything unknown: a server fault.
        ErrorKind::Server
    }
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} error ({}", self.provider, self.kind.as_str())?;
        if let Some(status) = self.status {
            write!(f, ", HTTP {status}")?;
        }
        write!(f, "): {}", self.message)?;
        if self.attempts > 1 {
            write!(f, " (after {} attempts)", self.attempts)?;
        }
        if let Some(hint) = &self.hint {
            write!(f, "; hint: {hint}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ProviderError {}

/// Extracts the human message from an API error body, whatever its shape:
/// `{"error":{"message"}}` (OpenAI, Anthropic, OpenRouter, Groq), `{"error":"..."}`
/// (Ollama), `{"message"}` (vLLM), `{"detail"}`; else the body itself (whole: it is
/// shortened after redaction).
pub fn error_message_from_body(body: &[u8]) -> String {
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(body)
        && let Some(msg) = message_from_json(&v)
    {
        return msg;
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        "(empty response body)".to_string()
    } else {
        text.to_string()
    }
}

/// The message inside an error JSON value (a whole body or an in-stream `error`).
pub fn message_from_json(v: &serde_json::Value) -> Option<String> {
    let err = v.get("error").unwrap_or(v);
    if let Some(s) = err.as_str() {
        return Some(s.to_string());
    }
    let msg = err
        .get("message")
        .or_else(|| v.get("message"))
        .or_else(|| v.get("detail"))
        .and_then(|m| m.as_str())?;
    let mut out = msg.to_string();
    // OpenRouter puts the upstream's own words in metadata.raw.
    if let Some(raw) = err.pointer("/metadata/raw").and_then(|r| r.as_str()) {
        out.push_str(": ");
        out.push_str(raw);
    }
    Some(out)
}

/// Cuts `s` to at most `max` bytes on a char boundary, marking the cut.
pub fn shorten(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}
