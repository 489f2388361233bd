//! What the file tools may never write, and what their listings skip: `runner`'s own files.
//! A model that could rewrite its agent file could grant itself programs, hosts and limits
//! at the next reload or resume; one that could rewrite a hook or an allowed script would
//! run its own code at the next call; one that could rewrite `.runner/` could forge
//! checkpoints. Paths are compared canonical (symlinks resolved), as the workspace rules
//! resolve the path a tool is given, so a file reached through a symlinked directory is
//! the same file.

use std::path::{Path, PathBuf};
use std::sync::RwLock;

/// The files of a run's definition and its state directories.
#[derive(Debug, Default)]
pub struct Protected {
    /// Every file the definition references (`spec::tree::AgentTree::files`): agent,
    /// sub-agent and handoff files, included templates, hook programs, programs and
    /// scripts given as paths, imported MCP configuration files. A reload replaces them.
    definitions: RwLock<Vec<PathBuf>>,
    /// `.runner/`, the run directory, the sessions directory.
    state: Vec<PathBuf>,
}

impl Protected {
    pub fn new(
        definitions: impl IntoIterator<Item = PathBuf>,
        state: impl IntoIterator<Item = PathBuf>,
    ) -> Self {
        Protected {
            definitions: RwLock::new(definitions.into_iter().map(|p| canonical(&p)).collect()),
            state: state.into_iter().map(|p| canonical(&p)).collect(),
        }
    }

    /// The definition's files after a reload (a new sub-agent, include or hook program).
    pub fn set_definitions(&self, definitions: impl IntoIterator<Item = PathBuf>) {
        if let Ok(mut files) = self.definitions.write() {
            *files = definitions.into_iter().map(|p| canonical(&p)).collect();
        }
    }

    /// Why a write to `resolved` (an absolute, resolved path) is refused, if it is.
    pub fn refuses_write(&self, resolved: &Path) -> Option<&'static str> {
        let resolved = canonical(resolved);
        let defines = self
            .definitions
            .read()
            .map_or(true, |files| files.contains(&resolved));
        if defines {
            return Some(
                "it is an agent definition file of this run (the agent file or a file it references: a sub-agent, template, hook, program or MCP file): the agent may not change its own definition",
            );
        }
        self.is_state(&resolved)
            .then_some("it is inside runner's state directory (runs and sessions)")
    }

    /// Whether `resolved` lies in a state directory (listings skip it).
    pub fn is_state(&self, resolved: &Path) -> bool {
        self.state.iter().any(|dir| resolved.starts_with(dir))
    }
}

/// `path` with symlinks resolved; for a path that does not exist yet, its deepest existing
/// ancestor resolved and the rest appended (a state directory may be created later).
fn canonical(path: &Path) -> PathBuf {
    if let Ok(resolved) = std::fs::canonicalize(path) {
        return resolved;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) if !parent.as_os_str().is_empty() => {
            canonical(parent).join(name)
        }
        _ => std::env::current_dir()
            .map(|dir| dir.join(path))
            .unwrap_or_else(|_| path.to_path_buf()),
    }
}
