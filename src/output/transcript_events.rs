//! Feeds the tagged transcript from the event stream, so the transcript can never disagree
//! with events.jsonl. A step's items are buffered until the step ends, then written as one
//! block with its final title and ✓/✗ (no mark for a step the run paused in; a crash loses
//! at most the step in progress). Every tool call the model made gets its block, from its
//! creation, so a call refused before it ran shows with its failed result. A sub-agent's
//! events build their own tree in memory and land inside the parent's tool block when the
//! sub-agent completes. Events at depth 0 are the root's, whichever run they belong to (a
//! chat writes one transcript over many runs).

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;

use crate::engine::events::{Event, EventSink, kind};
use crate::output::transcript::{
    ErrorJson, InputRequired, Item, Recorder, StepStatus, ToolResult, TranscriptSink, UserInput,
};

/// One buffered transcript operation of an open step.
enum Op {
    Thinking(String),
    Text(String),
    ToolStart {
        name: String,
        id: String,
        input: Value,
    },
    Nested {
        id: String,
        items: Vec<Item>,
    },
    ToolResult {
        name: String,
        id: String,
        result: ToolResult,
    },
}

/// The transcript of one agent run (the root, or a sub-agent in memory).
struct RunTranscript<S: TranscriptSink> {
    sink: S,
    open: HashMap<String, Vec<Op>>,
}

impl<S: TranscriptSink> RunTranscript<S> {
    fn new(sink: S) -> Self {
        RunTranscript {
            sink,
            open: HashMap::new(),
        }
    }

    fn push(&mut self, step_id: Option<&str>, op: Op) {
        if let Some(ops) = step_id.and_then(|id| self.open.get_mut(id)) {
            ops.push(op);
        }
    }

    /// Writes a finished step; write errors (a full disk) must not stop the run.
    fn close(&mut self, step_id: &str, number: u32, title: &str, status: StepStatus) {
        let ops = self.open.remove(step_id).unwrap_or_default();
        let _ = self.sink.step_start(number, title);
        for op in ops {
            let _ = match op {
                Op::Thinking(text) => self.sink.thinking(&text),
                Op::Text(text) => self.sink.text(&text),
                Op::ToolStart { name, id, input } => self.sink.tool_start(&name, &id, &input),
                Op::Nested { id, items } => self.sink.tool_nested(&id, items),
                Op::ToolResult { name, id, result } => self.sink.tool_result(&name, &id, result),
            };
        }
        let _ = self.sink.step_end(status);
    }

