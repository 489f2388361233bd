//! What the file tools may never write, and what their listings skip: `runner`'s own files.
//! A model that could rewrite its agent file could grant itself programs, hosts and limits
//! at the next reload or resume; one that could rewrite `.runner/` could forge checkpoints.
//! Paths are compared after resolving symlinks, as the workspace rules do.

use std::path::{Path, PathBuf};

/// The agent definition files and state directories of a run.
#[derive(Debug, Clone, Default)]
pub struct Protected {
    /// The agent file, every sub-agent and handoff file, and every included template.
    definitions: Vec<PathBuf>,
    /// `.runner/`, the run directory, the sessions directory.
    state: Vec<PathBuf>,
}

impl Protected {
    pub fn new(
        definitions: impl IntoIterator<Item = PathBuf>,
        state: impl IntoIterator<Item = PathBuf>,
    ) -> Self {
        Protected {
            definitions: definitions.into_iter().map(|p| canonical(&p)).collect(),
            state: state.into_iter().map(|p| canonical(&p)).collect(),
        }
    }

    /// Why a write to `resolved` (an absolute, resolved path) is refused, if it is.
    pub fn refuses_write(&self, resolved: &Path) -> Option<&'static str> {
        if self.definitions.iter().any(|file| file == resolved) {
            return Some(
                "it is an agent definition file of this run: the agent may not change its own definition",
            );
        }
        self.is_state(resolved)
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
