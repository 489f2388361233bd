//! The options every command that runs an agent shares (`exec`, `resume`), and how they
//! turn into sources, sinks and printed results.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Args, ValueEnum};

use crate::compile::BuildOptions;
use crate::compile::HumanInput;
use crate::output::progress::ProgressStyle;
use crate::output::result::RunResult;
use crate::policy::{ApprovalRules, Approvals, ApproveAll, Approver, TerminalApprover};
use crate::tools::{AnswerSource, AnswersFile, Terminal};

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
    /// Answers for `ask_user`: a YAML map (question id or text → answer) or a list in order;
    /// a map's `approvals: {approve: [..], deny: [..]}` settles calls that ask for approval.
    #[arg(long, value_name = "FILE")]
    pub answers: Option<PathBuf>,
    /// Approve every call that `permissions` sends to `ask`, without asking. Dangerous: the
    /// model then does whatever the `ask` rules were there to stop.
    #[arg(long)]
    pub yes: bool,
    /// Record every provider exchange to this cassette.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Serve provider exchanges from this cassette (no network, no key).
    #[arg(long, value_name = "FILE", conflicts_with = "record")]
    pub replay: Option<PathBuf>,
    /// Watch the agent file (and what it pulls in) and swap saved changes in between steps.
    #[arg(long)]
    pub watch: bool,
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
    /// With progress, print the model's text on stderr as it arrives (a terminal then has
    /// no status line).
    #[arg(long)]
    pub stream: bool,
    /// Colour on stderr.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
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

    /// Recording or replaying, as asked.
    pub fn build_options(&self) -> Result<BuildOptions, String> {
        let mut build = BuildOptions::default();
        if let Some(path) = &self.record {
            build.models.record =
                Some(crate::provider::CassetteRecorder::create(path).map_err(|e| e.to_string())?);
        }
        if let Some(path) = &self.replay {
            build.models.replay =
                Some(crate::provider::ReplayStore::load(path).map_err(|e| e.to_string())?);
            build.mcp_replay = Some(crate::mcp::McpReplay::load(path)?);
        }
        Ok(build)
    }

    /// Where a person's input comes from. `ask_user` answers: the terminal when there is
    /// one, then `--answers`. Approvals: the answers file's `approvals`, then `--yes`, then
    /// the terminal.
    pub fn human_input(&self) -> Result<HumanInput, String> {
        let mut answers: Vec<Arc<dyn AnswerSource>> = Vec::new();
        let mut approvers: Vec<Arc<dyn Approver>> = Vec::new();
        if Terminal::available() {
            answers.push(Arc::new(Terminal));
        }
        if let Some(path) = &self.answers {
            let (file, approvals) = read_answers(path)?;
            answers.push(Arc::new(file));
            approvers.extend(approvals.map(|a| Arc::new(a) as Arc<dyn Approver>));
        }
        if self.yes {
            approvers.push(Arc::new(ApproveAll));
        }
        if Terminal::available() {
            approvers.push(Arc::new(TerminalApprover::default()));
        }
        Ok(HumanInput {
            answers,
            approvals: Arc::new(Approvals::new(approvers)),
        })
    }

    /// The progress to print on stderr, if any: live or plain.
    pub fn progress(&self) -> Option<ProgressStyle> {
        progress_style(self.progress, self.quiet, self.color)
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

/// The answers file, and its `approvals` when it has them.
fn read_answers(path: &Path) -> Result<(AnswersFile, Option<ApprovalRules>), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read --answers {}: {e}", path.display()))?;
    let document = crate::spec::yaml::load_yaml(&text).map_err(|errors| {
        let first = &errors[0];
        format!(
            "{}:{}:{}: {}",
            path.display(),
            first.position.line,
            first.position.column,
            first.message
        )
    })?;
    let mut value = document.value;
    let approvals = match value
        .as_object_mut()
        .and_then(|map| map.remove("approvals"))
    {
        Some(approvals) => Some(
            ApprovalRules::from_value(&approvals)
                .map_err(|e| format!("--answers {}: {e}", path.display()))?,
        ),
        None => None,
    };
    let answers =
        AnswersFile::from_value(value).map_err(|e| format!("--answers {}: {e}", path.display()))?;
    Ok((answers, approvals))
}
