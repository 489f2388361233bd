//! Feeds the tagged transcript from the event stream, so the transcript can never disagree
//! with events.jsonl. A step's items are buffered until the step ends, then written as one
//! block with its final title and ✓/✗ (no mark for a step the run paused in; a crash loses
//! at most the step in progress, or one that just ended, whose block goes out with the
//! next model call). Every tool call the model made gets its block, from its
//! creation, so a call refused before it ran shows with its failed result. A sub-agent's
//! events build their own tree in memory and land inside the parent's tool block when the
//! sub-agent completes. Events at depth 0 are the root's, whichever run they belong to (a
//! chat writes one transcript over many runs).
//!
//! A run that answered in its first step without calling a tool is a single-step agent
//! action, which the reference marks with `<<SINGLE_STEP_FLAG>>`. Whether a step was the
//! run's last is known only from what follows it, so such a step is held back until the
//! next event that writes to the transcript (the run's completion gives it the flag).

use std::collections::{HashMap, HashSet};
use std::io::{self, Write};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::engine::events::{
    ActionKind, Event, EventData, EventSink, FlushPoints, MessageCompleted, Purpose, StepEnd,
};
use crate::output::transcript::{
    ErrorJson, InputRequired, Item, Recorder, StepStatus, ToolResult, TranscriptSink,
    TranscriptWriter, UserInput,
};
use crate::sync::lock;

