//! `runner chat AGENT.yaml`: an interactive multi-turn session. Lines come from stdin (a
//! terminal or a pipe); answers go to stdout. The history is kept between turns (UAP `ask`),
//! the agent file is watched and reloaded between turns and steps, and the session is
//! checkpointed so `runner resume` can pick it up. Commands: `/reset` clears the history,
//! `/save` checkpoints now and prints the session id, `/exit` ends the chat.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use serde_json::{Map, json};
use tokio::sync::watch;

use super::Exit;
use super::launch::SessionCheckpointer;
use super::servers::{RunningServers, runtime};
use super::session_store::{SessionFiles, sessions_dir};
use super::watch::{SpecReloader, compiler};
use crate::checkpoint::{FileCheckpointStore, SessionMetadata, SessionStatus, ThreadTree};
use crate::compile::{CompileInput, TemplateContext, compile_agent, file_dir, run_limits};
use crate::engine::budget::Budget;
use crate::engine::checkpointing::{Checkpointer, Reloader};
use crate::engine::clock::{new_id, now_rfc3339};
use crate::engine::events::{Emitter, EventBus, EventSink, JsonlSink, kind};
use crate::engine::{AgentState, RunContext};
use crate::mcp::McpServers;
use crate::output::result::Status;
use crate::provider::BuildOptions;
use crate::spec::inputs::{parse_var, resolve_inputs};
use crate::spec::load::load_agent;

#[derive(Debug, Args)]
pub struct ChatArgs {
    /// The agent file.
    pub agent: PathBuf,
    /// An input value, NAME=VALUE (repeatable).
    #[arg(long = "var", value_name = "NAME=VALUE")]
    pub vars: Vec<String>,
    /// Where the chat's events go (default .runner/runs/<run_id>).
    #[arg(long)]
    pub run_dir: Option<PathBuf>,
}

