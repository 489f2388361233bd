//! `runner exec AGENT.yaml`: run an agent and leave a result behind (SPEC §3).
//!
//! stdout carries only the result (the answer, or the envelope with `--output json`, or the
//! events with `--events -`); people get progress on stderr.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use clap::{Args, ValueEnum};
use serde_json::{Map, json};
use tokio::sync::watch;

use super::Exit;
use crate::compile::{
    CompileInput, TemplateContext, compile_agent, file_dir, render_field, run_limits,
};
use crate::engine::budget::Budget;
use crate::engine::clock::{new_id, now_rfc3339};
use crate::engine::events::{Emitter, EventBus, EventSink, JsonlSink, kind};
use crate::engine::{AgentState, HaltReason, RunContext};
use crate::fsutil::write_atomically;
use crate::output::progress::Progress;
use crate::output::result::{ResultError, ResultUsage, RunResult, Status};
use crate::output::transcript::TranscriptWriter;
use crate::output::transcript_events::TranscriptEvents;
use crate::provider::{BuildOptions, Message};
use crate::spec::inputs::{parse_var, read_vars_file, resolve_inputs};
use crate::spec::load::load_agent;
use crate::spec::model::{ModelRef, ModelShorthand};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

/// Options of `runner exec`.
#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The agent file.
    pub agent: PathBuf,
    /// The input text (`-` reads stdin); the first message when the agent has no `prompt`.
    #[arg(long)]
    pub input: Option<String>,
    /// An input value, NAME=VALUE, typed by the input's declaration (repeatable).
    #[arg(long = "var", value_name = "NAME=VALUE")]
    pub vars: Vec<String>,
    /// A YAML file of input values.
    #[arg(long = "vars", value_name = "FILE")]
    pub vars_file: Option<PathBuf>,
    /// `text`: the final answer; `json`: the result envelope.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
    /// Where the run's files go (default .runner/runs/<run_id>).
    #[arg(long)]
    pub run_dir: Option<PathBuf>,
    /// Write the transcript here too.
    #[arg(long)]
    pub transcript: Option<PathBuf>,
    /// Write the JSONL events here too (`-`: stdout, instead of the result).
    #[arg(long)]
    pub events: Option<String>,
    /// The session id (default: a new one).
    #[arg(long)]
    pub session: Option<String>,
    /// Use this model instead of the file's, e.g. openai/gpt-4o-mini.
    #[arg(long, value_name = "PROVIDER/NAME")]
    pub model: Option<String>,
    /// Record every provider exchange to this cassette.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Answers for `ask_user`: a YAML map (question id or text → answer) or a list in order.
    #[arg(long, value_name = "FILE")]
    pub answers: Option<PathBuf>,
    /// Serve provider exchanges from this cassette (no network, no key).
    #[arg(long, value_name = "FILE", conflicts_with = "record")]
    pub replay: Option<PathBuf>,
    /// No progress on stderr.
    #[arg(long)]
    pub quiet: bool,
    /// Colour on stderr.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

/// What was decided before the run started.
struct Prepared {
    agent_name: String,
    run_dir: PathBuf,
}

