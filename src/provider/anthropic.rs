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

use serde_json::{Map, Value, json};

use super::anthropic_stream::AnthropicStream;
use super::error::{ErrorKind, ProviderError, shorten};
use super::http::{HttpClient, exchange};
use super::openai::HttpSettings;
use super::types::{Message, ModelRequest, ModelResponse};
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
}

impl AnthropicProvider {
    pub fn new(s: HttpSettings) -> Result<Self, ProviderError> {
        let http = HttpClient::new(&s.provider, s.key, s.key_env, s.timeout, s.idle_timeout)?;
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
        })
    }

    /// The JSON body for `req` (public for tests and cassettes).
    pub fn request_body(&self, req: &ModelRequest) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), Value::String(self.model.clone()));
        body.insert("max_tokens".into(), json!(DEFAULT_MAX_TOKENS));
        if let Some(system) = system_prompt(req) {
            body.insert("system".into(), Value::String(system));
        }
        body.insert(
            "messages".into(),
            Value::Array(wire_messages(&req.messages)),
        );
        if !req.tools.is_empty() {
            let tools = req.tools.iter().map(|t| {
                json!({"name": t.name, "description": t.description, "input_schema": t.parameters})
            });
            body.insert("tools".into(), Value::Array(tools.collect()));
        }
        body.insert("stream".into(), Value::Bool(true));
        for (k, v) in self.params.iter().chain(req.params.iter()) {
            if v.is_null() {
                body.remove(k);
            } else {
                body.insert(k.clone(), v.clone());
            }
        }
        Value::Object(body)
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
        exchange(
            &self.http,
            &self.url,
            self.headers(),
            &self.request_body(req),
            stream,
            whole,
            sink,
        )
        .await
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

fn system_prompt(req: &ModelRequest) -> Option<String> {
    let mut parts: Vec<String> = req.system.iter().cloned().collect();
    for m in &req.messages {
        if let Message::System { content } = m {
            parts.push(content.clone());
        }
    }
    if let Some(rf) = &req.response_format {
        parts.push(format!(
            "Reply with only a JSON value (no prose, no code fence) that matches this JSON Schema:\n{}",
            rf.schema
        ));
    }
    let joined = parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    (!joined.is_empty()).then_some(joined)
}

fn wire_messages(messages: &[Message]) -> Vec<Value> {
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for m in messages {
        let (role, blocks) = match m {
            Message::System { .. } => continue, // in the `system` field
            Message::User { content } => ("user", vec![json!({"type": "text", "text": content})]),
            Message::Tool(r) => {
                let mut block = json!({"type": "tool_result", "tool_use_id": r.tool_call_id, "content": r.content});
                if r.is_error {
                    block["is_error"] = Value::Bool(true);
                }
                ("user", vec![block])
            }
            Message::Assistant(a) => {
                let mut blocks = Vec::new();
                for t in &a.thinking {
                    if let Some(data) = &t.redacted {
                        blocks.push(json!({"type": "redacted_thinking", "data": data}));
                    } else if let Some(sig) = &t.signature {
                        blocks.push(
                            json!({"type": "thinking", "thinking": t.text, "signature": sig}),
                        );
                    } // unsigned reasoning (another provider's) cannot be sent back
                }
                if !a.text.is_empty() {
                    blocks.push(json!({"type": "text", "text": a.text}));
                }
                for c in &a.tool_calls {
                    let input = if c.arguments.is_object() {
                        c.arguments.clone()
                    } else {
                        json!({})
                    };
                    blocks.push(
                        json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}),
                    );
                }
                if blocks.is_empty() {
                    continue; // the API rejects empty turns
                }
                ("assistant", blocks)
            }
        };
        match turns.last_mut() {
            Some((last_role, last)) if *last_role == role => last.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    turns
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
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
            format!("malformed message ({e}): {}", shorten(&text, 200)),
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
