//! `runner exec AGENT.yaml`: run an agent and leave a result behind (SPEC §3).
//!
//! The run goes through the session layer (`session::blocking::run`); this is its command
//! line. stdout carries only the result (the answer, or the envelope with `--output json`, or the
//! events with `--events -`); people get progress on stderr.

use std::path::PathBuf;

use clap::Args;

use super::Exit;
use super::launch::{report, show};
use super::run_options::RunOptions;
use super::signals::cancelled_by_signals;
use crate::engine::ErrorCode;
use crate::engine::clock::new_id;
use crate::nats::SessionsAt;
use crate::session::{InputText, Inputs, RunRequest, Stop, blocking};

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
    /// The id of the new session (default: a new one); 1 to 128 ASCII letters, digits, `-`
    /// and `_`. An existing session is continued with `runner resume` instead.
    #[arg(long)]
    pub session: Option<String>,
    /// Use this model instead of the file's: `provider/name` (e.g. openai/gpt-4o-mini) or
    /// a model the project file (runner.yaml) names, e.g. `smart`.
    #[arg(long, value_name = "PROVIDER/NAME|NAME")]
    pub model: Option<String>,
    /// A scripted model instead of the file's: a YAML or JSON list of answers (`model.script`
    /// entries). `runner test` runs a case's inline `script:` with it.
    #[arg(long, value_name = "FILE", hide = true, conflicts_with = "model")]
    pub script: Option<PathBuf>,
    /// Internal, given by `runner test`: a file the file tools must never write besides the
    /// definition's, a set-up script of the case's test file that the next case runs
    /// (repeatable). Kept out of the help: it only ever protects more.
    #[arg(long, value_name = "FILE", hide = true)]
    pub protect: Vec<PathBuf>,
    /// Keep the session in the NATS server at this URL instead of the sessions directory,
    /// held through a lease (`runner resume --nats` goes on with it; `docs/scale.md`).
    #[arg(long, value_name = "URL")]
    pub nats: Option<String>,
    /// Given by `runner worker`: the session store is reached through the worker, over this
    /// descriptor (`nats::relay`).
    #[arg(long, value_name = "FD", hide = true, conflicts_with = "nats")]
    pub sessions_fd: Option<i32>,
    #[command(flatten)]
    pub run: RunOptions,
}

pub fn run(args: ExecArgs) -> Exit {
    let session_id = args.session.clone().unwrap_or_else(new_id);
    let ids = (new_id(), session_id);
    let sessions = match SessionsAt::remote(args.nats.as_deref(), args.sessions_fd) {
        Ok(sessions) => sessions,
        Err(message) => {
            let stop = Stop::invalid(ErrorCode::CheckpointDir, message);
            return report(&stop, &args.run, (&ids.0, &ids.1));
        }
    };
    let input = match args.input {
        Some(text) if text == "-" => InputText::Stdin,
        Some(text) => InputText::Text(text),
        None => InputText::Text(String::new()),
    };
    let request = RunRequest {
        agent_file: args.agent,
        inputs: Inputs::Vars {
            file: args.vars_file,
            vars: args.vars,
        },
        input,
        run_id: Some(ids.0.clone()),
        session_id: Some(ids.1.clone()),
        model: args.model,
        script: args.script,
        protect: args.protect,
        sessions,
        settings: args.run.settings(cancelled_by_signals()),
    };
    show(blocking::run(request), &args.run, (&ids.0, &ids.1))
}
