//! `runner test [PATH...]`: run the cases of agent test files; exit 0 when all pass, 1 when
//! any fails, 2 when a test file is invalid (nothing runs then).

use std::path::PathBuf;
use std::time::Instant;

use clap::{Args, ValueEnum};

use super::Exit;
use super::job_summary;
use crate::agent_test::report::{
    annotations, failures_section, gitlab_report, json_report, junit_report, markdown_summary,
    progress_line, summary_line,
};
use crate::agent_test::{
    LoadedFile, Mode, Settings, Totals, discover::discover, load_test_file, run_suite,
};
use crate::engine::clock::new_id;
use crate::output::ci_report::{github_diagnostics, in_github_actions};
use crate::output::code_quality::validate_report;
use crate::output::summary::counted;
use crate::spec::duration::{HumanDuration, parse_duration};

/// How `runner test` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TestFormat {
    /// A line per case and a summary, like `cargo test`.
    Text,
    /// One JSON document on stdout (progress on stderr).
    Json,
    /// JUnit XML on stdout (progress on stderr).
    Junit,
    /// The text report, and a GitHub Actions annotation per failure.
    Github,
    /// GitLab's Code Quality JSON on stdout, an issue per failure (progress on stderr).
    Gitlab,
}

/// Options of `runner test`.
#[derive(Debug, Args)]
pub struct TestArgs {
    /// Test files, or directories searched recursively for `*.test.yaml` (default: `.`).
    pub paths: Vec<PathBuf>,
    /// Cases run at once (default: the number of cores).
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
    /// Only the cases whose `FILE::NAME` contains PATTERN.
    #[arg(long, value_name = "PATTERN")]
    pub filter: Option<String>,
    /// Run each case N times; it passes when the share of passed runs reaches its
    /// `min_pass_rate` (default: every run).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub repeat: u16,
    /// Record the cassette of every cassette case from the agent's real model (network and
    /// keys needed), and run the live cases.
    #[arg(long, conflicts_with = "update")]
    pub record: bool,
    /// Replay, and record again the cassettes of the cases that fail.
    #[arg(long)]
    pub update: bool,
    /// Run the `live: true` cases too (skipped otherwise).
    #[arg(long)]
    pub live: bool,
    /// The timeout of a case that sets none (default 5m), e.g. 30s.
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    pub timeout: Option<HumanDuration>,
    #[arg(long, value_enum, default_value_t = TestFormat::Text)]
    pub format: TestFormat,
    /// Append a Markdown summary (a table of the cases, the failures at their lines) to
    /// this file, as to `GITHUB_STEP_SUMMARY` in GitHub Actions.
    #[arg(long, value_name = "FILE")]
    pub summary: Option<PathBuf>,
}

fn duration(text: &str) -> Result<HumanDuration, String> {
    parse_duration(text)
        .map(HumanDuration)
        .map_err(|e| e.to_string())
}

pub fn run(args: TestArgs) -> Exit {
    let files = match load_all(&args) {
        Ok(files) => files,
        Err(exit) => return exit,
    };
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(error) => {
            eprintln!("error: cannot find the runner binary: {error}");
            return Exit::Failed;
        }
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let settings = Settings {
        jobs: args.jobs.map_or(cores, usize::from),
        filter: args.filter.clone(),
        repeat: usize::from(args.repeat),
        mode: match (args.record, args.update) {
            (true, _) => Mode::Record,
            (false, true) => Mode::Update,
            (false, false) => Mode::Replay,
        },
        live: args.live,
        timeout: args.timeout.map(HumanDuration::as_duration),
        exe,
        scratch: std::env::temp_dir().join(format!("runner-test-{}", new_id())),
    };
    let text = matches!(args.format, TestFormat::Text | TestFormat::Github);
    let progress = |line: String| match text {
        true => outln!("{line}"),
        false => eprintln!("{line}"),
    };
    let count = crate::agent_test::kept_cases(&files, args.filter.as_deref()) as u64;
    progress(format!(
        "\nrunning {} from {}",
        counted(count, "case", "cases"),
        counted(files.len() as u64, "file", "files")
    ));
    let started = Instant::now();
    let (cases, filtered_out) =
        run_suite(&files, &settings, &mut |case| progress(progress_line(case)));
    let elapsed = started.elapsed();
    let totals = Totals::of(&cases, filtered_out);
    match args.format {
        TestFormat::Text | TestFormat::Github => {
            out!("{}", failures_section(&cases));
            outln!("\n{}\n", summary_line(&totals, elapsed));
        }
        TestFormat::Json => {
            let report = json_report(&cases, &totals, elapsed);
            outln!(
                "{}",
                serde_json::to_string_pretty(&report).unwrap_or_default()
            );
            eprintln!("{}", summary_line(&totals, elapsed));
        }
        TestFormat::Junit => {
            out!("{}", junit_report(&cases, &totals, elapsed));
            eprintln!("{}", summary_line(&totals, elapsed));
        }
        TestFormat::Gitlab => {
            out!("{}", gitlab_report(&cases));
            eprintln!("{}", summary_line(&totals, elapsed));
        }
    }
    job_summary::write(
        || markdown_summary(&cases, &totals, elapsed),
        args.summary.as_deref(),
    );
    if args.format == TestFormat::Github || in_github_actions() {
        let lines = annotations(&cases);
        match text {
            true => out!("{lines}"),
            false => eprint!("{lines}"),
        }
    }
    match totals.failed {
        0 => Exit::Completed,
        _ => Exit::Failed,
    }
}

/// Every test file of the paths, loaded; any problem is printed (as annotations too with
/// `--format github`) and is exit 2, before any case runs.
fn load_all(args: &TestArgs) -> Result<Vec<LoadedFile>, Exit> {
    let paths = discover(&args.paths).map_err(|message| {
        eprintln!("error: {message}");
        Exit::Invalid
    })?;
    if paths.is_empty() {
        eprintln!("error: no test files (*.test.yaml) found");
        return Err(Exit::Invalid);
    }
    let mut files = Vec::new();
    let mut problems = Vec::new();
    for path in &paths {
        match load_test_file(path) {
            Ok(file) => files.push(file),
            Err(diagnostics) => problems.extend(diagnostics),
        }
    }
    if problems.is_empty() {
        return Ok(files);
    }
    for diagnostic in &problems {
        eprintln!("{diagnostic}");
    }
    if args.format == TestFormat::Github || in_github_actions() {
        out!("{}", github_diagnostics(&problems));
    }
    // A Code Quality report names the broken test files' lines too (GitLab reads stdout).
    if args.format == TestFormat::Gitlab {
        out!("{}", validate_report(&problems));
    }
    let errors = problems.iter().filter(|d| d.is_error()).count();
    eprintln!("{errors} error(s) in the test files: no case was run");
    Err(Exit::Invalid)
}
