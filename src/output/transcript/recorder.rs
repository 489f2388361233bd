//! Building a transcript tree from the calls an engine makes as a run goes.
//!
//! The engine reports events in the order they happen (step started, tool started, …,
//! step ended), and several tool calls of one step may be running at once and finish in
//! any order. The recorder turns that into the tree of [`model`](super::model): tool
//! calls are matched by id, and a sub-agent records into its own `Recorder` whose items
//! the parent attaches to the tool call that ran it ([`TranscriptSink::tool_nested`]).
//! [`TranscriptWriter`](super::writer::TranscriptWriter) is the same thing plus
//! writing each finished top-level block to a file.

use indexmap::IndexMap;
use serde_json::Value;

#[cfg(any(test, feature = "testing"))]
use super::model::UserInput;
use super::model::{
    Checkpoint, ErrorBlock, ErrorJson, InputRequired, Item, Step, StepStatus, ToolResult, ToolStep,
};

/// A call that does not fit the current state (e.g. `step_end` with no step open), or an
/// I/O failure of the underlying file.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("transcript writer misuse: {0}")]
    Misuse(String),
    #[error("writing transcript: {0}")]
    Io(#[from] std::io::Error),
}

/// What an engine calls while a run goes. Implemented by [`Recorder`] (in memory, for
/// sub-agents) and [`TranscriptWriter`](super::writer::TranscriptWriter) (to a file).
pub trait TranscriptSink {
    /// Opens step `number`; the header line is written when the step ends (its status is
    /// only known then).
    fn step_start(&mut self, number: u32, title: &str) -> Result<(), WriteError>;
    /// Marks the open step with `<<SINGLE_STEP_FLAG>>`.
    fn single_step(&mut self) -> Result<(), WriteError>;
    /// Model reasoning, inside the open step (or at top level if none is open).
    fn thinking(&mut self, text: &str) -> Result<(), WriteError>;
    /// Assistant text. Two texts in a row read back as one, joined by `\n`.
    fn text(&mut self, text: &str) -> Result<(), WriteError>;
    /// A tool call started. Several may be pending at once; `id` tells them apart.
    fn tool_start(&mut self, name: &str, id: &str, input: &Value) -> Result<(), WriteError>;
    /// A sub-agent's own items, attached to the pending tool call `id`.
    fn tool_nested(&mut self, id: &str, items: Vec<Item>) -> Result<(), WriteError>;
    /// The pending tool call `name:id` finished with `result`.
    fn tool_result(&mut self, name: &str, id: &str, result: ToolResult) -> Result<(), WriteError>;
    #[cfg(any(test, feature = "testing"))]
    /// The pending tool call `name:id` ended without a result (cancelled, interrupted).
    fn tool_end(&mut self, name: &str, id: &str) -> Result<(), WriteError>;
    /// Closes the open step. All its tool calls must have ended.
    fn step_end(&mut self, status: StepStatus) -> Result<(), WriteError>;
    /// A checkpoint was saved.
    fn checkpoint(&mut self, name: &str) -> Result<(), WriteError>;
    /// An error: message and details.
    fn error(&mut self, message: &str, json: ErrorJson) -> Result<(), WriteError>;
    /// The agent asked for input (with the answer, if it is already known).
    fn input_required(&mut self, request: InputRequired) -> Result<(), WriteError>;
    #[cfg(any(test, feature = "testing"))]
    /// An answer that arrived after its request's block was written.
    fn user_input_provided(&mut self, input: UserInput) -> Result<(), WriteError>;
    /// The final answer: top-level text after the last step. No step may be open.
    fn final_answer(&mut self, text: &str) -> Result<(), WriteError>;
    /// Writes what a sink that holds finished blocks still holds (see
    /// [`TranscriptWriter::holding`](super::TranscriptWriter::holding)).
    fn flush(&mut self) -> Result<(), WriteError> {
        Ok(())
    }
}

/// In-memory [`TranscriptSink`]: collects the tree.
#[derive(Debug, Default)]
pub struct Recorder {
    items: Vec<Item>,
    open_step: Option<Step>,
    /// The tool calls without an end: id → index of its block in the current container
    /// (a lookup, so a reply with thousands of calls is recorded in linear time).
    pending: IndexMap<String, usize>,
}

impl Recorder {
    pub fn new() -> Self {
        Recorder::default()
    }

    /// True while a step is open or a tool call is pending: the top-level list is then not
    /// ready to be written out.
    pub fn is_busy(&self) -> bool {
        self.open_step.is_some() || !self.pending.is_empty()
    }

    /// Takes the finished top-level items (only when not [`busy`](Self::is_busy)).
    pub fn take_finished(&mut self) -> Vec<Item> {
        if self.is_busy() {
            Vec::new()
        } else {
            std::mem::take(&mut self.items)
        }
    }

    /// Ends pending tool calls without a result and closes an open step as
    /// [`StepStatus::Open`]: what to call when a run stops early (interrupt, pause for
    /// input, fatal error), so that what happened so far is kept.
    pub fn abort(&mut self) {
        // Pending tool calls already have no result, which is how "ended without one"
        // reads; forgetting them closes them.
        self.pending.clear();
        if let Some(step) = self.open_step.take() {
            self.items.push(Item::Step(step));
        }
    }

    /// Everything recorded, closing what is still open as [`abort`](Self::abort) does.
    pub fn into_items(mut self) -> Vec<Item> {
        self.abort();
        self.items
    }

