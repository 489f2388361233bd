//! The agents served: the files found under the paths `runner serve` was given (the same
//! discovery as `runner validate`), each checked as `runner exec` would load it. The
//! listing is made again on every request that needs it, so a new file appears and a saved
//! one is served as saved; a file is only read again when it, or a file it pulls in
//! (includes, sub-agents), has a new modification time or size.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::reload::agent_files;
use crate::spec::AgentSpec;
use crate::spec::load::load_agent;
use crate::spec::paths::expand_paths;
use crate::spec::{Diagnostic, agent::InputSpec};

/// One agent file, as `GET /api/agents` lists it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AgentEntry {
    /// The agent's name (what `POST /api/runs` takes); for a file that cannot be read, its
    /// file name.
    pub name: String,
    pub description: Option<String>,
    /// The file, as found under the served paths.
    pub file: String,
    /// Whether it can be run: a file with errors is listed, not served.
    pub valid: bool,
    /// The JSON Schema of the inputs object (`inputs:`).
    pub input_schema: Value,
    /// The JSON Schema of the answer (`output.schema`), if the agent has one.
    pub output_schema: Option<Value>,
    /// Its problems, each `file:line:col: severity[code]: message` (warnings too).
    pub diagnostics: Vec<String>,
}

/// When a file and what it pulls in were last changed.
type Fingerprint = Vec<(PathBuf, Option<SystemTime>, u64)>;

/// The files found so far and what was made of each.
#[derive(Default)]
pub struct Catalog {
    paths: Vec<PathBuf>,
    checked: Mutex<HashMap<PathBuf, (Fingerprint, AgentEntry)>>,
}

impl Catalog {
    pub fn new(paths: Vec<PathBuf>) -> Self {
        Catalog {
            paths,
            checked: Mutex::default(),
        }
    }

    /// Every agent file under the paths, as it is now (blocking: reads files).
    pub fn list(&self) -> Result<Vec<AgentEntry>, String> {
        let files = expand_paths(&self.paths)?;
        let mut checked = crate::sync::lock(&self.checked);
        checked.retain(|file, _| files.contains(file));
        let entries = files
            .iter()
            .map(|file| {
                let now = fingerprint(file);
                match checked.get(file) {
                    Some((seen, entry)) if *seen == now => entry.clone(),
                    _ => {
                        let entry = check(file);
                        checked.insert(file.clone(), (now, entry.clone()));
                        entry
                    }
                }
            })
            .collect();
        Ok(entries)
    }

    /// The file of the agent `wanted` names: its name, or its file as listed.
    pub fn find(&self, wanted: &str) -> Result<AgentEntry, String> {
        let entries = self.list()?;
        let matching: Vec<&AgentEntry> = entries
            .iter()
            .filter(|entry| entry.name == wanted || entry.file == wanted)
            .collect();
        match matching.as_slice() {
            [entry] => Ok((*entry).clone()),
            [] => {
                let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
                Err(format!(
                    "no agent `{wanted}` is served (served: {})",
                    names.join(", ")
                ))
            }
            several => {
                let files: Vec<&str> = several.iter().map(|e| e.file.as_str()).collect();
                Err(format!(
                    "`{wanted}` names several agent files ({}): give the file instead",
                    files.join(", ")
                ))
            }
        }
    }
}

fn fingerprint(file: &Path) -> Fingerprint {
    agent_files(file)
        .into_iter()
        .map(|path| {
            let meta = std::fs::metadata(&path).ok();
            let modified = meta.as_ref().and_then(|m| m.modified().ok());
            let len = meta.map_or(0, |m| m.len());
            (path, modified, len)
        })
        .collect()
}

/// Loads `file` as a run would: its spec, or its diagnostics.
fn check(file: &Path) -> AgentEntry {
    let shown = file.display().to_string();
    match load_agent(file) {
        Ok((spec, warnings)) => entry_of(&spec, shown, &warnings),
        Err(diagnostics) => AgentEntry {
            name: file
                .file_stem()
                .map(|stem| stem.to_string_lossy().into_owned())
                .unwrap_or_else(|| shown.clone()),
            description: None,
            file: shown,
            valid: false,
            input_schema: json!({"type": "object"}),
            output_schema: None,
            diagnostics: diagnostics.iter().map(Diagnostic::to_string).collect(),
        },
    }
}

fn entry_of(spec: &AgentSpec, file: String, warnings: &[Diagnostic]) -> AgentEntry {
    AgentEntry {
        name: spec.name.clone(),
        description: spec.description.clone(),
        file,
        valid: true,
        input_schema: input_schema(spec),
        output_schema: spec.output.as_ref().map(|output| output.schema.0.clone()),
        diagnostics: warnings.iter().map(Diagnostic::to_string).collect(),
    }
}

/// `inputs:` as the JSON Schema of the object `POST /api/runs` takes in `inputs`.
fn input_schema(spec: &AgentSpec) -> Value {
    let properties: Map<String, Value> = spec
        .inputs
        .iter()
        .map(|(name, input)| (name.clone(), property(input)))
        .collect();
    let required: Vec<&String> = spec
        .inputs
        .iter()
        .filter(|(_, input)| input.required && input.default.is_none())
        .map(|(name, _)| name)
        .collect();
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

fn property(input: &InputSpec) -> Value {
    let mut property = Map::new();
    property.insert("type".into(), input.kind.as_str().into());
    if let Some(description) = &input.description {
        property.insert("description".into(), description.clone().into());
    }
    if let Some(default) = &input.default {
        property.insert("default".into(), default.clone());
    }
    if let Some(allowed) = &input.allowed {
        property.insert("enum".into(), Value::Array(allowed.clone()));
    }
    Value::Object(property)
}
