//! The project file (`runner.yaml`): models declared once and named in agent files.
//!
//! Where it is: the path in `RUNNER_CONFIG`, else the nearest `runner.yaml` walking up from
//! the agent file's directory, stopping at the repository root (the directory holding
//! `.git`) or the filesystem root. Every agent file of a run finds it the same way, and it
//! is read with them when the run starts; a changed project file takes effect only through
//! a reload, like a changed agent file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::diagnostic::{Code, Diagnostic, did_you_mean};
use super::model::{ModelConfig, ModelRef};
use super::schema_check::{CompiledSchema, diagnostics_against};
use super::schema_gen::schema_for;
use super::yaml::{MAX_INPUT_BYTES, YamlDocument, load_yaml};

/// The project file's name, looked for from the agent file's directory upwards.
pub const PROJECT_FILE: &str = "runner.yaml";

/// The variable naming the project file explicitly.
pub const PROJECT_ENV: &str = "RUNNER_CONFIG";

/// The schema's `$id`.
pub const PROJECT_SCHEMA_ID: &str = "https://runner.dev/schemas/project.schema.json";

/// What a project file declares.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProjectSpec {
    /// Models by name: an agent file writes `model: smart`, a fallback list `- fast`,
    /// the command line `--model smart`. Each is a full model mapping, as `model:` takes.
    #[serde(default)]
    pub models: BTreeMap<ModelName, ModelConfig>,
}

/// The name of a project model: letters, digits, `_`, `-` and `.`, no `/` (a `/` makes a
/// `provider/name` shorthand).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct ModelName(#[schemars(regex(pattern = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"))] pub String);

impl ModelName {
    /// A name as [`ModelName`]'s pattern says; anything else (a `/`) is not a name.
    pub fn parse(text: &str) -> Option<ModelName> {
        let mut chars = text.chars();
        let first = chars.next().filter(char::is_ascii_alphanumeric);
        let rest = chars.all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
        (first.is_some() && rest).then(|| ModelName(text.to_string()))
    }
}

impl<'de> Deserialize<'de> for ModelName {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        ModelName::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "`{text}` is not a model name (letters, digits, `_`, `-`, `.`)"
            ))
        })
    }
}

/// A project file, read and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Project {
    /// The file it was read from (as found).
    pub path: PathBuf,
    pub spec: ProjectSpec,
}

/// Why a model name does not resolve: said for a person, with what to do.
#[derive(Debug, Clone, PartialEq)]
pub struct NameError {
    pub message: String,
    pub hint: String,
}

impl std::fmt::Display for NameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.hint)
    }
}

/// The project file of the agent file at `agent_file`: `RUNNER_CONFIG`, else the nearest
/// `runner.yaml` up to the repository root. `None` when there is none.
pub fn find_project(agent_file: &Path) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(PROJECT_ENV).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    // Upwards by `..`, so the path found has the agent file's form (relative stays
    // relative: a `runner submit` bundle keeps it beside the agent files); the OS resolves
    // each `..` as opening the file would.
    let mut dir = match agent_file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    loop {
        let candidate = dir.join(PROJECT_FILE);
        if candidate.is_file() {
            return Some(super::paths::resolved(&candidate));
        }
        let at_root = dir.canonicalize().ok()?.parent().is_none();
        if at_root || dir.join(".git").exists() {
            return None;
        }
        dir = dir.join("..");
    }
}

/// Where [`find_project`] looked, for the error of a name used without a project file.
fn where_looked(agent_file: &Path) -> String {
    let start = super::paths::canonical(agent_file);
    let dir = start.parent().unwrap_or(Path::new("/"));
    format!(
        "no {PROJECT_FILE} in {} or a directory above it up to the repository root, and {PROJECT_ENV} is not set",
        dir.display()
    )
}

