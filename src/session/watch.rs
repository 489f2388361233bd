//! `exec --watch`: the agent tree's files (the agent file, its sub-agent and handoff files,
//! included templates) are watched while the agent runs; a saved change is validated, the
//! whole tree read again, and when valid and no wider than the tree the run started with,
//! compiled and swapped in at the next step boundary. An invalid save is reported and the
//! run goes on with the previous definition. This is the only way a changed file of the
//! tree takes effect during a run.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::compile::{CompileInput, Sandbox, compile_agent};
use crate::engine::Agent;
use crate::engine::ErrorCode;
use crate::engine::agent::{ReloadOutcome, Reloader};
use crate::engine::events::{Emitter, ReloadFailed, Reloaded};
use crate::reload::FileWatcher;
use crate::spec::AgentSpec;
use crate::spec::load::load_agent;
use crate::spec::tree::AgentTree;
use crate::sync::lock;
use crate::tools::Protected;

/// Builds the agent from a (new) spec and its tree with the run's inputs, model, answers
/// and options.
pub type Compiler = Box<dyn Fn(&AgentSpec, Arc<AgentTree>) -> Result<Agent, String> + Send + Sync>;

pub struct SpecReloader {
    watcher: FileWatcher,
    agent_file: PathBuf,
    /// The run's working directory (where `shell` programs and MCP scripts resolve).
    workspace: PathBuf,
    /// The tree the run started with: a reload may not give any of its agents more.
    started: Option<Arc<AgentTree>>,
    /// The last definition refused for widening, reported once.
    refused: Mutex<Option<AgentSpec>>,
    current: Mutex<AgentSpec>,
    compile: Compiler,
    /// The file tools' protected files, kept to the tree that runs.
    protected: Arc<Protected>,
}

/// What a reloader starts from: the run's agent file, its spec and tree, where it works.
pub struct Started {
    pub agent_file: PathBuf,
    pub spec: AgentSpec,
    pub tree: Arc<AgentTree>,
    pub sandbox: Sandbox,
}

impl SpecReloader {
    /// `allow_widening`: the person accepts saves that give the agent more than `spec`.
    pub fn new(started: Started, compile: Compiler, allow_widening: bool) -> Result<Self, String> {
        let watcher = FileWatcher::new(&started.tree.definition_files())
            .map_err(|e| format!("cannot watch {}: {e}", started.agent_file.display()))?;
        Ok(SpecReloader {
            watcher,
            agent_file: started.agent_file,
            workspace: started.sandbox.dir,
            started: (!allow_widening).then_some(started.tree),
            refused: Mutex::default(),
            current: Mutex::new(started.spec),
            compile,
            protected: started.sandbox.protected,
        })
    }

    /// Why `tree` may not take over: it gives an agent more than the run started with.
    fn widened(&self, tree: &AgentTree) -> Option<String> {
        let widened = self.started.as_ref()?.widenings(tree);
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
        let tree = match AgentTree::resolve(&self.agent_file, &spec, &self.workspace) {
            Ok(tree) => Arc::new(tree),
            Err(message) => return Some(Err(vec![message])),
        };
        if let Some(refused) = self.widened(&tree) {
            let mut last = lock(&self.refused);
            if last.as_ref() == Some(&spec) {
                return None;
            }
            *last = Some(spec);
            return Some(Err(vec![refused]));
        }
        let agent = match (self.compile)(&spec, tree.clone()) {
            Ok(agent) => agent,
            Err(message) => return Some(Err(vec![message])),
        };
        // Includes, sub-agent files and hook programs may have changed with it.
        let _ = self.watcher.set_files(&tree.definition_files());
        self.protected.set_definitions(tree.files());
        let mut current = lock(&self.current);
        let changes = changed_keys(&current, &spec);
        *current = spec;
        Some(Ok((agent, changes)))
    }
}

/// A compiler that reuses everything but the spec from the first compile.
pub fn compiler(input: &CompileInput<'_>) -> Compiler {
    let agent_file = input.agent_file.clone();
    let file_dir = input.file_dir.clone();
    let workspace = input.workspace.clone();
    let context = input.context.clone();
    let model_override = input.model_override.clone();
    let build = input.build.clone();
    let env = input.env.clone();
    let human = input.human.clone();
    let mcp = input.mcp.clone();
    Box::new(move |spec: &AgentSpec, tree: Arc<AgentTree>| {
        let input = CompileInput {
            spec,
            agent_file: agent_file.clone(),
            file_dir: file_dir.clone(),
            workspace: workspace.clone(),
            context: &context,
            model_override: model_override.clone(),
            build: &build,
            env: env.clone(),
            inherited: None,
            human: human.clone(),
            mcp: mcp.clone(),
            tree,
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
    let started = Started {
        agent_file: prepared.agent_file.clone(),
        spec: prepared.spec.clone(),
        tree: prepared.tree.clone(),
        sandbox: prepared.sandbox().clone(),
    };
    SpecReloader::new(started, compile, allow_widening)
        .map(Arc::new)
        .map_err(|message| super::prepare::Stop::invalid(ErrorCode::Watch, message))
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
