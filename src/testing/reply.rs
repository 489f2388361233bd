//! A wire-neutral scripted answer for the mock server, rendered as whichever wire
//! format the request came in: OpenAI Chat Completions, OpenAI Responses or Anthropic
//! Messages, streamed
//! (one SSE event per HTTP chunk) or whole JSON when the request said `stream: false`.
//! The streams follow the shapes real servers send (see `tests/fixtures/wire/`).

use serde_json::{Value, json};

/// What the mock model says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reply {
    pub text: String,
    pub thinking: Option<String>,
    /// `(name, arguments)`; arguments given as a JSON string are sent verbatim.
    pub tool_calls: Vec<(String, Value)>,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl Reply {
    pub fn text(text: impl Into<String>) -> Self {
        Reply {
            text: text.into(),
            input_tokens: 10,
            output_tokens: 5,
            ..Default::default()
        }
    }

    /// A reply with one tool call and no text.
    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Self {
        Reply::text("").with_tool_call(name, arguments)
    }

    pub fn with_tool_call(mut self, name: impl Into<String>, arguments: Value) -> Self {
        self.tool_calls.push((name.into(), arguments));
        self
    }

    pub fn with_thinking(mut self, thinking: impl Into<String>) -> Self {
        self.thinking = Some(thinking.into());
        self
    }

    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.input_tokens = input_tokens;
        self.output_tokens = output_tokens;
        self
    }

    /// The reply as a server that honours stop sequences sends it: its text ends where the
    /// first of them would begin.
    pub fn stopped_at(&self, stop: &[String]) -> Reply {
        let end = stop.iter().filter_map(|s| self.text.find(s.as_str())).min();
        let mut reply = self.clone();
        if let Some(end) = end {
            reply.text.truncate(end);
        }
        reply
    }

    fn arguments_text(args: &Value) -> String {
        match args {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        }
    }

    /// OpenAI SSE events (each is one `data: ...\n\n` frame), `[DONE]` last.
    pub fn openai_events(&self, model: &str, n: usize) -> Vec<String> {
        let id = format!("chatcmpl-mock{n}");
        let chunk = |delta: Value, finish: Value| {
            json!({"id": id, "object": "chat.completion.chunk", "created": 1_700_000_000, "model": model,
                   "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]})
        };
        let mut events = vec![chunk(
            json!({"role": "assistant", "content": ""}),
            Value::Null,
        )];
        if let Some(thinking) = &self.thinking {
            for piece in pieces(thinking) {
                events.push(chunk(json!({"reasoning_content": piece}), Value::Null));
            }
        }
        for piece in pieces(&self.text) {
            events.push(chunk(json!({"content": piece}), Value::Null));
        }
        for (i, (name, args)) in self.tool_calls.iter().enumerate() {
            let call_id = format!("call_mock{n}_{i}");
            events.push(chunk(
                json!({"tool_calls": [{"index": i, "id": call_id, "type": "function",
                        "function": {"name": name, "arguments": ""}}]}),
                Value::Null,
            ));
            let text = Self::arguments_text(args);
            let (a, b) = split_half(&text);
            for part in [a, b].into_iter().filter(|p| !p.is_empty()) {
                events.push(chunk(
                    json!({"tool_calls": [{"index": i, "function": {"arguments": part}}]}),
                    Value::Null,
                ));
            }
        }
        let finish = if self.tool_calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        };
        events.push(chunk(json!({}), json!(finish)));
        events.push(
            json!({"id": id, "object": "chat.completion.chunk", "created": 1_700_000_000,
            "model": model, "choices": [], "usage": self.openai_usage()}),
        );
        let mut out: Vec<String> = events
            .into_iter()
            .map(|e| format!("data: {e}\n\n"))
            .collect();
        out.push("data: [DONE]\n\n".to_string());
        out
    }

    fn openai_usage(&self) -> Value {
        json!({"prompt_tokens": self.input_tokens, "completion_tokens": self.output_tokens,
               "total_tokens": self.input_tokens + self.output_tokens})
    }

    /// A non-streaming `chat.completion` body.
    pub fn openai_json(&self, model: &str, n: usize) -> Value {
        let calls: Vec<Value> = self
            .tool_calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| {
                json!({"id": format!("call_mock{n}_{i}"), "type": "function",
                       "function": {"name": name, "arguments": Self::arguments_text(args)}})
            })
            .collect();
        let mut message = json!({"role": "assistant", "content": self.text});
        if let Some(thinking) = &self.thinking {
            message["reasoning_content"] = json!(thinking);
        }
        if !calls.is_empty() {
            message["tool_calls"] = Value::Array(calls);
        }
        let finish = if self.tool_calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        };
        json!({"id": format!("chatcmpl-mock{n}"), "object": "chat.completion", "created": 1_700_000_000,
               "model": model, "choices": [{"index": 0, "message": message, "finish_reason": finish}],
               "usage": self.openai_usage()})
    }

    /// Anthropic SSE events (`event: ...\ndata: ...\n\n` frames), `message_stop` last.
    pub fn anthropic_events(&self, model: &str, n: usize) -> Vec<String> {
        let mut events: Vec<Value> = vec![
            json!({"type": "message_start", "message": {"id": format!("msg_mock{n}"), "type": "message",
                "role": "assistant", "model": model, "content": [], "stop_reason": null,
                "usage": {"input_tokens": self.input_tokens, "output_tokens": 1}}}),
            json!({"type": "ping"}),
        ];
        let mut index = 0;
        let mut block = |events: &mut Vec<Value>, start: Value, deltas: Vec<Value>| {
            events.push(
                json!({"type": "content_block_start", "index": index, "content_block": start}),
            );
            for d in deltas {
                events.push(json!({"type": "content_block_delta", "index": index, "delta": d}));
            }
            events.push(json!({"type": "content_block_stop", "index": index}));
            index += 1;
        };
        if let Some(thinking) = &self.thinking {
            let mut deltas: Vec<Value> = pieces(thinking)
                .map(|p| json!({"type": "thinking_delta", "thinking": p}))
                .collect();
            deltas.push(
                json!({"type": "signature_delta", "signature": format!("mock-signature-{n}")}),
            );
            block(
                &mut events,
                json!({"type": "thinking", "thinking": "", "signature": ""}),
                deltas,
            );
        }
        if !self.text.is_empty() {
            let deltas = pieces(&self.text)
                .map(|p| json!({"type": "text_delta", "text": p}))
                .collect();
            block(&mut events, json!({"type": "text", "text": ""}), deltas);
        }
        for (i, (name, args)) in self.tool_calls.iter().enumerate() {
            let text = Self::arguments_text(args);
            let (a, b) = split_half(&text);
            let deltas = ["", a, b]
                .iter()
                .enumerate()
                .filter(|(j, p)| *j == 0 || !p.is_empty())
                .map(|(_, p)| json!({"type": "input_json_delta", "partial_json": p}))
                .collect();
            let start = json!({"type": "tool_use", "id": format!("toolu_mock{n}_{i}"), "name": name, "input": {}});
            block(&mut events, start, deltas);
        }
        let stop = if self.tool_calls.is_empty() {
            "end_turn"
        } else {
            "tool_use"
        };
        events.push(
            json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
                           "usage": {"output_tokens": self.output_tokens}}),
        );
        events.push(json!({"type": "message_stop"}));
        events
            .into_iter()
            .map(|e| {
                format!(
                    "event: {}\ndata: {e}\n\n",
                    e["type"].as_str().unwrap_or("message")
                )
            })
            .collect()
    }

    /// A non-streaming Messages body.
    pub fn anthropic_json(&self, model: &str, n: usize) -> Value {
        let mut content = Vec::new();
        if let Some(thinking) = &self.thinking {
            content.push(json!({"type": "thinking", "thinking": thinking, "signature": format!("mock-signature-{n}")}));
        }
        if !self.text.is_empty() {
            content.push(json!({"type": "text", "text": self.text}));
        }
        for (i, (name, args)) in self.tool_calls.iter().enumerate() {
            let input = match args {
                Value::String(s) => serde_json::from_str(s).unwrap_or(json!({})),
                v => v.clone(),
            };
            content.push(json!({"type": "tool_use", "id": format!("toolu_mock{n}_{i}"), "name": name, "input": input}));
        }
        let stop = if self.tool_calls.is_empty() {
            "end_turn"
        } else {
            "tool_use"
        };
        json!({"id": format!("msg_mock{n}"), "type": "message", "role": "assistant", "model": model,
               "content": content, "stop_reason": stop,
               "usage": {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}})
    }
}

