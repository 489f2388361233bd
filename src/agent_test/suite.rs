//! Running the cases of loaded test files: which run and how (replay, record, script,
//! live), `--filter`, `--repeat`, and a pool of `-j N` workers, each running one case at a
//! time in its own process. A case's report is handed over as soon as its last run ends.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use super::case::{Job, Source, run_attempt};
use super::load::LoadedFile;
use super::outcome::{Attempt, CaseReport, Failure, Verdict};

/// A case gets this long when neither it, its file nor the command line says.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// What to do with cassettes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Replay them (the default: no network).
    Replay,
    /// Record every cassette case from the agent's real model (`--record`).
    Record,
    /// Replay, and record again the cases that fail (`--update`).
    Update,
}

/// How the suite runs.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Cases run at once.
    pub jobs: usize,
    /// Only cases whose `file::name` contains this.
    pub filter: Option<String>,
    /// Runs of each case.
    pub repeat: usize,
    pub mode: Mode,
    /// Run `live: true` cases (they are skipped otherwise).
    pub live: bool,
    /// The timeout of cases that set none (the file's `timeout` first).
    pub timeout: Option<Duration>,
    /// The `runner` binary the cases run.
    pub exe: PathBuf,
    /// Where case directories go (failed ones stay).
    pub scratch: PathBuf,
}

/// A case chosen to run (or to skip).
struct Planned<'a> {
    file: &'a LoadedFile,
    case: usize,
    id: String,
    plan: Plan,
    runs: usize,
}

enum Plan {
    Skip(String),
    Run(Source),
}

