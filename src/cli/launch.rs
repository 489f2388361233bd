//! Starting a run and seeing it through: compile the agent, open the run directory and its
//! sinks, run on the async runtime with the stop signal wired, and leave the result behind.
//! `exec` and `resume` both end here.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Map, Value, json};
use tokio::sync::watch;

use super::Exit;
use super::run_options::RunOptions;
use super::servers::{RunningServers, runtime};
use crate::compile::{
    CompileInput, TemplateContext, compile_agent, file_dir, render_field, run_limits,
};
use crate::engine::budget::Budget;
use crate::engine::checkpointing::Checkpointer;
use crate::engine::clock::{new_id, now_rfc3339};
use crate::engine::events::{Emitter, EventBus, EventSink, JsonlSink, kind};
use crate::engine::{AgentState, HaltReason, RunContext};
use crate::fsutil::write_atomically;
use crate::mcp::McpServers;
use crate::output::progress::Progress;
use crate::output::result::{ResultError, ResultUsage, RunResult, Status};
use crate::output::transcript::TranscriptWriter;
use crate::output::transcript_events::TranscriptEvents;
use crate::provider::Message;
use crate::spec::AgentSpec;
use crate::spec::model::ModelRef;

/// What starts a run.
pub enum Opening {
    /// A new conversation: the rendered `prompt`, or the `--input` text.
    Prompt,
    /// Continue the history in the state as it is (resume).
    Continue,
}

/// Everything `launch` needs.
pub struct Launch {
    pub spec: AgentSpec,
    pub agent_file: PathBuf,
    pub inputs: Map<String, Value>,
    pub input_text: String,
    pub model_override: Option<ModelRef>,
    pub session_id: String,
    pub state: AgentState,
    pub opening: Opening,
    /// Saves the root agent's state after each step.
    pub checkpoints: Option<Arc<dyn SessionCheckpointer>>,
    /// The answer a resume gave to a waiting question: (question, answer, tool call id).
    pub answered: Option<(String, String, String)>,
}

/// A checkpointer that also records how the run ended.
pub trait SessionCheckpointer: Checkpointer {
    /// Saves the final state with the run's status; returns a warning when it cannot.
    fn finish(
        &self,
        state: &AgentState,
        status: Status,
        pending: Option<&Value>,
        run_id: &str,
    ) -> Option<String>;
}

/// Reports a problem found before the run started: exit 2, with the envelope when asked.
pub fn invalid(
    options: &RunOptions,
    agent: &str,
    run_id: &str,
    session_id: &str,
    code: &str,
    message: String,
) -> Exit {
    not_started(
        options,
        Status::Invalid,
        agent,
        (run_id, session_id),
        code,
        message,
    )
}

/// Reports a run that ended before its first step, with the envelope when asked.
fn not_started(
    options: &RunOptions,
    status: Status,
    agent: &str,
    ids: (&str, &str),
    code: &str,
    message: String,
) -> Exit {
    eprintln!("error: {message}");
    let result = RunResult::not_started(status, agent, ids, code, message);
    options.print_result(&result);
    Exit::from(status)
}

