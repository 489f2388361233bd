//! The agent tree of a run, read once when it starts: the agent file, every sub-agent and
//! handoff file it reaches (at any depth, through inline agents too), every template they
//! include; and the list of every file the definition references that `runner` executes or
//! reads — those, plus hook programs, `shell` programs given as paths, the scripts and
//! programs of stdio MCP servers, and the `.mcp.json` files servers are imported from.
//!
//! Nothing of the tree is read from disk again during the run: a sub-agent compiled for
//! its tenth call is compiled from the spec read at start, and a template's includes come
//! from here. A changed file takes effect only through a reload, which resolves a new tree
//! and refuses it when any of its agents gives more than before ([`AgentTree::widenings`]).
//! Paths are compared canonical (symlinks followed), the way opening them resolves them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::AgentSpec;
use super::hooks::{HookCommand, HookEntry, HooksSpec};
use super::load::load_agent;
use super::middleware::MiddlewareEntry;
use super::paths::canonical;
use super::template::{IncludeSource, included_templates};
use super::tools::{AgentRef, BuiltinTool, McpServer, ToolEntry};
use super::widening::widenings;

/// The agents and templates of a run, and every file its definition references.
#[derive(Debug, Clone, Default)]
pub struct AgentTree {
    /// The root agent file (canonical).
    root: PathBuf,
    /// Every agent file by its canonical path, the root's included.
    agents: BTreeMap<PathBuf, AgentSpec>,
    /// Every template a field includes (literally, at any depth), by canonical path.
    templates: BTreeMap<PathBuf, String>,
    /// The `.mcp.json` files servers are imported from (canonical paths).
    imports: BTreeSet<PathBuf>,
    /// The project files (`runner.yaml`) the agent files' model names resolve through
    /// (canonical paths): a change to one is reloaded like a change to an agent file.
    projects: BTreeSet<PathBuf>,
    /// Everything else the definition references: hook programs, `shell` programs and MCP
    /// servers' programs and scripts (canonical paths).
    referenced: BTreeSet<PathBuf>,
}

/// Where relative paths of an agent resolve: its file's directory (sub-agent files,
/// includes, hooks, imports) and the run's working directory (`shell` programs, MCP
/// servers, which run there).
struct Place<'a> {
    file_dir: &'a Path,
    workspace: &'a Path,
}

impl AgentTree {
    /// Reads the tree of the agent `root` loaded from `root_file`; `workspace` is the run's
    /// working directory. A sub-agent file that is missing or invalid is an error naming it.
    pub fn resolve(root_file: &Path, root: &AgentSpec, workspace: &Path) -> Result<Self, String> {
        let mut tree = AgentTree::default();
        let key = canonical(root_file);
        tree.root = key.clone();
        tree.agents.insert(key.clone(), root.clone());
        tree.imports_of(&key, root);
        tree.project_of(&key);
        let dir = file_dir(root_file);
        tree.walk(
            root,
            &Place {
                file_dir: &dir,
                workspace,
            },
        )?;
        Ok(tree)
    }

    /// The agent file at `path` (as the caller joined it), as it was read at start.
    pub fn agent(&self, path: &Path) -> Option<(&Path, &AgentSpec)> {
        self.agents
            .get_key_value(&canonical(path))
            .map(|(path, spec)| (path.as_path(), spec))
    }

    /// Every agent of the tree, the root's included.
    pub fn specs(&self) -> impl Iterator<Item = &AgentSpec> {
        self.agents.values()
    }

    /// The agent files, included templates and imported `.mcp.json` files: what a reload
    /// watches.
    pub fn definition_files(&self) -> Vec<PathBuf> {
        let agents = self.agents.keys().chain(self.templates.keys());
        let imports = agents.chain(&self.imports);
        imports.chain(&self.projects).cloned().collect()
    }

    /// Every file the definition references, for the file tools to leave alone.
    pub fn files(&self) -> Vec<PathBuf> {
        let mut files = self.definition_files();
        files.extend(self.referenced.iter().cloned());
        files
    }

    /// Each way `new` gives any of its agents more than this tree did, said for a person
    /// and naming the file; an agent file this tree did not have is one too.
    pub fn widenings(&self, new: &AgentTree) -> Vec<String> {
        agents_widenings(&self.agents, &new.agents)
    }

    /// The agents of this tree as a session keeps them.
    pub fn kept(&self) -> KeptAgents {
        let dir = file_dir(&self.root);
        let relative = |path: &PathBuf| path.strip_prefix(&dir).unwrap_or(path).to_path_buf();
        KeptAgents(
            self.agents
                .iter()
                .map(|(path, spec)| (relative(path), spec.clone()))
                .collect(),
        )
    }