impl Reply {
    /// The Responses API output items: reasoning (summary and encrypted content), the
    /// message, then the function calls. `done` gives them complete, else as
    /// `response.output_item.added` announces them (empty, in progress).
    fn responses_items(&self, n: usize, done: bool) -> Vec<Value> {
        let status = if done { "completed" } else { "in_progress" };
        let mut items = Vec::new();
        if let Some(thinking) = &self.thinking {
            let mut item = json!({"id": format!("rs_mock{n}"), "type": "reasoning", "summary": []});
            if done {
                item["summary"] = json!([{"type": "summary_text", "text": thinking}]);
                item["encrypted_content"] = json!(format!("mock-encrypted-{n}"));
            }
            items.push(item);
        }
        if !self.text.is_empty() {
            let content = if done {
                json!([{"type": "output_text", "text": self.text, "annotations": []}])
            } else {
                json!([])
            };
            items.push(
                json!({"id": format!("msg_mock{n}"), "type": "message", "status": status,
                "role": "assistant", "content": content}),
            );
        }
        for (i, (name, args)) in self.tool_calls.iter().enumerate() {
            let arguments = if done {
                Self::arguments_text(args)
            } else {
                String::new()
            };
            items.push(
                json!({"id": format!("fc_mock{n}_{i}"), "type": "function_call",
                "status": status, "call_id": format!("call_mock{n}_{i}"), "name": name,
                "arguments": arguments}),
            );
        }
        items
    }

