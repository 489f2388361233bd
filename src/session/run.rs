//! Seeing a run through, for every front end: prepare the agent, open the run directory,
//! run the `run_start` hooks, let the engine's driver run it as a task of the caller's
//! runtime, and leave the result (folded from the events) behind, the `run_end` hooks told.

use std::sync::Arc;

use super::event_log::EventLog;
use super::files::SessionFiles;
use super::handle::{Ended, RunHandle};
use super::hooks::RunHooks;
use super::prepare::{Prepared, Request, Stop};
use super::run_dir::RunDir;
use super::{RunSettings, watch};
use crate::compile::run_limits;
use crate::engine::ErrorCode;
use crate::engine::agent::Reloader;
use crate::engine::budget::Budget;
use crate::engine::resume::Answer;
use crate::engine::run::{RunStart, Settle, drive};
use crate::engine::{Agent, AgentState, RunContext};
use crate::nats::SessionsAt;
use crate::provider::Message;
use crate::telemetry::RunTrace;
use crate::trace_env::Carried;

/// What starts a run.
pub enum Opening {
    /// A new conversation: the rendered `prompt`, or the input text.
    Prompt,
    /// Continue the history in the state as it is (resume).
    Continue,
}

/// Everything a run needs before it starts.
pub struct Launch {
    pub request: Request,
    pub state: AgentState,
    pub opening: Opening,
    /// Saves the root agent's state after each step.
    pub checkpoints: Option<Arc<SessionFiles>>,
    /// Where those checkpoints go (an answer to the run resumes from there).
    pub sessions: Option<SessionsAt>,
    /// The answer a resume gave to the question the session waited on.
    pub answer: Option<Answer>,
}

/// A run ready to be driven: everything moves into its task.
struct Started {
    agent: Agent,
    start: RunStart,
    state: AgentState,
    ctx: RunContext,
    run_dir: RunDir,
    hooks: RunHooks,
}

/// Starts the run on the current runtime and returns its handle; a problem before the
/// run starts (the file, its MCP servers, a `run_start` hook) is the returned stop.
pub async fn launch(launch: Launch, settings: RunSettings) -> Result<RunHandle, Stop> {
    let Launch {
        request,
        state,
        opening,
        checkpoints,
        sessions,
        answer,
    } = launch;
    let (run_id, session_id) = request.ids.clone();
    let agent_file = request.agent_file.clone();
    let prepared = Prepared::start(request, settings.cancel.receiver()).await?;
    let log = EventLog::new();
    let resumable = checkpoints.is_some();
    let parts = (state, opening, checkpoints, answer);
    let started = match begin(&prepared, parts, &settings, &log).await {
        Ok(started) => started,
        Err(stop) => {
            prepared.shutdown().await;
            return Err(stop);
        }
    };
    let task = tokio::spawn(see_through(prepared, started, log.clone(), resumable));
    Ok(RunHandle::new(
        (run_id, session_id),
        agent_file,
        (log, task),
        sessions.filter(|_| resumable),
        settings,
    ))
}

type Parts = (
    AgentState,
    Opening,
    Option<Arc<SessionFiles>>,
    Option<Answer>,
);

