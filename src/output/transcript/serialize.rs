//! Tree → tagged text.
//!
//! Every block is written as whole lines, each ending in `\n`, so a transcript can be
//! built by appending blocks and a reader can tell a complete block from a torn one.
//! Free text is followed by one `\n` that is not part of it: the text `""` is one empty
//! line, and leading/trailing newlines of the text survive exactly.

use super::escape::{
    ATTR_SPECIALS, PLAIN_FIELD, TITLE_SPECIALS, escape_field_into, escape_text_into,
    write_json_into,
};
#[cfg(any(test, feature = "testing"))]
use super::model::Transcript;
use super::model::{Item, Step, StepStatus, ToolStep};
use super::tags::*;

#[cfg(any(test, feature = "testing"))]
/// The whole transcript as tagged text.
pub fn write_transcript(transcript: &Transcript) -> String {
    let mut out = String::new();
    write_items(&transcript.items, &mut out);
    out
}

/// Appends the tagged text of `items` to `out`.
pub fn write_items(items: &[Item], out: &mut String) {
    for item in items {
        write_item(item, out);
    }
}

/// Appends the tagged text of one item to `out`.
pub fn write_item(item: &Item, out: &mut String) {
    match item {
        Item::Step(step) => write_step(step, out),
        Item::Thinking { text } => {
            line(THINKING_START, out);
            text_block(text, out);
            line(THINKING_END, out);
        }
        Item::Text { text } => text_block(text, out),
        Item::Tool(tool) => write_tool(tool, out),
        Item::Checkpoint(cp) => {
            line(CHECKPOINT_START, out);
            out.push_str(CHECKPOINT_PREFIX);
            escape_field_into(&cp.name, PLAIN_FIELD, out);
            out.push('\n');
            line(CHECKPOINT_END, out);
        }
        Item::Error(err) => {
            line(ERROR_START, out);
            out.push_str(ERROR_PREFIX);
            text_block(&err.message, out);
            line(ERROR_END, out);
            line(ERROR_JSON_START, out);
            json_line(&err.json, out);
            line(ERROR_JSON_END, out);
        }
        Item::InputRequired(req) => {
            line(INPUT_REQUIRED_START, out);
            text_block(&req.prompt, out);
            out.push_str(INPUT_TYPES_PREFIX);
            escape_field_into(&req.input_types, PLAIN_FIELD, out);
            out.push('\n');
            if let Some(name) = &req.checkpoint_name {
                out.push_str(CHECKPOINT_NAME_PREFIX);
                escape_field_into(name, PLAIN_FIELD, out);
                out.push('\n');
            }
            if let Some(provided) = &req.provided {
                line(USER_INPUT_START, out);
                json_line(provided, out);
                line(USER_INPUT_END, out);
            }
            line(INPUT_REQUIRED_END, out);
        }
        Item::UserInputProvided(input) => {
            line(USER_INPUT_START, out);
            json_line(input, out);
            line(USER_INPUT_END, out);
        }
    }
}

/// The header line of a step, without its newline: `Step N: title ✓`.
pub fn step_header(number: u32, title: &str, status: StepStatus, out: &mut String) {
    out.push_str(STEP_HEADER_PREFIX);
    out.push_str(&number.to_string());
    out.push_str(": ");
    escape_field_into(title, TITLE_SPECIALS, out);
    out.push_str(match status {
        StepStatus::Done => DONE_MARK,
        StepStatus::Failed => FAILED_MARK,
        StepStatus::Open => "",
    });
}

fn write_step(step: &Step, out: &mut String) {
    line(STEP_START, out);
    step_header(step.number, &step.title, step.status, out);
    out.push('\n');
    if step.single_step {
        line(SINGLE_STEP_FLAG, out);
    }
    write_items(&step.items, out);
    line(STEP_END, out);
}

fn write_tool(tool: &ToolStep, out: &mut String) {
    tool_tag(TOOL_START_PREFIX, &tool.name, &tool.id, out);
    line(TOOL_INPUT_START, out);
    json_line(&tool.input, out);
    line(TOOL_INPUT_END, out);
    write_items(&tool.nested, out);
    if let Some(result) = &tool.result {
        line(TOOL_RESULT_START, out);
        json_line(result, out);
        line(TOOL_RESULT_END, out);
    }
    tool_tag(TOOL_END_PREFIX, &tool.name, &tool.id, out);
}

fn tool_tag(prefix: &str, name: &str, id: &str, out: &mut String) {
    out.push_str(prefix);
    escape_field_into(name, ATTR_SPECIALS, out);
    out.push(':');
    escape_field_into(id, ATTR_SPECIALS, out);
    out.push_str(TAG_CLOSE);
    out.push('\n');
}

fn line(tag: &str, out: &mut String) {
    out.push_str(tag);
    out.push('\n');
}

fn text_block(text: &str, out: &mut String) {
    escape_text_into(text, out);
    out.push('\n');
}

fn json_line<T: serde::Serialize + ?Sized>(value: &T, out: &mut String) {
    write_json_into(value, out);
    out.push('\n');
}
