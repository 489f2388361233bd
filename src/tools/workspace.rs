//! Confinement of the file tools (and the shell's working directory) to a root directory.
//!
//! Rules (also in `docs/tools.md`):
//! * A relative path is taken relative to the root. `..` may be used only while it stays
//!   inside the root (`a/../b` is fine, `../x` and `a/../../x` are refused).
//! * An absolute path is accepted only when it lies inside the root after resolving
//!   symlinks (so a model that echoes back a path the tool printed still works);
//!   `/etc/passwd` is refused.
//! * Symlinks are resolved: the path, or for a path that does not exist yet (a
//!   `write_file` target) its deepest existing ancestor, is canonicalised, and the result
//!   must be inside the canonical root. A symlink whose target does not exist is refused,
//!   since writing through it could create a file anywhere.
//! * `..` is applied lexically before symlinks are resolved, and the tool then acts on the
//!   resolved path, so what is checked is what is touched.
//!
//! Limits: the check and the use are not atomic; a process that swaps a directory for a
//! symlink in between can defeat it. The tools guard the model, not a hostile local user.

use serde_json::Value;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use super::Protected;

/// A directory the file tools are confined to, and what in it they must leave alone.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    protected: Arc<Protected>,
}

impl Workspace {
    /// Opens `root`, which must be an existing directory. It is canonicalised once here.
    pub fn new(root: &Path) -> Result<Self, String> {
        let canonical = std::fs::canonicalize(root)
            .map_err(|e| format!("workspace root `{}`: {e}", root.display()))?;
        if !canonical.is_dir() {
            return Err(format!(
                "workspace root `{}` is not a directory",
                root.display()
            ));
        }
        Ok(Workspace {
            root: canonical,
            protected: Arc::default(),
        })
    }

    /// The same workspace, with `runner`'s own files protected from the tools.
    pub fn protecting(self, protected: Arc<Protected>) -> Self {
        Workspace { protected, ..self }
    }

    /// Resolves a path the model wants to write: inside the root, and not one of
    /// `runner`'s own files.
    pub fn resolve_writable(&self, path: &str) -> Result<PathBuf, String> {
        let resolved = self.resolve(path)?;
        match self.protected.refuses_write(&resolved) {
            Some(why) => Err(format!("cannot write `{path}`: {why}")),
            None => Ok(resolved),
        }
    }

    /// Whether `program` (a path the tools run) is still what the run started with, if it
    /// is a file of the definition.
    pub fn unchanged(&self, program: &Path) -> Result<(), String> {
        self.protected.unchanged(program)
    }

    /// Whether a listing skips `resolved` (`runner`'s state directories).
    pub fn hides(&self, resolved: &Path) -> bool {
        self.protected.is_state(resolved)
    }

    /// The canonical root.
    /// `runner`'s own files, which the tools leave alone.
    pub fn protected(&self) -> &Protected {
        &self.protected
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a path given by the model to an absolute path inside the root, or says why
    /// it is refused. The path need not exist.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, String> {
        if path.is_empty() {
            return Err("path is empty".to_string());
        }
        if path.contains('\0') {
            return Err(format!(
                "path `{}` contains a NUL byte",
                path.escape_debug()
            ));
        }
        let given = Path::new(path);
        let absolute = given.is_absolute();
        let candidate = if absolute {
            normalize(given)
        } else {
            let mut depth = 0usize;
            let mut joined = self.root.clone();
            for component in given.components() {
                match component {
                    Component::CurDir => {}
                    Component::ParentDir => {
                        if depth == 0 {
                            return Err(format!(
                                "path `{path}` is outside the workspace root `{}`: `..` climbs above the root",
                                self.root.display()
                            ));
                        }
                        depth -= 1;
                        joined.pop();
                    }
                    Component::Normal(part) => {
                        depth += 1;
                        joined.push(part);
                    }
                    Component::RootDir | Component::Prefix(_) => {
                        return Err(format!("path `{path}` is not a relative path"));
                    }
                }
            }
            joined
        };

        // The deepest ancestor that exists (as a file, directory or link) is canonicalised;
        // the parts below it do not exist yet, so they cannot be symlinks.
        let mut existing = candidate.clone();
        let mut tail: Vec<OsString> = Vec::new();
        while std::fs::symlink_metadata(&existing).is_err() {
            match (existing.file_name(), existing.parent()) {
                (Some(name), Some(parent)) => {
                    tail.push(name.to_os_string());
                    existing = parent.to_path_buf();
                }
                _ => break,
            }
        }
        let canonical = match std::fs::canonicalize(&existing) {
            Ok(canonical) => canonical,
            Err(e) => {
                let is_link = std::fs::symlink_metadata(&existing)
                    .map(|m| m.file_type().is_symlink())
                    .unwrap_or(false);
                return Err(if is_link {
                    format!(
                        "path `{path}` goes through `{}`, a symlink whose target does not exist; refusing to follow it",
                        self.shown(&existing)
                    )
                } else {
                    format!("path `{path}`: {e}")
                });
            }
        };
        let mut resolved = canonical;
        for part in tail.iter().rev() {
            resolved.push(part);
        }
        if resolved.starts_with(&self.root) {
            return Ok(resolved);
        }
        Err(if absolute && !candidate.starts_with(&self.root) {
            format!(
                "absolute path `{path}` is outside the workspace root `{}`; give a path relative to the root",
                self.root.display()
            )
        } else {
            format!(
                "path `{path}` resolves through a symlink to `{}`, outside the workspace root `{}`",
                resolved.display(),
                self.root.display()
            )
        })
    }

    /// The arguments with `path` (or `default` when absent) as the workspace resolves it,
    /// shown relative to the root, for `permissions` patterns: `./src/../x`, an absolute
    /// path inside the root and a symlinked directory all match as the file they reach.
    /// `None` when the path does not resolve (the tool refuses the call itself).
    pub fn policy_path(&self, arguments: &Value, default: Option<&str>) -> Option<Value> {
        let given = arguments.get("path").and_then(Value::as_str).or(default)?;
        let shown = self.shown(&self.resolve(given).ok()?);
        let mut normalized = arguments.clone();
        normalized
            .as_object_mut()?
            .insert("path".into(), Value::String(shown));
        Some(normalized)
    }

    /// How a resolved path is shown to the model: relative to the root (`.` for the root).
    pub fn shown(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
            Ok(rel) => rel.to_string_lossy().into_owned(),
            Err(_) => path.to_string_lossy().into_owned(),
        }
    }
}

/// Applies `.` and `..` lexically to an absolute path (`..` at `/` stays at `/`).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}