/// Compiles the agent, opens the run directory and asks the `run_start` hooks.
async fn begin(
    prepared: &Prepared,
    (state, opening, checkpoints, answer): Parts,
    settings: &RunSettings,
    log: &Arc<EventLog>,
) -> Result<Started, Stop> {
    let (run_id, session_id) = prepared.ids.clone();
    let agent = prepared.compile()?;
    // UAP §3.4: a run that keeps checkpoints says its session in the state's metadata.
    let state = match &checkpoints {
        Some(_) => state.with_metadata("sessionId", session_id.clone().into()),
        None => state,
    };
    let reloader = match settings.watch {
        true => Some(watch::reloader(prepared, settings.allow_widening)?),
        false => None,
    };
    let messages = match opening {
        Opening::Prompt => vec![Message::user(prepared.opening()?)],
        Opening::Continue => Vec::new(),
    };
    let mut sinks = settings.sinks.clone();
    if !settings.no_event_log {
        sinks.push(log.clone());
    }
    let spec = &prepared.spec;
    let spans = settings.telemetry.as_ref();
    let trace = run_trace(settings, prepared, checkpoints.as_ref());
    sinks.extend(spans.and_then(|t| t.subscriber(spec.telemetry.as_ref(), &spec.redact, trace)));
    let run_dir = RunDir::open(settings.run_dir.as_ref(), &run_id, &sinks)?;
    let hooks = RunHooks::new(&agent, &prepared.cancel, run_dir.dir.as_deref());
    hooks
        .start((&run_id, &session_id), &prepared.spec.name)
        .await?;
    let emitter = run_dir.emitter(&prepared.spec.name, run_id, &session_id);
    // A resumed session keeps counting where it stopped: limits are per session.
    let spent = state.spent_so_far();
    let budget = Budget::resumed(run_limits(&prepared.spec.limits), &spent)
        .map_err(|message| Stop::invalid(ErrorCode::InvalidCheckpoint, message))?;
    let mut ctx = prepared.context(
        emitter,
        Arc::new(budget),
        (checkpoints, run_dir.dir.as_deref()),
    );
    ctx.reload = reloader.map(|r| r as Arc<dyn Reloader>);
    if matches!(opening, Opening::Prompt)
        && let Some(warning) = prepared.ignored_input()
    {
        ctx.warn(warning);
    }
    let start = RunStart {
        opening: messages,
        settle: answer.map(|answer| Arc::new(answer) as Arc<dyn Settle>),
        session_id: Some(session_id),
    };
    Ok(Started {
        agent,
        start,
        state,
        ctx,
        run_dir,
        hooks,
    })
}

/// The run's place among the traces, for its spans: under the caller's span the front end
/// was given, linked to the session's first traced run, or kept as that run; and what the
/// programs it starts are told of it.
pub(super) fn run_trace(
    settings: &RunSettings,
    prepared: &Prepared,
    files: Option<&Arc<SessionFiles>>,
) -> RunTrace {
    let caller = settings.caller_trace.clone();
    let children = prepared.child_trace().clone();
    let Some(files) = files else {
        return RunTrace {
            caller,
            children,
            ..RunTrace::default()
        };
    };
    // Not a strong reference: the files hold the session, which the subscriber (kept as
    // long as the run's events are) must not keep held.
    let keeper = Arc::downgrade(files);
    let keep = move |span: &Carried| {
        if let Some(files) = keeper.upgrade() {
            files.keep_first_trace(span);
        }
    };
    RunTrace {
        caller,
        first: files.first_trace(),
        keep: Some(Box::new(keep)),
        children,
    }
}

/// The run's task: drive it, write its result, tell the `run_end` hooks, stop its MCP
/// servers, then let go of its session.
async fn see_through(
    prepared: Prepared,
    started: Started,
    log: Arc<EventLog>,
    resumable: bool,
) -> Result<Ended, Stop> {
    let _closed = CloseOnDrop(log);
    let Started {
        agent,
        start,
        state,
        ctx,
        run_dir,
        hooks,
    } = started;
    let outcome = drive(&agent, start, state, &ctx).await;
    let result = run_dir.finish();
    if let Some(result) = &result {
        hooks.end(result).await;
    }
    // The session's hold goes with the context, once the run is over.
    drop(ctx);
    let agent_file = prepared.agent_file.clone();
    prepared.shutdown().await;
    let result =
        result.ok_or_else(|| Stop::invalid(ErrorCode::Internal, "the run left no result"))?;
    Ok(Ended {
        result,
        outcome,
        resumable,
        agent_file,
        run_dir: run_dir.dir.clone(),
    })
}

/// Ends the event streams however the task ends (a panic too).
struct CloseOnDrop(Arc<EventLog>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.close();
    }
}
