//! Progress on stderr: a line per step, tool call (with its arguments in brief) and result,
//! and tokens so far. `Live` (a terminal) starts each line with the seconds since the
//! start, coloured when allowed, and keeps a status line at the bottom that ticks between
//! events (spinner, elapsed time, the current agent and step, tokens, cost); `Plain` (CI
//! logs) starts each line with the UTC time, never colours, and has no status line. How
//! the run ended is not a progress line: the run directory's summary says it once.
//!
//! What the run tells the person watching (its notices: warnings, the `logging`
//! middleware's lines, a refused reload's diagnostics) is printed as it is, with no time
//! in front, even when no progress is shown: the engine never prints.

use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle as BarStyle};
use serde_json::{Value, json};

use crate::engine::clock::now_rfc3339;
use crate::engine::events::{
    Delta, Event, EventData, EventSink, HookCompleted, Notice, OutputStream, PermissionDecided,
};
use crate::engine::scheduler::NOT_RUN;
use crate::policy::{Decider, HookOutcome, Verdict};
use crate::sync::lock;

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
    /// `None`: no progress lines, only what the run tells the person watching.
    style: Option<ProgressStyle>,
    started: Instant,
    /// The live status line (hidden when stderr is not a terminal), and what it says.
    status: Option<(ProgressBar, Mutex<Status>)>,
    /// `--stream`: the model's text is printed as it arrives.
    stream: bool,
    /// Streamed text has left the cursor mid-line: the next line starts on a new one.
    mid_line: AtomicBool,
    /// The last streamed piece was thinking: text after it starts on a new line.
    thinking: AtomicBool,
}

/// What the status line says besides the time.
#[derive(Debug, Default)]
struct Status {
    step: String,
    tokens: u64,
    cost_usd: Option<f64>,
}

impl Status {
    fn message(&self) -> String {
        let mut message = format!("{} · {} tokens", self.step, self.tokens);
        if let Some(cost) = self.cost_usd {
            message.push_str(&format!(" · ${cost:.4}"));
        }
        message
    }
}

/// How often the status line redraws (its spinner and clock).
const TICK: Duration = Duration::from_millis(100);

impl Progress {
    /// With `stream`, the model's text is printed as it arrives, and a terminal has no
    /// status line (it would be drawn over the text). With no `style`, only notices are
    /// printed.
    pub fn new(style: Option<ProgressStyle>, stream: bool) -> Self {
        let started = Instant::now();
        let status = match style {
            Some(live @ ProgressStyle::Live { .. }) if !stream => {
                Some((status_line(live, started), Mutex::default()))
            }
            _ => None,
        };
        Progress {
            style,
            started,
            status,
            stream,
            mid_line: AtomicBool::new(false),
            thinking: AtomicBool::new(false),
        }
    }

    /// Prints a piece of the model's text where it is, with no time in front.
    fn stream_text(&self, text: &str) {
        let mut stderr = std::io::stderr().lock();
        let _ = stderr
            .write_all(text.as_bytes())
            .and_then(|()| stderr.flush());
        self.mid_line
            .store(!text.ends_with('\n'), Ordering::Relaxed);
    }

    /// Prints a piece of the model's thinking: dimmed, or after `thinking: ` without colour,
    /// on a line of its own.
    fn stream_thinking(&self, text: &str) {
        let mut piece = String::new();
        if !self.thinking.swap(true, Ordering::Relaxed) {
            if self.mid_line.load(Ordering::Relaxed) {
                piece.push('\n');
            }
            if !self.color() {
                piece.push_str("thinking: ");
            }
        }
        piece.push_str(&self.paint(text, "2"));
        self.stream_text(&piece);
    }

    /// Prints a piece of the model's text, on a new line after its thinking.
    fn stream_reply(&self, text: &str) {
        if self.thinking.swap(false, Ordering::Relaxed) {
            self.stream_text("\n");
        }
        self.stream_text(text);
    }

    fn color(&self) -> bool {
        self.style.is_some_and(ProgressStyle::color)
    }

