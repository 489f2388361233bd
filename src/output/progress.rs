//! Progress for people on stderr: the current step, tool calls as they start and finish,
//! tokens and elapsed time. Only when stderr is a terminal and `--quiet` is not given;
//! colour only when allowed.

use std::io::Write;
use std::sync::Mutex;
use std::time::Instant;

use serde_json::Value;

use crate::engine::events::{Event, EventSink, kind};

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
        let data = &event.data;
        let text = |key: &str| {
            data.get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        match event.kind {
            kind::STEP_CREATED => {
                let step = data
                    .pointer("/details/step")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                let title = data
                    .pointer("/details/title")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                self.line(
                    event.depth,
                    self.paint(&format!("{} · step {step}: {title}", event.agent), "1"),
                );
            }
            kind::TOOL_STARTED => self.line(event.depth, format!("→ {}", text("toolName"))),
            kind::TOOL_COMPLETED => {
                let ok = data
                    .pointer("/result/success")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                let mark = if ok {
                    self.paint("✓", "32")
                } else {
                    self.paint("✗", "31")
                };
                let ms = data.get("durationMs").and_then(Value::as_u64).unwrap_or(0);
                self.line(
                    event.depth,
                    format!("{mark} {} ({ms} ms)", text("toolName")),
                );
            }
            kind::LLM_USAGE => {
                let total = data
                    .pointer("/totalUsage/total_tokens")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                self.line(
                    event.depth,
                    self.paint(&format!("tokens so far: {total}"), "2"),
                );
            }
            kind::RUN_FAILED => {
                let message = data
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                self.line(event.depth, self.paint(&format!("failed: {message}"), "31"));
            }
            _ => {}
        }
    }
}
