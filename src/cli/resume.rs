//! `runner resume SESSION_ID`: continue a session that crashed, was interrupted, waits for an
//! answer, or hit a limit (after the limit was raised in the file) — with the same session id
//! and its history. `--from-checkpoint N --branch NAME` starts a new session from the state
//! after step N instead. Each resume is a new run with its own run directory; the session's
//! metadata lists every run.

use std::path::PathBuf;

use clap::Args;
use serde_json::Value;

use super::Exit;
use super::launch::{Launch, Opening, invalid, launch};
use super::run_options::RunOptions;
use super::session_store::{Resumable, SessionFiles, default_sessions_dir};
use crate::checkpoint::{CheckpointStore, FileCheckpointStore, SessionStatus};
use crate::engine::AgentState;
use crate::engine::clock::{new_id, now_rfc3339};
use crate::provider::{Message, ToolCall};
use crate::spec::load::load_agent;

/// Options of `runner resume`.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The session to continue (`runner sessions list` shows them).
    pub session: String,
    /// The answer to the question the session waits for.
    #[arg(long)]
    pub answer: Option<String>,
    /// Start from the state after this step instead of the latest.
    #[arg(long, value_name = "N", requires = "branch")]
    pub from_checkpoint: Option<u64>,
    /// With --from-checkpoint: the new branch's name (a new session is created).
    #[arg(long, value_name = "NAME", requires = "from_checkpoint")]
    pub branch: Option<String>,
    /// The sessions directory.
    #[arg(long, default_value_os_t = default_sessions_dir())]
    pub dir: PathBuf,
    #[command(flatten)]
    pub run: RunOptions,
}

/// The message a call that was running when the run stopped gets instead of a result: such
/// calls are never run again blindly (their side effects may have happened).
pub const INTERRUPTED_CALL: &str = "Error: interrupted: this call was running when the run stopped, so it may or may \
not have taken effect. Check its effect before calling it again.";

pub fn run(args: ResumeArgs) -> Exit {
    let fail = |message: String| {
        invalid(
            &args.run,
            "",
            &new_id(),
            &args.session,
            "invalid_session",
            message,
        )
    };
    let store = match FileCheckpointStore::create(&args.dir) {
        Ok(store) => store,
        Err(error) => return fail(error.to_string()),
    };
    let metadata = match store.metadata(&args.session) {
        Ok(Some(metadata)) => metadata,
        Ok(None) => {
            return fail(format!(
                "no session `{}` in {}",
                args.session,
                args.dir.display()
            ));
        }
        Err(error) => return fail(error.to_string()),
    };
    let loaded = match args.from_checkpoint {
        Some(step) => store.load_step(&args.session, step),
        None => store.load(&args.session),
    };
    let checkpoint = match loaded {
        Ok(Some(checkpoint)) => checkpoint,
        Ok(None) => {
            let what = args
                .from_checkpoint
                .map_or("any checkpoint".to_string(), |n| {
                    format!("a checkpoint after step {n}")
                });
            return fail(format!("session `{}` has no {what}", args.session));
        }
        Err(error) => return fail(error.to_string()),
    };
    if args.from_checkpoint.is_none() && checkpoint.status == SessionStatus::Completed {
        return fail(format!(
            "session `{}` is completed; branch from one of its steps with --from-checkpoint N --branch NAME",
            args.session
        ));
    }
    let mut state = match AgentState::from_json(&checkpoint.state) {
        Ok(state) => state,
        Err(error) => return fail(format!("session `{}`: {error}", args.session)),
    };
    let agent_file = PathBuf::from(&metadata.agent_file);
    let (spec, warnings) = match load_agent(&agent_file) {
        Ok(loaded) => loaded,
        Err(diagnostics) => {
            for diagnostic in &diagnostics {
                eprintln!("{diagnostic}");
            }
            return fail(format!(
                "{} is not a valid agent file any more",
                agent_file.display()
            ));
        }
    };
    for warning in &warnings {
        eprintln!("{warning}");
    }
    let resumable = Resumable::from_checkpoint(&checkpoint);
    let mut answered = None;
    // A checkpoint taken while calls ran, or while a question waited, lacks their results.
    if let Some(pending) = &resumable.engine {
        match pending.get("kind").and_then(Value::as_str) {
            Some("input_required") => {
                let call: Option<ToolCall> = serde_json::from_value(pending["call"].clone()).ok();
                let question = pending["question"].as_str().unwrap_or_default();
                let Some(answer) = args.answer.clone() else {
                    return fail(format!(
                        "session `{}` waits for an answer to \"{question}\": pass --answer TEXT",
                        args.session
                    ));
                };
                if let Some(call) = call {
                    state = state.with_message(Message::tool_result(&call, answer.clone(), false));
                    answered = Some((question.to_string(), answer, call.id.clone()));
                }
            }
            Some("tools_in_flight") => {
                let calls: Vec<ToolCall> =
                    serde_json::from_value(pending["calls"].clone()).unwrap_or_default();
                let answered = |id: &str| {
                    state
                        .messages
                        .iter()
                        .any(|m| matches!(m, Message::Tool(r) if r.tool_call_id == id))
                };
                let missing: Vec<ToolCall> =
                    calls.into_iter().filter(|c| !answered(&c.id)).collect();
                for call in missing {
                    state = state.with_message(Message::tool_result(&call, INTERRUPTED_CALL, true));
                }
            }
            _ => {}
        }
    }
    let (session_id, metadata) = match (&args.from_checkpoint, &args.branch) {
        (Some(step), Some(name)) => {
            let new_session = new_id();
            let mut tree = metadata.thread_tree.clone();
            tree.branch(&args.session, *step, &new_session, Some(name.clone()));
            let mut parent = metadata.clone();
            parent.thread_tree = tree.clone();
            if let Err(error) = store.save_metadata(&parent) {
                eprintln!("warning: the parent session's tree was not updated: {error}");
            }
            let mut branch = metadata.clone();
            branch.session_id = new_session.clone();
            branch.created = now_rfc3339();
            branch.run_ids = Vec::new();
            branch.parent = Some(crate::checkpoint::ParentRef {
                session_id: args.session.clone(),
                step: *step,
            });
            branch.branch_name = Some(name.clone());
            branch.thread_tree = tree;
            (new_session, branch)
        }
        _ => (args.session.clone(), metadata),
    };
    let files = SessionFiles::new(
        store,
        metadata,
        resumable.inputs.clone(),
        resumable.input_text.clone(),
    );
    launch(
        Launch {
            spec,
            agent_file,
            inputs: resumable.inputs,
            input_text: resumable.input_text,
            model_override: None,
            session_id,
            state,
            opening: Opening::Continue,
            checkpoints: Some(files),
            answered,
        },
        &args.run,
    )
}