/// One buffered transcript operation of an open step.
enum Op {
    Thinking(String),
    Text(String),
    ToolStart {
        name: String,
        id: String,
        input: Arc<Value>,
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

/// A finished step that may turn out to be its run's only one.
struct HeldStep {
    number: u32,
    title: String,
    ops: Vec<Op>,
}

/// The transcript of one agent run (the root, or a sub-agent in memory).
struct RunTranscript<S: TranscriptSink> {
    sink: S,
    open: HashMap<String, Vec<Op>>,
    /// The ids of the steps that were the first of their run.
    first_steps: HashSet<String>,
    /// The next step created is the first of its run.
    run_starting: bool,
    held: Option<HeldStep>,
    /// Checkpoints saved after the held step, written after it.
    held_checkpoints: Vec<String>,
}

impl<S: TranscriptSink> RunTranscript<S> {
    fn new(sink: S) -> Self {
        RunTranscript {
            sink,
            open: HashMap::new(),
            first_steps: HashSet::new(),
            run_starting: true,
            held: None,
            held_checkpoints: Vec::new(),
        }
    }

    fn push(&mut self, step_id: &str, op: Op) {
        if let Some(ops) = self.open.get_mut(step_id) {
            ops.push(op);
        }
    }

    /// Writes a finished step; a write error (a full disk) must not stop the run: a
    /// `TranscriptWriter` keeps it for `failure()`.
    fn close(&mut self, step_id: &str, number: u32, title: &str, status: StepStatus) {
        let ops = self.open.remove(step_id).unwrap_or_default();
        let first = self.first_steps.remove(step_id);
        let called_tools = ops.iter().any(|op| matches!(op, Op::ToolStart { .. }));
        if first && status == StepStatus::Done && !called_tools {
            let title = title.to_owned();
            self.held = Some(HeldStep { number, title, ops });
            return;
        }
        self.write_step(number, title, ops, status, false);
    }

    /// Writes the held step, flagged when the run ended right after it.
    fn release(&mut self, single_step: bool) {
        if let Some(held) = self.held.take() {
            let status = StepStatus::Done;
            self.write_step(held.number, &held.title, held.ops, status, single_step);
        }
        for name in std::mem::take(&mut self.held_checkpoints) {
            let _ = self.sink.checkpoint(&name);
        }
    }

    fn write_step(
        &mut self,
        number: u32,
        title: &str,
        ops: Vec<Op>,
        status: StepStatus,
        single_step: bool,
    ) {
        let _ = self.sink.step_start(number, title);
        if single_step {
            let _ = self.sink.single_step();
        }
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
        if self.held.is_some() {
            match &event.data {
                EventData::RunCompleted(_) => self.release(true),
                EventData::StepCreated(_)
                | EventData::RequiresAction(_)
                | EventData::UserInputProvided(_)
                | EventData::Reloaded(_)
                | EventData::RunFailed(_)
                | EventData::RunCreated(_) => self.release(false),
                _ => {}
            }
        }
        match &event.data {
            EventData::RunCreated(_) => self.run_starting = true,
            EventData::StepCreated(step) => {
                self.open.insert(step.step_id.clone(), Vec::new());
                if std::mem::take(&mut self.run_starting) {
                    self.first_steps.insert(step.step_id.clone());
                }
            }
            EventData::ReasoningCreated(reasoning) => self.push(
                &reasoning.step_id,
                Op::Thinking(reasoning.reasoning.clone()),
            ),
            EventData::MessageCompleted(reply) => self.reply(reply),
            EventData::ToolCallCreated(created) => {
                let call = &created.tool_call;
                // A call whose arguments never parsed shows what the model wrote.
                let input = match &call.invalid_arguments {
                    Some(invalid) if call.arguments.is_null() => {
                        Arc::new(Value::String(invalid.raw.clone()))
                    }
                    _ => call.arguments.clone(),
                };
                let (name, id) = (call.name.clone(), call.id.clone());
                self.push(&created.step_id, Op::ToolStart { name, id, input });
            }
            EventData::ToolCompleted(tool) => self.push(
                &tool.step_id,
                Op::ToolResult {
                    name: tool.tool_name.clone(),
                    id: tool.tool_call_id.clone(),
                    result: ToolResult::from(&tool.result),
                },
            ),
            EventData::SubAgentCompleted(sub) => {
                return Some(SubAgentDone {
                    step_id: sub.planner_step_id.clone(),
                    tool_call_id: sub.tool_call_id.clone(),
                    run_id: sub.sub_agent_run_id.clone(),
                });
            }
            EventData::StepCompleted(step) => {
                let status = match step.status {
                    StepEnd::Completed => StepStatus::Done,
                    StepEnd::Paused => StepStatus::Open,
                    StepEnd::Failed => StepStatus::Failed,
                };
                let details = &step.details;
                self.close(&step.step_id, details.step as u32, &details.title, status);
            }
            EventData::RequiresAction(action) => {
                let asked = &action.required_action;
                let prompt = match &asked.agent {
                    Some(agent) => format!("{agent} asks: {}", asked.question),
                    None => asked.question.clone(),
                };
                let input_types = match asked.kind {
                    ActionKind::UserInput => "text",
                    ActionKind::ToolApproval => "approval",
                    ActionKind::SubmitToolOutputs => "tool_outputs",
                };
                let _ = self.sink.input_required(InputRequired {
                    prompt,
                    input_types: input_types.into(),
                    checkpoint_name: action.checkpoint_name.clone(),
                    provided: None,
                });
            }
            // The answer is written inside the block of the question it answers: in the
            // `ask_user` tool block when it came at once, on its own when on resume.
            EventData::UserInputProvided(input) => {
                let block = InputRequired {
                    prompt: input.question.clone(),
                    input_types: "text".into(),
                    checkpoint_name: None,
                    provided: Some(UserInput {
                        input: Value::String(input.answer.clone()),
                        kind: "text".into(),
                    }),
                };
                match &input.step_id {
                    Some(step_id) => self.push(
                        step_id,
                        Op::Nested {
                            id: input.tool_call_id.clone(),
                            items: vec![Item::InputRequired(block)],
                        },
                    ),
                    None => {
                        let _ = self.sink.input_required(block);
                    }
                }
            }
            // The transcript's tags have no reload block; a named checkpoint marks it.
            EventData::Reloaded(reloaded) => {
                let label = format!("definition reloaded: {}", reloaded.changes.join(", "));
                let _ = self.sink.checkpoint(&label);
            }
            // Nor a compaction block: a named checkpoint marks it, with the sizes.
            EventData::ContextCompacted(compacted) => {
                let _ = self.sink.checkpoint(&compaction_label(compacted));
            }
            // The final step's checkpoint comes before the run's end, which tells whether
            // a held step was the only one.
            EventData::CheckpointSaved(saved) if self.held.is_some() => {
                self.held_checkpoints.push(saved.name.clone());
            }
            EventData::CheckpointSaved(saved) => {
                let _ = self.sink.checkpoint(&saved.name);
            }
            EventData::RunCompleted(completed) => {
                let _ = self
                    .sink
                    .final_answer(completed.output().unwrap_or_default());
            }
            EventData::RunFailed(failed) => {
                let error = &failed.error;
                let json = ErrorJson {
                    error: error.message.clone(),
                    code: Some(error.code.to_string()),
                    details: serde_json::to_value(&error.details).unwrap_or(Value::Null),
                    timestamp: Some(event.timestamp.to_string()),
                };
                let _ = self.sink.error(&error.message, json);
            }
            _ => {}
        }
        None
    }

    /// A model reply: its thinking, then its text. A reasoning reply is written once, as
    /// thinking (its own event).
    fn reply(&mut self, reply: &MessageCompleted) {
        let step_id = &reply.step_id;
        for thought in reply.message.thinking.iter().filter(|t| !t.is_empty()) {
            self.push(step_id, Op::Thinking(thought.clone()));
        }
        let content = &reply.message.content;
        if !content.is_empty() && reply.purpose != Purpose::Reasoning {
            self.push(step_id, Op::Text(content.clone()));
        }
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
    /// When the root's sink writes what it holds.
    points: FlushPoints,
    children: HashMap<Arc<str>, RunTranscript<Recorder>>,
    parents: HashMap<Arc<str>, Arc<str>>,
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
                points: FlushPoints::default(),
                children: HashMap::new(),
                parents: HashMap::new(),
            }),
        }
    }
}