/// Reads and checks the project file at `path`: YAML, then its schema, each problem located
/// at its line in that file.
pub fn load_project(path: &Path) -> Result<Project, Vec<Diagnostic>> {
    let error = |code, message| {
        vec![Diagnostic::error(
            path,
            Default::default(),
            code,
            "",
            message,
        )]
    };
    let bytes = super::validate::read_bounded(path).map_err(|e| {
        let message = format!("cannot read the project file: {e}");
        let problem = Diagnostic::error(path, Default::default(), Code::Io, "", message);
        let from_env = std::env::var_os(PROJECT_ENV).is_some_and(|p| !p.is_empty());
        vec![match from_env {
            true => problem.with_hint(format!(
                "{PROJECT_ENV} names it: point it at the project file, or unset it"
            )),
            false => problem,
        }]
    })?;
    if bytes.len() > MAX_INPUT_BYTES {
        return Err(error(Code::Yaml, "the project file is too large".into()));
    }
    let source = String::from_utf8(bytes)
        .map_err(|_| error(Code::Io, "the project file is not valid UTF-8".into()))?;
    let doc = load_yaml(&source).map_err(|errors| {
        errors
            .into_iter()
            .map(|e| Diagnostic::error(path, e.position, Code::Yaml, &e.pointer, e.message))
            .collect::<Vec<_>>()
    })?;
    let mut diagnostics = diagnostics_against(compiled(), &doc, &doc.value, "", path);
    if diagnostics.iter().any(Diagnostic::is_error) {
        return Err(diagnostics);
    }
    let spec: ProjectSpec = serde_json::from_value(doc.value.clone()).map_err(|e| {
        error(
            Code::Type,
            format!("the file passed the schema but not the loader (please report this): {e}"),
        )
    })?;
    let project = Project {
        path: path.to_path_buf(),
        spec,
    };
    diagnostics.extend(project.fallback_problems(&doc));
    if diagnostics.iter().any(Diagnostic::is_error) {
        return Err(diagnostics);
    }
    Ok(project)
}

/// The project of `agent_file`, read as the agent file is loaded (when a run starts, and
/// again by a reload). `Ok(None)` when there is no project file.
pub fn project_of(agent_file: &Path) -> Result<Option<Arc<Project>>, Vec<Diagnostic>> {
    let Some(path) = find_project(agent_file) else {
        return Ok(None);
    };
    load_project(&path).map(|project| Some(Arc::new(project)))
}

impl Project {
    /// The model named `name`, its own fallbacks resolved; an unknown name is an error with
    /// the closest known name.
    pub fn model(&self, name: &str) -> Result<ModelRef, NameError> {
        let config = self.config(name)?;
        let mut config = config.clone();
        for fallback in &mut config.fallback {
            if let ModelRef::Named(inner) = fallback {
                *fallback = ModelRef::Config(Box::new(self.config(&inner.0)?.clone()));
            }
        }
        Ok(ModelRef::Config(Box::new(config)))
    }

    fn config(&self, name: &str) -> Result<&ModelConfig, NameError> {
        let found = self.spec.models.iter().find(|(key, _)| key.0 == name);
        found.map(|(_, config)| config).ok_or_else(|| {
            let names = self.spec.models.keys().map(|key| key.0.as_str());
            let hint = match did_you_mean(name, names) {
                Some(close) => format!("did you mean `{close}`?"),
                None => {
                    let all: Vec<&str> = self.spec.models.keys().map(|k| k.0.as_str()).collect();
                    format!("the project declares: {}", all.join(", "))
                }
            };
            NameError {
                message: format!(
                    "no model `{name}` in the project file {}",
                    self.path.display()
                ),
                hint,
            }
        })
    }

    /// A fallback naming a model the project does not declare, located in the project file.
    fn fallback_problems(&self, doc: &YamlDocument) -> Vec<Diagnostic> {
        let mut found = Vec::new();
        for (name, config) in &self.spec.models {
            for (index, fallback) in config.fallback.iter().enumerate() {
                let ModelRef::Named(inner) = fallback else {
                    continue;
                };
                let pointer = format!("/models/{}/fallback/{index}", name.0);
                let problem = self.config(&inner.0).and_then(|model| {
                    one_model(&inner.0, model).map_err(|message| NameError {
                        message,
                        hint: FLAT_CHAIN_HINT.into(),
                    })
                });
                if let Err(error) = problem {
                    found.push(
                        Diagnostic::error(
                            &self.path,
                            doc.value_position(&pointer),
                            Code::Model,
                            &pointer,
                            error.message,
                        )
                        .with_hint(error.hint),
                    );
                }
            }
        }
        found
    }
}

