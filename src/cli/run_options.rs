//! The options every command that runs an agent shares (`exec`, `resume`, `chat`), and how
//! they turn into the session layer's settings and printed results.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Args, ValueEnum};

use super::job_summary;
use crate::output::ci_report::{in_github_actions, run_annotation};
use crate::output::job_summary::run_summary;
use crate::output::progress::ProgressStyle;
use crate::output::result::RunResult;
use crate::output::summary::summary_line;
use crate::session::{Cancel, RunDirOptions, RunSettings};
use crate::telemetry::Telemetry;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
}

/// What progress a run prints on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProgressChoice {
    /// `live` on a terminal, `plain` when the `CI` variable is set, else none.
    Auto,
    /// For a person at a terminal: coloured, seconds since the start.
    Live,
    /// For CI logs: one uncoloured line per event, with its UTC time.
    Plain,
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

/// The options of every command that runs agents, `batch` (for each of its runs)
/// included: where a person's answers come from, the cassette to replay, widening, and
/// the progress on stderr.
#[derive(Debug, Clone, Args)]
pub struct SharedRunOptions {
    /// Answers for `ask_user`: a YAML map (question id or text → answer) or a list in order;
    /// a map's `approvals: {approve: [..], deny: [..]}` settles calls that ask for approval.
    #[arg(long, value_name = "FILE")]
    pub answers: Option<PathBuf>,
    /// Approve every call that `permissions` sends to `ask`, without asking. Dangerous: the
    /// model then does whatever the `ask` rules were there to stop.
    #[arg(long)]
    pub yes: bool,
    /// Serve provider exchanges from this cassette (no network, no key).
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,
    /// Let a reload or a resume give the agent more than the file it started with (new
    /// tools, programs, hosts, sub-agents, MCP servers, higher limits); without it such a
    /// definition is refused.
    #[arg(long)]
    pub allow_widening: bool,
    /// No progress on stderr (`--progress none`).
    #[arg(long)]
    pub quiet: bool,
    /// Progress on stderr: `live` (a terminal), `plain` (timestamped lines, for CI logs),
    /// `none`; `auto`: live on a terminal, plain when `CI` is set, else none.
    #[arg(long, value_enum, default_value_t = ProgressChoice::Auto)]
    pub progress: ProgressChoice,
    /// Colour on stderr.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

/// How a run reports and what it may use.
#[derive(Debug, Clone, Args)]
pub struct RunOptions {
    /// `text`: the final answer; `json`: the result envelope.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
    /// Where the run's files go (default .runner/runs/<run_id>).
    #[arg(long)]
    pub run_dir: Option<PathBuf>,
    /// Write the transcript here too.
    #[arg(long)]
    pub transcript: Option<PathBuf>,
    /// Write the JSONL events here too (`-`: stdout, instead of the result).
    #[arg(long)]
    pub events: Option<String>,
    /// Record every provider exchange to this cassette.
    #[arg(long, value_name = "FILE", conflicts_with = "replay")]
    pub record: Option<PathBuf>,
    /// Watch the agent file (and what it pulls in) and swap saved changes in between steps.
    #[arg(long)]
    pub watch: bool,
    /// With progress, print the model's text on stderr as it arrives (a terminal then has
    /// no status line).
    #[arg(long)]
    pub stream: bool,
    /// Export OpenTelemetry spans over OTLP/HTTP (default endpoint http://localhost:4318);
    /// also on when OTEL_EXPORTER_OTLP_ENDPOINT is set (docs/telemetry.md).
    #[arg(long)]
    pub otel: bool,
    /// Append a Markdown summary of the run to this file (as to `GITHUB_STEP_SUMMARY` in
    /// GitHub Actions): status, answer, steps, calls, tokens, cost, error, run directory.
    #[arg(long, value_name = "FILE")]
    pub summary: Option<PathBuf>,
    #[command(flatten)]
    pub shared: SharedRunOptions,
}

impl RunOptions {
    /// Prints the result on stdout, unless stdout carries the events. A reader that went
    /// away (`| head -c 1`) is not an error: the run's exit code stands.
    pub fn print_result(&self, result: &RunResult) {
        if self.events.as_deref() == Some("-") {
            return;
        }
        let text = match self.output {
            OutputFormat::Json => serde_json::to_string_pretty(result).ok(),
            // With `output.schema`, the value that passed it, so `| jq` works; the model's
            // raw reply (a fenced block, say) stays in `--output json`'s `output`.
            OutputFormat::Text => match &result.structured {
                Some(value) => serde_json::to_string_pretty(value).ok(),
                None => result.output.clone(),
            },
        };
        if let Some(text) = text {
            outln!("{text}");
        }
    }

