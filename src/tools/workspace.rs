//! Confinement of the file tools (and the shell's working directory) to a root directory.
//!
//! Rules (also in `docs/tools.md`):
//! * A relative path is taken relative to the root. `..` may be used only while it stays
//!   inside the root (`a/../b` is fine, `../x` and `a/../../x` are refused).
//! * An absolute path is accepted only when it lies inside the root after resolving
//!   symlinks (so a model that echoes back a path the tool printed still works);
//!   `/etc/passwd` is refused.
//! * Symlinks are resolved: the root is canonicalised once, when the workspace is opened;
//!   a path is then walked from it part by part (one `lstat` each), and a part that is a
//!   symlink is resolved in full. The parts below the first one that does not exist yet (a
//!   `write_file` target) cannot be links. The result must be inside the canonical root. A
//!   symlink whose target does not exist is refused, since writing through it could create
//!   a file anywhere.
//! * `..` is applied lexically before symlinks are resolved, and the tool then acts on the
//!   resolved path, so what is checked is what is touched.
//!
//! Limits: the check and the use are not atomic; a process that swaps a directory for a
//! symlink in between (or the root itself, which is not resolved again) can defeat it. The tools guard the model, not a hostile local user.

use serde_json::Value;
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
        if !given.is_absolute() {
            let below = self.below_root(path, given)?;
            return self.inside(path, self.walk(path, &self.root, &below)?, false);
        }
        let candidate = normalize(given);
        // An absolute path spelled inside the canonical root is walked from the root, like
        // a relative one; any other is walked from `/` (it may reach the root through a link).
        let resolved = match candidate.strip_prefix(&self.root) {
            Ok(below) => self.walk(path, &self.root, below)?,
            Err(_) => self.walk(
                path,
                Path::new("/"),
                candidate.strip_prefix("/").unwrap_or(&candidate),
            )?,
        };
        let outside_as_spelt = !candidate.starts_with(&self.root);
        self.inside(path, resolved, outside_as_spelt)
    }

    /// A relative path with its `.` and `..` applied lexically: the parts below the root
    /// it names, or why it climbs out.
    fn below_root(&self, path: &str, given: &Path) -> Result<PathBuf, String> {
        let mut below = PathBuf::new();
        for component in given.components() {
            match component {
                Component::CurDir => {}
                Component::ParentDir => {
                    if !below.pop() {
                        return Err(format!(
                            "path `{path}` is outside the workspace root `{}`: `..` climbs above the root",
                            self.root.display()
                        ));
                    }
                }
                Component::Normal(part) => below.push(part),
                Component::RootDir | Component::Prefix(_) => {
                    return Err(format!("path `{path}` is not a relative path"));
                }
            }
        }
        Ok(below)
    }

    /// `base` (a canonical directory) joined with `parts` (plain names), each symlink
    /// among them resolved: one `lstat` per part, and a full resolution only for a link.
    /// The root was canonicalised once, when the workspace was opened, so it is not
    /// resolved again. Below the first part that does not exist nothing can be a link, so
    /// the rest is appended as given.
    fn walk(&self, path: &str, base: &Path, parts: &Path) -> Result<PathBuf, String> {
        let mut resolved = base.to_path_buf();
        let mut parts = parts.iter();
        while let Some(part) = parts.next() {
            resolved.push(part);
            match std::fs::symlink_metadata(&resolved) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    // The link's target may hold `..` and further links: the kernel's
                    // resolution, then the walk goes on from where it leads.
                    resolved = std::fs::canonicalize(&resolved).map_err(|_| {
                        format!(
                            "path `{path}` goes through `{}`, a symlink whose target does not exist; refusing to follow it",
                            self.shown(&resolved)
                        )
                    })?;
                }
                Ok(_) => {}
                Err(_) => {
                    resolved.extend(parts);
                    break;
                }
            }
        }
        Ok(resolved)
    }

    /// `resolved` if it lies inside the root, or why not (`outside_as_spelt`: an absolute
    /// path that names a place outside the root before any link is followed).
    fn inside(
        &self,
        path: &str,
        resolved: PathBuf,
        outside_as_spelt: bool,
    ) -> Result<PathBuf, String> {
        if resolved.starts_with(&self.root) {
            return Ok(resolved);
        }
        Err(if outside_as_spelt {
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
    ///
    /// The tool resolves the path again when it runs rather than reuse this resolution: a
    /// call may wait between its check and its run (for a person's approval, a hook, a
    /// sequential call of the same turn), and a directory swapped for a link meanwhile
    /// must be seen. Walking from the canonical root costs one `lstat` per name.
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
