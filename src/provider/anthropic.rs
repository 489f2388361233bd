//! Anthropic Messages API client (`POST {base_url}/v1/messages`, streaming).
//!
//! Mapping from the neutral [`Message`]s: system prompts join into the `system` field;
//! an assistant turn becomes its signed thinking blocks, then its text, then its
//! `tool_use` blocks (the API requires thinking before tool use when thinking is on);
//! tool results become `tool_result` blocks of a user turn; consecutive turns of one
//! role are merged, since the API wants user and assistant to alternate.
//! `max_tokens` is required by the API: 4096 unless `params` sets it.
//! A `response_format` is put in the system prompt as an instruction (this API has no
//! JSON-schema mode); the engine validates the reply.

use serde_json::{Map, Value};

use super::anthropic_body;
use super::anthropic_stream::AnthropicStream;
use super::error::{ErrorKind, ProviderError};
use super::http::{HttpClient, exchange};
use super::item_cache::ItemCache;
use super::openai::HttpSettings;
use super::request_body::BodyWriter;
use super::tools_cache::ToolsCache;
use super::types::{ModelRequest, ModelResponse};
use super::{BoxFuture, DeltaSink, Provider};

/// The `anthropic-version` header sent with every request.
pub const API_VERSION: &str = "2023-06-01";
/// `max_tokens` when `params` does not set it.
pub const DEFAULT_MAX_TOKENS: u64 = 4096;

#[derive(Debug)]
pub struct AnthropicProvider {
    http: HttpClient,
    model: String,
    url: String,
    params: Map<String, Value>,
    /// The last request's turns, serialised.
    sent: ItemCache,
    /// The tools' JSON of the last request.
    sent_tools: ToolsCache,
}

impl AnthropicProvider {
    pub fn new(s: HttpSettings) -> Result<Self, ProviderError> {
        let http = HttpClient::new(&s.provider, s.key, s.key_env, s.timeout, s.idle_timeout)
            .with_limits(s.limits);
        // Accept both "https://api.anthropic.com" and ".../v1".
        let base = s.base_url.trim_end_matches('/');
        let url = if base.ends_with("/v1") {
            format!("{base}/messages")
        } else {
            format!("{base}/v1/messages")
        };
        Ok(AnthropicProvider {
            http,
            model: s.model,
            url,
            params: s.params,
            sent: ItemCache::default(),
            sent_tools: ToolsCache::default(),
        })
    }

    #[cfg(any(test, feature = "testing"))]
    /// The JSON body for `req`, borrowing it (public for tests).
    pub fn request_body<'a>(&'a self, req: &'a ModelRequest) -> impl serde::Serialize + 'a {
        anthropic_body::request_body(&self.model, &self.params, req, &self.sent, &self.sent_tools)
    }

    fn headers(&self) -> Vec<(&'static str, String)> {
        let mut h = vec![("anthropic-version", API_VERSION.to_string())];
        if let Some(key) = &self.http.key {
            h.push(("x-api-key", key.expose().to_string()));
        }
        h
    }

    async fn call(
        &self,
        req: &ModelRequest,
        sink: &DeltaSink<'_>,
    ) -> Result<ModelResponse, ProviderError> {
        let provider = &self.http.provider;
        let stream = AnthropicStream::new(provider, &self.model);
        let whole = |bytes: &[u8]| parse_message(provider, &self.model, bytes, sink);
        let body = anthropic_body::request_body(
            &self.model,
            &self.params,
            req,
            &self.sent,
            &self.sent_tools,
        );
        exchange(
            &self.http,
            &self.url,
            self.headers(),
            |out: &mut BodyWriter| body.write_json(out),
            stream,
            whole,
            sink,
        )
        .await
        .map_err(|error| error.about_request(req))
    }
}

impl Provider for AnthropicProvider {
    fn name(&self) -> &str {
        &self.http.provider
    }
    fn model(&self) -> &str {
        &self.model
    }
    fn stream<'a>(
        &'a self,
        req: &'a ModelRequest,
        sink: &'a DeltaSink<'a>,
    ) -> BoxFuture<'a, Result<ModelResponse, ProviderError>> {
        Box::pin(self.call(req, sink))
    }
}

/// A non-streaming Messages response (`params: {stream: false}`), reported to the sink
/// as one set of deltas.
fn parse_message(
    provider: &str,
    model: &str,
    body: &[u8],
    sink: &DeltaSink<'_>,
) -> Result<ModelResponse, ProviderError> {
    let v: Value = serde_json::from_slice(body).map_err(|e| {
        let text = String::from_utf8_lossy(body);
        ProviderError::new(
            ErrorKind::Protocol,
            provider,
            format!("malformed message ({e}): {text}"),
        )
    })?;
    if v.get("type").and_then(Value::as_str) == Some("error") {
        return Err(ProviderError::from_stream_error(provider, &v));
    }
    // Replay it as the equivalent event stream so both paths share one assembler.
    let mut stream = AnthropicStream::new(provider, model);
    let mut feed = |ev: Value| -> Result<(), ProviderError> {
        let line = format!("data: {ev}\n\n");
        stream.feed(line.as_bytes(), sink)
    };
    let mut start = v.clone();
    if let Some(obj) = start.as_object_mut() {
        obj.insert("content".into(), Value::Array(Vec::new()));
    }
    feed(serde_json::json!({"type": "message_start", "message": start}))?;
    let blocks = v
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (i, b) in blocks.into_iter().enumerate() {
        feed(serde_json::json!({"type": "content_block_start", "index": i, "content_block": b}))?;
        let delta = match b.get("type").and_then(Value::as_str) {
            // Text and thinking (with its signature) are complete in the start block.
            Some("tool_use") => {
                let input = b.get("input").cloned().unwrap_or(Value::Null);
                Some(
                    serde_json::json!({"type": "input_json_delta", "partial_json": input.to_string()}),
                )
            }
            _ => None,
        };
        if let Some(delta) = delta {
            feed(serde_json::json!({"type": "content_block_delta", "index": i, "delta": delta}))?;
        }
    }
    feed(serde_json::json!({"type": "message_delta",
        "delta": {"stop_reason": v.get("stop_reason")}, "usage": v.get("usage")}))?;
    feed(serde_json::json!({"type": "message_stop"}))?;
    stream.finish(sink)
}