    #[cfg(any(test, feature = "testing"))]
    /// Everything recorded; an error if a step is open or a tool call pending.
    pub fn finish(self) -> Result<Vec<Item>, WriteError> {
        if let Some(step) = &self.open_step {
            return Err(misuse(format!("step {} is still open", step.number)));
        }
        if let Some((id, _)) = self.pending.first() {
            return Err(misuse(format!("tool call {id} has not ended")));
        }
        Ok(self.items)
    }

    fn container(&mut self) -> &mut Vec<Item> {
        match &mut self.open_step {
            Some(step) => &mut step.items,
            None => &mut self.items,
        }
    }

    fn push(&mut self, item: Item) {
        self.container().push(item);
    }

    fn push_text(&mut self, text: &str) {
        let container = self.container();
        if let Some(Item::Text { text: prev }) = container.last_mut() {
            prev.push('\n');
            prev.push_str(text);
        } else {
            container.push(Item::text(text));
        }
    }

    fn end_tool(
        &mut self,
        name: &str,
        id: &str,
        result: Option<ToolResult>,
    ) -> Result<(), WriteError> {
        let tool = self
            .pending_tool(id)
            .ok_or_else(|| misuse(format!("tool call {name}:{id} is not pending")))?;
        if tool.name != name {
            return Err(misuse(format!(
                "tool call {id} was started as {}, ended as {name}",
                tool.name
            )));
        }
        tool.result = result;
        self.pending.swap_remove(id);
        Ok(())
    }

    fn pending_tool(&mut self, id: &str) -> Option<&mut ToolStep> {
        let index = *self.pending.get(id)?;
        match self.container().get_mut(index) {
            Some(Item::Tool(tool)) => Some(tool),
            _ => None,
        }
    }
}

fn misuse(message: String) -> WriteError {
    WriteError::Misuse(message)
}

impl TranscriptSink for Recorder {
    fn step_start(&mut self, number: u32, title: &str) -> Result<(), WriteError> {
        if let Some(step) = &self.open_step {
            return Err(misuse(format!(
                "step {number} started while step {} is open",
                step.number
            )));
        }
        if let Some((id, _)) = self.pending.first() {
            return Err(misuse(format!(
                "step {number} started while tool call {id} is pending"
            )));
        }
        self.open_step = Some(Step {
            number,
            title: title.to_owned(),
            status: StepStatus::Open,
            single_step: false,
            items: Vec::new(),
        });
        Ok(())
    }

    fn single_step(&mut self) -> Result<(), WriteError> {
        match &mut self.open_step {
            Some(step) => {
                step.single_step = true;
                Ok(())
            }
            None => Err(misuse("single_step with no step open".into())),
        }
    }

    fn thinking(&mut self, text: &str) -> Result<(), WriteError> {
        self.push(Item::thinking(text));
        Ok(())
    }

    fn text(&mut self, text: &str) -> Result<(), WriteError> {
        self.push_text(text);
        Ok(())
    }

    fn tool_start(&mut self, name: &str, id: &str, input: &Value) -> Result<(), WriteError> {
        if self.pending.contains_key(id) {
            return Err(misuse(format!("tool call id {id} is already pending")));
        }
        self.push(Item::Tool(ToolStep {
            name: name.to_owned(),
            id: id.to_owned(),
            input: input.clone(),
            nested: Vec::new(),
            result: None,
        }));
        let index = self.container().len() - 1;
        self.pending.insert(id.to_owned(), index);
        Ok(())
    }

    fn tool_nested(&mut self, id: &str, items: Vec<Item>) -> Result<(), WriteError> {
        let tool = self
            .pending_tool(id)
            .ok_or_else(|| misuse(format!("tool call {id} is not pending")))?;
        tool.nested.extend(items);
        Ok(())
    }

    fn tool_result(&mut self, name: &str, id: &str, result: ToolResult) -> Result<(), WriteError> {
        self.end_tool(name, id, Some(result))
    }

    #[cfg(any(test, feature = "testing"))]
    fn tool_end(&mut self, name: &str, id: &str) -> Result<(), WriteError> {
        self.end_tool(name, id, None)
    }

    fn step_end(&mut self, status: StepStatus) -> Result<(), WriteError> {
        if let Some((id, _)) = self.pending.first() {
            return Err(misuse(format!(
                "step ended while tool call {id} is pending"
            )));
        }
        let Some(mut step) = self.open_step.take() else {
            return Err(misuse("step_end with no step open".into()));
        };
        step.status = status;
        self.items.push(Item::Step(step));
        Ok(())
    }

    fn checkpoint(&mut self, name: &str) -> Result<(), WriteError> {
        self.push(Item::Checkpoint(Checkpoint {
            name: name.to_owned(),
        }));
        Ok(())
    }

    fn error(&mut self, message: &str, json: ErrorJson) -> Result<(), WriteError> {
        self.push(Item::Error(ErrorBlock {
            message: message.to_owned(),
            json,
        }));
        Ok(())
    }

    fn input_required(&mut self, request: InputRequired) -> Result<(), WriteError> {
        self.push(Item::InputRequired(request));
        Ok(())
    }

    #[cfg(any(test, feature = "testing"))]
    fn user_input_provided(&mut self, input: UserInput) -> Result<(), WriteError> {
        self.push(Item::UserInputProvided(input));
        Ok(())
    }

    fn final_answer(&mut self, text: &str) -> Result<(), WriteError> {
        if let Some(step) = &self.open_step {
            return Err(misuse(format!(
                "final answer while step {} is open",
                step.number
            )));
        }
        self.push_text(text);
        Ok(())
    }
}
