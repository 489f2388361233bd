//! Progress for people on stderr: the current step, tool calls as they start and finish,
//! tokens and elapsed time. Only when stderr is a terminal and `--quiet` is not given;
//! colour only when allowed.

use std::io::Write;
use std::sync::Mutex;
use std::time::Instant;

use crate::engine::events::{Event, EventData, EventSink};

pub struct Progress {
    color: bool,
    started: Instant,
    state: Mutex<()>,
}

impl Progress {
    pub fn new(color: bool) -> Self {
        Progress {
            color,
            started: Instant::now(),
            state: Mutex::new(()),
        }
    }

    fn paint(&self, text: &str, ansi: &str) -> String {
        if self.color {
            format!("\x1b[{ansi}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    fn line(&self, depth: u32, text: String) {
        let _guard = self.state.lock();
        let indent = "  ".repeat(depth as usize);
        let elapsed = self.paint(
            &format!("{:>6.1}s", self.started.elapsed().as_secs_f64()),
            "2",
        );
        let _ = writeln!(std::io::stderr(), "{elapsed} {indent}{text}");
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
            EventData::RunFailed(failed) => {
                self.paint(&format!("failed: {}", failed.error.message), "31")
            }
            _ => return,
        };
        self.line(event.depth, line);
    }
}