pub fn run(args: ExecArgs) -> Exit {
    let run_id = new_id();
    let session_id = args.session.clone().unwrap_or_else(new_id);
    let started = Instant::now();
    let invalid = |agent: &str, code: &str, message: String| {
        eprintln!("error: {message}");
        let result = RunResult::invalid(agent, &run_id, &session_id, code, message);
        print_result(&args, &result);
        Exit::Invalid
    };

    let (spec, warnings) = match load_agent(&args.agent) {
        Ok(loaded) => loaded,
        Err(diagnostics) => {
            for diagnostic in &diagnostics {
                eprintln!("{diagnostic}");
            }
            let errors = diagnostics.iter().filter(|d| d.is_error()).count();
            return invalid(
                "",
                "invalid_agent",
                format!(
                    "{} is not a valid agent file ({errors} error(s))",
                    args.agent.display()
                ),
            );
        }
    };
    for warning in &warnings {
        eprintln!("{warning}");
    }

    let mut file_values = Map::new();
    if let Some(path) = &args.vars_file {
        match read_vars_file(path) {
            Ok(values) => file_values = values,
            Err(error) => return invalid(&spec.name, "invalid_input", error.to_string()),
        }
    }
    let mut vars = Vec::new();
    for text in &args.vars {
        match parse_var(text) {
            Ok(pair) => vars.push(pair),
            Err(error) => return invalid(&spec.name, "invalid_input", error.to_string()),
        }
    }
    let inputs = match resolve_inputs(&spec.inputs, file_values, &vars) {
        Ok(inputs) => inputs,
        Err(error) => return invalid(&spec.name, "invalid_input", error.to_string()),
    };
    let input_text = match args.input.as_deref() {
        Some("-") => {
            let mut text = String::new();
            if let Err(error) = std::io::stdin().read_to_string(&mut text) {
                return invalid(
                    &spec.name,
                    "invalid_input",
                    format!("cannot read --input from stdin: {error}"),
                );
            }
            text
        }
        Some(text) => text.to_string(),
        None => String::new(),
    };
    let model_override = match args.model.as_deref().map(ModelShorthand::parse) {
        Some(Ok(short)) => Some(ModelRef::Shorthand(short)),
        Some(Err(message)) => {
            return invalid(&spec.name, "invalid_model", format!("--model: {message}"));
        }
        None => None,
    };

    let build = match build_options(&args) {
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
    let dir = file_dir(&args.agent);
    let answers = match answer_sources(args.answers.as_deref()) {
        Ok(answers) => answers,
        Err(message) => return invalid(&spec.name, "invalid_answers", message),
    };
    let compile_input = CompileInput {
        spec: &spec,
        file_dir: dir.clone(),
        workspace,
        context: &context,
        model_override,
        build: &build,
        env: env.clone(),
        inherited: None,
        answers,
    };
    let agent = match compile_agent(&compile_input) {
        Ok(agent) => agent,
        Err(error) => return invalid(&spec.name, "invalid_agent", error.to_string()),
    };
    let first_message = match &spec.prompt {
        Some(source) => match render_field(&dir, "prompt", source, &context) {
            Ok(text) => text,
            Err(error) => return invalid(&spec.name, "invalid_agent", error.to_string()),
        },
        None if !input_text.is_empty() => input_text.clone(),
        None => {
            return invalid(
                &spec.name,
                "invalid_input",
                "nothing to say: the agent has no `prompt` and no --input was given".into(),
            );
        }
    };

    let run_dir = args
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
    let prepared = Prepared {
        agent_name: spec.name.clone(),
        run_dir,
    };
    let events_path = prepared.run_dir.join("events.jsonl");
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
    let transcript_path = prepared.run_dir.join("transcript.txt");
    for path in std::iter::once(&transcript_path).chain(args.transcript.as_ref()) {
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
    match args.events.as_deref() {
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
    if !args.quiet && std::io::stderr().is_terminal() {
        sinks.push(Arc::new(Progress::new(stderr_colored(args.color))));
    }
    let bus = EventBus::new(sinks);
    let emitter = Emitter::root(bus, &spec.name, run_id.clone(), session_id.clone());
    let budget = Arc::new(Budget::new(run_limits(&spec.limits)));
    let (cancel_tx, cancel_rx) = watch::channel(false);
    let ctx = RunContext::new(emitter.clone(), budget.clone(), cancel_rx);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return Exit::Failed;
        }
    };
    let mut state = AgentState::initial();
    for (key, value) in &spec.metadata {
        state = state.with_metadata(key.clone(), value.clone());
    }
    emitter.emit(
        kind::RUN_CREATED,
        json!({"status": "in_progress", "initialMessages": [Message::user(first_message.clone())], "sessionId": session_id}),
    );
    emitter.emit(
        kind::STATUS_CHANGED,
        json!({"previousStatus": "queued", "currentStatus": "in_progress"}),
    );
    let outcome = runtime.block_on(async {
        tokio::spawn(watch_signals(cancel_tx));
        agent
            .generate(Some(Message::user(first_message)), state, &ctx)
            .await
    });

    let totals = budget.totals();
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
        agent: prepared.agent_name.clone(),
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
        warnings: Vec::new(),
    };
    let result_path = prepared.run_dir.join("result.json");
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
    print_result(&args, &result);
    match status {
        Status::Completed => Exit::Completed,
        Status::Failed => Exit::Failed,
        Status::Invalid => Exit::Invalid,
        Status::LimitReached => Exit::LimitReached,
        Status::InputRequired => Exit::InputRequired,
        Status::Interrupted => Exit::Interrupted,
    }
}

/// Where `ask_user` answers come from: the terminal when there is one, then `--answers`.
fn answer_sources(path: Option<&Path>) -> Result<Vec<Arc<dyn crate::tools::AnswerSource>>, String> {
    let mut sources: Vec<Arc<dyn crate::tools::AnswerSource>> = Vec::new();
    if crate::tools::Terminal::available() {
        sources.push(Arc::new(crate::tools::Terminal));
    }
    if let Some(path) = path {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read --answers {}: {e}", path.display()))?;
        let document = crate::spec::yaml::load_yaml(&text).map_err(|errors| {
            let first = &errors[0];
            format!(
                "{}:{}:{}: {}",
                path.display(),
                first.position.line,
                first.position.column,
                first.message
            )
        })?;
        let file = crate::tools::AnswersFile::from_value(document.value)
            .map_err(|e| format!("--answers {}: {e}", path.display()))?;
        sources.push(Arc::new(file));
    }
    Ok(sources)
}

/// Prints the result on stdout, unless stdout carries the events.
fn print_result(args: &ExecArgs, result: &RunResult) {
    if args.events.as_deref() == Some("-") {
        return;
    }
    match args.output {
        OutputFormat::Json => {
            if let Ok(text) = serde_json::to_string_pretty(result) {
                println!("{text}");
            }
        }
        OutputFormat::Text => {
            if let Some(output) = &result.output {
                println!("{output}");
            }
        }
    }
}

fn build_options(args: &ExecArgs) -> Result<BuildOptions, String> {
    let mut build = BuildOptions::default();
    if let Some(path) = &args.record {
        build.record =
            Some(crate::provider::CassetteRecorder::create(path).map_err(|e| e.to_string())?);
    }
    if let Some(path) = &args.replay {
        build.replay = Some(crate::provider::ReplayStore::load(path).map_err(|e| e.to_string())?);
    }
    Ok(build)
}

fn stderr_colored(choice: ColorChoice) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stderr().is_terminal()
        }
    }
}

/// Flips the stop signal on SIGINT or SIGTERM; the engine stops at once and the run ends
/// with status `interrupted`.
async fn watch_signals(cancel: watch::Sender<bool>) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return;
    };
    tokio::select! {
        _ = interrupt.recv() => {}
        _ = terminate.recv() => {}
    }
    let _ = cancel.send(true);
}
