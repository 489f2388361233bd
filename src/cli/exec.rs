//! `runner exec AGENT.yaml`: run an agent and leave a result behind (SPEC §3).
//!
//! stdout carries only the result (the answer, or the envelope with `--output json`, or the
//! events with `--events -`); people get progress on stderr.

use std::io::Read;
use std::path::PathBuf;

use clap::Args;

use super::Exit;
use super::launch::{Launch, Opening, launch, report};
use super::prepare::{Request, Stop, initial_state, inputs, load};
use super::run_options::RunOptions;
use super::session_store::SessionFiles;
use crate::checkpoint::{CheckpointError, check_session_id};
use crate::engine::ErrorCode;
use crate::engine::clock::new_id;
use crate::nats::SessionsAt;
use crate::spec::model::{ModelRef, ModelShorthand, override_model};

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
    /// Use this model instead of the file's, e.g. openai/gpt-4o-mini.
    #[arg(long, value_name = "PROVIDER/NAME")]
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
    match launch_of(&args, ids.clone()) {
        Ok(launched) => launch(launched, &args.run),
        Err(stop) => report(&stop, &args.run, (&ids.0, &ids.1)),
    }
}

/// What `exec` runs: the file, its inputs from `--vars`/`--var`, the input text, a new
/// session, held by this process.
fn launch_of(args: &ExecArgs, ids: (String, String)) -> Result<Launch, Stop> {
    let mut spec = load(&args.agent)?;
    if let Some(path) = &args.script {
        // The file's model is replaced, not overridden: its key is then not needed.
        let scripted = scripted_model(path)
            .map_err(|m| Stop::invalid(ErrorCode::InvalidModel, m).named(&spec.name))?;
        spec.model = Some(scripted);
    }
    let invalid = |code: ErrorCode, message: String| Stop::invalid(code, message).named(&spec.name);
    // Even when the agent keeps no checkpoints: the id is in every event and result.
    check_session_id(&ids.1).map_err(|error| invalid(error.code(), error.to_string()))?;
    let inputs = inputs(&spec, args.vars_file.as_deref(), &args.vars)?;
    let input_text = match args.input.as_deref() {
        Some("-") => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|error| {
                    invalid(
                        ErrorCode::InvalidInput,
                        format!("cannot read --input from stdin: {error}"),
                    )
                })?;
            text
        }
        Some(text) => text.to_string(),
        None => String::new(),
    };
    let model_override = match args.model.as_deref().map(ModelShorthand::parse) {
        Some(Ok(chosen)) => Some(chosen_model(spec.model.as_ref(), &chosen)),
        Some(Err(message)) => {
            return Err(invalid(
                ErrorCode::InvalidModel,
                format!("--model: {message}"),
            ));
        }
        None => None,
    };

    let remote = SessionsAt::remote(args.nats.as_deref(), args.sessions_fd)
        .map_err(|message| invalid(ErrorCode::CheckpointDir, message))?;
    let checkpoints = SessionFiles::create(
        (&spec, remote.as_ref()),
        &args.agent,
        &ids.1,
        inputs.clone(),
        input_text.clone(),
    )
    .map_err(|error| match error {
        CheckpointError::Io { .. } => invalid(
            ErrorCode::CheckpointDir,
            format!("cannot use the checkpoint directory: {error}"),
        ),
        refused => invalid(refused.code(), refused.to_string()),
    })?;
    if let (Some(files), Some(model)) = (&checkpoints, &model_override) {
        files.keep_model(model);
    }
    let state = initial_state(&spec);
    Ok(Launch {
        request: Request {
            model_override,
            protect: args.protect.clone(),
            ..Request::new(&args.agent, spec, (inputs, input_text), ids, &args.run)?
        },
        state,
        opening: Opening::Prompt,
        checkpoints,
        answer: None,
    })
}

/// `--model` over the file's model; a change of provider is said on stderr, since the
/// requests (and the key) then go to that provider's endpoint, not the file's.
fn chosen_model(file: Option<&ModelRef>, chosen: &ModelShorthand) -> ModelRef {
    let before = file.map(ModelRef::to_config);
    if let Some(before) = before.filter(|before| before.provider != chosen.provider) {
        let endpoint = match &before.base_url {
            Some(url) => format!("instead of {url}"),
            None => "instead of the file's".to_string(),
        };
        eprintln!(
            "note: --model {}/{} changes the provider: requests go to {}'s default endpoint ({endpoint})",
            chosen.provider.as_str(),
            chosen.name,
            chosen.provider.as_str()
        );
    }
    override_model(file, chosen)
}

/// `--script FILE`: a scripted model answering with the file's list of answers.
fn scripted_model(path: &std::path::Path) -> Result<ModelRef, String> {
    use crate::spec::model::{ModelConfig, ProviderKind, ScriptedResponse};
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("--script: cannot read {}: {e}", path.display()))?;
    let document = crate::spec::yaml::load_yaml(&text)
        .map_err(|errors| format!("--script {}: {}", path.display(), errors[0].message))?;
    let script: Vec<ScriptedResponse> = serde_json::from_value(document.value)
        .map_err(|e| format!("--script {}: {e}", path.display()))?;
    Ok(ModelRef::Config(Box::new(ModelConfig {
        provider: ProviderKind::Scripted,
        name: "scripted".into(),
        script: Some(script),
        ..ModelConfig::default()
    })))
}
