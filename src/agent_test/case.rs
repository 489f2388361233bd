//! One run of one case: lay out its workspace, run `runner exec` in it, read back what the
//! run left, and check every assertion.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::assertions::{Evidence, check, error_of};
use super::child::{ChildError, run_with_limit};
use super::judge::{JudgeSource, grade};
use super::load::LoadedFile;
use super::outcome::{Attempt, Failure};
use super::setup_sandbox::setup_sandbox;
use super::spec::{Assertion, Case};
use super::workspace::{CaseDir, apply_env};
use crate::engine::events::Event;
use crate::output::result::{RunResult, Status};
use crate::provider::{CassetteRecorder, ReplayStore};
use crate::spec::yaml::Position;

/// Where a run's model answers come from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// The case's cassette, replayed.
    Replay(PathBuf),
    /// The agent's real model, recorded into the case's cassette.
    Record(PathBuf),
    /// The case's inline `script:`.
    Script,
    /// The agent's real model.
    Live,
}

/// Everything one run of a case needs.
pub struct Job<'a> {
    pub file: &'a LoadedFile,
    pub case: usize,
    pub source: Source,
    /// The case directory to create (workspace, run directory).
    pub dir: PathBuf,
    /// The `runner` binary.
    pub exe: &'a Path,
    pub limit: Duration,
}

/// A failure before or instead of the assertions (`None`), or of assertion `Some(i)`.
type Found = Vec<(Option<usize>, String)>;

/// Runs the case once and checks it. A failed run's directory is kept, a passed one's
/// removed.
pub fn run_attempt(job: &Job<'_>) -> Attempt {
    let started = Instant::now();
    let found = match CaseDir::create(job.dir.clone()) {
        Ok(dir) => {
            let found = execute(job, &dir).unwrap_or_else(|message| vec![(None, message)]);
            let kept = match found.is_empty() {
                true => {
                    dir.remove();
                    None
                }
                false => Some(dir.run.clone()),
            };
            (found, kept)
        }
        Err(error) => {
            let message = format!("cannot create {}: {error}", job.dir.display());
            (vec![(None, message)], None)
        }
    };
    let (found, kept) = found;
    Attempt {
        failures: found
            .into_iter()
            .map(|(at, message)| locate(job, at, message))
            .collect(),
        kept,
        duration: started.elapsed(),
    }
}

/// The failure at the assertion's line, or the case's for the others.
fn locate(job: &Job<'_>, assertion: Option<usize>, message: String) -> Failure {
    let at: Position = assertion
        .and_then(|index| job.file.assertion_at[job.case].get(index).copied())
        .unwrap_or(job.file.case_at[job.case]);
    Failure {
        message,
        file: job.file.path.clone(),
        line: at.line,
        column: at.column,
    }
}

fn execute(job: &Job<'_>, dir: &CaseDir) -> Result<Found, String> {
    let case = &job.file.spec.cases[job.case];
    let env: Vec<(String, Option<String>)> = case
        .env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Source::Replay(cassette) = &job.source
        && !cassette.is_file()
    {
        return Err(format!(
            "no cassette at {}: record it with `runner test --record`",
            cassette.display()
        ));
    }
    dir.lay_files(case)?;
    if let Some(setup) = &case.setup {
        let mut read_only = dir.setup_scripts(setup, &job.file.dir);
        read_only.extend([job.file.agent.clone(), job.file.path.clone()]);
        let named = |e: String| format!("case `{}`: {e}", case.name);
        let sandbox = setup_sandbox(&job.file.agent, dir, read_only).map_err(named)?;
        dir.setup(setup, &job.file.dir, &env, sandbox)
            .map_err(named)?;
    }
    let mut command = exec_command(job, case, dir)?;
    apply_env(&mut command, &env);
    let output = run_with_limit(command, job.limit).map_err(|error| match error {
        ChildError::Spawn(e) => format!("cannot run {}: {e}", job.exe.display()),
        ChildError::TimedOut(limit) => format!(
            "the run took longer than the case's timeout ({}) and was stopped",
            crate::spec::duration::HumanDuration(limit)
        ),
    })?;
    let result: RunResult = serde_json::from_slice(&output.stdout).map_err(|_| {
        let stderr = String::from_utf8_lossy(&output.stderr);
        format!(
            "the run left no result ({}): {}",
            output.status,
            crate::provider::shorten(stderr.trim(), 2000)
        )
    })?;
    let events = read_events(&dir.run.join("events.jsonl"))?;
    let judged = case.expect.iter().any(|a| matches!(a, Assertion::Judge(_)));
    let judge_source = match judged {
        true => judge_source(&job.source, dir)?,
        false => JudgeSource::Live,
    };
    let evidence = Evidence {
        result: &result,
        events: &events,
        workspace: &dir.workspace,
    };
    let mut found = Found::new();
    let says_how_it_ends = case
        .expect
        .iter()
        .any(|a| matches!(a, Assertion::Status(_) | Assertion::ExitCode(_)));
    if !says_how_it_ends && result.status != Status::Completed {
        let message = format!(
            "the run ended {}{}",
            result.status.name(),
            error_of(&result)
        );
        found.push((None, message));
    }
    let answer = match &result.structured {
        Some(value) => serde_json::to_string_pretty(value).unwrap_or_default(),
        None => result.output.clone().unwrap_or_default(),
    };
    let judge_model = job.file.spec.judge_model.as_ref();
    let judge = |check: &_| grade(check, judge_model, &judge_source, case, &answer);
    for (index, assertion) in case.expect.iter().enumerate() {
        if let Err(message) = check(assertion, &evidence, &judge) {
            found.push((Some(index), message));
        }
    }
    if let Source::Record(cassette) = &job.source {
        keep_recording(dir, cassette, &result)?;
    }
    Ok(found)
}

