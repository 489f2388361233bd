//! `runner runs [list | show ID | prune --keep N]`: the run directories under `.runner/runs`
//! (runs given `--run-dir` elsewhere are the user's to keep). A run without `result.json`
//! is in progress or was killed: it is listed as such and never pruned.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use clap::{Args, Subcommand};

use super::Exit;
use crate::checkpoint::check_session_id;
use crate::output::result::RunResult;
use crate::session::run_dir::runs_dir;

#[derive(Debug, Args)]
pub struct RunsArgs {
    #[command(subcommand)]
    pub command: Option<RunsCommand>,
}

#[derive(Debug, Subcommand)]
pub enum RunsCommand {
    /// Every run, newest first: id, agent, status, steps, duration, session (the default).
    List,
    /// A run's result.json.
    Show { id: String },
    /// Deletes finished runs beyond the newest `keep`.
    Prune {
        #[arg(long)]
        keep: usize,
    },
}

/// A run directory and what its result says, if it has one yet.
struct Run {
    id: String,
    dir: PathBuf,
    changed: SystemTime,
    result: Option<RunResult>,
}

pub fn run(args: RunsArgs) -> Exit {
    match args.command.unwrap_or(RunsCommand::List) {
        RunsCommand::List => list(),
        RunsCommand::Show { id } => show(&id),
        RunsCommand::Prune { keep } => prune(keep),
    }
}

fn list() -> Exit {
    outln!(
        "{:<36}  {:<20}  {:<14}  {:>5}  {:>9}  SESSION",
        "RUN",
        "AGENT",
        "STATUS",
        "STEPS",
        "SECONDS"
    );
    for run in runs() {
        let line = match &run.result {
            Some(result) => format!(
                "{:<36}  {:<20}  {:<14}  {:>5}  {:>9.1}  {}",
                run.id,
                result.agent,
                result.status.name(),
                result.steps,
                result.duration_ms as f64 / 1000.0,
                result.session_id
            ),
            None => format!("{:<36}  {:<20}  {:<14}", run.id, "", "unfinished"),
        };
        outln!("{line}");
    }
    Exit::Completed
}

fn show(id: &str) -> Exit {
    if let Err(error) = check_session_id(id) {
        eprintln!("error: run ids follow the session id rule: {error}");
        return Exit::Invalid;
    }
    let path = runs_dir().join(id).join("result.json");
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            out!("{text}");
            Exit::Completed
        }
        Err(error) => {
            eprintln!("error: cannot read {}: {error}", path.display());
            Exit::Invalid
        }
    }
}

fn prune(keep: usize) -> Exit {
    let finished = runs().into_iter().filter(|run| run.result.is_some());
    let mut removed = 0;
    for run in finished.skip(keep) {
        match std::fs::remove_dir_all(&run.dir) {
            Ok(()) => removed += 1,
            Err(error) => eprintln!("warning: cannot remove {}: {error}", run.dir.display()),
        }
    }
    outln!("removed {removed} run(s)");
    Exit::Completed
}

/// The runs under `.runner/runs`, newest first.
fn runs() -> Vec<Run> {
    let entries = std::fs::read_dir(runs_dir())
        .into_iter()
        .flatten()
        .flatten();
    let mut runs: Vec<Run> = entries
        .filter(|entry| entry.path().is_dir())
        .map(|entry| read_run(&entry.path()))
        .collect();
    runs.sort_by_key(|run| std::cmp::Reverse(run.changed));
    runs
}

fn read_run(dir: &Path) -> Run {
    let result_file = dir.join("result.json");
    let result = std::fs::read_to_string(&result_file)
        .ok()
        .and_then(|text| serde_json::from_str::<RunResult>(&text).ok());
    // The transcript is written as the run goes: its time is the run's last sign of life.
    let changed = ["transcript.txt", "result.json", ""]
        .iter()
        .filter_map(|name| dir.join(name).metadata().ok()?.modified().ok())
        .max()
        .unwrap_or(SystemTime::UNIX_EPOCH);
    Run {
        id: dir
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned(),
        dir: dir.to_path_buf(),
        changed,
        result,
    }
}
