//! Resuming a session (`runner resume SESSION_ID`, [`super::resume()`]): continue one that
//! crashed, was interrupted, waits for an answer, or hit a limit (after the limit was
//! raised in the file) — with the same session id and its history. A branch
//! (`--from-checkpoint N --branch NAME`) starts a new session from the state after step N
//! instead. Each resume is a new run with its own run directory; the session's
//! metadata lists every run. The session is held by this process from before its
//! checkpoint is read until the run ends, so no other process runs it meanwhile.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::files::SessionFiles;
use super::prepare::{Request, Stop, load, resolve_tree};
use super::request::{Answer as Given, Denial, ResumeRequest, SubmittedOutput};
use super::resume_data::ResumeData;
use super::run::{Launch, Opening};
use crate::checkpoint::{CheckpointStore, SessionHold, SessionMetadata, SessionStatus};
use crate::engine::AgentState;
use crate::engine::clock::{new_id, now_rfc3339};
use crate::engine::pending::Pending;
use crate::engine::resume::{Answer, Decisions, Reply};
use crate::engine::{ErrorCode, RunStatus};
use crate::mcp::check_form_answer;
use crate::provider::Message;
use crate::spec::AgentSpec;
use crate::spec::tree::AgentTree;
use crate::spec::widening::widenings;
use crate::tools::FormAnswer;

/// The message a call that was running when the run stopped gets instead of a result: such
/// calls are never run again blindly (their side effects may have happened).
pub const INTERRUPTED_CALL: &str = "Error: interrupted: this call was running when the run stopped, so it may or may \
not have taken effect. Check its effect before calling it again.";

/// What `resume` runs: the session's agent file again, from its checkpoint, with what the
/// checkpoint lacked settled first.
pub fn launch_of(args: &ResumeRequest, run_id: String) -> Result<Launch, Stop> {
    let fail = |message: String| Stop::invalid(ErrorCode::InvalidSession, message);
    let at = &args.sessions;
    let from_checkpoint = args.branch.as_ref().map(|(step, _)| *step);
    let store = at.open().map_err(|e| fail(e.to_string()))?;
    // Taken before the checkpoint is read: a run going on would change it.
    let lock = store
        .hold(&args.session_id)
        .map_err(|e| Stop::invalid(e.code(), e.to_string()))?;
    let metadata = store
        .metadata(&args.session_id)
        .map_err(|e| fail(e.to_string()))?
        .ok_or_else(|| {
            fail(format!(
                "no session `{}` in {}",
                args.session_id,
                at.describe()
            ))
        })?;
    let loaded = match from_checkpoint {
        Some(step) => store.load_step(&args.session_id, step),
        None => store.load(&args.session_id),
    };
    let checkpoint = loaded.map_err(|e| fail(e.to_string()))?.ok_or_else(|| {
        let what = from_checkpoint.map_or("checkpoint".to_string(), |n| {
            format!("a checkpoint after step {n}")
        });
        fail(format!("session `{}` has no {what}", args.session_id))
    })?;
    for warning in store.take_warnings() {
        eprintln!("warning: {warning}");
    }
    if from_checkpoint.is_none() && checkpoint.status == SessionStatus::Ended(RunStatus::Completed)
    {
        return Err(fail(format!(
            "session `{}` is completed; branch from one of its steps with --from-checkpoint N --branch NAME",
            args.session_id
        )));
    }
    let state = AgentState::from_json(&checkpoint.state)
        .map_err(|error| fail(format!("session `{}`: {error}", args.session_id)))?;
    let agent_file = PathBuf::from(&metadata.agent_file);
    let spec = load(&agent_file).map_err(|mut stop| {
        stop.message = format!(
            "{} is not a valid agent file any more",
            agent_file.display()
        );
        stop
    })?;
    let resumable =
        ResumeData::read(&args.session_id, &checkpoint).map_err(|e| fail(e.to_string()))?;
    let tree = resolve_tree(&agent_file, &spec)?;
    if !args.settings.allow_widening {
        refuse_widening(&resumable, (&spec, &tree), &agent_file)?;
    }
    let (state, answer) = settle(state, resumable.engine.as_ref(), args)?;
    let sessions = Some(at.clone());
    let (session_id, metadata, lock) = branch(store.as_ref(), metadata, lock, args)?;
    let kept = ResumeData {
        inputs: resumable.inputs.clone(),
        input_text: resumable.input_text.clone(),
        definition: Some(spec.clone()),
        // Every later run links to the session's first traced one.
        trace: resumable.trace.clone(),
        ..ResumeData::default()
    };
    let files = SessionFiles::new(store, metadata, &kept, lock);
    // The session goes on with the model it started with, `--model` included.
    if let Some(model) = &resumable.model {
        files.keep_model(model);
    }
    let mut request = Request::new(
        &agent_file,
        spec,
        (resumable.inputs, resumable.input_text),
        (run_id, session_id),
        &args.settings,
    )?;
    request.model_override = resumable.model.clone();
    // The tree checked above is the tree that runs.
    request.tree = Some(tree);
    // The call that waited for a server's form is made again: the answer waits for the form.
    if let Some(Answer {
        pending,
        reply: Reply::Text(answer),
    }) = &answer
        && let Some(form) = pending.form()
    {
        let answer = FormAnswer {
            message: form.message.clone(),
            answer: answer.clone(),
        };
        request.human.answers.insert(0, Arc::new(answer));
    }
    Ok(Launch {
        request,
        state,
        opening: Opening::Continue,
        checkpoints: Some(files),
        sessions,
        answer,
    })
}

