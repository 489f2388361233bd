//! Progress on stderr: the current step, tool calls as they start and finish, and tokens,
//! one line each. `Live` (a terminal) starts each line with the seconds since the start,
//! coloured when allowed; `Plain` (CI logs) with the UTC time, never coloured. How the run
//! ended is not a progress line: the run directory's summary says it once.

use std::io::Write;
use std::sync::Mutex;
use std::time::Instant;

use crate::engine::clock::now_rfc3339;
use crate::engine::events::{Event, EventData, EventSink};

/// How progress lines look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressStyle {
    Live { color: bool },
    Plain,
}

impl ProgressStyle {
    pub fn color(self) -> bool {
        matches!(self, ProgressStyle::Live { color: true })
    }
}

pub struct Progress {
    style: ProgressStyle,
    started: Instant,
    state: Mutex<()>,
}

impl Progress {
    pub fn new(style: ProgressStyle) -> Self {
        Progress {
            style,
            started: Instant::now(),
            state: Mutex::new(()),
        }
    }

    fn paint(&self, text: &str, ansi: &str) -> String {
        if self.style.color() {
            format!("\x1b[{ansi}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    fn line(&self, depth: u32, text: String) {
        let _guard = self.state.lock();
        let indent = "  ".repeat(depth as usize);
        let time = match self.style {
            ProgressStyle::Live { .. } => self.paint(
                &format!("{:>6.1}s", self.started.elapsed().as_secs_f64()),
                "2",
            ),
            ProgressStyle::Plain => now_rfc3339(),
        };
        let _ = writeln!(std::io::stderr(), "{time} {indent}{text}");
    }
}

impl EventSink for Progress {
    fn emit(&self, event: &Event) {
        let line = match &event.data {
            EventData::StepCreated(step) => self.paint(
                &format!(
                    "{} · step {}: {}",
                    event.agent, step.details.step, step.details.title
                ),
                "1",
            ),
            EventData::ToolStarted(tool) => format!("→ {}", tool.tool_name),
            EventData::ToolCompleted(tool) => {
                let mark = if tool.result.success {
                    self.paint("✓", "32")
                } else {
                    self.paint("✗", "31")
                };
                format!("{mark} {} ({} ms)", tool.tool_name, tool.duration_ms)
            }
            EventData::LlmUsage(usage) => self.paint(
                &format!("tokens so far: {}", usage.total_usage.total_tokens),
                "2",
            ),
            _ => return,
        };
        self.line(event.depth, line);
    }
}
