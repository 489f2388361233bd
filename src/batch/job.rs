//! One input's run: checked against the agent's inputs, then run as a child `runner exec`
//! (a new input), `runner resume` (an input whose session exists: it was interrupted), or
//! not at all (an input whose run finished but whose envelope was never recorded: the
//! batch died in between, so its `result.json` is taken instead, or, when there is none,
//! the envelope of its completed session, `settled`).

use std::ffi::OsString;
use std::fs::File;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use indexmap::IndexMap;

use super::children::{Children, Finished};
use super::dir::BatchDir;
use super::inputs::{Entry, ID_KEY, Input};
use super::results::{Envelope, InputRef, is_final, session_existed, session_was_held};
use super::settled::completed_result;
use crate::checkpoint::CheckpointStore;
use crate::engine::ErrorCode;
use crate::engine::clock::new_id;
use crate::output::result::{RunResult, Status};
use crate::spec::agent::InputSpec;
use crate::spec::inputs::{InputError, resolve_inputs};
use crate::telemetry::{BatchTrace, InputSpan};
use crate::trace_env::Carried;

/// How long apart a run refused because another process held its session is tried
/// again: a child of a batch that was killed may still be stopping, or (on NATS) a dead
/// holder's lease has not expired yet.
const HELD_WAIT: Duration = Duration::from_millis(200);

/// Where the agent's sessions are: for the children's options, and to ask whether an
/// input's session exists (then it is resumed).
#[derive(Clone)]
pub struct Sessions {
    pub at: ChildSessions,
    pub store: Arc<dyn CheckpointStore>,
}

/// How the children reach the sessions.
#[derive(Clone)]
pub enum ChildSessions {
    /// A directory, named on a `runner resume` child's command line (`--dir`).
    Dir(PathBuf),
    /// Given to each child by the process that runs the batch: a worker's children reach
    /// the store through it (`nats::relay`), not with connections of their own.
    Given(Arc<dyn GiveSessions>),
}

/// Gives a child the session store of the process that starts it (a worker: `nats::relay`).
pub trait GiveSessions: Send + Sync {
    /// Readies `command` to reach the store for `session`; the value returned is finished
    /// once the child has exited.
    fn give(&self, command: &mut Command, session: &str) -> std::io::Result<Box<dyn Given>>;
}

/// The store given to one child, for as long as it runs.
pub trait Given: Send {
    fn finish(self: Box<Self>);
}

/// Where one input's runs go: its directory (`vars.json`, a directory per run) and its
/// session.
#[derive(Debug, Clone)]
pub struct InputPlace {
    pub dir: PathBuf,
    pub session: String,
    /// Known to have no session yet (a job's first delivery): its first run starts one
    /// without asking the store, and is run again as a resume if it was refused because
    /// the session exists after all.
    pub fresh: bool,
    /// The span its run is a child of (`TRACEPARENT` in the run's environment): the
    /// input's span in a traced batch, a job's `trace` on a worker.
    pub trace: Option<Carried>,
}

/// How every input's run is started.
#[derive(Clone)]
pub struct Launcher {
    /// The `runner` binary.
    pub exe: PathBuf,
    /// The agent file, as an absolute path (a resume reads it from the session).
    pub agent: PathBuf,
    pub agent_name: String,
    /// The agent's declared inputs, which each input's values are checked against.
    pub declared: IndexMap<String, InputSpec>,
    /// Where the agent's sessions go; `None` when it keeps no checkpoints.
    pub sessions: Option<Sessions>,
    /// How long a run refused because its session is held is tried again.
    pub wait_held: Duration,
    /// Options given to every run (`--replay FILE`, `--answers FILE`, `--yes`).
    pub passed: Vec<OsString>,
    /// `--model`, for the first run of each input (a resume goes on with its session's).
    pub model: Option<String>,
    /// The batch's span, when it exports OpenTelemetry spans: each input gets one under it.
    pub trace: Option<Arc<BatchTrace>>,
}

/// Runs one entry of the inputs file and returns its envelope; `None` when the batch was
/// stopped before its run could start.
pub fn run_entry(
    entry: &Entry,
    dir: &BatchDir,
    launcher: &Launcher,
    children: &Children,
) -> Option<Envelope> {
    let line = entry.line();
    let name = match entry {
        Entry::Bad(bad) => bad.name.clone(),
        Entry::Input(input) => input.name(),
    };
    let span = launcher.trace.as_ref().map(|t| t.input(line, &name));
    let place = InputPlace {
        dir: dir.input_dir(line),
        session: dir.session_id(line),
        fresh: false,
        trace: span.as_ref().map(InputSpan::carried),
    };
    let (result, name) = match entry {
        Entry::Bad(bad) => (
            invalid(
                &place,
                launcher,
                ErrorCode::InvalidInput,
                bad.message.clone(),
            ),
            bad.name.clone(),
        ),
        Entry::Input(input) => (
            run_checked(input, &place, launcher, children)?,
            input.name(),
        ),
    };
    if let Some(span) = span {
        let error = result.error.as_ref().map(|e| e.message.as_str());
        span.end(
            result.status.name(),
            result.status == Status::Completed,
            error,
        );
    }
    Some(Envelope {
        input: InputRef { line, id: name },
        result,
    })
}