/// A resume never gives an agent of the tree more than its session was started with,
/// unless the person says so (`--allow-widening`): a model that found a way to edit an
/// agent file (its own, a sub-agent's at any depth, a handoff target's) cannot grant itself
/// programs, hosts or limits by pausing. A session an older `runner` started kept only
/// its root agent's definition: that one is checked, and a warning says so.
fn refuse_widening(
    kept: &ResumeData,
    (spec, tree): (&AgentSpec, &AgentTree),
    file: &Path,
) -> Result<(), Stop> {
    let widened = match (&kept.tree, &kept.definition) {
        (Some(started), _) => tree.widened_since(started),
        (None, Some(started)) => {
            eprintln!(
                "warning: this session kept only the definition of {} (an older runner started it): its sub-agent and handoff files are not checked for widening",
                file.display()
            );
            widenings(started, spec)
        }
        (None, None) => return Ok(()),
    };
    if widened.is_empty() {
        return Ok(());
    }
    Err(Stop::invalid(
        ErrorCode::WidenedDefinition,
        format!(
            "{} (or a file it references) now gives an agent more than the session was started with ({}); resume with --allow-widening to accept that",
            file.display(),
            widened.join("; ")
        ),
    )
    .named(&spec.name))
}

/// Settles what the checkpoint lacks: calls that were running get an interrupted result
/// instead of running again; a waiting question (asked by the agent or by a sub-agent at
/// any depth) needs `--answer`, which the engine settles inside the resumed run.
fn settle(
    state: AgentState,
    pending: Option<&Pending>,
    args: &ResumeRequest,
) -> Result<(AgentState, Option<Answer>), Stop> {
    match pending {
        Some(Pending::ToolsInFlight { calls }) => {
            let answered = |id: &str| {
                state
                    .messages
                    .iter()
                    .any(|m| matches!(m, Message::Tool(r) if r.tool_call_id == id))
            };
            let missing: Vec<Message> = calls
                .iter()
                .filter(|call| !answered(&call.id))
                .map(|call| Message::tool_result(call, INTERRUPTED_CALL, true))
                .collect();
            Ok((state.with_messages(missing), None))
        }
        Some(waiting) if waiting.submitting().is_some() => {
            let outputs = outputs(waiting, args)?;
            let pending = waiting.clone();
            let reply = Reply::Outputs(outputs);
            Ok((state, Some(Answer { pending, reply })))
        }
        Some(waiting) if waiting.approving().is_some() => {
            let decisions = decisions(waiting, args)?;
            let pending = waiting.clone();
            let reply = Reply::Approvals(decisions);
            Ok((state, Some(Answer { pending, reply })))
        }
        Some(waiting) => {
            let question = waiting.asked().map_or("", |asked| asked.question);
            let Some(answer) = text_of(args.answer.as_ref()) else {
                return Err(Stop::invalid(
                    ErrorCode::InvalidSession,
                    format!(
                        "session `{}` waits for an answer to \"{question}\": pass --answer TEXT",
                        args.session_id
                    ),
                ));
            };
            if let Some(form) = waiting.form() {
                check_form_answer(&answer, &form.schema).map_err(|problem| {
                    Stop::invalid(
                        ErrorCode::InvalidAnswer,
                        format!(
                            "session `{}` waits for a form of MCP server `{}`: {problem}",
                            args.session_id, form.server
                        ),
                    )
                })?;
            }
            let pending = waiting.clone();
            let reply = Reply::Text(answer);
            Ok((state, Some(Answer { pending, reply })))
        }
        None => Ok((state, None)),
    }
}