impl<W: Write + Send> TranscriptEvents<TranscriptWriter<W>> {
    /// The write that failed, if one did: the transcript holds the blocks before it.
    pub fn failure(&self) -> Option<io::Error> {
        lock(&self.inner).root.sink.failure()
    }
}

impl<S: TranscriptSink + Send> EventSink for TranscriptEvents<S> {
    fn emit(&self, event: &Event) {
        let mut inner = lock(&self.inner);
        let inner = &mut *inner;
        inner.apply(event);
        if inner.points.after(event) {
            // A failure is kept by the sink for `failure()`; the run goes on.
            let _ = inner.root.sink.flush();
        }
    }

    fn flush(&self) {
        // A failure is kept by the sink for `failure()`; the run goes on.
        let _ = lock(&self.inner).root.sink.flush();
    }
}

impl<S: TranscriptSink + Send> Drop for TranscriptEvents<S> {
    fn drop(&mut self) {
        let _ = lock(&self.inner).root.sink.flush();
    }
}

impl<S: TranscriptSink> Inner<S> {
    /// Records `event` in its run's transcript; a sub-agent's that ended goes into its
    /// caller's tool block.
    fn apply(&mut self, event: &Event) {
        let inner = self;
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
        let Some(mut child) = inner.children.remove(done.run_id.as_str()) else {
            return;
        };
        child.release(false);
        let items = child.sink.into_items();
        let op = Op::Nested {
            id: done.tool_call_id,
            items,
        };
        if event.depth == 0 {
            inner.root.push(&done.step_id, op);
        } else if let Some(parent) = inner.children.get_mut(&event.run_id) {
            parent.push(&done.step_id, op);
        }
    }
}

/// The transcript's line for a compaction: `context compacted (summarize, threshold): about
/// 5400 → 1200 tokens, 12 messages summarised`.
fn compaction_label(compacted: &crate::engine::events::ContextCompacted) -> String {
    let done = match compacted.summary {
        Some(_) => "summarised",
        None => "dropped",
    };
    format!(
        "context compacted ({}, {}): about {} → {} tokens, {} messages {done}",
        compacted.strategy,
        compacted.reason,
        compacted.tokens_before,
        compacted.tokens_after,
        compacted.removed_messages
    )
}
