//! What the file tools may never write, and what their listings skip: `runner`'s own files.
//! A model that could rewrite its agent file could grant itself programs, hosts and limits
//! at the next reload or resume; one that could rewrite a hook or an allowed script would
//! run its own code at the next call; one that could rewrite `.runner/` could forge
//! checkpoints. Paths are compared canonical (symlinks resolved), as the workspace rules
//! resolve the path a tool is given, so a file reached through a symlinked directory is
//! the same file.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

use crate::sync;

/// The files of a run's definition and its state directories.
#[derive(Debug, Default)]
pub struct Protected {
    /// Every file the definition references (`spec::tree::AgentTree::files`): agent,
    /// sub-agent and handoff files, included templates, hook programs, programs and
    /// scripts given as paths, imported MCP configuration files; each with what it looked
    /// like when the run started. A reload replaces them.
    definitions: RwLock<Vec<(PathBuf, Option<Stamp>)>>,
    /// `.runner/`, the run directory, the sessions directory.
    state: Vec<PathBuf>,
    /// Files the command that started the run names beyond the definition: `runner test`'s
    /// set-up scripts, which the next case runs (`exec --protect`). A reload keeps them.
    fixed: Vec<PathBuf>,
}

/// What a file looked like: writing it in place changes its times (`ctime` cannot be set
/// back), replacing it changes its inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    device: u64,
    inode: u64,
    len: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

impl Stamp {
    /// The file at `path` (symlinks followed, as running it does); `None` when it is gone.
    fn of(path: &Path) -> Option<Stamp> {
        let meta = std::fs::metadata(path).ok()?;
        Some(Stamp {
            device: meta.dev(),
            inode: meta.ino(),
            len: meta.len(),
            modified: (meta.mtime(), meta.mtime_nsec()),
            changed: (meta.ctime(), meta.ctime_nsec()),
        })
    }
}

fn stamped(definitions: impl IntoIterator<Item = PathBuf>) -> Vec<(PathBuf, Option<Stamp>)> {
    definitions
        .into_iter()
        .map(|path| {
            let path = canonical(&path);
            let stamp = Stamp::of(&path);
            (path, stamp)
        })
        .collect()
}

impl Protected {
    pub fn new(
        definitions: impl IntoIterator<Item = PathBuf>,
        state: impl IntoIterator<Item = PathBuf>,
    ) -> Self {
        Protected {
            definitions: RwLock::new(stamped(definitions)),
            state: state.into_iter().map(|p| canonical(&p)).collect(),
            fixed: Vec::new(),
        }
    }

    /// These with `files` protected too, whatever the definition becomes.
    pub fn with_fixed(mut self, files: impl IntoIterator<Item = PathBuf>) -> Self {
        self.fixed = files.into_iter().map(|p| canonical(&p)).collect();
        self
    }

    /// The definition's files after a reload (a new sub-agent, include or hook program).
    pub fn set_definitions(&self, definitions: impl IntoIterator<Item = PathBuf>) {
        *sync::write(&self.definitions) = stamped(definitions);
    }

    /// Whether a program of the definition (a hook, a `shell` program given as a path) is
    /// still the file the run started with, before it is run: an allowed program that
    /// writes files (`cp`) could otherwise make the next call run the model's code. A
    /// program that is no file of the definition is not checked.
    pub fn unchanged(&self, program: &Path) -> Result<(), String> {
        let keys = [canonical(program), canonical_parent(program)];
        let files = sync::read(&self.definitions);
        let Some((file, stamp)) = files.iter().find(|(file, _)| keys.contains(file)) else {
            return Ok(());
        };
        if stamp.is_some() && Stamp::of(program) == *stamp {
            return Ok(());
        }
        Err(format!(
            "`{}` changed since the run started: a program of the agent's definition runs only as it was then (restart the run to use the new one)",
            file.display()
        ))
    }

    /// Why a write to `resolved` (an absolute, resolved path) is refused, if it is.
    pub fn refuses_write(&self, resolved: &Path) -> Option<&'static str> {
        let resolved = canonical(resolved);
        let defines = (sync::read(&self.definitions).iter()).any(|(file, _)| *file == resolved);
        if defines {
            return Some(
                "it is an agent definition file of this run (the agent file or a file it references: a sub-agent, template, hook, program or MCP file): the agent may not change its own definition",
            );
        }
        if self.fixed.contains(&resolved) {
            return Some(
                "it is a set-up script of the test that runs this agent (`runner test`): the agent may not change what the next case runs",
            );
        }
        self.is_state(&resolved)
            .then_some("it is inside runner's state directory (runs and sessions)")
    }

    /// The files a sandboxed program may not write: the definition's and the fixed ones
    /// (canonical).
    pub fn files(&self) -> Vec<PathBuf> {
        let definitions = sync::read(&self.definitions);
        (definitions.iter().map(|(file, _)| file.clone()))
            .chain(self.fixed.iter().cloned())
            .collect()
    }

    /// The state directories (canonical), which a sandboxed program may not even read.
    pub fn state_dirs(&self) -> &[PathBuf] {
        &self.state
    }

    /// Whether `resolved` lies in a state directory (listings skip it).
    pub fn is_state(&self, resolved: &Path) -> bool {
        self.state.iter().any(|dir| resolved.starts_with(dir))
    }
}

/// `path` with its directory's symlinks resolved but not its own name's: where a file
/// that was replaced by a symlink used to be.
fn canonical_parent(path: &Path) -> PathBuf {
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) if !parent.as_os_str().is_empty() => {
            canonical(parent).join(name)
        }
        _ => canonical(path),
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