/// `--approve` and `--deny` for the calls a paused session waits on: every call needs a
/// decision, and every id given must be one of them.
fn decisions(waiting: &Pending, args: &ResumeRequest) -> Result<Decisions, Stop> {
    let (approve, deny) = match &args.answer {
        Some(Given::Decide { approve, deny }) => (approve.as_slice(), deny.as_slice()),
        _ => (&[][..], &[][..]),
    };
    let calls = waiting.approving().map(|a| a.calls).unwrap_or_default();
    let fail = |message: String| Stop::invalid(ErrorCode::InvalidSession, message);
    let listed = || {
        let each: Vec<String> = calls
            .iter()
            .map(|c| format!("{} (`{}`)", c.call.id, c.call.name))
            .collect();
        each.join(", ")
    };
    let known = |id: &str| calls.iter().any(|c| c.call.id == id);
    let denied = deny.iter().map(|denial| &denial.id);
    for id in approve.iter().filter(|id| *id != "all").chain(denied) {
        if !known(id) {
            return Err(fail(format!(
                "session `{}` has no call `{id}` awaiting approval; it waits on {}",
                args.session_id,
                listed()
            )));
        }
    }
    // Each denied call's own reason: the model reads it as that call's result.
    let told = |denial: &Denial| match &denial.reason {
        Some(reason) => format!("denied by the user: {reason}"),
        None => "denied by the user".to_string(),
    };
    let decisions = Decisions {
        approve_all: approve.iter().any(|id| id == "all"),
        approve: approve.to_vec(),
        deny: deny
            .iter()
            .map(|denial| (denial.id.clone(), told(denial)))
            .collect(),
    };
    let undecided: Vec<&str> = calls
        .iter()
        .map(|c| c.call.id.as_str())
        .filter(|id| decisions.of(id).is_none())
        .collect();
    if !undecided.is_empty() {
        return Err(fail(format!(
            "session `{}` waits for approval of {}: pass --approve CALL_ID (or --approve all) or --deny CALL_ID --reason TEXT for {}",
            args.session_id,
            listed(),
            undecided.join(", ")
        )));
    }
    Ok(decisions)
}

/// `--tool-output` for the external calls a paused session waits on: exactly one output
/// for each of them, and no other.
fn outputs(waiting: &Pending, args: &ResumeRequest) -> Result<Vec<SubmittedOutput>, Stop> {
    let calls = waiting.submitting().map(|s| s.calls).unwrap_or_default();
    let fail = |message: String| Stop::invalid(ErrorCode::InvalidAnswer, message);
    let listed = || {
        let each: Vec<String> = calls
            .iter()
            .map(|c| format!("{} (`{}`)", c.id, c.name))
            .collect();
        each.join(", ")
    };
    let given = match &args.answer {
        Some(Given::Outputs(outputs)) => outputs.as_slice(),
        _ => &[],
    };
    for (index, output) in given.iter().enumerate() {
        if !calls.iter().any(|c| c.id == output.call_id) {
            return Err(fail(format!(
                "session `{}` has no call `{}` waiting for its output; it waits on {}",
                args.session_id,
                output.call_id,
                listed()
            )));
        }
        if given[..index].iter().any(|o| o.call_id == output.call_id) {
            return Err(fail(format!(
                "the output of call `{}` is given twice; give each call one output",
                output.call_id
            )));
        }
    }
    let missing: Vec<&str> = calls
        .iter()
        .map(|c| c.id.as_str())
        .filter(|id| !given.iter().any(|o| o.call_id == *id))
        .collect();
    if !missing.is_empty() {
        return Err(fail(format!(
            "session `{}` waits for the outputs of {}: pass --tool-output CALL_ID=JSON for {}",
            args.session_id,
            listed(),
            missing.join(", ")
        )));
    }
    Ok(given.to_vec())
}

/// With `--from-checkpoint N --branch NAME`: a new session branching from the old one,
/// held in its place (the old one is free again once its tree records the branch).
fn branch(
    store: &dyn CheckpointStore,
    metadata: SessionMetadata,
    lock: SessionHold,
    args: &ResumeRequest,
) -> Result<(String, SessionMetadata, SessionHold), Stop> {
    let Some((step, name)) = &args.branch else {
        return Ok((args.session_id.clone(), metadata, lock));
    };
    let new_session = new_id();
    let branch_lock = store
        .hold(&new_session)
        .map_err(|e| Stop::invalid(e.code(), e.to_string()))?;
    let mut tree = metadata.thread_tree.clone();
    tree.branch(&args.session_id, *step, &new_session, Some(name.clone()));
    let mut parent = metadata.clone();
    parent.thread_tree = tree.clone();
    if let Err(error) = store.save_metadata(&parent) {
        eprintln!("warning: the parent session's tree was not updated: {error}");
    }
    drop(lock);
    let mut branch = metadata;
    branch.session_id = new_session.clone();
    branch.created = now_rfc3339();
    branch.run_ids = Vec::new();
    branch.parent = Some(crate::checkpoint::ParentRef {
        session_id: args.session_id.clone(),
        step: *step,
    });
    branch.branch_name = Some(name.clone());
    branch.thread_tree = tree;
    Ok((new_session, branch, branch_lock))
}

/// The text of a text or form answer.
fn text_of(answer: Option<&Given>) -> Option<String> {
    match answer? {
        Given::Text(text) => Some(text.clone()),
        Given::Form(values) => Some(values.to_string()),
        Given::Decide { .. } | Given::Outputs(_) => None,
    }
}