/// Runs an input whose values fit the agent's inputs; an invalid envelope for one whose
/// values do not.
pub fn run_checked(
    input: &Input,
    place: &InputPlace,
    launcher: &Launcher,
    children: &Children,
) -> Option<RunResult> {
    match check(input, launcher) {
        Err(message) => Some(invalid(place, launcher, ErrorCode::InvalidInput, message)),
        Ok(()) => run_input(input, place, launcher, children),
    }
}

/// The envelope of an input that did not run.
pub fn invalid(
    place: &InputPlace,
    launcher: &Launcher,
    code: ErrorCode,
    message: String,
) -> RunResult {
    RunResult::invalid(
        &launcher.agent_name,
        &new_id(),
        &place.session,
        code,
        message,
    )
}

fn check(input: &Input, launcher: &Launcher) -> Result<(), String> {
    check_values(input, &launcher.declared)
}

/// The input's values fit the agent's declared inputs (the checks of `--vars`).
pub fn check_values(input: &Input, declared: &IndexMap<String, InputSpec>) -> Result<(), String> {
    let vars = input.vars(declared.contains_key(ID_KEY));
    let line = input.line;
    resolve_inputs(declared, vars, &[])
        .map(drop)
        .map_err(|error| match error {
            // Said without the `--var` advice, which is for the command line.
            InputError::Missing { name, description } => {
                let about = description.map(|d| format!(" ({d})")).unwrap_or_default();
                format!("line {line}: missing required input `{name}`{about}")
            }
            other => format!("line {line}: {other}"),
        })
}

fn run_input(
    input: &Input,
    place: &InputPlace,
    launcher: &Launcher,
    children: &Children,
) -> Option<RunResult> {
    if let Err(error) = std::fs::create_dir_all(&place.dir) {
        let message = format!("cannot create {}: {error}", place.dir.display());
        return Some(invalid(place, launcher, ErrorCode::BatchDir, message));
    }
    let last = last_run(&place.dir);
    if let Some(result) = last.and_then(|n| recorded_result(&place.dir.join(n.to_string()))) {
        return Some(result);
    }
    let session = &place.session;
    let mut number = last.unwrap_or(0);
    let fresh = place.fresh && last.is_none();
    // Set once an `exec` was refused because the session exists: asking the store and
    // starting the run are not one step, so a run of this batch killed a moment before (and
    // still stopping) can create the session in between. It is then resumed, once.
    let mut exists_after_all = false;
    let started = Instant::now();
    loop {
        number += 1;
        let run_dir = place.dir.join(number.to_string());
        let resume = exists_after_all
            || (!fresh
                && launcher
                    .sessions
                    .as_ref()
                    .is_some_and(|sessions| sessions.store.exists(session).unwrap_or(false)));
        let command = match &launcher.sessions {
            Some(sessions) if resume => {
                if let Some(result) = completed(launcher, session) {
                    return Some(result);
                }
                resume_command(launcher, session, sessions)
            }
            _ => match exec_command(input, launcher, session, &place.dir) {
                Ok(command) => command,
                Err(message) => {
                    return Some(invalid(place, launcher, ErrorCode::BatchDir, message));
                }
            },
        };
        let mut command = command;
        if let Some(trace) = &place.trace {
            trace.apply(&mut command);
        }
        let result = run_child(command, &run_dir, launcher, session, children)?;
        if !resume && session_existed(&result) {
            exists_after_all = true;
            continue;
        }
        // A resume refused because the session completed in between (another delivery of
        // the job, whose lease had expired, finished it): the session's envelope stands.
        if result.status == Status::Invalid
            && let Some(result) = completed(launcher, session)
        {
            return Some(result);
        }
        if !session_was_held(&result) || started.elapsed() >= launcher.wait_held {
            return Some(result);
        }
        // Another process holds the session: a run of this batch that was killed and is
        // still stopping, or a dead worker whose lease has not expired yet.
        std::thread::sleep(HELD_WAIT);
    }
}

/// The envelope of the input's session when it is completed (`settled`).
fn completed(launcher: &Launcher, session: &str) -> Option<RunResult> {
    let store = launcher.sessions.as_ref()?.store.as_ref();
    completed_result(store, session, &launcher.agent_name)
        .ok()
        .flatten()
}

/// The number of the input's last run directory, if it has run.
fn last_run(input_dir: &Path) -> Option<u32> {
    std::fs::read_dir(input_dir)
        .ok()?
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .max()
}