    fn apply(&mut self, event: &Event) -> Option<SubAgentDone> {
        let data = &event.data;
        let text = |key: &str| {
            data.get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let step_id = data.get("stepId").and_then(Value::as_str);
        match event.kind {
            kind::STEP_CREATED => {
                self.open.insert(text("stepId"), Vec::new());
            }
            kind::THINKING => self.push(step_id, Op::Thinking(text("reasoning"))),
            kind::MESSAGE_COMPLETED => {
                let message = &data["message"];
                for thought in message["thinking"].as_array().into_iter().flatten() {
                    if let Some(thought) = thought.as_str().filter(|t| !t.is_empty()) {
                        self.push(step_id, Op::Thinking(thought.to_string()));
                    }
                }
                // A reasoning reply is written once, as thinking (its own event).
                let reasoning = data["purpose"] == "reasoning";
                if let Some(content) = message["content"].as_str().filter(|t| !t.is_empty())
                    && !reasoning
                {
                    self.push(step_id, Op::Text(content.to_string()));
                }
            }
            kind::TOOL_CALL_CREATED => {
                let call = &data["toolCall"];
                let input = match call.pointer("/invalid_arguments/raw") {
                    Some(raw) if call["arguments"].is_null() => raw.clone(),
                    _ => call["arguments"].clone(),
                };
                let field = |key: &str| call[key].as_str().unwrap_or_default().to_string();
                let (name, id) = (field("name"), field("id"));
                self.push(step_id, Op::ToolStart { name, id, input });
            }
            kind::TOOL_COMPLETED => {
                let result: ToolResult = serde_json::from_value(data["result"].clone())
                    .unwrap_or_else(|_| ToolResult::err("the tool result could not be read"));
                self.push(
                    step_id,
                    Op::ToolResult {
                        name: text("toolName"),
                        id: text("toolCallId"),
                        result,
                    },
                );
            }
            kind::SUB_AGENT_COMPLETED => {
                return Some(SubAgentDone {
                    step_id: text("plannerStepId"),
                    tool_call_id: text("toolCallId"),
                    run_id: text("subAgentRunId"),
                });
            }
            kind::STEP_COMPLETED => {
                let number = data
                    .pointer("/details/step")
                    .and_then(Value::as_u64)
                    .unwrap_or(0) as u32;
                let title = data
                    .pointer("/details/title")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let status = match data.get("status").and_then(Value::as_str) {
                    Some("completed") => StepStatus::Done,
                    Some("paused") => StepStatus::Open,
                    _ => StepStatus::Failed,
                };
                self.close(&text("stepId"), number, title, status);
            }
            kind::REQUIRES_ACTION => {
                let question = data
                    .pointer("/required_action/question")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let _ = self.sink.input_required(InputRequired {
                    prompt: question.to_string(),
                    input_types: "text".into(),
                    checkpoint_name: data["checkpointName"].as_str().map(String::from),
                    provided: None,
                });
            }
            // The answer is written inside the block of the question it answers.
            kind::USER_INPUT_PROVIDED => {
                let _ = self.sink.input_required(InputRequired {
                    prompt: text("question"),
                    input_types: "text".into(),
                    checkpoint_name: None,
                    provided: Some(UserInput {
                        input: data.get("answer").cloned().unwrap_or(Value::Null),
                        kind: "text".into(),
                    }),
                });
            }
            // The transcript's tags have no reload block; a named checkpoint marks it.
            kind::RELOADED => {
                let changes: Vec<&str> = data["changes"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                let _ = self
                    .sink
                    .checkpoint(&format!("definition reloaded: {}", changes.join(", ")));
            }
            kind::CHECKPOINT_SAVED => {
                let _ = self.sink.checkpoint(&text("name"));
            }
            kind::RUN_COMPLETED => {
                let answer = data
                    .pointer("/finalMessages/0/text")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let _ = self.sink.final_answer(answer);
            }
            kind::RUN_FAILED => {
                let message = data
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("the run failed");
                let json = ErrorJson {
                    error: message.to_string(),
                    code: data
                        .pointer("/error/code")
                        .and_then(Value::as_str)
                        .map(String::from),
                    details: data
                        .pointer("/error/details")
                        .cloned()
                        .unwrap_or(Value::Null),
                    timestamp: Some(event.timestamp.clone()),
                };
                let _ = self.sink.error(message, json);
            }
            _ => {}
        }
        None
    }
}

/// A sub-agent finished: its items go into the parent's tool block.
struct SubAgentDone {
    step_id: String,
    tool_call_id: String,
    run_id: String,
}

struct Inner<S: TranscriptSink> {
    root: RunTranscript<S>,
    children: HashMap<String, RunTranscript<Recorder>>,
    parents: HashMap<String, String>,
}

/// The event subscriber that writes a transcript.
pub struct TranscriptEvents<S: TranscriptSink + Send> {
    inner: Mutex<Inner<S>>,
}

impl<S: TranscriptSink + Send> TranscriptEvents<S> {
    pub fn new(sink: S) -> Self {
        TranscriptEvents {
            inner: Mutex::new(Inner {
                root: RunTranscript::new(sink),
                children: HashMap::new(),
                parents: HashMap::new(),
            }),
        }
    }
}

impl<S: TranscriptSink + Send> EventSink for TranscriptEvents<S> {
    fn emit(&self, event: &Event) {
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        let inner = &mut *inner;
        let done = if event.depth == 0 {
            inner.root.apply(event)
        } else {
            if let Some(parent) = &event.parent_run_id {
                inner.parents.insert(event.run_id.clone(), parent.clone());
            }
            inner
                .children
                .entry(event.run_id.clone())
                .or_insert_with(|| RunTranscript::new(Recorder::new()))
                .apply(event)
        };
        let Some(done) = done else { return };
        let Some(child) = inner.children.remove(&done.run_id) else {
            return;
        };
        let items = child.sink.into_items();
        let op = Op::Nested {
            id: done.tool_call_id,
            items,
        };
        if event.depth == 0 {
            inner.root.push(Some(&done.step_id), op);
        } else if let Some(parent) = inner.children.get_mut(&event.run_id) {
            parent.push(Some(&done.step_id), op);
        }
    }
}
