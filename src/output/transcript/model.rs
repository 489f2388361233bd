//! The transcript as a tree.
//!
//! The tagged text format (SPEC §8) is linear, but what it records is a tree: steps hold
//! thinking, text and tool calls; a sub-agent's own steps sit inside the tool call that ran
//! it. Writers, the parser and the renderers all meet on this one model, so that
//! `parse(write(x)) == x` can be stated (and tested) on values rather than on text.
//!
//! One caveat is inherent to the format, which has no tag for plain text: two `Text` items
//! side by side in the same list cannot be told apart once written (they read back as one
//! text joined by a newline). [`Transcript::normalized`] merges them the same way, and the
//! round-trip guarantee holds for every normalized tree.

use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::tools::ToolOutput;

/// A whole transcript: the top-level items in order.
///
/// Top-level plain text is the agent's answer; [`Transcript::final_answer`] picks the one
/// that follows the last step.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Transcript {
    pub items: Vec<Item>,
}

/// One element of a transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Item {
    /// A `<<STEP_START>>…<<STEP_END>>` block.
    Step(Step),
    /// A `<<thinking>>…<</thinking>>` block: model reasoning.
    Thinking { text: String },
    /// Plain text: assistant text inside a step, the final answer at top level.
    Text { text: String },
    /// A `<<TOOL_STEP_START/name:id>>…<<TOOL_STEP_END/name:id>>` block.
    Tool(ToolStep),
    /// A `<<CHECKPOINT_START>>…<<CHECKPOINT_END>>` block.
    Checkpoint(Checkpoint),
    /// An `<<ERROR_START>>` block followed by its `<<ERROR_JSON_START>>` block.
    Error(ErrorBlock),
    /// An `<<INPUT_REQUIRED_START>>…<<INPUT_REQUIRED_END>>` block.
    InputRequired(InputRequired),
    /// A stand-alone `<<USER_INPUT_PROVIDED_START>>` block: an answer recorded after the
    /// request's own block was already written (e.g. on `runner resume`).
    UserInputProvided(UserInput),
}

/// How a step ended; shown as the ` ✓` / ` ✗` suffix of its header line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// ` ✓`
    Done,
    /// ` ✗`
    Failed,
    /// No mark: the step was paused (input required) or interrupted before it finished.
    Open,
}

/// One strategy step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub number: u32,
    pub title: String,
    pub status: StepStatus,
    /// `<<SINGLE_STEP_FLAG>>` was present (written right after the header line).
    #[serde(default)]
    pub single_step: bool,
    /// Never contains another `Step` directly (sub-agent steps live in a tool's `nested`).
    pub items: Vec<Item>,
}

/// One tool call, with a sub-agent's own items when the tool is a sub-agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolStep {
    pub name: String,
    pub id: String,
    pub input: Value,
    /// Written between `<<TOOL_STEP_INPUT_END>>` and `<<TOOL_STEP_RESULT_START>>`.
    #[serde(default)]
    pub nested: Vec<Item>,
    /// `None` when the call never finished (the block has no RESULT part).
    pub result: Option<ToolResult>,
}

/// The JSON result of a tool call, shaped as SPEC §8 requires: a tool's output, shared
/// with the event that reported it rather than copied (a transcript writes each result a
/// run produced once, and never changes it). Its fields are [`ToolOutput`]'s.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult(Arc<ToolOutput>);

impl Deref for ToolResult {
    type Target = ToolOutput;

    fn deref(&self) -> &ToolOutput {
        &self.0
    }
}

impl From<ToolOutput> for ToolResult {
    fn from(output: ToolOutput) -> Self {
        ToolResult(Arc::new(output))
    }
}

impl From<&Arc<ToolOutput>> for ToolResult {
    fn from(output: &Arc<ToolOutput>) -> Self {
        ToolResult(Arc::clone(output))
    }
}

impl Serialize for ToolResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// A result as the strict parser reads it: the four fields, nothing else.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WrittenResult {
    success: bool,
    #[serde(default)]
    data: Value,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    metadata: Map<String, Value>,
}

