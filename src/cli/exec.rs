//! `runner exec AGENT.yaml`: run an agent and leave a result behind (SPEC §3).
//!
//! stdout carries only the result (the answer, or the envelope with `--output json`, or the
//! events with `--events -`); people get progress on stderr.

use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use serde_json::Map;

use super::Exit;
use super::launch::{Launch, Opening, SessionCheckpointer, invalid, launch};
use super::run_options::RunOptions;
use super::session_store::{SessionFiles, sessions_dir};
use crate::checkpoint::{FileCheckpointStore, SessionMetadata, SessionStatus, ThreadTree};
use crate::engine::AgentState;
use crate::engine::clock::new_id;
use crate::engine::clock::now_rfc3339;
use crate::spec::inputs::{parse_var, read_vars_file, resolve_inputs};
use crate::spec::load::load_agent;
use crate::spec::model::{ModelRef, ModelShorthand};

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
    /// The session id (default: a new one).
    #[arg(long)]
    pub session: Option<String>,
    /// Use this model instead of the file's, e.g. openai/gpt-4o-mini.
    #[arg(long, value_name = "PROVIDER/NAME")]
    pub model: Option<String>,
    #[command(flatten)]
    pub run: RunOptions,
}

pub fn run(args: ExecArgs) -> Exit {
    let session_id = args.session.clone().unwrap_or_else(new_id);
    let invalid = |agent: &str, code: &str, message: String| {
        invalid(&args.run, agent, "", &session_id, code, message)
    };

    let (spec, warnings) = match load_agent(&args.agent) {
        Ok(loaded) => loaded,
        Err(diagnostics) => {
            for diagnostic in &diagnostics {
                eprintln!("{diagnostic}");
            }
            let errors = diagnostics.iter().filter(|d| d.is_error()).count();
            let message = format!(
                "{} is not a valid agent file ({errors} error(s))",
                args.agent.display()
            );
            return invalid("", "invalid_agent", message);
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
    let checkpoints = match sessions_dir(&spec) {
        None => None,
        Some(dir) => match FileCheckpointStore::create(&dir) {
            Ok(store) => {
                let now = now_rfc3339();
                let metadata = SessionMetadata {
                    version: 1,
                    session_id: session_id.clone(),
                    agent: spec.name.clone(),
                    agent_file: args.agent.display().to_string(),
                    created: now.clone(),
                    updated: now,
                    status: SessionStatus::Running,
                    steps: 0,
                    run_ids: Vec::new(),
                    parent: None,
                    branch_name: None,
                    thread_tree: ThreadTree::new(&session_id),
                };
                Some(SessionFiles::new(
                    store,
                    metadata,
                    inputs.clone(),
                    input_text.clone(),
                ))
            }
            Err(error) => {
                return invalid(
                    &spec.name,
                    "checkpoint_dir",
                    format!("cannot use the checkpoint directory: {error}"),
                );
            }
        },
    };
    let mut state = AgentState::initial();
    for (key, value) in &spec.metadata {
        state = state.with_metadata(key.clone(), value.clone());
    }
    launch(
        Launch {
            spec,
            agent_file: args.agent.clone(),
            inputs,
            input_text,
            model_override,
            session_id: session_id.clone(),
            state,
            opening: Opening::Prompt,
            checkpoints: checkpoints.map(|c| c as Arc<dyn SessionCheckpointer>),
            answered: None,
        },
        &args.run,
    )
}