/// `runner exec AGENT --run-dir RUN --output json --quiet ...` in the workspace.
fn exec_command(job: &Job<'_>, case: &Case, dir: &CaseDir) -> Result<Command, String> {
    let mut command = Command::new(job.exe);
    command
        .arg("exec")
        .arg(&job.file.agent)
        .arg("--run-dir")
        .arg(&dir.run)
        .args(["--output", "json", "--quiet"])
        .current_dir(&dir.workspace)
        // The run's own annotations would be about the run, not the test: the report
        // makes its own.
        .env_remove("GITHUB_ACTIONS")
        .env("NO_COLOR", "1");
    if let Some(input) = &case.input {
        command.arg(format!("--input={input}"));
    }
    if let (Some(model), false) = (&case.model, job.source == Source::Script) {
        command.arg(format!("--model={model}"));
    }
    if !case.inputs.is_empty() {
        command
            .arg("--vars")
            .arg(dir.write_json("inputs.json", &case.inputs)?);
    }
    if let Some(setup) = &case.setup {
        for script in dir.setup_scripts(setup, &job.file.dir) {
            command.arg("--protect").arg(script);
        }
    }
    if let Some(answers) = &case.answers {
        command
            .arg("--answers")
            .arg(dir.write_json("answers.json", answers)?);
    }
    match &job.source {
        Source::Replay(cassette) => {
            command.arg("--replay").arg(cassette);
        }
        Source::Record(_) => {
            command.arg("--record").arg(recording(dir));
        }
        Source::Script => {
            let script = case.script.as_deref().unwrap_or_default();
            command
                .arg("--script")
                .arg(dir.write_json("script.json", &script)?);
        }
        Source::Live => {}
    }
    Ok(command)
}

/// Where a recording run writes its cassette before it replaces the case's.
fn recording(dir: &CaseDir) -> PathBuf {
    dir.root.join("cassette.jsonl")
}

fn judge_recording(dir: &CaseDir) -> PathBuf {
    dir.root.join("judge.jsonl")
}

fn judge_source(source: &Source, dir: &CaseDir) -> Result<JudgeSource, String> {
    Ok(match source {
        Source::Replay(cassette) => {
            JudgeSource::Replay(ReplayStore::load(cassette).map_err(|e| e.to_string())?)
        }
        Source::Record(_) => JudgeSource::Record(
            CassetteRecorder::create(judge_recording(dir)).map_err(|e| e.to_string())?,
        ),
        Source::Script | Source::Live => JudgeSource::Live,
    })
}

/// The run's exchanges, then the judges', become the case's cassette, unless the run never
/// started (an invalid file or a missing key would leave an empty recording over a good
/// one).
fn keep_recording(dir: &CaseDir, cassette: &Path, result: &RunResult) -> Result<(), String> {
    if result.status == Status::Invalid {
        return Err(format!(
            "nothing recorded: the run did not start{}",
            error_of(result)
        ));
    }
    let mut text = std::fs::read_to_string(recording(dir)).unwrap_or_default();
    text.push_str(&std::fs::read_to_string(judge_recording(dir)).unwrap_or_default());
    if let Some(parent) = cassette.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    crate::fsutil::write_atomically(cassette, text.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", cassette.display()))
}

/// events.jsonl, typed; none when the run never opened its directory.
fn read_events(path: &Path) -> Result<Vec<Event>, String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(Vec::new());
    };
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| {
            serde_json::from_str(line)
                .map_err(|e| format!("cannot read line {} of {}: {e}", index + 1, path.display()))
        })
        .collect()
}
