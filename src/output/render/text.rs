//! Text rendering, for terminals.
//!
//! Indentation shows depth (two spaces per level: step contents, tool details, a
//! sub-agent's items inside its tool call), up to [`MAX_INDENT`] levels. Colours are ANSI
//! and only on request, so the caller decides (TTY, `--color`, `NO_COLOR`). Control
//! characters in content are shown escaped: tool output must not be able to drive the
//! terminal.

use std::fmt::Write as _;

use serde_json::Value;

use crate::output::transcript::{InputRequired, Item, Step, StepStatus, ToolStep, Transcript};

/// Options of [`render_text`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TextOptions {
    /// Use ANSI colours.
    pub color: bool,
}

/// The most levels of indentation (two spaces each).
pub const MAX_INDENT: usize = 32;

/// The transcript as indented text for a terminal.
pub fn render_text(transcript: &Transcript, options: TextOptions) -> String {
    let mut r = Renderer {
        out: String::new(),
        color: options.color,
    };
    let answer_from = transcript
        .items
        .iter()
        .rposition(|i| matches!(i, Item::Step(_)))
        .map_or(0, |p| p + 1);
    for (i, item) in transcript.items.iter().enumerate() {
        match item {
            Item::Text { text } if i >= answer_from && answer_from > 0 => {
                let label = r.paint(BOLD, "Final answer:");
                r.line(0, &label);
                r.block(1, text, None);
            }
            other => r.item(other, 0),
        }
    }
    r.out
}

const BOLD: &str = "1";
const DIM: &str = "2";
const RED: &str = "31";
const GREEN: &str = "32";
const YELLOW: &str = "33";
const BLUE: &str = "34";
const CYAN: &str = "36";

struct Renderer {
    out: String,
    color: bool,
}

impl Renderer {
    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    /// One line at `depth`; `text` must already be sanitised and free of newlines. Past
    /// [`MAX_INDENT`] levels lines are indented no further, so the output grows linearly
    /// with the transcript however deep it nests.
    fn line(&mut self, depth: usize, text: &str) {
        for _ in 0..depth.min(MAX_INDENT) {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    /// Multi-line content at `depth`, each line sanitised and optionally painted.
    fn block(&mut self, depth: usize, text: &str, code: Option<&str>) {
        for line in text.split('\n') {
            let clean = sanitize(line);
            let shown = match code {
                Some(code) => self.paint(code, &clean),
                None => clean,
            };
            self.line(depth, &shown);
        }
    }

    fn item(&mut self, item: &Item, depth: usize) {
        match item {
            Item::Step(step) => self.step(step, depth),
            Item::Thinking { text } => {
                let label = self.paint(DIM, "thinking:");
                self.line(depth, &label);
                self.block(depth + 1, text, Some(DIM));
            }
            Item::Text { text } => self.block(depth, text, None),
            Item::Tool(tool) => self.tool(tool, depth),
            Item::Checkpoint(cp) => {
                let text = format!("checkpoint: {}", sanitize(&cp.name));
                let shown = self.paint(BLUE, &text);
                self.line(depth, &shown);
            }
            Item::Error(err) => {
                let label = self.paint(RED, "error:");
                self.line(depth, &label);
                self.block(depth + 1, &err.message, Some(RED));
                let detail = compact(&serde_json::to_value(&err.json).unwrap_or(Value::Null));
                let shown = self.paint(DIM, &sanitize(&detail));
                self.line(depth + 1, &shown);
            }
            Item::InputRequired(req) => self.input_required(req, depth),
            Item::UserInputProvided(input) => {
                let text = format!(
                    "user input ({}): {}",
                    sanitize(&input.kind),
                    sanitize(&value_text(&input.input))
                );
                let shown = self.paint(YELLOW, &text);
                self.line(depth, &shown);
            }
        }
    }

    fn step(&mut self, step: &Step, depth: usize) {
        let mark = match step.status {
            StepStatus::Done => self.paint(GREEN, " ✓"),
            StepStatus::Failed => self.paint(RED, " ✗"),
            StepStatus::Open => self.paint(YELLOW, " (unfinished)"),
        };
        let title = format!("Step {}: {}", step.number, sanitize(&step.title));
        let header = format!("{}{mark}", self.paint(BOLD, &title));
        self.line(depth, &header);
        for item in &step.items {
            self.item(item, depth + 1);
        }
    }

    fn tool(&mut self, tool: &ToolStep, depth: usize) {
        let head = format!(
            "▶ {} ({}) {}",
            sanitize(&tool.name),
            sanitize(&tool.id),
            sanitize(&compact(&tool.input))
        );
        let shown = self.paint(CYAN, &head);
        self.line(depth, &shown);
        for item in &tool.nested {
            self.item(item, depth + 2);
        }
        match &tool.result {
            Some(r) if r.success => {
                let text = format!("✓ {}", sanitize(&compact(&r.data)));
                let shown = self.paint(GREEN, &text);
                self.line(depth + 1, &shown);
            }
            Some(r) => {
                let text = format!(
                    "✗ {}",
                    sanitize(r.error.as_deref().unwrap_or("failed (no message)"))
                );
                let shown = self.paint(RED, &text);
                self.line(depth + 1, &shown);
            }
            None => {
                let shown = self.paint(YELLOW, "… no result");
                self.line(depth + 1, &shown);
            }
        }
    }

    fn input_required(&mut self, req: &InputRequired, depth: usize) {
        let mut label = format!("input required ({})", sanitize(&req.input_types));
        if let Some(cp) = &req.checkpoint_name {
            let _ = write!(label, ", checkpoint {}", sanitize(cp));
        }
        label.push(':');
        let shown = self.paint(YELLOW, &label);
        self.line(depth, &shown);
        self.block(depth + 1, &req.prompt, None);
        if let Some(input) = &req.provided {
            let text = format!(
                "answer ({}): {}",
                sanitize(&input.kind),
                sanitize(&value_text(&input.input))
            );
            let shown = self.paint(YELLOW, &text);
            self.line(depth + 1, &shown);
        }
    }
}

fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}

fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => compact(other),
    }
}

/// Escapes control characters (including ESC and newlines) so content cannot move the
/// cursor, change colours or break the indentation.
fn sanitize(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\t' => out.push_str("    "),
            c if c.is_control() => out.extend(c.escape_default()),
            c => out.push(c),
        }
    }
    out
}
