//! Assembles a Chat Completions SSE stream into a [`ModelResponse`].
//!
//! Written against what real servers send (docs/providers.md lists each quirk):
//! tool calls are keyed by their wire `index` (sparse, may start at 1; missing on some
//! servers), id and name arrive once, arguments in any number of fragments; `content`
//! may be null or ""; chunks with `choices: []` may be usage or not (Azure's prompt
//! filter results); finish_reason and usage may share a chunk or come twice; reasoning
//! arrives as `reasoning_content` (llama.cpp, vLLM, DeepSeek) or `reasoning` (Groq,
//! OpenRouter, Ollama); errors come as an `error` object or an `event: error` frame.
//! The stream must end with `[DONE]` or at least a finish_reason, else it is incomplete.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use super::DeltaSink;
use super::error::{ErrorKind, ProviderError};
use super::sse::{EventReader, SseEvent, SseStream};
use super::types::{FinishReason, ModelResponse, StreamDelta, ThinkingBlock, ToolCall, Usage};

/// What the stream has said so far.
#[derive(Default)]
pub struct Accumulator {
    pub provider: String,
    pub model: String,
    /// The response's `id` (`chatcmpl-...`), from its first chunk that has one.
    pub id: Option<String>,
    pub text: String,
    pub thinking: String,
    calls: Vec<PartialCall>,
    pub usage: Option<Usage>,
    pub finish: Option<String>,
    /// `[DONE]` was received; anything after it is ignored.
    pub done: bool,
}

#[derive(Default)]
struct PartialCall {
    wire_index: Option<usize>,
    id: String,
    name: String,
    arguments: String,
    announced: bool,
}

// Wire shapes: only the fields we read; serde skips everything else. Strings borrow
// from the event data unless they contain escapes.
#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    choices: Option<Vec<Choice<'a>>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
pub(crate) struct Delta<'a> {
    #[serde(default, borrow)]
    pub content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub reasoning: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub tool_calls: Option<Vec<ToolCallDelta<'a>>>,
}

#[derive(Deserialize)]
pub(crate) struct ToolCallDelta<'a> {
    #[serde(default)]
    pub index: Option<usize>,
    #[serde(default, borrow)]
    pub id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
pub(crate) struct FunctionDelta<'a> {
    #[serde(default, borrow)]
    pub name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub arguments: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default, Clone, Copy)]
pub(crate) struct WireUsage {
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    #[serde(default)]
    pub total_tokens: Option<u64>,
}

impl WireUsage {
    pub fn to_usage(self) -> Usage {
        let input = self.prompt_tokens.unwrap_or(0);
        let output = self.completion_tokens.unwrap_or(0);
        Usage {
            input_tokens: input,
            output_tokens: output,
            total_tokens: self.total_tokens.unwrap_or(input + output),
        }
    }
}

/// The wire's body, read as it arrives.
pub type OpenAiStream = SseStream<Accumulator>;

impl OpenAiStream {
    /// `provider` names the server in errors; `model` is used when the body names none.
    pub fn new(provider: &str, model: &str) -> Self {
        SseStream::with_reader(Accumulator::new(provider, model))
    }
}

impl EventReader for Accumulator {
    fn event(&mut self, event: SseEvent<'_>, sink: &DeltaSink<'_>) -> Result<(), ProviderError> {
        Accumulator::event(self, event, sink)
    }
    fn is_done(&self) -> bool {
        self.done
    }
    fn end(self) -> Result<ModelResponse, ProviderError> {
        if !self.done && self.finish.is_none() {
            return Err(ProviderError::new(
                ErrorKind::IncompleteStream,
                self.provider.clone(),
                "the response stream ended before [DONE] or a finish_reason",
            ));
        }
        Ok(self.into_response())
    }
}

impl Accumulator {
    pub(crate) fn new(provider: &str, model: &str) -> Self {
        Accumulator {
            provider: provider.to_string(),
            model: model.to_string(),
            ..Default::default()
        }
    }