    /// A Responses API response object; `status` is `completed` unless said otherwise.
    fn responses_object(&self, model: &str, n: usize, output: Vec<Value>, status: &str) -> Value {
        let reasoning_tokens = if self.thinking.is_some() {
            self.output_tokens / 2
        } else {
            0
        };
        let usage = (status == "completed").then(|| {
            json!({"input_tokens": self.input_tokens, "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": self.output_tokens,
                "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
                "total_tokens": self.input_tokens + self.output_tokens})
        });
        json!({"id": format!("resp_mock{n}"), "object": "response", "created_at": 1_700_000_000,
            "status": status, "error": null, "incomplete_details": null, "model": model,
            "output": output, "store": false, "usage": usage})
    }

    /// Responses API SSE events (`event: ...\ndata: ...\n\n` frames), as the API streams
    /// them: `response.created`, each item added, its deltas and done, then
    /// `response.completed` with the whole response and its usage.
    pub fn responses_events(&self, model: &str, n: usize) -> Vec<String> {
        let started = self.responses_object(model, n, Vec::new(), "in_progress");
        let mut events = vec![
            json!({"type": "response.created", "response": started}),
            json!({"type": "response.in_progress", "response": started}),
        ];
        let done_items = self.responses_items(n, true);
        let added = self.responses_items(n, false);
        for (index, (open, done)) in added.into_iter().zip(&done_items).enumerate() {
            events.push(
                json!({"type": "response.output_item.added", "output_index": index, "item": open}),
            );
            events.extend(item_events(index, done));
            events.push(
                json!({"type": "response.output_item.done", "output_index": index, "item": done}),
            );
        }
        let complete = self.responses_object(model, n, done_items, "completed");
        events.push(json!({"type": "response.completed", "response": complete}));
        events
            .into_iter()
            .enumerate()
            .map(|(seq, mut e)| {
                e["sequence_number"] = json!(seq);
                format!(
                    "event: {}\ndata: {e}\n\n",
                    e["type"].as_str().unwrap_or("message")
                )
            })
            .collect()
    }

    /// A non-streaming Responses API body.
    pub fn responses_json(&self, model: &str, n: usize) -> Value {
        self.responses_object(model, n, self.responses_items(n, true), "completed")
    }
}

/// The events between an item's `added` and `done`: its content part opened, its text
/// in pieces (a function call's arguments in two halves), then closed.
fn item_events(index: usize, done: &Value) -> Vec<Value> {
    let at = json!({"item_id": done["id"], "output_index": index});
    let mut events = Vec::new();
    let with = |kind: &str, fields: Value| {
        let mut event = at.clone();
        event["type"] = json!(kind);
        for (k, v) in fields.as_object().into_iter().flatten() {
            event[k] = v.clone();
        }
        event
    };
    match done["type"].as_str() {
        Some("reasoning") => {
            let text = done["summary"][0]["text"].as_str().unwrap_or("");
            let part = json!({"summary_index": 0, "part": done["summary"][0]});
            events.push(with(
                "response.reasoning_summary_part.added",
                json!({"summary_index": 0, "part": {"type": "summary_text", "text": ""}}),
            ));
            for piece in pieces(text) {
                events.push(with(
                    "response.reasoning_summary_text.delta",
                    json!({"summary_index": 0, "delta": piece}),
                ));
            }
            events.push(with(
                "response.reasoning_summary_text.done",
                json!({"summary_index": 0, "text": text}),
            ));
            events.push(with("response.reasoning_summary_part.done", part));
        }
        Some("message") => {
            let text = done["content"][0]["text"].as_str().unwrap_or("");
            let part = json!({"content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}});
            events.push(with("response.content_part.added", part));
            for piece in pieces(text) {
                events.push(with(
                    "response.output_text.delta",
                    json!({"content_index": 0, "delta": piece}),
                ));
            }
            events.push(with(
                "response.output_text.done",
                json!({"content_index": 0, "text": text}),
            ));
            events.push(with(
                "response.content_part.done",
                json!({"content_index": 0, "part": done["content"][0]}),
            ));
        }
        _ => {
            let text = done["arguments"].as_str().unwrap_or("");
            let (a, b) = split_half(text);
            for part in [a, b].into_iter().filter(|p| !p.is_empty()) {
                events.push(with(
                    "response.function_call_arguments.delta",
                    json!({"delta": part}),
                ));
            }
            events.push(with(
                "response.function_call_arguments.done",
                json!({"arguments": text}),
            ));
        }
    }
    events
}

/// Word-sized pieces, as models stream them.
fn pieces(text: &str) -> impl Iterator<Item = &str> {
    crate::provider::scripted::word_pieces(text)
}

fn split_half(s: &str) -> (&str, &str) {
    let mut mid = s.len() / 2;
    while !s.is_char_boundary(mid) {
        mid -= 1;
    }
    s.split_at(mid)
}
