//! Assembles an OpenAI Responses SSE stream (or a whole JSON response) into a
//! [`ModelResponse`].
//!
//! The answer is a list of output items, each opened by `response.output_item.added`
//! with its `output_index`, filled by deltas (`response.output_text.delta`,
//! `response.reasoning_summary_text.delta`, `response.function_call_arguments.delta`) and
//! closed by `response.output_item.done` carrying the complete item (a reasoning item's
//! `encrypted_content` arrives only there). The stream ends with `response.completed` or
//! `response.incomplete` (usage, status, `incomplete_details.reason`), or fails with
//! `response.failed` or an `error` event. Unknown events and item types (hosted tools,
//! annotations, ...) are skipped.
//!
//! A complete item is merged over what its deltas built, reporting to the sink only what
//! they did not: so a whole JSON response (every item complete, no deltas) goes through
//! the same path as a stream, and the final `response.output` repairs a stream that
//! skipped an event.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{Value, json};

use super::DeltaSink;
use super::error::{ErrorKind, ProviderError};
use super::sse::{EventReader, SseEvent, SseStream};
use super::types::{
    FinishReason, ModelResponse, ReasoningItem, StreamDelta, ThinkingBlock, ToolCall, Usage,
};

#[derive(Default)]
pub struct Acc {
    provider: String,
    model: String,
    /// The response's `id` (`resp_...`).
    id: Option<String>,
    /// Output items in the order they were opened, with their `output_index`.
    items: Vec<(usize, Slot)>,
    tool_count: usize,
    usage: Option<Usage>,
    /// `incomplete_details.reason` of an incomplete response.
    incomplete: Option<String>,
    /// `response.completed` or `response.incomplete` arrived.
    done: bool,
}

/// An output item being assembled.
enum Slot {
    Message {
        text: String,
        refusal: bool,
    },
    Call {
        pos: usize,
        call_id: String,
        name: String,
        arguments: String,
    },
    Reasoning {
        id: String,
        summary: Vec<String>,
        encrypted_content: Option<String>,
    },
    Ignored,
}

// Wire shapes: only the fields we read.
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    output_index: Option<usize>,
    #[serde(default)]
    summary_index: Option<usize>,
    #[serde(default, borrow)]
    delta: Option<Cow<'a, str>>,
    #[serde(default)]
    arguments: Option<String>,
    #[serde(default)]
    item: Option<Item>,
    #[serde(default)]
    response: Option<WireResponse>,
}

/// The response object: in `response.*` events and as the whole non-streaming body.
#[derive(Deserialize, Default)]
pub(crate) struct WireResponse {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    incomplete_details: Option<IncompleteDetails>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    output: Vec<Item>,
}

