//! What a new run starts from (`runner exec`, `RunFile`): the file, its inputs, the input
//! text, the model, and a new session, held by this process.

use std::io::Read;
use std::path::Path;

use super::files::SessionFiles;
use super::prepare::{Request, Stop, initial_state, inputs, load};
use super::request::{InputText, Inputs, RunRequest};
use super::run::{Launch, Opening};
use serde_json::{Map, Value};

use crate::checkpoint::{CheckpointError, check_session_id};
use crate::engine::ErrorCode;
use crate::spec::AgentSpec;
use crate::spec::inputs::resolve_inputs;
use crate::spec::model::{ModelRef, ModelShorthand, override_model};
use crate::spec::project::{ModelName, model_by_name};

/// The launch of `request`, as run `ids.0` of the new session `ids.1`.
pub fn launch_of(request: &RunRequest, ids: (String, String)) -> Result<Launch, Stop> {
    let mut spec = load(&request.agent_file)?;
    if let Some(path) = &request.script {
        // The file's model is replaced, not overridden: its key is then not needed.
        let scripted = scripted_model(path)
            .map_err(|m| Stop::invalid(ErrorCode::InvalidModel, m).named(&spec.name))?;
        spec.model = Some(scripted);
    }
    let invalid = |code: ErrorCode, message: String| Stop::invalid(code, message).named(&spec.name);
    // Even when the agent keeps no checkpoints: the id is in every event and result.
    check_session_id(&ids.1).map_err(|error| invalid(error.code(), error.to_string()))?;
    let inputs = resolve_inputs_of(&spec, &request.inputs)?;
    let input_text = match &request.input {
        InputText::Stdin => {
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
        InputText::Text(text) => text.clone(),
    };
    let model_override = match request.model.as_deref() {
        Some(text) => Some(
            chosen_or_named(&request.agent_file, spec.model.as_ref(), text).map_err(|message| {
                invalid(ErrorCode::InvalidModel, format!("--model: {message}"))
            })?,
        ),
        None => None,
    };
    let sessions = super::files::sessions_at(&spec, request.sessions.as_ref());
    let checkpoints = SessionFiles::create(
        (&spec, request.sessions.as_ref()),
        &request.agent_file,
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
    let base = Request::new(
        &request.agent_file,
        spec,
        (inputs, input_text),
        ids,
        &request.settings,
    )?;
    Ok(Launch {
        request: Request {
            model_override,
            protect: request.protect.clone(),
            ..base
        },
        state,
        opening: Opening::Prompt,
        checkpoints,
        sessions,
        answer: None,
    })
}

/// The input values of `given`, typed and checked by `spec`'s `inputs`.
pub fn resolve_inputs_of(spec: &AgentSpec, given: &Inputs) -> Result<Map<String, Value>, Stop> {
    match given {
        Inputs::Vars { file, vars } => inputs(spec, file.as_deref(), vars),
        Inputs::Values(values) => resolve_inputs(&spec.inputs, values.clone(), &[])
            .map_err(|e| Stop::invalid(ErrorCode::InvalidInput, e.to_string()).named(&spec.name)),
    }
}

/// `--model TEXT`: a project model by name (`smart`), replacing the file's model whole, or
/// `provider/name` over the file's model.
fn chosen_or_named(
    agent_file: &Path,
    file: Option<&ModelRef>,
    text: &str,
) -> Result<ModelRef, String> {
    if ModelName::parse(text).is_none() {
        let chosen = ModelShorthand::parse(text)?;
        return Ok(chosen_model(file, &chosen));
    }
    model_by_name(agent_file, text)
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
fn scripted_model(path: &Path) -> Result<ModelRef, String> {
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
