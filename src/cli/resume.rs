//! `runner resume SESSION_ID`: continue a session that crashed, was interrupted, waits for an
//! answer, or hit a limit (after the limit was raised in the file) — with the same session id
//! and its history. `--from-checkpoint N --branch NAME` starts a new session from the state
//! after step N instead. The session layer does it (`session::resume`); this is its command
//! line.

use std::path::PathBuf;

use clap::Args;

use super::Exit;
use super::launch::{report, show};
use super::run_options::RunOptions;
use super::signals::cancelled_by_signals;
use crate::engine::ErrorCode;
use crate::engine::clock::new_id;
use crate::nats::SessionsAt;
use crate::session::files::default_sessions_dir;
use crate::session::{Answer, Denial, ResumeRequest, Stop, SubmittedOutput, blocking};

/// Options of `runner resume`.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The session to continue (`runner sessions list` shows them); without it, the one
    /// `runner sessions checkout` chose in the sessions directory.
    pub session: Option<String>,
    /// The answer to the question the session waits for (a session waits for an answer
    /// or for decisions on calls, never both: hence not with --approve/--deny).
    #[arg(long, conflicts_with_all = ["approve", "deny"])]
    pub answer: Option<String>,
    /// Approve a call the session waits on (its id, from the INPUT_REQUIRED block or the
    /// `requires_action` event), or `all` for every call not denied (repeatable).
    #[arg(long, value_name = "CALL_ID|all")]
    pub approve: Vec<String>,
    /// Deny a call the session waits on; the model is told it was denied (repeatable).
    #[arg(long, value_name = "CALL_ID")]
    pub deny: Vec<String>,
    /// The output of an external tool's call the session waits on: its id, `=`, and any
    /// JSON (a string is the text the model reads), or `@FILE` to read the JSON from a file
    /// (repeatable: one per call).
    #[arg(long, value_name = "CALL_ID=JSON", conflicts_with_all = ["answer", "approve", "deny"])]
    pub tool_output: Vec<String>,
    /// Why the calls of `--deny` were denied, for the model.
    #[arg(long, requires = "deny")]
    pub reason: Option<String>,
    /// Start from the state after this step instead of the latest.
    #[arg(long, value_name = "N", requires = "branch")]
    pub from_checkpoint: Option<u64>,
    /// With --from-checkpoint: the new branch's name (a new session is created).
    #[arg(long, value_name = "NAME", requires = "from_checkpoint")]
    pub branch: Option<String>,
    /// The sessions directory.
    #[arg(long, default_value_os_t = default_sessions_dir(), conflicts_with = "nats")]
    pub dir: PathBuf,
    /// The session is kept in the NATS server at this URL (as `runner exec --nats` left
    /// it), not in the sessions directory.
    #[arg(long, value_name = "URL")]
    pub nats: Option<String>,
    /// Given by `runner worker`: the session store is reached through the worker, over this
    /// descriptor (`nats::relay`).
    #[arg(long, value_name = "FD", hide = true, conflicts_with_all = ["nats", "dir"])]
    pub sessions_fd: Option<i32>,
    #[command(flatten)]
    pub run: RunOptions,
}

pub fn run(mut args: ResumeArgs) -> Exit {
    let session = match args.session.take() {
        Some(session) => session,
        None => match crate::session::thread::checked_out(&args.dir) {
            Some(session) => session,
            None => {
                eprintln!(
                    "error: no session given, and none is checked out in {}: give its id (`runner sessions list`), or choose one with `runner sessions checkout ID`",
                    args.dir.display()
                );
                return Exit::Invalid;
            }
        },
    };
    let ids = (new_id(), session.clone());
    let sessions = match SessionsAt::remote(args.nats.as_deref(), args.sessions_fd) {
        Ok(remote) => remote.unwrap_or_else(|| SessionsAt::Dir(args.dir.clone())),
        Err(message) => {
            let stop = Stop::invalid(ErrorCode::InvalidSession, message);
            return report(&stop, &args.run, (&ids.0, &ids.1));
        }
    };
    let answer = match answer(&args) {
        Ok(answer) => answer,
        Err(stop) => return report(&stop, &args.run, (&ids.0, &ids.1)),
    };
    let request = ResumeRequest {
        session_id: session,
        run_id: Some(ids.0.clone()),
        answer,
        branch: args.from_checkpoint.zip(args.branch.clone()),
        sessions,
        settings: args.run.settings(cancelled_by_signals()),
    };
    show(blocking::resume(request), &args.run, (&ids.0, &ids.1))
}

/// `--approve`/`--deny` decide on calls (`--reason` is the reason of every `--deny`),
/// `--tool-output` gives outputs, or `--answer` answers.
fn answer(args: &ResumeArgs) -> Result<Option<Answer>, Stop> {
    if !args.approve.is_empty() || !args.deny.is_empty() {
        let deny = args.deny.iter();
        return Ok(Some(Answer::Decide {
            approve: args.approve.clone(),
            deny: deny
                .map(|id| Denial::new(id, args.reason.clone()))
                .collect(),
        }));
    }
    if !args.tool_output.is_empty() {
        let outputs = args.tool_output.iter().map(|given| tool_output(given));
        return Ok(Some(Answer::Outputs(outputs.collect::<Result<_, _>>()?)));
    }
    Ok(args.answer.clone().map(Answer::Text))
}

/// The largest `--tool-output @FILE` read: an output is the model's to read, so a file of
/// this size is a mistake, never a result.
const MAX_OUTPUT_FILE: u64 = 16 * 1024 * 1024;

/// `CALL_ID=JSON` or `CALL_ID=@FILE`.
fn tool_output(given: &str) -> Result<SubmittedOutput, Stop> {
    let fail = |message: String| Stop::invalid(ErrorCode::InvalidAnswer, message);
    let Some((id, value)) = given.split_once('=').filter(|(id, _)| !id.is_empty()) else {
        return Err(fail(format!(
            "--tool-output `{given}` is not CALL_ID=JSON (or CALL_ID=@FILE)"
        )));
    };
    let (text, from) = match value.strip_prefix('@') {
        Some(path) => (
            read_output_file(path).map_err(fail)?,
            format!("file {path}"),
        ),
        None => (value.to_string(), "the value".to_string()),
    };
    let output = serde_json::from_str(&text).map_err(|error| {
        fail(format!(
            "--tool-output for call `{id}`: {from} is not JSON ({error}); write a string as \"text\", in quotes"
        ))
    })?;
    Ok(SubmittedOutput::new(id, output))
}

fn read_output_file(path: &str) -> Result<String, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let mut text = String::new();
    file.take(MAX_OUTPUT_FILE + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read {path}: {e}"))?;
    if text.len() as u64 > MAX_OUTPUT_FILE {
        return Err(format!(
            "{path} is larger than {MAX_OUTPUT_FILE} bytes: too large for a tool output"
        ));
    }
    Ok(text)
}
