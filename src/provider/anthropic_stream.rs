//! Assembles an Anthropic Messages SSE stream into a [`ModelResponse`].
//!
//! Events: `message_start` (id, model, input usage), `content_block_start/delta/stop` for
//! `text`, `thinking` (`thinking_delta` + `signature_delta`), `redacted_thinking` and
//! `tool_use` (`input_json_delta`; the first fragment is `""`, a tool without arguments
//! sends only `""`, meaning `{}`; the `input` of `content_block_start` is a placeholder
//! and ignored), `message_delta` (stop_reason, final output_tokens), `message_stop`,
//! `ping` anywhere, and `error` (e.g. `overloaded_error`). Unknown events and block
//! types are skipped. Data lines may be padded with spaces; JSON does not mind.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use super::DeltaSink;
use super::error::{ErrorKind, ProviderError};
use super::sse::{EventReader, SseEvent, SseStream};
use super::types::{FinishReason, ModelResponse, StreamDelta, ThinkingBlock, ToolCall, Usage};

#[derive(Default)]
pub struct Acc {
    provider: String,
    model: String,
    /// The message's `id` (`msg_...`), from `message_start`.
    id: Option<String>,
    /// Content blocks in order, with the wire index each was opened with.
    blocks: Vec<(usize, Block)>,
    tool_count: usize,
    usage: WireUsage,
    stop_reason: Option<String>,
    done: bool,
}

enum Block {
    Text(String),
    Thinking {
        text: String,
        signature: String,
    },
    Redacted(String),
    ToolUse {
        pos: usize,
        id: String,
        name: String,
        json: String,
    },
    Ignored,
}

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    message: Option<MessageStart>,
    #[serde(default, borrow)]
    content_block: Option<BlockStart<'a>>,
    #[serde(default, borrow)]
    delta: Option<AnyDelta<'a>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct MessageStart {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct BlockStart<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    signature: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    data: Option<Cow<'a, str>>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
}

/// Both `content_block_delta.delta` and `message_delta.delta`.
#[derive(Deserialize)]
struct AnyDelta<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    signature: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize, Default, Clone, Copy)]
pub(crate) struct WireUsage {
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
    #[serde(default)]
    pub cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_read_input_tokens: Option<u64>,
}

impl WireUsage {
    /// Later reports (message_delta) override the fields they carry.
    fn update(&mut self, other: WireUsage) {
        self.input_tokens = other.input_tokens.or(self.input_tokens);
        self.output_tokens = other.output_tokens.or(self.output_tokens);
        self.cache_creation_input_tokens = other
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
        self.cache_read_input_tokens = other
            .cache_read_input_tokens
            .or(self.cache_read_input_tokens);
    }

    /// Input counts cached prompt tokens too, as OpenAI's `prompt_tokens` does.
    pub fn to_usage(self) -> Usage {
        let input = self.input_tokens.unwrap_or(0)
            + self.cache_creation_input_tokens.unwrap_or(0)
            + self.cache_read_input_tokens.unwrap_or(0);
        Usage::new(input, self.output_tokens.unwrap_or(0))
    }
}

/// The wire's body, read as it arrives.
pub type AnthropicStream = SseStream<Acc>;

impl AnthropicStream {
    /// `provider` names the server in errors; `model` is used when the body names none.
    pub fn new(provider: &str, model: &str) -> Self {
        SseStream::with_reader(Acc {
            provider: provider.to_string(),
            model: model.to_string(),
            ..Default::default()
        })
    }
}

impl EventReader for Acc {
    fn event(&mut self, event: SseEvent<'_>, sink: &DeltaSink<'_>) -> Result<(), ProviderError> {
        Acc::event(self, event, sink)
    }
    fn is_done(&self) -> bool {
        self.done
    }
    fn end(self) -> Result<ModelResponse, ProviderError> {
        if !self.done && self.stop_reason.is_none() {
            return Err(ProviderError::new(
                ErrorKind::IncompleteStream,
                self.provider.clone(),
                "the response stream ended before message_stop",
            ));
        }
        Ok(self.into_response())
    }
}

impl Acc {
    fn protocol(&self, what: String) -> ProviderError {
        ProviderError::new(ErrorKind::Protocol, self.provider.clone(), what)
    }