/// What to do about a fallback with a chain of its own.
pub const FLAT_CHAIN_HINT: &str =
    "list every fallback, in order, in the first model's `fallback`, and set `cooldown` there";

/// A model named as a fallback is one model: a `fallback` or `cooldown` of its own would be
/// a second chain the runner never walks.
pub fn one_model(name: &str, model: &ModelConfig) -> Result<(), String> {
    let own = match (model.fallback.is_empty(), model.cooldown.is_none()) {
        (false, _) => "fallback",
        (true, false) => "cooldown",
        (true, true) => return Ok(()),
    };
    Err(format!(
        "`{name}` is named as a fallback but has a `{own}` of its own"
    ))
}

/// The model a bare `name` stands for in the agent file at `agent_file`, given its project
/// (as [`project_of`] found it).
pub fn resolve_name(
    name: &str,
    project: Option<&Project>,
    agent_file: &Path,
) -> Result<ModelRef, NameError> {
    match project {
        Some(project) => project.model(name),
        None => Err(NameError {
            message: format!(
                "`{name}` is not `provider/name`, and no project file names it: {}",
                where_looked(agent_file)
            ),
            hint: format!(
                "write `provider/name` (e.g. openai/gpt-4o-mini), or declare `{name}` under `models:` in a {PROJECT_FILE} at the repository root (or in the file {PROJECT_ENV} names)"
            ),
        }),
    }
}

/// The model `name` stands for on the command line (`--model smart`) of a run of
/// `agent_file`: through the same project file its model names resolve through.
pub fn model_by_name(agent_file: &Path, name: &str) -> Result<ModelRef, String> {
    let project = project_of(agent_file).map_err(|problems| {
        let first = problems.iter().find(|d| d.is_error()).or(problems.first());
        first.map_or_else(String::new, ToString::to_string)
    })?;
    resolve_name(name, project.as_deref(), agent_file).map_err(|error| error.to_string())
}

/// Checks a `--model` option before anything runs (`batch`, `submit`): a project model's
/// name must resolve for `agent_file`, anything else must be `provider/name`.
pub fn check_model_option(agent_file: &Path, text: &str) -> Result<(), String> {
    match ModelName::parse(text) {
        Some(_) => model_by_name(agent_file, text).map(drop),
        None => super::model::ModelShorthand::parse(text).map(drop),
    }
}

/// Replaces every model name of `spec` — its model, that model's fallbacks, each
/// `summarize` middleware's model, and the same in every inline agent — by the project's
/// model. The one place names resolve: every agent file is loaded through it. The error
/// carries the JSON pointer of the name.
pub fn resolve_models(
    spec: &mut super::AgentSpec,
    project: Option<&Project>,
    agent_file: &Path,
) -> Result<(), (String, NameError)> {
    resolve_in(spec, project, agent_file, "")
}