    /// [`AgentTree::widenings`] against the agents a session started with (`kept` from a
    /// checkpoint), for `runner resume`.
    pub fn widened_since(&self, kept: &KeptAgents) -> Vec<String> {
        let dir = file_dir(&self.root);
        let started = kept
            .0
            .iter()
            .map(|(path, spec)| (dir.join(path), spec.clone()))
            .collect();
        agents_widenings(&started, &self.agents)
    }

    fn walk(&mut self, spec: &AgentSpec, place: &Place<'_>) -> Result<(), String> {
        self.templates_of(spec, place.file_dir);
        for entry in &spec.middleware {
            if let MiddlewareEntry::Command(config) = entry {
                self.program(&config.command, place.file_dir);
            }
        }
        if let Some(hooks) = &spec.hooks {
            self.hook_programs(hooks, place.file_dir);
        }
        for entry in &spec.tools {
            match entry {
                ToolEntry::Builtin(BuiltinTool::Shell { allow, root, .. }) => {
                    let root = place.workspace.join(root.as_deref().unwrap_or("."));
                    let paths = allow.iter().filter(|program| program.contains('/'));
                    self.referenced
                        .extend(paths.map(|program| canonical(&root.join(program))));
                }
                ToolEntry::Mcp(entry) => self.mcp_files(&entry.mcp, place.workspace),
                _ => {}
            }
        }
        let children = spec
            .tools
            .iter()
            .filter_map(|entry| match entry {
                ToolEntry::SubAgent(tool) => Some(&tool.agent),
                _ => None,
            })
            .chain(spec.handoffs.iter().map(|handoff| &handoff.agent));
        for child in children {
            match child {
                AgentRef::Inline(inline) => self.walk(inline, place)?,
                AgentRef::Path(relative) => self.load(&place.file_dir.join(relative), place)?,
            }
        }
        Ok(())
    }

    /// Reads (once) and walks the agent file at `path`.
    fn load(&mut self, path: &Path, place: &Place<'_>) -> Result<(), String> {
        let key = canonical(path);
        if self.agents.contains_key(&key) {
            return Ok(());
        }
        let (spec, _warnings) = load_agent(&key).map_err(|diagnostics| {
            let first = diagnostics
                .iter()
                .find(|d| d.is_error())
                .map(ToString::to_string)
                .unwrap_or_default();
            format!("sub-agent file {} is not valid: {first}", path.display())
        })?;
        self.agents.insert(key.clone(), spec.clone());
        self.imports_of(&key, &spec);
        self.project_of(&key);
        let dir = file_dir(&key);
        self.walk(
            &spec,
            &Place {
                file_dir: &dir,
                workspace: place.workspace,
            },
        )
    }

    /// The templates every field of `spec` includes.
    fn templates_of(&mut self, spec: &AgentSpec, dir: &Path) {
        let mut sources = vec![
            spec.system.as_deref(),
            spec.prompt.as_deref(),
            spec.execution.reasoning_prompt.as_deref(),
        ];
        for entry in &spec.tools {
            match entry {
                ToolEntry::SubAgent(tool) => sources.push(tool.prompt.as_deref()),
                ToolEntry::Remote(tool) => {
                    sources.push(tool.prompt.as_deref());
                    sources.extend(tool.a2a.headers.values().map(|v| Some(v.as_str())));
                }
                ToolEntry::Mcp(entry) => match &entry.mcp {
                    McpServer::Stdio(stdio) => {
                        sources.extend(stdio.env.values().map(|v| Some(v.as_str())))
                    }
                    McpServer::Http(http) => {
                        sources.extend(http.headers.values().map(|v| Some(v.as_str())))
                    }
                },
                ToolEntry::Builtin(_) | ToolEntry::External(_) => {}
            }
        }
        for source in sources.into_iter().flatten() {
            for (path, text) in included_templates(source, dir) {
                self.templates.entry(canonical(&path)).or_insert(text);
            }
        }
    }

    /// Hook programs given as paths (from the agent file's directory, as hooks run them).
    fn hook_programs(&mut self, hooks: &HooksSpec, dir: &Path) {
        let commands = hooks
            .pre_tool_use
            .iter()
            .chain(&hooks.post_tool_use)
            .map(HookEntry::command)
            .chain(hooks.run_start.iter().map(HookEntry::command))
            .chain(
                hooks
                    .run_end
                    .iter()
                    .chain(&hooks.user_input)
                    .map(HookEntry::command),
            );
        for command in commands {
            self.program(command, dir);
        }
    }

    /// A hook's or a `command` middleware's program, when given as a path (from the agent
    /// file's directory, as they run it).
    fn program(&mut self, command: &HookCommand, dir: &Path) {
        if let Some(program) = command.0.first().filter(|p| p.contains('/')) {
            self.referenced.insert(canonical(&dir.join(program)));
        }
    }