/// Runs the cases, calling `done` with each case's report as it finishes; returns them all
/// (in the files' order) and how many `--filter` left out.
pub fn run_suite(
    files: &[LoadedFile],
    settings: &Settings,
    done: &mut dyn FnMut(&CaseReport),
) -> (Vec<CaseReport>, usize) {
    let (planned, filtered_out) = plan(files, settings);
    let mut reports: Vec<Option<CaseReport>> = planned.iter().map(|_| None).collect();
    for (slot, case) in planned.iter().enumerate() {
        if let Plan::Skip(reason) = &case.plan {
            let report = skipped(case, reason.clone());
            done(&report);
            reports[slot] = Some(report);
        }
    }
    let work: Vec<(usize, usize)> = planned
        .iter()
        .enumerate()
        .filter(|(_, case)| matches!(case.plan, Plan::Run(_)))
        .flat_map(|(slot, case)| (0..case.runs).map(move |run| (slot, run)))
        .collect();
    let mut attempts: Vec<Vec<Attempt>> = planned.iter().map(|_| Vec::new()).collect();
    let next = AtomicUsize::new(0);
    let (sender, received) = mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..settings.jobs.max(1).min(work.len().max(1)) {
            let sender = sender.clone();
            let (work, next, planned) = (&work, &next, &planned);
            scope.spawn(move || {
                while let Some(&(slot, run)) = work.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let attempt = attempt(&planned[slot], slot, run, settings);
                    if sender.send((slot, attempt)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(sender);
        for (slot, attempt) in received {
            attempts[slot].push(attempt);
            if attempts[slot].len() == planned[slot].runs {
                let report = judge(&planned[slot], std::mem::take(&mut attempts[slot]));
                done(&report);
                reports[slot] = Some(report);
            }
        }
    });
    // Removed only when empty: failed runs' directories stay for their reports.
    let _ = std::fs::remove_dir(&settings.scratch);
    (reports.into_iter().flatten().collect(), filtered_out)
}

/// A case's id, `FILE::NAME`, which `--filter` matches.
fn case_id(file: &LoadedFile, name: &str) -> String {
    format!("{}::{}", file.path.display(), name)
}

/// Whether `--filter` keeps the case `id`.
fn kept(filter: Option<&str>, id: &str) -> bool {
    filter.is_none_or(|f| id.contains(f))
}

/// How many cases of `files` `--filter` keeps.
pub fn kept_cases(files: &[LoadedFile], filter: Option<&str>) -> usize {
    files
        .iter()
        .flat_map(|file| {
            file.spec
                .cases
                .iter()
                .map(move |case| case_id(file, &case.name))
        })
        .filter(|id| kept(filter, id))
        .count()
}

/// The cases `--filter` keeps, each with how it runs.
fn plan<'a>(files: &'a [LoadedFile], settings: &Settings) -> (Vec<Planned<'a>>, usize) {
    let mut planned = Vec::new();
    let mut filtered_out = 0;
    for file in files {
        for (index, case) in file.spec.cases.iter().enumerate() {
            let id = case_id(file, &case.name);
            if !kept(settings.filter.as_deref(), &id) {
                filtered_out += 1;
                continue;
            }
            let plan = match (&case.skip, &case.cassette, case.live) {
                (Some(reason), _, _) => Plan::Skip(reason.clone()),
                (None, Some(cassette), _) => {
                    let cassette = file.dir.join(cassette);
                    Plan::Run(match settings.mode {
                        Mode::Record => Source::Record(cassette),
                        Mode::Replay | Mode::Update => Source::Replay(cassette),
                    })
                }
                (None, None, true) if settings.live || settings.mode == Mode::Record => {
                    Plan::Run(Source::Live)
                }
                (None, None, true) => Plan::Skip("a live case: run it with --live".into()),
                (None, None, false) => Plan::Run(Source::Script),
            };
            // A recording is made once; what it answers is the same every time.
            let runs = match plan {
                Plan::Run(Source::Record(_)) => 1,
                _ => settings.repeat.max(1),
            };
            planned.push(Planned {
                file,
                case: index,
                id,
                plan,
                runs,
            });
        }
    }
    (planned, filtered_out)
}

/// One run of a planned case; with `--update`, a failed replay is recorded again.
fn attempt(case: &Planned<'_>, slot: usize, run: usize, settings: &Settings) -> Attempt {
    let Plan::Run(source) = &case.plan else {
        unreachable!("skipped cases are not run");
    };
    let spec = &case.file.spec.cases[case.case];
    let limit = spec
        .timeout
        .or(case.file.spec.timeout)
        .map(|t| t.as_duration())
        .or(settings.timeout)
        .unwrap_or(DEFAULT_TIMEOUT);
    let job = |source: Source, suffix: &str| Job {
        file: case.file,
        case: case.case,
        source,
        dir: case_dir(&settings.scratch, slot, &spec.name, run, suffix),
        exe: &settings.exe,
        limit,
    };
    let first = run_attempt(&job(source.clone(), ""));
    match (settings.mode, source) {
        (Mode::Update, Source::Replay(cassette)) if !first.passed() => {
            if let Some(kept) = &first.kept {
                remove_case_dir(kept);
            }
            run_attempt(&job(Source::Record(cassette.clone()), "-record"))
        }
        _ => first,
    }
}

fn case_dir(scratch: &Path, slot: usize, name: &str, run: usize, suffix: &str) -> PathBuf {
    scratch.join(format!("{slot:03}-{name}-{}{suffix}", run + 1))
}

/// Removes a case directory, given its run directory.
fn remove_case_dir(run_dir: &Path) {
    if let Some(root) = run_dir.parent() {
        let _ = std::fs::remove_dir_all(root);
    }
}

fn skipped(case: &Planned<'_>, reason: String) -> CaseReport {
    let spec = &case.file.spec.cases[case.case];
    CaseReport {
        id: case.id.clone(),
        file: case.file.path.clone(),
        name: spec.name.clone(),
        verdict: Verdict::Skipped,
        skipped: Some(reason),
        runs: 0,
        passed_runs: 0,
        min_pass_rate: spec.min_pass_rate.unwrap_or(1.0),
        failures: Vec::new(),
        run_dir: None,
        duration: Duration::ZERO,
    }
}

/// The case's verdict from its runs: passed when the share of passed runs reaches its
/// `min_pass_rate` (all of them by default). A failed case keeps the directory of its
/// first failed run; every other run's is removed.
fn judge(case: &Planned<'_>, attempts: Vec<Attempt>) -> CaseReport {
    let spec = &case.file.spec.cases[case.case];
    let min_pass_rate = spec.min_pass_rate.unwrap_or(1.0);
    let runs = attempts.len();
    let passed_runs = attempts.iter().filter(|a| a.passed()).count();
    let passed = passed_runs as f64 >= min_pass_rate * runs as f64;
    let duration = attempts.iter().map(|a| a.duration).sum();
    let mut failed = attempts.into_iter().filter(|a| !a.passed());
    let first_failed = failed.next();
    for other in failed {
        if let Some(kept) = &other.kept {
            remove_case_dir(kept);
        }
    }
    let (mut failures, run_dir) = match first_failed {
        Some(attempt) if !passed => (attempt.failures, attempt.kept),
        Some(attempt) => {
            if let Some(kept) = &attempt.kept {
                remove_case_dir(kept);
            }
            (Vec::new(), None)
        }
        None => (Vec::new(), None),
    };
    if !passed && runs > 1 {
        let at = case.file.case_at[case.case];
        let message = format!(
            "passed {passed_runs} of {runs} runs ({:.0} %), below its min_pass_rate of {:.0} %",
            100.0 * passed_runs as f64 / runs as f64,
            100.0 * min_pass_rate
        );
        failures.insert(
            0,
            Failure {
                message,
                file: case.file.path.clone(),
                line: at.line,
                column: at.column,
            },
        );
    }
    CaseReport {
        id: case.id.clone(),
        file: case.file.path.clone(),
        name: spec.name.clone(),
        verdict: if passed {
            Verdict::Passed
        } else {
            Verdict::Failed
        },
        skipped: None,
        runs,
        passed_runs,
        min_pass_rate,
        failures,
        run_dir,
        duration,
    }
}