fn resolve_in(
    spec: &mut super::AgentSpec,
    project: Option<&Project>,
    agent_file: &Path,
    at: &str,
) -> Result<(), (String, NameError)> {
    use super::middleware::MiddlewareEntry;
    use super::tools::{AgentRef, ToolEntry};
    let resolve = |model: &mut ModelRef, pointer: String| -> Result<(), (String, NameError)> {
        resolve_one(model, project, agent_file).map_err(|(key, error)| (pointer + &key, error))
    };
    if let Some(model) = &mut spec.model {
        resolve(model, format!("{at}/model"))?;
    }
    for (index, entry) in spec.middleware.iter_mut().enumerate() {
        if let MiddlewareEntry::Summarize(config) = entry
            && let Some(model) = &mut config.model
        {
            resolve(model, format!("{at}/middleware/{index}/summarize/model"))?;
        }
    }
    for (index, entry) in spec.tools.iter_mut().enumerate() {
        if let ToolEntry::SubAgent(tool) = entry
            && let AgentRef::Inline(inline) = &mut tool.agent
        {
            resolve_in(
                inline,
                project,
                agent_file,
                &format!("{at}/tools/{index}/agent"),
            )?;
        }
    }
    for (index, handoff) in spec.handoffs.iter_mut().enumerate() {
        if let AgentRef::Inline(inline) = &mut handoff.agent {
            let at = format!("{at}/handoffs/{index}/agent");
            resolve_in(inline, project, agent_file, &at)?;
        }
    }
    Ok(())
}

/// One model reference: a name becomes the project's model; a mapping's fallbacks that are
/// names become theirs. The error's key is under the model's own (`/fallback/1`).
fn resolve_one(
    model: &mut ModelRef,
    project: Option<&Project>,
    agent_file: &Path,
) -> Result<(), (String, NameError)> {
    match model {
        ModelRef::Named(name) => {
            *model = resolve_name(&name.0, project, agent_file).map_err(|e| (String::new(), e))?;
        }
        ModelRef::Config(config) => {
            for (index, fallback) in config.fallback.iter_mut().enumerate() {
                if let ModelRef::Named(name) = fallback {
                    let resolved = resolve_name(&name.0, project, agent_file)
                        .map_err(|e| (format!("/fallback/{index}"), e))?;
                    *fallback = resolved;
                }
            }
        }
        ModelRef::Shorthand(_) => {}
    }
    Ok(())
}

/// Each bare model name written in an agent document (raw JSON, as the validator sees it),
/// with its pointer: the same places [`resolve_models`] resolves.
pub fn names_in(agent: &Value, at: &str, found: &mut Vec<(String, String)>) {
    let bare = |value: &Value| {
        value
            .as_str()
            .filter(|s| !s.contains('/'))
            .map(String::from)
    };
    if let Some(model) = agent.get("model") {
        let model_at = format!("{at}/model");
        if let Some(name) = bare(model) {
            found.push((model_at.clone(), name));
        }
        let fallbacks = model.get("fallback").and_then(Value::as_array);
        for (index, fallback) in fallbacks.into_iter().flatten().enumerate() {
            if let Some(name) = bare(fallback) {
                found.push((format!("{model_at}/fallback/{index}"), name));
            }
        }
    }
    let middleware = agent.get("middleware").and_then(Value::as_array);
    for (index, entry) in middleware.into_iter().flatten().enumerate() {
        if let Some(name) = entry.pointer("/summarize/model").and_then(bare) {
            found.push((format!("{at}/middleware/{index}/summarize/model"), name));
        }
    }
    for key in ["tools", "handoffs"] {
        let entries = agent.get(key).and_then(Value::as_array);
        for (index, entry) in entries.into_iter().flatten().enumerate() {
            if let Some(inline @ Value::Object(_)) = entry.get("agent") {
                names_in(inline, &format!("{at}/{key}/{index}/agent"), found);
            }
        }
    }
}

/// The project file's schema as published (`runner schema --project`).
pub fn project_schema() -> Value {
    schema_for::<ProjectSpec>(PROJECT_SCHEMA_ID, false)
}

/// The schema pretty-printed with a trailing newline, as committed.
pub fn project_schema_text() -> String {
    let mut text = serde_json::to_string_pretty(&project_schema()).unwrap_or_default();
    text.push('\n');
    text
}

pub(crate) fn compiled() -> &'static CompiledSchema {
    static COMPILED: OnceLock<CompiledSchema> = OnceLock::new();
    // Generated by our own code: a schema that does not compile is a bug the tests catch.
    COMPILED.get_or_init(|| {
        CompiledSchema::new(schema_for::<ProjectSpec>(PROJECT_SCHEMA_ID, true))
            .expect("the generated project schema compiles")
    })
}