/// The result a run left in its directory, when it is one the batch keeps (it ended, and
/// not before it started: an invalid run is cheap to try again, and it was maybe refused
/// only because its session was held).
fn recorded_result(run_dir: &Path) -> Option<RunResult> {
    let bytes = std::fs::read(run_dir.join("result.json")).ok()?;
    let result: RunResult = serde_json::from_slice(&bytes).ok()?;
    (is_final(&result) && result.status != Status::Invalid).then_some(result)
}

/// `runner exec AGENT --session ID --vars inputs/<line>/vars.json`.
fn exec_command(
    input: &Input,
    launcher: &Launcher,
    session: &str,
    input_dir: &Path,
) -> Result<Command, String> {
    let vars_path = input_dir.join("vars.json");
    let vars = input.vars(launcher.declared.contains_key(ID_KEY));
    let text = serde_json::to_vec_pretty(&vars).map_err(|e| e.to_string())?;
    std::fs::write(&vars_path, text)
        .map_err(|e| format!("cannot write {}: {e}", vars_path.display()))?;
    let mut command = Command::new(&launcher.exe);
    command
        .arg("exec")
        .arg(&launcher.agent)
        .args(["--session", session])
        .arg("--vars")
        .arg(&vars_path);
    if let Some(model) = &launcher.model {
        command.args(["--model", model]);
    }
    Ok(command)
}

/// `runner resume ID --dir SESSIONS` (or with the store given to it): calls that were in
/// flight are reported to the model as interrupted, never run again.
fn resume_command(launcher: &Launcher, session: &str, sessions: &Sessions) -> Command {
    let mut command = Command::new(&launcher.exe);
    command.arg("resume").arg(session);
    match &sessions.at {
        ChildSessions::Dir(dir) => {
            command.arg("--dir").arg(dir);
        }
        // A given store is given when the child starts (`run_to_end`).
        ChildSessions::Given(_) => {}
    }
    command
}

/// Runs the child with the batch's options, its stderr kept in `stderr.log` of its run
/// directory, and reads its envelope from stdout.
fn run_child(
    mut command: Command,
    run_dir: &Path,
    launcher: &Launcher,
    session: &str,
    children: &Children,
) -> Option<RunResult> {
    let failed = |message: String| {
        RunResult::not_started(
            Status::Failed,
            &launcher.agent_name,
            (&new_id(), session),
            ErrorCode::BatchChild,
            message,
        )
    };
    let stderr_path = run_dir.join("stderr.log");
    let stderr = match std::fs::create_dir_all(run_dir).and_then(|()| File::create(&stderr_path)) {
        Ok(file) => file,
        Err(error) => {
            let message = format!("cannot create {}: {error}", stderr_path.display());
            return Some(RunResult::invalid(
                &launcher.agent_name,
                &new_id(),
                session,
                ErrorCode::BatchDir,
                message,
            ));
        }
    };
    command
        .arg("--run-dir")
        .arg(run_dir)
        .args(["--output", "json", "--progress", "none", "--color", "never"])
        .args(&launcher.passed)
        // A run's annotations would be about one input; the batch reports its own way.
        .env_remove("GITHUB_ACTIONS")
        .stderr(stderr);
    let finished = match run_to_end(command, launcher, session, children) {
        Ok(finished) => finished?,
        Err(message) => return Some(failed(message)),
    };
    Some(
        envelope_of(&finished, &stderr_path).unwrap_or_else(|message| {
            match finished.status.signal() {
                // Stopped before it could say so (a signal before its handlers were in
                // place): interrupted, so the next run of the batch runs it.
                Some(_) => RunResult::not_started(
                    Status::Interrupted,
                    &launcher.agent_name,
                    (&new_id(), session),
                    ErrorCode::Interrupted,
                    message,
                ),
                None => failed(message),
            }
        }),
    )
}

/// Runs the child to its end (`None`: the batch stopped first). A worker's child is given
/// its session store (`nats::relay`) for as long as it runs.
fn run_to_end(
    mut command: Command,
    launcher: &Launcher,
    session: &str,
    children: &Children,
) -> Result<Option<Finished>, String> {
    let giver = launcher.sessions.as_ref().and_then(|s| match &s.at {
        ChildSessions::Given(giver) => Some(giver.clone()),
        ChildSessions::Dir(_) => None,
    });
    let given = giver
        .map(|giver| giver.give(&mut command, session))
        .transpose()
        .map_err(|error| format!("cannot give the run its session store: {error}"))?;
    let ran = children.run(command);
    if let Some(given) = given {
        given.finish();
    }
    ran.map_err(|error| format!("cannot run {}: {error}", launcher.exe.display()))
}

/// The envelope the child printed, or why there is none.
fn envelope_of(finished: &Finished, stderr_path: &Path) -> Result<RunResult, String> {
    serde_json::from_slice(&finished.stdout).map_err(|_| {
        let stderr = std::fs::read_to_string(stderr_path).unwrap_or_default();
        format!(
            "the run left no result ({}): {}",
            finished.status,
            crate::provider::shorten(stderr.trim(), 2000)
        )
    })
}