    fn event(&mut self, ev: SseEvent<'_>, sink: &DeltaSink<'_>) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        if ev.event == "error" {
            return Err(self.stream_error(ev.data));
        }
        let data = ev.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let chunk: Chunk<'_> = serde_json::from_str(data).map_err(|e| {
            ProviderError::new(
                ErrorKind::Protocol,
                self.provider.clone(),
                format!("malformed stream chunk ({e}): {data}"),
            )
        })?;
        if let Some(error) = chunk.error.as_ref().filter(|e| !e.is_null()) {
            return Err(ProviderError::from_stream_error(&self.provider, error));
        }
        if let Some(model) = chunk.model.filter(|m| !m.is_empty())
            && self.model != model
        {
            self.model = model.into_owned();
        }
        if self.id.is_none() {
            self.id = chunk.id.filter(|id| !id.is_empty()).map(Cow::into_owned);
        }
        for choice in chunk.choices.into_iter().flatten() {
            if choice.index.unwrap_or(0) != 0 {
                continue; // only the first choice is used (n = 1)
            }
            if let Some(delta) = choice.delta {
                self.delta(delta, sink);
            }
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(reason.into_owned());
            }
        }
        if let Some(usage) = chunk.usage {
            let usage = usage.to_usage();
            self.usage = Some(usage);
            sink(StreamDelta::Usage { usage });
        }
        Ok(())
    }

    fn stream_error(&self, data: &str) -> ProviderError {
        match serde_json::from_str::<Value>(data) {
            Ok(v) => ProviderError::from_stream_error(&self.provider, &v),
            Err(_) => ProviderError::new(ErrorKind::Server, self.provider.clone(), data),
        }
    }

    pub(crate) fn delta(&mut self, delta: Delta<'_>, sink: &DeltaSink<'_>) {
        if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
            self.text.push_str(&text);
            sink(StreamDelta::Text {
                text: text.into_owned(),
            });
        }
        let reasoning = delta.reasoning_content.or(delta.reasoning);
        if let Some(text) = reasoning.filter(|t| !t.is_empty()) {
            self.thinking.push_str(&text);
            sink(StreamDelta::Thinking {
                text: text.into_owned(),
            });
        }
        for call in delta.tool_calls.into_iter().flatten() {
            self.tool_call_delta(call, sink);
        }
    }

    fn tool_call_delta(&mut self, d: ToolCallDelta<'_>, sink: &DeltaSink<'_>) {
        let pos = self.slot_for(&d);
        let slot = &mut self.calls[pos];
        if let Some(id) = d.id.filter(|s| !s.is_empty())
            && slot.id.is_empty()
        {
            slot.id = id.into_owned();
        }
        let (name, args) = match d.function {
            Some(f) => (f.name, f.arguments),
            None => (None, None),
        };
        if let Some(name) = name.filter(|s| !s.is_empty())
            && slot.name.is_empty()
        {
            slot.name = name.into_owned();
        }
        if !slot.announced && !slot.name.is_empty() {
            slot.announced = true;
            let id = if slot.id.is_empty() {
                fallback_id(pos)
            } else {
                slot.id.clone()
            };
            sink(StreamDelta::ToolCallStart {
                index: pos,
                id,
                name: slot.name.clone(),
            });
        }
        if let Some(args) = args.filter(|s| !s.is_empty()) {
            slot.arguments.push_str(&args);
            sink(StreamDelta::ToolCallArguments {
                index: pos,
                fragment: args.into_owned(),
            });
        }
    }

    /// The call a delta belongs to: by wire index when present; without one, a new id
    /// starts a new call and anything else continues the last one.
    fn slot_for(&mut self, d: &ToolCallDelta<'_>) -> usize {
        let found = match d.index {
            Some(i) => self.calls.iter().rposition(|c| c.wire_index == Some(i)),
            None => match (&d.id, self.calls.last()) {
                (Some(id), Some(last))
                    if !id.is_empty() && !last.id.is_empty() && last.id != *id =>
                {
                    None
                }
                (_, Some(_)) => Some(self.calls.len() - 1),
                (_, None) => None,
            },
        };
        found.unwrap_or_else(|| {
            self.calls.push(PartialCall {
                wire_index: d.index,
                ..Default::default()
            });
            self.calls.len() - 1
        })
    }

    pub(crate) fn into_response(self) -> ModelResponse {
        let tool_calls: Vec<ToolCall> = self
            .calls
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                let id = if c.id.is_empty() {
                    fallback_id(i)
                } else {
                    c.id
                };
                ToolCall::from_raw(id, c.name, &c.arguments)
            })
            .collect();
        let finish_reason = match self.finish.as_deref() {
            Some(reason) => FinishReason::from_openai(reason),
            None if !tool_calls.is_empty() => FinishReason::ToolCalls,
            None => FinishReason::Stop,
        };
        let thinking = if self.thinking.is_empty() {
            Vec::new()
        } else {
            vec![ThinkingBlock {
                text: self.thinking,
                ..Default::default()
            }]
        };
        ModelResponse {
            text: self.text,
            thinking,
            tool_calls,
            usage: self.usage.unwrap_or_default(),
            finish_reason,
            model: self.model,
            id: self.id,
        }
    }
}

/// Id for a call the server sent without one (some local servers do).
fn fallback_id(pos: usize) -> String {
    format!("call_{pos}")
}