    /// How the session layer hosts the run: its directory and files, the answer sources
    /// (the terminal first), the cassette, `--watch`; `cancel` stops it.
    pub fn settings(&self, cancel: Cancel) -> RunSettings {
        let progress = self.progress();
        let summary = self.summary.clone();
        let report = move |result: &RunResult, dir: &Path| {
            if let Some(error) = &result.error {
                eprintln!("error[{}]: {}", error.code, error.message);
                if in_github_actions() {
                    eprintln!("{}", run_annotation(result, error));
                }
            }
            if progress.is_some() {
                eprintln!("{}", summary_line(result, dir));
            }
            job_summary::write(|| run_summary(result, Some(dir)), summary.as_deref());
        };
        RunSettings {
            run_dir: Some(RunDirOptions {
                dir: self.run_dir.clone(),
                transcript: self.transcript.clone(),
                events: self.events.clone(),
                progress,
                stream: self.stream,
                report: Some(Arc::new(report)),
            }),
            answers: self.shared.answers.clone(),
            approve_all: self.shared.yes,
            terminal: true,
            record: self.record.clone(),
            replay: self.shared.replay.clone(),
            watch: self.watch,
            allow_widening: self.shared.allow_widening,
            sinks: Vec::new(),
            // The run directory has them.
            no_event_log: true,
            cancel,
            telemetry: Telemetry::from_env(self.otel),
            // `TRACEPARENT`, read by the export itself.
            caller_trace: None,
        }
    }

    /// The progress to print on stderr, if any: live or plain.
    pub fn progress(&self) -> Option<ProgressStyle> {
        progress_style(self.shared.progress, self.shared.quiet, self.shared.color)
    }
}

/// The progress `--progress`, `--quiet` and `--color` ask for on stderr, if any: `auto`
/// is plain in CI, live on a terminal, none otherwise. CI comes first: some CI systems
/// (Buildkite) run jobs in a terminal, and a log wants timestamps, not a status line.
pub fn progress_style(
    choice: ProgressChoice,
    quiet: bool,
    color: ColorChoice,
) -> Option<ProgressStyle> {
    let live = || ProgressStyle::Live {
        color: stderr_colored(color),
    };
    match choice {
        _ if quiet => None,
        ProgressChoice::None => None,
        ProgressChoice::Live => Some(live()),
        ProgressChoice::Plain => Some(ProgressStyle::Plain),
        ProgressChoice::Auto if in_ci() => Some(ProgressStyle::Plain),
        ProgressChoice::Auto if std::io::stderr().is_terminal() => Some(live()),
        ProgressChoice::Auto => None,
    }
}

/// Whether `--color` lets stderr be coloured (`auto`: a terminal without `NO_COLOR`).
fn stderr_colored(color: ColorChoice) -> bool {
    match color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stderr().is_terminal()
        }
    }
}

/// Whether this runs in a CI job: the `CI` variable that GitHub Actions, GitLab CI,
/// CircleCI, Buildkite and most others set, to anything but `false` or `0`.
fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| !matches!(value.as_str(), "" | "false" | "0"))
}
