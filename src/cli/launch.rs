//! Seeing a run through for `exec` and `resume`: prepare the agent, open the run directory,
//! let the engine's driver run it, and leave the result (folded from the events) behind.

use std::sync::Arc;

use super::Exit;
use super::prepare::{Prepared, Request, Stop};
use super::run_dir::RunDir;
use super::run_hooks::RunHooks;
use super::run_options::RunOptions;
use super::session_store::SessionFiles;
use crate::compile::run_limits;
use crate::engine::AgentState;
use crate::engine::ErrorCode;
use crate::engine::agent::Reloader;
use crate::engine::budget::Budget;
use crate::engine::resume::Answer;
use crate::engine::run::{RunStart, Settle, drive};
use crate::output::result::{RunResult, Status};
use crate::provider::Message;

/// What starts a run.
pub enum Opening {
    /// A new conversation: the rendered `prompt`, or the `--input` text.
    Prompt,
    /// Continue the history in the state as it is (resume).
    Continue,
}

/// Everything `launch` needs.
pub struct Launch {
    pub request: Request,
    pub state: AgentState,
    pub opening: Opening,
    /// Saves the root agent's state after each step.
    pub checkpoints: Option<Arc<SessionFiles>>,
    /// The answer a resume gave to the question the session waited on.
    pub answer: Option<Answer>,
}

/// Runs the agent and returns the exit code.
pub fn launch(launch: Launch, options: &RunOptions) -> Exit {
    let ids = launch.request.ids.clone();
    match run(launch, options) {
        Ok(result) => {
            options.print_result(&result);
            result.status
        }
        Err(stop) => report(&stop, options, (&ids.0, &ids.1)),
    }
}

/// Reports a command that stopped before its run: the problem on stderr, the envelope on
/// stdout when asked, and the exit code of its status.
pub fn report(stop: &Stop, options: &RunOptions, ids: (&str, &str)) -> Exit {
    stop.print();
    let result = RunResult::not_started(
        stop.status,
        &stop.agent,
        ids,
        stop.code,
        stop.message.clone(),
    );
    options.print_result(&result);
    stop.status
}

fn run(launch: Launch, options: &RunOptions) -> Result<RunResult, Stop> {
    let (run_id, session_id) = launch.request.ids.clone();
    let prepared = Prepared::start(launch.request)?;
    let agent = prepared.compile()?;
    let reloader = match options.watch {
        true => Some(super::watch::reloader(&prepared, options.allow_widening)?),
        false => None,
    };
    let opening = match launch.opening {
        Opening::Prompt => vec![Message::user(prepared.opening()?)],
        Opening::Continue => Vec::new(),
    };
    let run_dir = RunDir::open(options, &run_id)?;
    let hooks = RunHooks::new(&agent, &prepared.runtime, &prepared.cancel, &run_dir.dir);
    hooks.start((&run_id, &session_id), &prepared.spec.name)?;
    let emitter = run_dir.emitter(&prepared.spec.name, run_id, &session_id);
    // A resumed session keeps counting where it stopped: limits are per session.
    let spent = launch.state.spent_so_far();
    let budget = Budget::resumed(run_limits(&prepared.spec.limits), &spent)
        .map_err(|message| Stop::invalid(ErrorCode::InvalidCheckpoint, message))?;
    let resumable = launch.checkpoints.is_some();
    let mut ctx = prepared.context(
        emitter,
        Arc::new(budget),
        (launch.checkpoints, Some(&run_dir.dir)),
    );
    ctx.reload = reloader.map(|r| r as Arc<dyn Reloader>);
    if matches!(launch.opening, Opening::Prompt)
        && let Some(warning) = prepared.ignored_input()
    {
        ctx.warn(warning);
    }
    let start = RunStart {
        opening,
        settle: launch
            .answer
            .map(|answer| Arc::new(answer) as Arc<dyn Settle>),
        session_id: Some(session_id),
    };
    prepared
        .runtime
        .block_on(drive(&agent, start, launch.state, &ctx));
    let result = run_dir
        .finish()
        .ok_or_else(|| Stop::invalid(ErrorCode::Internal, "the run left no result"))?;
    hooks.end(&result);
    if resumable && let Some(hint) = how_to_continue(&result, &prepared.agent_file) {
        eprintln!("{hint}");
    }
    Ok(result)
}

/// What to do to go on after an interrupt or a limit: the command, and the key to raise.
/// A raised `limits.` key widens the definition the session started with, which a resume
/// accepts only with `--allow-widening`; the `execution.` bounds are not such limits.
fn how_to_continue(result: &RunResult, agent_file: &std::path::Path) -> Option<String> {
    let resume = format!("runner resume {}", result.session_id);
    match result.status {
        Status::Interrupted => Some(format!("to continue: {resume}")),
        Status::LimitReached => Some(
            match result
                .limit
                .and_then(|limit| Some((limit.yaml_key()?, limit)))
            {
                Some((key, limit)) => {
                    let widening = match limit.widens() {
                        true => " --allow-widening",
                        false => "",
                    };
                    format!(
                        "to continue: raise `{key}` in {}, then {resume}{widening}",
                        agent_file.display()
                    )
                }
                None => format!("to continue: {resume}"),
            },
        ),
        _ => None,
    }
}
