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

use super::Exit;
use super::prepare::{Prepared, Request, Stop, inputs, load};
use super::run_dir::RunDir;
use super::run_hooks::RunHooks;
use super::run_options::RunOptions;
use super::session_store::SessionFiles;
use crate::compile::run_limits;
use crate::engine::AgentState;
use crate::engine::ErrorCode;
use crate::engine::budget::Budget;
use crate::engine::checkpointing::{Checkpointer, Durability};
use crate::engine::clock::new_id;
use crate::engine::run::{RunStart, drive};
use crate::output::result::Status;
use crate::provider::Message;

#[derive(Debug, Args)]
pub struct ChatArgs {
    /// The agent file.
    pub agent: PathBuf,
    /// An input value, NAME=VALUE (repeatable).
    #[arg(long = "var", value_name = "NAME=VALUE")]
    pub vars: Vec<String>,
    /// A YAML file of input values.
    #[arg(long = "vars", value_name = "FILE")]
    pub vars_file: Option<PathBuf>,
    #[command(flatten)]
    pub run: RunOptions,
}

/// Exits with the last turn's status (0 when there was none).
pub fn run(args: ChatArgs) -> Exit {
    chat(&args).unwrap_or_else(|stop| {
        stop.print();
        stop.status
    })
}

fn chat(args: &ChatArgs) -> Result<Exit, Stop> {
    let spec = load(&args.agent)?;
    let inputs = inputs(&spec, args.vars_file.as_deref(), &args.vars)?;
    let (chat_id, session_id) = (new_id(), new_id());
    let files = SessionFiles::open(
        &spec,
        &args.agent,
        &session_id,
        inputs.clone(),
        String::new(),
    )
    .map_err(|message| Stop::invalid(ErrorCode::CheckpointDir, message))?;
    let ids = (chat_id.clone(), session_id.clone());
    let request = Request::new(&args.agent, spec, (inputs, String::new()), ids, &args.run)?;
    let prepared = Prepared::start(request)?;
    // Before any turn: `/save` may checkpoint first.
    if let Some(files) = &files {
        files.keep_tree(&prepared.tree);
    }
    let mut agent = prepared.compile()?;
    let reloader = super::watch::reloader(&prepared, args.run.allow_widening)?;
    let run_dir = RunDir::open(&args.run, &chat_id)?;
    let name = prepared.spec.name.clone();
    // Limits hold for the whole chat, as for a session.
    let budget = Arc::new(Budget::new(run_limits(&prepared.spec.limits)));
    eprintln!("chat with {name} (session {session_id}); /reset, /save, /exit");
    let (mut state, mut exit) = (AgentState::initial(), Exit::Completed);
    for line in std::io::stdin().lock().lines().map_while(Result::ok) {
        match line.trim() {
            "" => continue,
            "/exit" => break,
            "/reset" => {
                state = AgentState::initial();
                eprintln!("(history cleared)");
            }
            "/save" => save(files.as_deref(), &state, &session_id),
            line => {
                let emitter = run_dir.emitter(&name, chat_id.clone(), &session_id);
                super::watch::swap_between_runs(&*reloader, &mut agent, &emitter, state.step);
                let run_id = new_id();
                let hooks =
                    RunHooks::new(&agent, &prepared.runtime, &prepared.cancel, &run_dir.dir);
                if let Err(stop) = hooks.start((&run_id, &session_id), &name) {
                    stop.print();
                    exit = stop.status;
                    continue;
                }
                let emitter = run_dir.emitter(&name, run_id, &session_id);
                let ctx =
                    prepared.context(emitter, budget.clone(), (files.clone(), Some(&run_dir.dir)));
                let start = RunStart {
                    opening: vec![Message::user(line)],
                    settle: None,
                    session_id: Some(session_id.clone()),
                };
                state = prepared
                    .runtime
                    .block_on(drive(&agent, start, state, &ctx))
                    .state;
                let Some(result) = run_dir.finish() else {
                    break;
                };
                hooks.end(&result);
                args.run.print_result(&result);
                exit = result.status;
                if result.status == Status::Interrupted {
                    break;
                }
            }
        }
        let _ = std::io::stdout().flush();
    }
    Ok(exit)
}

/// `/save`: checkpoints the history now.
fn save(files: Option<&SessionFiles>, state: &AgentState, session_id: &str) {
    match files.map(|f| f.save(state, None, Durability::Now)) {
        Some(Ok(_)) => outln!("saved session {session_id}"),
        Some(Err(message)) => eprintln!("error: {message}"),
        None => eprintln!("this agent keeps no checkpoints (`checkpoints: false`)"),
    }
}