impl<'de> Deserialize<'de> for ToolResult {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let written = WrittenResult::deserialize(deserializer)?;
        Ok(ToolResult::from(ToolOutput {
            success: written.success,
            data: written.data,
            error: written.error,
            metadata: written.metadata,
        }))
    }
}

#[cfg(any(test, feature = "testing"))]
impl ToolResult {
    /// A successful result carrying `data`.
    pub fn ok(data: Value) -> Self {
        ToolResult::from(ToolOutput::ok(data))
    }

    /// A failed result carrying an error message.
    pub fn err(message: impl Into<String>) -> Self {
        ToolResult::from(ToolOutput::error(message))
    }
}

/// A saved checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub name: String,
}

/// An error: the human message (ERROR block) and its details (ERROR_JSON block).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBlock {
    pub message: String,
    pub json: ErrorJson,
}

/// The JSON payload of an ERROR_JSON block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorJson {
    pub error: String,
    #[serde(default)]
    pub code: Option<String>,
    #[serde(default)]
    pub details: Value,
    #[serde(default)]
    pub timestamp: Option<String>,
}

/// A request for human input, and the answer if it came before the block was written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputRequired {
    /// The question, free text.
    pub prompt: String,
    /// What kind of answer is expected (`text`, `choice`, …), one line.
    pub input_types: String,
    pub checkpoint_name: Option<String>,
    pub provided: Option<UserInput>,
}

/// The JSON payload of a USER_INPUT_PROVIDED block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserInput {
    pub input: Value,
    #[serde(rename = "type")]
    pub kind: String,
}

impl Item {
    /// Plain text item.
    pub fn text(text: impl Into<String>) -> Item {
        Item::Text { text: text.into() }
    }

    /// Thinking item.
    pub fn thinking(text: impl Into<String>) -> Item {
        Item::Thinking { text: text.into() }
    }
}

#[cfg(any(test, feature = "testing"))]
impl Transcript {
    /// The answer: the top-level text after the last top-level step, if any.
    pub fn final_answer(&self) -> Option<&str> {
        let after_last_step = self
            .items
            .iter()
            .rposition(|i| matches!(i, Item::Step(_)))
            .map_or(0, |p| p + 1);
        self.items[after_last_step..]
            .iter()
            .rev()
            .find_map(|i| match i {
                Item::Text { text } => Some(text.as_str()),
                _ => None,
            })
    }

    /// The same tree with adjacent `Text` items merged (joined by `\n`), which is what a
    /// written transcript reads back as.
    pub fn normalized(&self) -> Transcript {
        Transcript {
            items: normalize_items(&self.items),
        }
    }

    /// True when no list in the tree holds two adjacent `Text` items.
    pub fn is_normalized(&self) -> bool {
        items_normalized(&self.items)
    }
}

#[cfg(any(test, feature = "testing"))]
fn normalize_items(items: &[Item]) -> Vec<Item> {
    let mut out: Vec<Item> = Vec::with_capacity(items.len());
    for item in items {
        let item = match item {
            Item::Step(s) => Item::Step(Step {
                items: normalize_items(&s.items),
                ..s.clone()
            }),
            Item::Tool(t) => Item::Tool(ToolStep {
                nested: normalize_items(&t.nested),
                ..t.clone()
            }),
            other => other.clone(),
        };
        if let (Some(Item::Text { text: prev }), Item::Text { text }) = (out.last_mut(), &item) {
            prev.push('\n');
            prev.push_str(text);
            continue;
        }
        out.push(item);
    }
    out
}

#[cfg(any(test, feature = "testing"))]
fn items_normalized(items: &[Item]) -> bool {
    let adjacent = items
        .windows(2)
        .any(|w| matches!((&w[0], &w[1]), (Item::Text { .. }, Item::Text { .. })));
    !adjacent
        && items.iter().all(|i| match i {
            Item::Step(s) => items_normalized(&s.items),
            Item::Tool(t) => items_normalized(&t.nested),
            _ => true,
        })
}