    fn paint(&self, text: &str, ansi: &str) -> String {
        if self.color() {
            format!("\x1b[{ansi}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    fn line(&self, depth: u32, text: String) {
        let indent = "  ".repeat(depth as usize);
        let time = match self.style {
            Some(ProgressStyle::Live { .. }) => self.paint(
                &format!("{:>6.1}s", self.started.elapsed().as_secs_f64()),
                "2",
            ),
            Some(ProgressStyle::Plain) | None => now_rfc3339(),
        };
        let mut line = format!("{time} {indent}{text}");
        if self.mid_line.swap(false, Ordering::Relaxed) {
            line.insert(0, '\n');
        }
        self.print(line);
    }

    /// Prints `line` on stderr as it is: above the status line, which is redrawn below it,
    /// when there is one.
    fn print(&self, line: String) {
        match &self.status {
            Some((bar, _)) if !bar.is_hidden() => bar.println(line),
            _ => {
                let _ = writeln!(std::io::stderr().lock(), "{line}");
            }
        }
    }

    /// Updates the status line, if there is one.
    fn update(&self, change: impl FnOnce(&mut Status)) {
        if let Some((bar, status)) = &self.status {
            let mut status = lock(status);
            change(&mut status);
            bar.set_message(status.message());
        }
    }

    /// The status line stops ticking and is cleared (the run is over, or a question is
    /// asked on the terminal), or comes back.
    fn pause(&self, paused: bool) {
        if let Some((bar, _)) = &self.status {
            if paused {
                bar.disable_steady_tick();
                bar.finish_and_clear();
            } else {
                bar.reset();
                bar.enable_steady_tick(TICK);
            }
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.pause(true);
    }
}

impl EventSink for Progress {
    fn notice(&self, notice: &Notice) {
        match notice {
            Notice::Warning(message) => self.print(format!("warning: {message}")),
            Notice::Log(line) => self.print(format!("[runner] {line}")),
            Notice::ReloadRefused(diagnostics) => {
                for line in diagnostics {
                    self.print(line.clone());
                }
                self.print(RELOAD_REFUSED.to_string());
            }
        }
    }

    fn emit(&self, event: &Event) {
        if self.style.is_none() {
            return;
        }
        let line = match &event.data {
            EventData::StepCreated(step) => {
                let text = format!(
                    "{} · step {}: {}",
                    event.agent, step.details.step, step.details.title
                );
                self.update(|status| status.step = text.clone());
                self.paint(&text, "1")
            }
            EventData::ToolStarted(tool) => {
                if tool.tool_name == ASK_USER {
                    self.pause(true);
                }
                format!("→ {}{}", tool.tool_name, brief(&tool.input))
            }
            EventData::ToolCompleted(tool) => {
                if tool.tool_name == ASK_USER {
                    self.pause(false);
                }
                let metadata = &tool.result.metadata;
                if let Some(why) = metadata.get(NOT_RUN).and_then(Value::as_str) {
                    let line = format!("✗ {} not run: {why}", tool.tool_name);
                    self.paint(&line, "31")
                } else if metadata
                    .get("permission")
                    .is_some_and(|p| p["decision"] == json!(Verdict::Deny))
                {
                    return; // its permission line said it was not run, and why
                } else {
                    let mark = if tool.result.success {
                        self.paint("✓", "32")
                    } else {
                        self.paint("✗", "31")
                    };
                    format!("{mark} {} ({} ms)", tool.tool_name, tool.duration_ms)
                }
            }
            EventData::PermissionDecided(decided) => match permission_line(decided) {
                Some((line, colour)) => {
                    // The ticker stops while a person may be asked on the terminal.
                    self.pause(decided.decision == Verdict::Ask);
                    self.paint(&line, colour)
                }
                None => return,
            },
            EventData::LlmUsage(usage) => {
                self.update(|status| {
                    status.tokens = usage.total_usage.total_tokens;
                    status.cost_usd = usage.cost_usd.or(status.cost_usd);
                });
                self.paint(
                    &format!("tokens so far: {}", usage.total_usage.total_tokens),
                    "2",
                )
            }
            EventData::ToolProgressed(report) => {
                let mut line = format!("… {} {}", report.tool_name, number(report.progress));
                if let Some(total) = report.total {
                    line.push_str(&format!("/{}", number(total)));
                }
                if let Some(message) = &report.message {
                    line.push_str(&format!(": {message}"));
                }
                self.paint(&line, "2")
            }
            // A running program's line, under its call (at the call's depth).
            EventData::ToolOutputLine(output) => {
                let tool = &output.tool_name;
                if output.skipped > 0 {
                    let skipped = format!("│ {tool} … {} lines not shown", output.skipped);
                    self.line(event.depth, self.paint(&skipped, "2"));
                }
                let Some(line) = &output.line else {
                    return;
                };
                let pipe = match output.stream {
                    OutputStream::Stdout => "",
                    OutputStream::Stderr => "stderr: ",
                };
                self.paint(&format!("│ {tool} {pipe}{line}"), "2")
            }
            EventData::HookCompleted(hook) => match hook_line(hook) {
                Some(line) => self.paint(&line, "33"),
                None => return,
            },
            EventData::LlmRetry(retry) => self.paint(
                &format!(
                    "↻ attempt {} in {:.1} s: {}",
                    retry.attempt,
                    retry.wait_ms as f64 / 1000.0,
                    retry.reason
                ),
                "33",
            ),
            EventData::ContextCompacted(compacted) => self.paint(
                &format!(
                    "⇊ context compacted ({}): about {} → {} tokens",
                    compacted.strategy, compacted.tokens_before, compacted.tokens_after
                ),
                "2",
            ),
            EventData::LlmFallback(fallback) => self.paint(
                &format!("⇄ {} → {}: {}", fallback.from, fallback.to, fallback.reason),
                "33",
            ),
            EventData::MessageDelta(delta) if self.stream && event.depth == 0 => {
                match &delta.delta {
                    Delta::Chunk { content_chunk } => self.stream_reply(content_chunk),
                    Delta::Thinking { thinking_chunk } => self.stream_thinking(thinking_chunk),
                    Delta::Reset { attempt, .. } => self
                        .stream_text(&format!("\n[the reply starts again: attempt {attempt}]\n")),
                    // A call's line is printed when it starts running.
                    Delta::ToolCalls { .. } => {}
                }
                return;
            }
            // A streamed reply has ended: the next line starts on a line of its own.
            EventData::MessageCompleted(_) => {
                self.thinking.store(false, Ordering::Relaxed);
                if self.mid_line.swap(false, Ordering::Relaxed) {
                    self.stream_text("\n");
                }
                return;
            }
            // A chat's next turn brings the status line back.
            EventData::RunCreated(_) if event.depth == 0 => {
                self.pause(false);
                return;
            }
            EventData::RunCompleted(_) | EventData::RunFailed(_) | EventData::RequiresAction(_)
                if event.depth == 0 =>
            {
                self.pause(true);
                return;
            }
            _ => return,
        };
        self.line(event.depth, line);
    }
}

/// The line for a permission decision: calls that asked, were approved or denied; none
/// for calls a rule simply allowed (their start line follows).
fn permission_line(decided: &PermissionDecided) -> Option<(String, &'static str)> {
    let tool = &decided.tool_name;
    match (decided.decision, decided.by) {
        (Verdict::Allow, Decider::Rule) => None,
        (Verdict::Allow, by) => Some((format!("✓ {tool} approved ({})", decider(by)), "32")),
        (Verdict::Ask, _) => Some((format!("? {tool} needs approval ({})", decided.rule), "33")),
        (Verdict::Deny, _) => {
            let reason = decided.reason.as_deref().unwrap_or("denied");
            Some((format!("✗ {tool} not run: {reason}"), "31"))
        }
    }
}

/// The line for a hook that changed a call or failed; none for one that let it be (a
/// denial has its permission line).
fn hook_line(hook: &HookCompleted) -> Option<String> {
    let (tool, name) = (&hook.tool_name, hook.hook.name());
    match hook.outcome {
        HookOutcome::Rewrote => Some(format!("✎ {tool}: arguments rewritten by {name} hook")),
        HookOutcome::Replaced => Some(format!("✎ {tool}: result replaced by {name} hook")),
        HookOutcome::Failed => {
            let detail = hook.detail.as_deref().unwrap_or("it failed");
            Some(format!(
                "! {tool}: {name} hook `{}` failed: {detail}",
                hook.command
            ))
        }
        _ => None,
    }
}

fn decider(by: Decider) -> &'static str {
    match by {
        Decider::Rule => "by a rule",
        Decider::Terminal => "at the terminal",
        Decider::Always => "always, at the terminal",
        Decider::Answers => "by the answers file",
        Decider::Yes => "by --yes",
        Decider::Resume => "on resume",
        Decider::Hook => "by a hook",
    }
}

/// The ticking line at the bottom of a terminal: a spinner, the seconds since `started`
/// (the run's clock, which pausing the line does not reset), and the message.
fn status_line(style: ProgressStyle, started: Instant) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    let template = if style.color() {
        "{spinner:.cyan} {since:.dim} {msg}"
    } else {
        "{spinner} {since} {msg}"
    };
    let since = move |_: &ProgressState, out: &mut dyn std::fmt::Write| {
        let _ = write!(out, "{:.1}s", started.elapsed().as_secs_f64());
    };
    if let Ok(look) = BarStyle::with_template(template) {
        bar.set_style(look.with_key("since", since));
    }
    bar.enable_steady_tick(TICK);
    bar
}

/// What follows a refused reload's diagnostics.
const RELOAD_REFUSED: &str =
    "warning: the saved agent file is invalid; the run goes on with the previous definition";

/// The tool that asks the person at the terminal: the status line must not draw over its
/// question.
const ASK_USER: &str = "ask_user";

/// `3` for 3.0, `2.5` for 2.5: progress counts are usually whole.
fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

/// A call's arguments in one short line: ` path=src/main.rs pattern="fn main"`.
fn brief(input: &Value) -> String {
    const MAX: usize = 80;
    let Some(arguments) = input.as_object() else {
        return String::new();
    };
    let mut line = String::new();
    for (key, value) in arguments {
        let value = match value {
            Value::String(text) if !text.contains([' ', '"', '\n']) && !text.is_empty() => {
                text.clone()
            }
            other => other.to_string(),
        };
        line.push_str(&format!(" {key}={value}"));
    }
    match line.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_are_one_short_line() {
        assert_eq!(
            brief(&json!({"path": "src", "pattern": "fn main"})),
            " path=src pattern=\"fn main\""
        );
        let long = brief(&json!({"text": "x".repeat(200)}));
        assert_eq!(long.chars().count(), 81);
        assert!(long.ends_with('…'));
        assert_eq!(brief(&json!("not an object")), "");
    }
}