    /// A stdio server's program given as a path, and each argument that names an existing
    /// file (its script: `node server.js`), from the working directory the server starts in.
    fn mcp_files(&mut self, server: &McpServer, workspace: &Path) {
        let McpServer::Stdio(stdio) = server else {
            return;
        };
        if stdio.command.contains('/') {
            self.referenced
                .insert(canonical(&workspace.join(&stdio.command)));
        }
        for arg in stdio.args.iter().filter(|arg| !arg.starts_with('-')) {
            let path = workspace.join(arg);
            if path.is_file() {
                self.referenced.insert(canonical(&path));
            }
        }
    }

    /// The project file an agent file's model names resolve through, when there is one.
    fn project_of(&mut self, file: &Path) {
        if let Some(project) = super::project::find_project(file) {
            self.projects.insert(canonical(&project));
        }
    }

    /// The `.mcp.json` files an agent file imports servers from (loading expanded them
    /// into entries, so they are found in the file as written). `spec`, the file loaded,
    /// says whether there can be any: a file whose agents have no MCP server imported
    /// none, and is not read again.
    fn imports_of(&mut self, file: &Path, spec: &AgentSpec) {
        if !has_mcp_servers(spec) {
            return;
        }
        let Ok(bytes) = super::validate::read_bounded(file) else {
            return;
        };
        let Ok(document) = String::from_utf8(bytes)
            .map_err(drop)
            .and_then(|text| super::yaml::load_yaml(&text).map_err(drop))
        else {
            return;
        };
        let dir = file_dir(file);
        let mut configs = Vec::new();
        import_configs(&document.value, &mut configs);
        self.imports
            .extend(configs.iter().map(|config| canonical(&dir.join(config))));
    }
}

/// The agent files of a tree as a session's checkpoints keep them, so `runner resume` can
/// apply the widening rule to every one of them: by path relative to the root agent file's
/// directory (absolute for a file outside it), so a session whose files moved together
/// (a worker's job directory) compares the same files.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct KeptAgents(BTreeMap<PathBuf, AgentSpec>);

/// Each way an agent of `new` gives more than the same file in `old`, naming the file; an
/// agent file `old` did not have is one too.
fn agents_widenings(
    old: &BTreeMap<PathBuf, AgentSpec>,
    new: &BTreeMap<PathBuf, AgentSpec>,
) -> Vec<String> {
    let mut found = Vec::new();
    for (path, spec) in new {
        match old.get(path) {
            Some(old) => found.extend(
                widenings(old, spec)
                    .into_iter()
                    .map(|widening| format!("{}: {widening}", path.display())),
            ),
            None => found.push(format!("adds the agent file {}", path.display())),
        }
    }
    found
}

/// Whether `spec`, or an agent it defines inline, has an MCP server entry. An import
/// expands into at least one (a file that names none is refused), so without any, the
/// file imported nothing.
fn has_mcp_servers(spec: &AgentSpec) -> bool {
    let mut inline = spec
        .tools
        .iter()
        .filter_map(|entry| match entry {
            ToolEntry::SubAgent(tool) => Some(&tool.agent),
            _ => None,
        })
        .chain(spec.handoffs.iter().map(|handoff| &handoff.agent))
        .filter_map(|agent| match agent {
            AgentRef::Inline(inline) => Some(inline),
            AgentRef::Path(_) => None,
        });
    spec.tools
        .iter()
        .any(|entry| matches!(entry, ToolEntry::Mcp(_)))
        || inline.any(|agent| has_mcp_servers(agent))
}

/// The `mcp.config` values of an agent mapping and its inline agents.
fn import_configs(agent: &Value, found: &mut Vec<String>) {
    let entries = ["tools", "handoffs"]
        .into_iter()
        .filter_map(|key| agent.get(key).and_then(Value::as_array))
        .flatten();
    for entry in entries {
        if let Some(Value::String(config)) = entry.get("mcp").and_then(|m| m.get("config")) {
            found.push(config.clone());
        }
        if let Some(inline @ Value::Object(_)) = entry.get("agent") {
            import_configs(inline, found);
        }
    }
}

impl IncludeSource for AgentTree {
    /// An include as it was read at start; one the tree does not hold (a name computed at
    /// render time) is refused rather than read behind the check.
    fn read(&self, path: &Path) -> Result<Option<String>, String> {
        match self.templates.get(&canonical(path)) {
            Some(text) => Ok(Some(text.clone())),
            None => Err(format!(
                "`{}` was not read when the run started: during a run a template includes only the files the agent file names literally",
                path.display()
            )),
        }
    }
}

/// The directory of an agent file ("." for a bare file name).
fn file_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}
