//! The batch's progress on stderr, as `--progress` says (the conventions of `runner
//! exec`): `live` keeps a status line at the bottom of the terminal (finished of total,
//! done, failed, running, tokens, cost, ETA), with a line above it for each input that
//! did not complete; `plain` prints one line per input that ends, with its UTC time and
//! the same counts, for CI logs; with none, nothing.

use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle as BarStyle};

use super::ledger::Ledger;
use super::results::Envelope;
use crate::engine::clock::now_rfc3339;
use crate::output::progress::ProgressStyle;
use crate::output::result::Status;

/// How often the status line redraws.
const TICK: Duration = Duration::from_millis(100);

pub struct BatchProgress {
    style: Option<ProgressStyle>,
    bar: Option<ProgressBar>,
    started: Instant,
    /// Inputs this run of the batch has to run, when the inputs file could be counted.
    to_run: Option<u64>,
    finished: u64,
    running: u64,
    /// The counts of the whole batch, as of the last envelope.
    counts: Counts,
}

#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    done: u64,
    failed: u64,
    tokens: u64,
    cost_usd: Option<f64>,
}

impl Counts {
    fn of(ledger: &Ledger) -> Self {
        let done = ledger.count(Status::Completed);
        let interrupted = ledger.count(Status::Interrupted);
        let spent = ledger.spent();
        Counts {
            done,
            failed: ledger.inputs() - done - interrupted,
            tokens: spent.tokens,
            cost_usd: spent.priced.then_some(spent.cost_usd),
        }
    }
}

impl BatchProgress {
    /// `to_run`: how many inputs this run has to run, if known (for the ETA); `ledger`:
    /// what earlier runs of the batch recorded.
    pub fn new(style: Option<ProgressStyle>, to_run: Option<u64>, ledger: &Ledger) -> Self {
        let bar = match style {
            Some(ProgressStyle::Live { color }) => Some(status_line(color)),
            _ => None,
        };
        let progress = BatchProgress {
            style,
            bar,
            started: Instant::now(),
            to_run,
            finished: 0,
            running: 0,
            counts: Counts::of(ledger),
        };
        progress.redraw();
        progress
    }

    /// Says something on its own line (above the status line on a terminal).
    pub fn note(&self, text: &str) {
        match (&self.style, &self.bar) {
            (None, _) => {}
            (_, Some(bar)) => bar.println(text),
            (Some(ProgressStyle::Plain), None) => eprintln!("{} {text}", now_rfc3339()),
            (Some(ProgressStyle::Live { .. }), None) => eprintln!("{text}"),
        }
    }

    pub fn started(&mut self) {
        self.running += 1;
        self.redraw();
    }

    pub fn not_started(&mut self) {
        self.running = self.running.saturating_sub(1);
        self.redraw();
    }

    pub fn finished(&mut self, envelope: &Envelope, ledger: &Ledger) {
        self.running = self.running.saturating_sub(1);
        self.finished += 1;
        self.counts = Counts::of(ledger);
        match self.style {
            Some(ProgressStyle::Plain) => self.note(&format!(
                "{} — {}",
                input_line(envelope, false),
                self.status()
            )),
            Some(ProgressStyle::Live { color }) if envelope.result.status != Status::Completed => {
                self.note(&input_line(envelope, color))
            }
            _ => {}
        }
        self.redraw();
    }

    /// Clears the status line, before the summary.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    fn redraw(&self) {
        if let Some(bar) = &self.bar {
            bar.set_message(self.status());
        }
    }

    /// `12/200 finished · 11 done · 1 failed · 8 running · 3400 tokens · $0.0123 · ETA 40 s`
    fn status(&self) -> String {
        let counts = &self.counts;
        let mut text = match self.to_run {
            Some(total) => format!("{}/{total} finished", self.finished),
            None => format!("{} finished", self.finished),
        };
        text.push_str(&format!(
            " · {} done · {} failed · {} running · {} tokens",
            counts.done, counts.failed, self.running, counts.tokens
        ));
        if let Some(cost) = counts.cost_usd {
            text.push_str(&format!(" · ${cost:.4}"));
        }
        if let Some(eta) = self.eta() {
            text.push_str(&format!(" · ETA {}", seconds(eta)));
        }
        text
    }

    /// The time left at the pace so far; unknown before the first input ends.
    fn eta(&self) -> Option<Duration> {
        let total = self.to_run?;
        if self.finished == 0 {
            return None;
        }
        let left = total.saturating_sub(self.finished) as f64;
        Some(self.started.elapsed().mul_f64(left / self.finished as f64))
    }
}

impl Drop for BatchProgress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// `line 17 (id x): failed · error[provider_error]: ... · 2 steps · 150 tokens · 0.3 s`
fn input_line(envelope: &Envelope, color: bool) -> String {
    let result = &envelope.result;
    let status = serde_json::to_value(result.status)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default();
    let status = match (color, result.status) {
        (false, _) => status,
        (true, Status::Completed) => format!("\x1b[32m{status}\x1b[0m"),
        (true, _) => format!("\x1b[31m{status}\x1b[0m"),
    };
    let input = &envelope.input;
    let mut text = match input.id == input.line.to_string() {
        true => format!("line {}: {status}", input.line),
        false => format!("line {} ({}): {status}", input.line, input.id),
    };
    if let Some(error) = &result.error {
        text.push_str(&format!(" · error[{}]: {}", error.code, error.message));
    }
    text.push_str(&format!(
        " · {} · {} tokens · {}",
        crate::output::summary::counted(result.steps, "step", "steps"),
        result.usage.total_tokens,
        seconds(Duration::from_millis(result.duration_ms))
    ));
    text
}

fn seconds(duration: Duration) -> String {
    format!("{:.1} s", duration.as_secs_f64())
}

fn status_line(color: bool) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    let template = match color {
        true => "{spinner:.cyan} {elapsed:>4} {msg}",
        false => "{spinner} {elapsed:>4} {msg}",
    };
    if let Ok(look) = BarStyle::with_template(template) {
        bar.set_style(look);
    }
    bar.enable_steady_tick(TICK);
    bar
}