/// Runs the agent and returns the exit code.
pub fn launch(launch: Launch, options: &RunOptions) -> Exit {
    let Launch {
        spec,
        agent_file,
        inputs,
        input_text,
        model_override,
        session_id,
        state,
        opening,
        checkpoints,
        answered,
    } = launch;
    let run_id = new_id();
    let started = Instant::now();
    let invalid = |agent: &str, code: &str, message: String| {
        invalid(options, agent, &run_id, &session_id, code, message)
    };
    let build = match options.build_options() {
        Ok(build) => build,
        Err(message) => return invalid(&spec.name, "invalid_cassette", message),
    };
    let env: crate::compile::EnvLookup = Arc::new(|name: &str| std::env::var(name).ok());
    let declared_env: Vec<String> = spec.env.iter().map(|e| e.0.clone()).collect();
    let context = TemplateContext::new(
        &inputs,
        &declared_env,
        &*env,
        (&spec.name, spec.description.as_deref()),
        &input_text,
        (&run_id, &session_id),
        &now_rfc3339(),
    );
    let workspace = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let dir = file_dir(&agent_file);
    let answers = match options.answer_sources() {
        Ok(answers) => answers,
        Err(message) => return invalid(&spec.name, "invalid_answers", message),
    };
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(message) => {
            eprintln!("error: {message}");
            return Exit::Failed;
        }
    };
    // Signals are watched from here on: an interrupt while MCP servers start stops them too.
    let (cancel_tx, cancel_rx) = watch::channel(false);
    watch_signals(&runtime, cancel_tx);
    let mut compile_input = CompileInput {
        spec: &spec,
        file_dir: dir.clone(),
        workspace,
        context: &context,
        model_override,
        build: &build,
        env: env.clone(),
        inherited: None,
        answers,
        mcp: McpServers::none(),
    };
    let servers = match RunningServers::start(&runtime, &compile_input, cancel_rx.clone()) {
        Ok(servers) => servers,
        Err(failure) => {
            let ids = (run_id.as_str(), session_id.as_str());
            return not_started(
                options,
                failure.status,
                &spec.name,
                ids,
                failure.code,
                failure.message,
            );
        }
    };
    compile_input.mcp = servers.servers();
    let agent = match compile_agent(&compile_input) {
        Ok(agent) => agent,
        Err(error) => return invalid(&spec.name, "invalid_agent", error.to_string()),
    };
    let reloader = if options.watch {
        let compile = super::watch::compiler(&compile_input);
        match super::watch::SpecReloader::new(agent_file.clone(), spec.clone(), compile) {
            Ok(reloader) => Some(Arc::new(reloader)),
            Err(message) => return invalid(&spec.name, "watch", message),
        }
    } else {
        None
    };
    let first_message = match (&opening, &spec.prompt) {
        (Opening::Continue, _) => None,
        (Opening::Prompt, Some(source)) => match render_field(&dir, "prompt", source, &context) {
            Ok(text) => Some(text),
            Err(error) => return invalid(&spec.name, "invalid_agent", error.to_string()),
        },
        (Opening::Prompt, None) if !input_text.is_empty() => Some(input_text.clone()),
        (Opening::Prompt, None) => {
            return invalid(
                &spec.name,
                "invalid_input",
                "nothing to say: the agent has no `prompt` and no --input was given".into(),
            );
        }
    };

    let run_dir = options
        .run_dir
        .clone()
        .unwrap_or_else(|| Path::new(".runner").join("runs").join(&run_id));
    if let Err(error) = std::fs::create_dir_all(&run_dir) {
        return invalid(
            &spec.name,
            "run_dir",
            format!(
                "cannot create the run directory {}: {error}",
                run_dir.display()
            ),
        );
    }
    let events_path = run_dir.join("events.jsonl");
    let mut sinks: Vec<Arc<dyn EventSink>> = Vec::new();
    match std::fs::File::create(&events_path) {
        Ok(file) => sinks.push(Arc::new(JsonlSink::new(file))),
        Err(error) => {
            return invalid(
                &spec.name,
                "run_dir",
                format!("cannot create {}: {error}", events_path.display()),
            );
        }
    }
    let transcript_path = run_dir.join("transcript.txt");
    for path in std::iter::once(&transcript_path).chain(options.transcript.as_ref()) {
        match std::fs::File::create(path) {
            Ok(file) => sinks.push(Arc::new(TranscriptEvents::new(
                &run_id,
                TranscriptWriter::new(file),
            ))),
            Err(error) => {
                return invalid(
                    &spec.name,
                    "run_dir",
                    format!("cannot create {}: {error}", path.display()),
                );
            }
        }
    }
    match options.events.as_deref() {
        Some("-") => sinks.push(Arc::new(JsonlSink::new(std::io::stdout()))),
        Some(path) => match std::fs::File::create(path) {
            Ok(file) => sinks.push(Arc::new(JsonlSink::new(file))),
            Err(error) => {
                return invalid(
                    &spec.name,
                    "invalid_events",
                    format!("cannot create --events {path}: {error}"),
                );
            }
        },
        None => {}
    }
    if !options.quiet && std::io::stderr().is_terminal() {
        sinks.push(Arc::new(Progress::new(options.stderr_colored())));
    }
    let bus = EventBus::new(sinks);
    let emitter = Emitter::root(bus, &spec.name, run_id.clone(), session_id.clone());
    // A resumed session keeps counting where it stopped: limits are per session.
    let budget = Arc::new(Budget::resumed(run_limits(&spec.limits), &state));
    let mut ctx = RunContext::new(emitter.clone(), budget.clone(), cancel_rx);
    ctx.checkpoints = checkpoints.clone().map(|c| c as Arc<dyn Checkpointer>);
    ctx.reload = reloader.map(|r| r as Arc<dyn crate::engine::checkpointing::Reloader>);
    let opening_messages: Vec<Message> = first_message.iter().map(Message::user).collect();
    emitter.emit(
        kind::RUN_CREATED,
        json!({"status": "in_progress", "initialMessages": opening_messages, "sessionId": session_id}),
    );
    if let Some((question, answer, call_id)) = &answered {
        emitter.emit(
            kind::USER_INPUT_PROVIDED,
            json!({"question": question, "answer": answer, "toolCallId": call_id}),
        );
    }
    emitter.emit(
        kind::STATUS_CHANGED,
        json!({"previousStatus": "queued", "currentStatus": "in_progress"}),
    );
    let outcome = runtime.block_on(agent.generate(first_message.map(Message::user), state, &ctx));

    let totals = budget.totals();
    let mut pending = None;
    let (status, output, structured, limit, error, final_state) = match outcome {
        Ok((turn, state)) => (
            Status::Completed,
            Some(turn.output),
            turn.structured,
            None,
            None,
            state,
        ),
        Err(halt) => {
            let (status, limit, error) = match halt.reason {
                HaltReason::Limit(hit) => {
                    let message = format!("the run reached `{}`: {}", hit.name, hit.detail);
                    (
                        Status::LimitReached,
                        Some(hit.name),
                        Some(ResultError {
                            code: "limit_reached".into(),
                            message,
                        }),
                    )
                }
                HaltReason::Failed { code, message } => {
                    (Status::Failed, None, Some(ResultError { code, message }))
                }
                HaltReason::InputRequired { question, id, call } => {
                    pending = Some(
                        json!({"kind": "input_required", "question": question, "id": id, "call": call}),
                    );
                    emitter.emit(
                        kind::REQUIRES_ACTION,
                        json!({"status": "requires_action", "required_action": {"type": "user_input",
                               "question": question, "id": id, "toolCallId": call.id}}),
                    );
                    (
                        Status::InputRequired,
                        None,
                        Some(ResultError {
                            code: "input_required".into(),
                            message: format!(
                                "the agent asks: {question} (answer with `runner resume {session_id} --answer TEXT`)"
                            ),
                        }),
                    )
                }
                // `generate` handles reloads itself; this arm cannot be reached.
                HaltReason::Reloaded => (
                    Status::Failed,
                    None,
                    Some(ResultError {
                        code: "internal".into(),
                        message: "a reload escaped the engine".into(),
                    }),
                ),
                HaltReason::Interrupted => (
                    Status::Interrupted,
                    None,
                    Some(ResultError {
                        code: "interrupted".into(),
                        message: "the run was interrupted".into(),
                    }),
                ),
            };
            (status, None, None, limit, error, *halt.state)
        }
    };
    emitter.emit(
        kind::STATUS_CHANGED,
        json!({"previousStatus": "in_progress", "currentStatus": status}),
    );
    match status {
        Status::Completed => emitter.emit(
            kind::RUN_COMPLETED,
            json!({"status": "completed", "finalMessages": [Message::assistant(output.clone().unwrap_or_default())]}),
        ),
        _ => emitter.emit(
            kind::RUN_FAILED,
            json!({"status": status, "error": {"code": error.as_ref().map(|e| e.code.clone()), "message": error.as_ref().map(|e| e.message.clone()), "details": {"limit": limit}}}),
        ),
    }
    let result = RunResult {
        version: 1,
        status,
        exit_code: status.exit_code(),
        agent: spec.name.clone(),
        run_id: run_id.clone(),
        session_id: session_id.clone(),
        output,
        structured,
        steps: final_state.step,
        llm_calls: totals.llm_calls,
        tool_calls: totals.tool_calls,
        usage: ResultUsage {
            input_tokens: totals.usage.input_tokens,
            output_tokens: totals.usage.output_tokens,
            total_tokens: totals.usage.total_tokens,
            cost_usd: totals.cost_usd,
        },
        duration_ms: started.elapsed().as_millis() as u64,
        limit,
        error,
        transcript: Some(transcript_path.display().to_string()),
        events: Some(events_path.display().to_string()),
        warnings: ctx.warnings.lock().map(|w| w.clone()).unwrap_or_default(),
    };
    let mut result = result;
    if let Some(store) = &checkpoints
        && let Some(warning) = store.finish(&final_state, status, pending.as_ref(), &run_id)
    {
        eprintln!("warning: {warning}");
        result.warnings.push(warning);
    }
    let result_path = run_dir.join("result.json");
    match serde_json::to_vec_pretty(&result) {
        Ok(bytes) => {
            if let Err(error) = write_atomically(&result_path, &bytes) {
                eprintln!("warning: cannot write {}: {error}", result_path.display());
            }
        }
        Err(error) => eprintln!("warning: cannot serialise the result: {error}"),
    }
    if let Some(error) = &result.error {
        eprintln!("error[{}]: {}", error.code, error.message);
    }
    options.print_result(&result);
    Exit::from(status)
}

/// Flips the stop signal on SIGINT or SIGTERM; the engine stops at once and the run ends
/// with status `interrupted`. The handlers are installed before this returns, so a signal
/// that comes while MCP servers start is not lost.
fn watch_signals(runtime: &tokio::runtime::Runtime, cancel: watch::Sender<bool>) {
    use tokio::signal::unix::{SignalKind, signal};
    let _context = runtime.enter();
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return;
    };
    runtime.spawn(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
        let _ = cancel.send(true);
    });
}
