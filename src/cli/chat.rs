//! `runner chat AGENT.yaml`: an interactive multi-turn session. Lines come from stdin (a
//! terminal or a pipe); answers go to stdout. Each line is one run of the engine's driver
//! over the kept history (UAP `ask`), in one run directory: the transcript and events grow
//! turn by turn, and `result.json` is the last turn's. The agent file is reloaded between
//! turns; the session is checkpointed so `runner resume` can pick it up. Commands: `/reset`
//! clears the history, `/save` checkpoints now and prints the session id, `/exit` ends.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use serde_json::{Map, json};

use super::Exit;
use super::prepare::{Prepared, Request, Stop, load};
use super::run_dir::RunDir;
use super::run_options::RunOptions;
use super::session_store::SessionFiles;
use crate::compile::run_limits;
use crate::engine::budget::Budget;
use crate::engine::checkpointing::{Checkpointer, Reloader};
use crate::engine::clock::new_id;
use crate::engine::events::{Emitter, kind};
use crate::engine::run::{RunStart, drive};
use crate::engine::{Agent, AgentState, RunContext};
use crate::output::result::Status;
use crate::provider::Message;
use crate::spec::inputs::{parse_var, resolve_inputs};

#[derive(Debug, Args)]
pub struct ChatArgs {
    /// The agent file.
    pub agent: PathBuf,
    /// An input value, NAME=VALUE (repeatable).
    #[arg(long = "var", value_name = "NAME=VALUE")]
    pub vars: Vec<String>,
    #[command(flatten)]
    pub run: RunOptions,
}

/// Exits with the last turn's status (0 when there was none).
pub fn run(args: ChatArgs) -> Exit {
    chat(&args).unwrap_or_else(|stop| {
        stop.print();
        Exit::from(stop.status)
    })
}

fn chat(args: &ChatArgs) -> Result<Exit, Stop> {
    let spec = load(&args.agent)?;
    let vars: Vec<_> = args
        .vars
        .iter()
        .map(|t| parse_var(t))
        .collect::<Result<_, _>>()
        .map_err(|e| Stop::invalid("invalid_input", e.to_string()))?;
    let inputs = resolve_inputs(&spec.inputs, Map::new(), &vars)
        .map_err(|e| Stop::invalid("invalid_input", e.to_string()))?;
    let (chat_id, session_id) = (new_id(), new_id());
    let files = SessionFiles::open(
        &spec,
        &args.agent,
        &session_id,
        inputs.clone(),
        String::new(),
    )
    .map_err(|message| Stop::invalid("checkpoint_dir", message))?;
    let request = Request {
        agent_file: args.agent.clone(),
        spec,
        inputs,
        input_text: String::new(),
        ids: (chat_id.clone(), session_id.clone()),
        model_override: None,
        build: args
            .run
            .build_options()
            .map_err(|m| Stop::invalid("invalid_cassette", m))?,
        answers: args
            .run
            .answer_sources()
            .map_err(|m| Stop::invalid("invalid_answers", m))?,
    };
    let prepared = Prepared::start(request)?;
    let mut agent = prepared.compile()?;
    let reloader = super::watch::reloader(&prepared)?;
    let run_dir = RunDir::open(&args.run, &chat_id)?;
    let name = prepared.spec.name.clone();
    let emitter =
        |run_id: String| Emitter::root(run_dir.bus.clone(), &name, run_id, session_id.clone());
    // Limits hold for the whole chat, as for a session.
    let budget = Arc::new(Budget::new(run_limits(&prepared.spec.limits)));
    eprintln!("chat with {name} (session {session_id}); /reset, /save, /exit");
    let (mut state, mut exit) = (AgentState::initial(), Exit::Completed);
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let line = line.trim();
        match line {
            "" => continue,
            "/exit" => break,
            "/reset" => {
                state = AgentState::initial();
                eprintln!("(history cleared)");
            }
            "/save" => save(files.as_deref(), &state, &session_id),
            _ => {
                reload(
                    &*reloader,
                    &mut agent,
                    &emitter(chat_id.clone()),
                    state.step,
                );
                let mut ctx =
                    RunContext::new(emitter(new_id()), budget.clone(), prepared.cancel.clone());
                ctx.checkpoints = files.clone().map(|f| f as Arc<dyn Checkpointer>);
                let start = RunStart {
                    opening: vec![Message::user(line)],
                    answered: None,
                    session_id: Some(session_id.clone()),
                };
                state = prepared
                    .runtime
                    .block_on(drive(&agent, start, state, &ctx))
                    .state;
                let Some(result) = run_dir.result() else {
                    break;
                };
                run_dir.write_result(&result);
                if let Some(error) = &result.error {
                    eprintln!("error[{}]: {}", error.code, error.message);
                }
                args.run.print_result(&result);
                exit = Exit::from(result.status);
                if result.status == Status::Interrupted {
                    break;
                }
            }
        }
        let _ = std::io::stdout().flush();
    }
    Ok(exit)
}

/// Between turns: a saved change of the agent file takes over from here.
fn reload(reloader: &dyn Reloader, agent: &mut Agent, emitter: &Emitter, step: u64) {
    match reloader.poll() {
        Some(Ok((next, changes))) => {
            eprintln!("(reloaded: {})", changes.join(", "));
            emitter.emit(kind::RELOADED, json!({"changes": changes, "step": step}));
            *agent = next;
        }
        Some(Err(diagnostics)) => {
            for diagnostic in &diagnostics {
                eprintln!("{diagnostic}");
            }
            emitter.emit(kind::RELOAD_FAILED, json!({"diagnostics": diagnostics}));
        }
        None => {}
    }
}

/// `/save`: checkpoints the history now.
fn save(files: Option<&SessionFiles>, state: &AgentState, session_id: &str) {
    match files.map(|f| f.save(state, None)) {
        Some(Ok(_)) => println!("saved session {session_id}"),
        Some(Err(message)) => eprintln!("error: {message}"),
        None => eprintln!("this agent keeps no checkpoints (`checkpoints: false`)"),
    }
}