pub fn run(args: ChatArgs) -> Exit {
    let fail = |message: String| {
        eprintln!("error: {message}");
        Exit::Invalid
    };
    let (spec, _) = match load_agent(&args.agent) {
        Ok(loaded) => loaded,
        Err(diagnostics) => {
            for diagnostic in &diagnostics {
                eprintln!("{diagnostic}");
            }
            return fail(format!(
                "{} is not a valid agent file",
                args.agent.display()
            ));
        }
    };
    let mut vars = Vec::new();
    for text in &args.vars {
        match parse_var(text) {
            Ok(pair) => vars.push(pair),
            Err(error) => return fail(error.to_string()),
        }
    }
    let inputs = match resolve_inputs(&spec.inputs, Map::new(), &vars) {
        Ok(inputs) => inputs,
        Err(error) => return fail(error.to_string()),
    };
    let (run_id, session_id) = (new_id(), new_id());
    let env: crate::compile::EnvLookup = Arc::new(|name: &str| std::env::var(name).ok());
    let declared_env: Vec<String> = spec.env.iter().map(|e| e.0.clone()).collect();
    let context = TemplateContext::new(
        &inputs,
        &declared_env,
        &*env,
        (&spec.name, spec.description.as_deref()),
        "",
        (&run_id, &session_id),
        &now_rfc3339(),
    );
    let build = BuildOptions::default();
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(message) => return fail(message),
    };
    let (_stop, cancel) = watch::channel(false);
    let mut input = CompileInput {
        spec: &spec,
        file_dir: file_dir(&args.agent),
        workspace: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        context: &context,
        model_override: None,
        build: &build,
        env: env.clone(),
        inherited: None,
        answers: Vec::new(),
        mcp: McpServers::none(),
    };
    let servers = match RunningServers::start(&runtime, &input, cancel.clone()) {
        Ok(servers) => servers,
        Err(failure) => {
            eprintln!("error: {}", failure.message);
            return Exit::from(failure.status);
        }
    };
    input.mcp = servers.servers();
    let mut agent = match compile_agent(&input) {
        Ok(agent) => agent,
        Err(error) => return fail(error.to_string()),
    };
    let reloader: Arc<dyn Reloader> =
        match SpecReloader::new(args.agent.clone(), spec.clone(), compiler(&input)) {
            Ok(reloader) => Arc::new(reloader),
            Err(message) => return fail(message),
        };
    let run_dir = args
        .run_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(".runner").join("runs").join(&run_id));
    let events = match std::fs::create_dir_all(&run_dir)
        .and_then(|()| std::fs::File::create(run_dir.join("events.jsonl")))
    {
        Ok(file) => file,
        Err(error) => return fail(format!("cannot create {}: {error}", run_dir.display())),
    };
    let sinks: Vec<Arc<dyn EventSink>> = vec![Arc::new(JsonlSink::new(events))];
    let emitter = Emitter::root(
        EventBus::new(sinks),
        &spec.name,
        run_id.clone(),
        session_id.clone(),
    );
    let mut ctx = RunContext::new(
        emitter.clone(),
        Arc::new(Budget::new(run_limits(&spec.limits))),
        cancel,
    );
    ctx.reload = Some(reloader.clone());
    let files = sessions_dir(&spec)
        .and_then(|dir| FileCheckpointStore::create(dir).ok())
        .map(|store| {
            let now = now_rfc3339();
            SessionFiles::new(
                store,
                SessionMetadata {
                    version: 1,
                    session_id: session_id.clone(),
                    agent: spec.name.clone(),
                    agent_file: args.agent.display().to_string(),
                    created: now.clone(),
                    updated: now,
                    status: SessionStatus::Running,
                    steps: 0,
                    run_ids: vec![run_id.clone()],
                    parent: None,
                    branch_name: None,
                    thread_tree: ThreadTree::new(&session_id),
                },
                inputs.clone(),
                String::new(),
            )
        });
    ctx.checkpoints = files.clone().map(|f| f as Arc<dyn Checkpointer>);

    emitter.emit(
        kind::RUN_CREATED,
        json!({"status": "in_progress", "initialMessages": [], "sessionId": session_id}),
    );
    eprintln!(
        "chat with {} (session {session_id}); /reset, /save, /exit",
        spec.name
    );

    let mut state = AgentState::initial();
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let line = line.trim();
        match line {
            "" => continue,
            "/exit" => break,
            "/reset" => {
                state = AgentState::initial();
                eprintln!("(history cleared)");
                continue;
            }
            "/save" => {
                match files.as_ref().map(|f| f.save(&state, None)) {
                    Some(Ok(_)) => println!("saved session {session_id}"),
                    Some(Err(message)) => eprintln!("error: {message}"),
                    None => eprintln!("this agent keeps no checkpoints (`checkpoints: false`)"),
                }
                let _ = std::io::stdout().flush();
                continue;
            }
            _ => {}
        }
        // Between turns: a saved change of the agent file takes over from here.
        match reloader.poll() {
            Some(Ok((next, changes))) => {
                eprintln!("(reloaded: {})", changes.join(", "));
                emitter.emit(
                    kind::RELOADED,
                    json!({"changes": changes, "step": state.step}),
                );
                agent = next;
            }
            Some(Err(diagnostics)) => {
                for diagnostic in &diagnostics {
                    eprintln!("{diagnostic}");
                }
                emitter.emit(kind::RELOAD_FAILED, json!({"diagnostics": diagnostics}));
            }
            None => {}
        }
        match runtime.block_on(agent.ask(line, std::mem::take(&mut state), &ctx)) {
            Ok((turn, next)) => {
                println!("{}", turn.output);
                state = next;
            }
            Err(halt) => {
                eprintln!("error: {:?}", halt.reason);
                state = *halt.state;
            }
        }
        let _ = std::io::stdout().flush();
    }
    if let Some(files) = &files
        && let Some(warning) = files.finish(&state, Status::Completed, None, &run_id)
    {
        eprintln!("warning: {warning}");
    }
    Exit::Completed
}