    fn event(&mut self, ev: SseEvent<'_>, sink: &DeltaSink<'_>) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        let data = ev.data.trim();
        let event: Event<'_> = match serde_json::from_str(data) {
            Ok(e) => e,
            Err(_) if ev.event == "error" => {
                return Err(ProviderError::new(
                    ErrorKind::Server,
                    self.provider.clone(),
                    data,
                ));
            }
            Err(e) => {
                return Err(self.protocol(format!("malformed event ({e}): {data}")));
            }
        };
        match event.kind.as_ref() {
            "message_start" => {
                if let Some(m) = event.message {
                    if let Some(model) = m.model.filter(|m| !m.is_empty()) {
                        self.model = model;
                    }
                    if let Some(id) = m.id.filter(|id| !id.is_empty()) {
                        self.id = Some(id);
                    }
                    if let Some(u) = m.usage {
                        self.usage.update(u);
                    }
                }
            }
            "content_block_start" => {
                let (index, start) = match (event.index, event.content_block) {
                    (Some(i), Some(b)) => (i, b),
                    _ => {
                        return Err(
                            self.protocol("content_block_start without index or block".into())
                        );
                    }
                };
                let block = self.open_block(start, sink);
                self.blocks.push((index, block));
            }
            "content_block_delta" => {
                let (Some(index), Some(delta)) = (event.index, event.delta) else {
                    return Err(self.protocol("content_block_delta without index or delta".into()));
                };
                let Some(block) = self.blocks.iter_mut().rev().find(|(i, _)| *i == index) else {
                    return Err(self.protocol(format!("delta for unopened content block {index}")));
                };
                apply_delta(&mut block.1, delta, sink);
            }
            "message_delta" => {
                if let Some(reason) = event.delta.and_then(|d| d.stop_reason) {
                    self.stop_reason = Some(reason);
                }
                if let Some(u) = event.usage {
                    self.usage.update(u);
                    sink(StreamDelta::Usage {
                        usage: self.usage.to_usage(),
                    });
                }
            }
            "message_stop" => self.done = true,
            "error" => {
                let v = event
                    .error
                    .map(|e| serde_json::json!({ "error": e }))
                    .unwrap_or(Value::Null);
                return Err(ProviderError::from_stream_error(&self.provider, &v));
            }
            _ => {} // ping, content_block_stop and events added after this was written
        }
        Ok(())
    }

    fn open_block(&mut self, start: BlockStart<'_>, sink: &DeltaSink<'_>) -> Block {
        match start.kind.as_ref() {
            "text" => {
                let text = start.text.unwrap_or_default().into_owned();
                if !text.is_empty() {
                    sink(StreamDelta::Text { text: text.clone() });
                }
                Block::Text(text)
            }
            "thinking" => Block::Thinking {
                text: start.thinking.unwrap_or_default().into_owned(),
                signature: start.signature.unwrap_or_default().into_owned(),
            },
            "redacted_thinking" => Block::Redacted(start.data.unwrap_or_default().into_owned()),
            "tool_use" => {
                let pos = self.tool_count;
                self.tool_count += 1;
                let id = start.id.unwrap_or_else(|| format!("toolu_{pos}"));
                let name = start.name.unwrap_or_default();
                sink(StreamDelta::ToolCallStart {
                    index: pos,
                    id: id.clone(),
                    name: name.clone(),
                });
                Block::ToolUse {
                    pos,
                    id,
                    name,
                    json: String::new(),
                }
            }
            _ => Block::Ignored, // server tools, citations, ...: not part of our model
        }
    }

    fn into_response(self) -> ModelResponse {
        let mut text = String::new();
        let mut thinking = Vec::new();
        let mut tool_calls = Vec::new();
        for (_, block) in self.blocks {
            match block {
                Block::Text(t) => text.push_str(&t),
                Block::Thinking { text, signature } => thinking.push(ThinkingBlock {
                    text,
                    signature: Some(signature).filter(|s| !s.is_empty()),
                    ..Default::default()
                }),
                Block::Redacted(data) => thinking.push(ThinkingBlock {
                    redacted: Some(data),
                    ..Default::default()
                }),
                Block::ToolUse { id, name, json, .. } => {
                    tool_calls.push(ToolCall::from_raw(id, name, &json))
                }
                Block::Ignored => {}
            }
        }
        let finish_reason = match self.stop_reason.as_deref() {
            Some(r) => FinishReason::from_anthropic(r),
            None if !tool_calls.is_empty() => FinishReason::ToolCalls,
            None => FinishReason::Stop,
        };
        ModelResponse {
            text,
            thinking,
            tool_calls,
            usage: self.usage.to_usage(),
            finish_reason,
            model: self.model,
            id: self.id,
        }
    }
}

fn apply_delta(block: &mut Block, delta: AnyDelta<'_>, sink: &DeltaSink<'_>) {
    match (block, delta.kind.as_deref()) {
        (Block::Text(text), Some("text_delta")) => {
            if let Some(t) = delta.text.filter(|t| !t.is_empty()) {
                text.push_str(&t);
                sink(StreamDelta::Text {
                    text: t.into_owned(),
                });
            }
        }
        (Block::Thinking { text, .. }, Some("thinking_delta")) => {
            if let Some(t) = delta.thinking.filter(|t| !t.is_empty()) {
                text.push_str(&t);
                sink(StreamDelta::Thinking {
                    text: t.into_owned(),
                });
            }
        }
        (Block::Thinking { signature, .. }, Some("signature_delta")) => {
            if let Some(s) = delta.signature {
                signature.push_str(&s);
            }
        }
        (Block::ToolUse { pos, json, .. }, Some("input_json_delta")) => {
            if let Some(fragment) = delta.partial_json.filter(|f| !f.is_empty()) {
                json.push_str(&fragment);
                sink(StreamDelta::ToolCallArguments {
                    index: *pos,
                    fragment: fragment.into_owned(),
                });
            }
        }
        _ => {} // citations_delta and other additions
    }
}
