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
use crate::session::{Answer, Denial, ResumeRequest, Stop, blocking};

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
    let request = ResumeRequest {
        session_id: session,
        run_id: Some(ids.0.clone()),
        answer: answer(&args),
        branch: args.from_checkpoint.zip(args.branch.clone()),
        sessions,
        settings: args.run.settings(cancelled_by_signals()),
    };
    show(blocking::resume(request), &args.run, (&ids.0, &ids.1))
}

/// `--approve`/`--deny` decide on calls (`--reason` is the reason of every `--deny`), or
/// `--answer` answers.
fn answer(args: &ResumeArgs) -> Option<Answer> {
    if !args.approve.is_empty() || !args.deny.is_empty() {
        let deny = args.deny.iter();
        return Some(Answer::Decide {
            approve: args.approve.clone(),
            deny: deny
                .map(|id| Denial::new(id, args.reason.clone()))
                .collect(),
        });
    }
    args.answer.clone().map(Answer::Text)
}
