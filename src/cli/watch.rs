//! `exec --watch`: the agent file (and what it pulls in) is watched while the agent runs; a
//! saved change is validated and, when valid, compiled and swapped in at the next step
//! boundary. An invalid save is reported and the run goes on with the previous definition.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::compile::{CompileInput, compile_agent};
use crate::engine::Agent;
use crate::engine::agent::{ReloadOutcome, Reloader};
use crate::engine::events::{Emitter, ReloadFailed, Reloaded};
use crate::reload::{FileWatcher, agent_files};
use crate::spec::AgentSpec;
use crate::spec::load::load_agent;
use crate::spec::widening::widenings;

/// Builds the agent from a (new) spec with the run's inputs, model, answers and options.
pub type Compiler = Box<dyn Fn(&AgentSpec) -> Result<Agent, String> + Send + Sync>;

pub struct SpecReloader {
    watcher: FileWatcher,
    agent_file: PathBuf,
    /// The definition the run started with: a reload may not give the agent more.
    started: Option<AgentSpec>,
    /// The last definition refused for widening, reported once.
    refused: Mutex<Option<AgentSpec>>,
    current: Mutex<AgentSpec>,
    compile: Compiler,
}

impl SpecReloader {
    /// `allow_widening`: the person accepts saves that give the agent more than `spec`.
    pub fn new(
        agent_file: PathBuf,
        spec: AgentSpec,
        compile: Compiler,
        allow_widening: bool,
    ) -> Result<Self, String> {
        let watcher = FileWatcher::new(&agent_files(&agent_file))
            .map_err(|e| format!("cannot watch {}: {e}", agent_file.display()))?;
        Ok(SpecReloader {
            watcher,
            agent_file,
            started: (!allow_widening).then(|| spec.clone()),
            refused: Mutex::default(),
            current: Mutex::new(spec),
            compile,
        })
    }

    /// Why `spec` may not take over: it gives the agent more than the run started with.
    fn widened(&self, spec: &AgentSpec) -> Option<String> {
        let widened = widenings(self.started.as_ref()?, spec);
        (!widened.is_empty()).then(|| {
            format!(
                "{}: the saved definition gives the agent more than the run started with ({}); it is not loaded (start the run with --allow-widening to accept such changes)",
                self.agent_file.display(),
                widened.join("; ")
            )
        })
    }
}

/// The top-level keys whose values differ.
pub fn changed_keys(old: &AgentSpec, new: &AgentSpec) -> Vec<String> {
    let (Ok(Value::Object(old)), Ok(Value::Object(new))) =
        (serde_json::to_value(old), serde_json::to_value(new))
    else {
        return vec!["(unknown)".into()];
    };
    let mut keys: Vec<String> = old.keys().chain(new.keys()).cloned().collect();
    keys.sort();
    keys.dedup();
    keys.retain(|key| old.get(key) != new.get(key));
    keys
}

impl Reloader for SpecReloader {
    fn poll(&self) -> Option<ReloadOutcome> {
        if !self.watcher.changed() {
            return None;
        }
        let spec = match load_agent(&self.agent_file) {
            Ok((spec, _warnings)) => spec,
            Err(diagnostics) => {
                return Some(Err(diagnostics
                    .iter()
                    .filter(|d| d.is_error())
                    .map(ToString::to_string)
                    .collect()));
            }
        };
        if let Some(refused) = self.widened(&spec) {
            let mut last = self.refused.lock().ok()?;
            if last.as_ref() == Some(&spec) {
                return None;
            }
            *last = Some(spec);
            return Some(Err(vec![refused]));
        }
        let agent = match (self.compile)(&spec) {
            Ok(agent) => agent,
            Err(message) => return Some(Err(vec![message])),
        };
        // Includes and sub-agent files may have changed with it.
        let _ = self.watcher.set_files(&agent_files(&self.agent_file));
        let Ok(mut current) = self.current.lock() else {
            return Some(Ok((agent, Vec::new())));
        };
        let changes = changed_keys(&current, &spec);
        *current = spec;
        Some(Ok((agent, changes)))
    }
}

/// A compiler that reuses everything but the spec from the first compile.
pub fn compiler(input: &CompileInput<'_>) -> Compiler {
    let file_dir = input.file_dir.clone();
    let workspace = input.workspace.clone();
    let context = input.context.clone();
    let model_override = input.model_override.clone();
    let build = input.build.clone();
    let env = input.env.clone();
    let human = input.human.clone();
    let mcp = input.mcp.clone();
    Box::new(move |spec: &AgentSpec| {
        let input = CompileInput {
            spec,
            file_dir: file_dir.clone(),
            workspace: workspace.clone(),
            context: &context,
            model_override: model_override.clone(),
            build: &build,
            env: env.clone(),
            inherited: None,
            human: human.clone(),
            mcp: mcp.clone(),
        };
        compile_agent(&input).map_err(|e| e.to_string())
    })
}

/// The reloader of a prepared run: watches its agent file, compiles saves with its inputs.
pub fn reloader(
    prepared: &super::prepare::Prepared,
    allow_widening: bool,
) -> Result<Arc<SpecReloader>, super::prepare::Stop> {
    let compile = compiler(&prepared.compile_input());
    let (file, spec) = (prepared.agent_file.clone(), prepared.spec.clone());
    SpecReloader::new(file, spec, compile, allow_widening)
        .map(Arc::new)
        .map_err(|message| super::prepare::Stop::invalid("watch", message))
}

/// Between two runs (chat turns): a saved change of the agent file takes over from here.
pub fn swap_between_runs(reloader: &dyn Reloader, agent: &mut Agent, emitter: &Emitter, step: u64) {
    match reloader.poll() {
        Some(Ok((next, changes))) => {
            eprintln!("(reloaded: {})", changes.join(", "));
            emitter.emit(Reloaded { changes, step });
            *agent = next;
        }
        Some(Err(diagnostics)) => {
            for diagnostic in &diagnostics {
                eprintln!("{diagnostic}");
            }
            emitter.emit(ReloadFailed { diagnostics });
        }
        None => {}
    }
}