#[derive(Deserialize)]
struct IncompleteDetails {
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Item {
    Message {
        #[serde(default)]
        content: Vec<Content>,
    },
    FunctionCall {
        #[serde(default)]
        call_id: String,
        #[serde(default)]
        name: String,
        #[serde(default)]
        arguments: String,
    },
    Reasoning {
        #[serde(default)]
        id: String,
        #[serde(default)]
        summary: Vec<SummaryPart>,
        #[serde(default)]
        encrypted_content: Option<String>,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Content {
    OutputText {
        #[serde(default)]
        text: String,
    },
    Refusal {
        #[serde(default)]
        refusal: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct SummaryPart {
    #[serde(default)]
    text: String,
}

/// `output_tokens` includes the reasoning tokens (`output_tokens_details`).
#[derive(Deserialize, Default, Clone, Copy)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    total_tokens: Option<u64>,
}

impl WireUsage {
    fn to_usage(self) -> Usage {
        let input = self.input_tokens.unwrap_or(0);
        let output = self.output_tokens.unwrap_or(0);
        Usage {
            input_tokens: input,
            output_tokens: output,
            total_tokens: self.total_tokens.unwrap_or(input + output),
        }
    }
}

/// A non-streaming response body, reported to the sink as one set of deltas.
pub(crate) fn parse_response(
    provider: &str,
    model: &str,
    body: &[u8],
    sink: &DeltaSink<'_>,
) -> Result<ModelResponse, ProviderError> {
    let response: WireResponse = serde_json::from_slice(body).map_err(|e| {
        let text = String::from_utf8_lossy(body);
        ProviderError::new(
            ErrorKind::Protocol,
            provider,
            format!("malformed response ({e}): {text}"),
        )
    })?;
    let mut acc = Acc::new(provider, model);
    acc.complete(response, sink)?;
    Ok(acc.into_response())
}

/// The wire's body, read as it arrives.
pub type ResponsesStream = SseStream<Acc>;

impl ResponsesStream {
    /// `provider` names the server in errors; `model` is used when the body names none.
    pub fn new(provider: &str, model: &str) -> Self {
        SseStream::with_reader(Acc::new(provider, model))
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
        if !self.done {
            return Err(ProviderError::new(
                ErrorKind::IncompleteStream,
                self.provider.clone(),
                "the response stream ended before response.completed",
            ));
        }
        Ok(self.into_response())
    }
}

impl Acc {
    fn new(provider: &str, model: &str) -> Self {
        Acc {
            provider: provider.to_string(),
            model: model.to_string(),
            ..Default::default()
        }
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
            Err(e) => return Err(self.protocol(format!("malformed event ({e}): {data}"))),
        };
        match event.kind.as_ref() {
            "response.created" | "response.in_progress" => {
                if let Some(response) = event.response {
                    self.set_id(response.id);
                    self.set_model(response.model.unwrap_or_default());
                }
            }
            "response.output_item.added" => {
                let (index, item) = self.indexed_item(event)?;
                self.open(index, &item, sink);
            }
            "response.output_item.done" => {
                let (index, item) = self.indexed_item(event)?;
                self.close(index, item, sink);
            }
            "response.output_text.delta"
            | "response.reasoning_summary_text.delta"
            | "response.function_call_arguments.delta" => self.delta(event, sink)?,
            "response.function_call_arguments.done" => {
                if let (Some(Slot::Call { arguments, .. }), Some(done)) =
                    (self.slot(event.output_index), event.arguments)
                {
                    *arguments = done;
                }
            }
            "response.completed" | "response.incomplete" => {
                self.complete(event.response.unwrap_or_default(), sink)?;
            }
            "response.failed" => {
                return Err(self.failed(event.response.and_then(|r| r.error)));
            }
            "error" => {
                let v: Value = serde_json::from_str(data).unwrap_or(Value::Null);
                return Err(self.error_event(&v));
            }
            _ => {} // content parts, annotations, hosted tools and later additions
        }
        Ok(())
    }

    /// An `error` event: `{type: "error", code, message, param}` (older servers nest
    /// them under `error`), classified like any in-stream error.
    fn error_event(&self, v: &Value) -> ProviderError {
        let mut inner = v.get("error").cloned().unwrap_or_else(|| v.clone());
        if let Some(fields) = inner.as_object_mut()
            && fields.get("type").is_some_and(|t| t == "error")
        {
            fields.remove("type"); // the event's own type says nothing of the error
        }
        ProviderError::from_stream_error(&self.provider, &json!({ "error": inner }))
    }

    /// `response.failed`, or a response whose status says so.
    fn failed(&self, error: Option<Value>) -> ProviderError {
        match error.filter(|e| !e.is_null()) {
            Some(error) => {
                ProviderError::from_stream_error(&self.provider, &json!({ "error": error }))
            }
            None => ProviderError::new(
                ErrorKind::Server,
                self.provider.clone(),
                "the response failed without an error message",
            ),
        }
    }

    fn indexed_item(&self, event: Event<'_>) -> Result<(usize, Item), ProviderError> {
        match (event.output_index, event.item) {
            (Some(index), Some(item)) => Ok((index, item)),
            _ => Err(self.protocol(format!("{} without output_index or item", event.kind))),
        }
    }

    fn set_id(&mut self, id: Option<String>) {
        if let Some(id) = id.filter(|id| !id.is_empty()) {
            self.id = Some(id);
        }
    }

    fn set_model(&mut self, model: String) {
        if !model.is_empty() {
            self.model = model;
        }
    }

    fn slot(&mut self, index: Option<usize>) -> Option<&mut Slot> {
        let index = index?;
        let found = self.items.iter_mut().rev().find(|(i, _)| *i == index);
        found.map(|(_, slot)| slot)
    }

    /// Opens an item; a function call is announced at once.
    fn open(&mut self, index: usize, item: &Item, sink: &DeltaSink<'_>) {
        let slot = match item {
            Item::Message { .. } => Slot::Message {
                text: String::new(),
                refusal: false,
            },
            Item::FunctionCall { call_id, name, .. } => {
                let pos = self.tool_count;
                self.tool_count += 1;
                sink(StreamDelta::ToolCallStart {
                    index: pos,
                    id: call_id.clone(),
                    name: name.clone(),
                });
                Slot::Call {
                    pos,
                    call_id: call_id.clone(),
                    name: name.clone(),
                    arguments: String::new(),
                }
            }
            Item::Reasoning { id, .. } => Slot::Reasoning {
                id: id.clone(),
                summary: Vec::new(),
                encrypted_content: None,
            },
            Item::Other => Slot::Ignored,
        };
        // What an added item already holds (usually nothing) is reported when it closes.
        self.items.push((index, slot));
    }

    fn delta(&mut self, event: Event<'_>, sink: &DeltaSink<'_>) -> Result<(), ProviderError> {
        let Some(delta) = event.delta.filter(|d| !d.is_empty()) else {
            return Ok(());
        };
        let part = event.summary_index.unwrap_or(0);
        let Some(slot) = self.slot(event.output_index) else {
            let what = format!("{} for an item never added", event.kind);
            return Err(self.protocol(what));
        };
        match slot {
            Slot::Message { text, .. } => {
                text.push_str(&delta);
                sink(StreamDelta::Text {
                    text: delta.into_owned(),
                });
            }
            Slot::Reasoning { summary, .. } => {
                let text = summary_delta(summary, part, &delta);
                sink(StreamDelta::Thinking { text });
            }
            Slot::Call { pos, arguments, .. } => {
                arguments.push_str(&delta);
                sink(StreamDelta::ToolCallArguments {
                    index: *pos,
                    fragment: delta.into_owned(),
                });
            }
            Slot::Ignored => {}
        }
        Ok(())
    }

    /// Merges a complete item over its slot (opening it first if its `added` event never
    /// came), reporting what its deltas did not.
    fn close(&mut self, index: usize, item: Item, sink: &DeltaSink<'_>) {
        if self.slot(Some(index)).is_none() {
            self.open(index, &item, sink);
        }
        let Some(slot) = self.slot(Some(index)) else {
            return;
        };
        match (slot, item) {
            (Slot::Message { text, refusal }, Item::Message { content }) => {
                let mut full = String::new();
                for part in content {
                    match part {
                        Content::OutputText { text } => full.push_str(&text),
                        Content::Refusal { refusal: words } => {
                            *refusal = true;
                            full.push_str(&words);
                        }
                        Content::Other => {}
                    }
                }
                if let Some(rest) = unreported(text, &full) {
                    sink(StreamDelta::Text { text: rest });
                }
                *text = full;
            }
            (
                Slot::Call { pos, arguments, .. },
                Item::FunctionCall {
                    arguments: full, ..
                },
            ) => {
                if let Some(rest) = unreported(arguments, &full) {
                    sink(StreamDelta::ToolCallArguments {
                        index: *pos,
                        fragment: rest,
                    });
                }
                *arguments = full;
            }
            (
                Slot::Reasoning {
                    summary,
                    encrypted_content,
                    ..
                },
                Item::Reasoning {
                    summary: parts,
                    encrypted_content: encrypted,
                    ..
                },
            ) => {
                let full: Vec<String> = parts.into_iter().map(|p| p.text).collect();
                if let Some(rest) = unreported(&summary.join("\n\n"), &full.join("\n\n")) {
                    sink(StreamDelta::Thinking { text: rest });
                }
                if !full.is_empty() {
                    *summary = full;
                }
                *encrypted_content = encrypted.or(encrypted_content.take());
            }
            _ => {} // an item whose type changed between added and done: keep the first
        }
    }

    /// The end of the response (`completed`, `incomplete` or `failed`, or a whole JSON
    /// body): its items, usage and status.
    fn complete(
        &mut self,
        response: WireResponse,
        sink: &DeltaSink<'_>,
    ) -> Result<(), ProviderError> {
        if response.status.as_deref() == Some("failed")
            || response.error.as_ref().is_some_and(|e| !e.is_null())
        {
            return Err(self.failed(response.error));
        }
        self.set_id(response.id);
        if let Some(model) = response.model {
            self.set_model(model);
        }
        for (index, item) in response.output.into_iter().enumerate() {
            self.close(index, item, sink);
        }
        if let Some(usage) = response.usage {
            let usage = usage.to_usage();
            self.usage = Some(usage);
            sink(StreamDelta::Usage { usage });
        }
        if response.status.as_deref() == Some("incomplete") {
            let reason = response.incomplete_details.and_then(|d| d.reason);
            self.incomplete = Some(reason.unwrap_or_default());
        }
        self.done = true;
        Ok(())
    }

    fn into_response(self) -> ModelResponse {
        let mut text = String::new();
        let mut thinking = Vec::new();
        let mut tool_calls = Vec::new();
        let mut refused = false;
        for (_, slot) in self.items {
            match slot {
                Slot::Message { text: t, refusal } => {
                    text.push_str(&t);
                    refused |= refusal;
                }
                Slot::Call {
                    call_id,
                    name,
                    arguments,
                    ..
                } => tool_calls.push(ToolCall::from_raw(call_id, name, &arguments)),
                Slot::Reasoning {
                    id,
                    summary,
                    encrypted_content,
                } => {
                    if summary.is_empty() && encrypted_content.is_none() {
                        continue; // nothing to show and nothing to carry back
                    }
                    thinking.push(ThinkingBlock {
                        text: summary.join("\n\n"),
                        reasoning_item: Some(ReasoningItem {
                            id,
                            encrypted_content,
                        }),
                        ..Default::default()
                    });
                }
                Slot::Ignored => {}
            }
        }
        let finish_reason = match self.incomplete.as_deref() {
            Some("max_output_tokens" | "max_tokens") => FinishReason::Length,
            Some("content_filter") => FinishReason::ContentFilter,
            Some(other) => FinishReason::Other(other.to_string()),
            None if refused => FinishReason::ContentFilter,
            None if !tool_calls.is_empty() => FinishReason::ToolCalls,
            None => FinishReason::Stop,
        };
        ModelResponse {
            text,
            thinking,
            tool_calls,
            usage: self.usage.unwrap_or_default(),
            finish_reason,
            model: self.model,
            id: self.id,
        }
    }
}

/// Appends a summary delta to part `part`, returning the text to show: a new part after
/// the first starts on a new paragraph, as the block's text joins them.
fn summary_delta(summary: &mut Vec<String>, part: usize, delta: &str) -> String {
    if summary.len() <= part {
        summary.resize(part + 1, String::new());
    }
    let starts_part = summary[part].is_empty() && part > 0;
    summary[part].push_str(delta);
    if starts_part {
        format!("\n\n{delta}")
    } else {
        delta.to_string()
    }
}

/// What of `full` the deltas have not reported yet: the rest when they reported a
/// prefix of it, nothing when they reported it all or something else (the complete item
/// wins in the response either way).
fn unreported(streamed: &str, full: &str) -> Option<String> {
    full.strip_prefix(streamed)
        .filter(|rest| !rest.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    fn parse(body: Value) -> (ModelResponse, Vec<StreamDelta>) {
        let deltas = Mutex::new(Vec::new());
        let sink = |d: StreamDelta| deltas.lock().unwrap().push(d);
        let bytes = body.to_string();
        let response = parse_response("openai_responses", "m", bytes.as_bytes(), &sink).unwrap();
        (response, deltas.into_inner().unwrap())
    }

    #[test]
    fn unknown_items_and_parts_are_skipped() {
        let (r, _) = parse(json!({"status": "completed", "output": [
            {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"query": "x"}},
            {"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": "Found it.", "annotations": [{"type": "url_citation", "url": "u"}]},
                {"type": "output_audio", "data": "..."}]}
        ]}));
        assert_eq!(r.text, "Found it.");
        assert_eq!(r.finish_reason, FinishReason::Stop);
    }

    #[test]
    fn summary_parts_become_paragraphs_of_one_block() {
        let events = [
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
            json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "First."}),
            json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 1, "delta": "Second."}),
            json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1",
                   "summary": [{"type": "summary_text", "text": "First."}, {"type": "summary_text", "text": "Second."}],
                   "encrypted_content": "enc"}}),
            json!({"type": "response.completed", "response": {"status": "completed", "output": []}}),
        ];
        let mut stream = ResponsesStream::new("openai_responses", "m");
        let deltas = Mutex::new(Vec::new());
        let sink = |d: StreamDelta| deltas.lock().unwrap().push(d);
        for e in events {
            stream
                .feed(format!("data: {e}\n\n").as_bytes(), &sink)
                .unwrap();
        }
        let r = stream.finish(&sink).unwrap();
        assert_eq!(r.thinking.len(), 1);
        assert_eq!(r.thinking[0].text, "First.\n\nSecond.");
        let shown: String = deltas
            .into_inner()
            .unwrap()
            .into_iter()
            .filter_map(|d| match d {
                StreamDelta::Thinking { text } => Some(text),
                _ => None,
            })
            .collect();
        assert_eq!(
            shown, r.thinking[0].text,
            "the deltas show what the block holds"
        );
    }

    #[test]
    fn a_refusal_is_the_answer_and_finishes_as_content_filter() {
        let (r, deltas) = parse(json!({"status": "completed", "output": [
            {"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "I can't help with that."}]}
        ]}));
        assert_eq!(r.text, "I can't help with that.");
        assert_eq!(r.finish_reason, FinishReason::ContentFilter);
        assert_eq!(
            deltas,
            vec![StreamDelta::Text {
                text: r.text.clone()
            }]
        );
    }

    #[test]
    fn a_failed_whole_response_is_an_error() {
        let body = json!({"status": "failed", "error": {"code": "server_error", "message": "boom"}, "output": []});
        let e = parse_response(
            "openai_responses",
            "m",
            body.to_string().as_bytes(),
            &|_| {},
        )
        .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Server);
        assert!(e.message.starts_with("boom"), "{e}");
    }
}
