//! `list_dir`: the entries of a directory inside the workspace.

use serde_json::{Value, json};

use super::{BoxFuture, Signature, Tool, ToolContext, ToolOutput, Workspace, str_arg};

/// At most this many entries are returned; the metadata says when there were more.
pub const MAX_ENTRIES: usize = 2000;

/// The `list_dir` built-in.
pub struct ListDirTool {
    sig: Signature,
    workspace: Workspace,
}

impl ListDirTool {
    pub fn new(workspace: Workspace) -> Self {
        let parameters = json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "default": ".",
                    "description": "Directory to list, relative to the workspace root (default: the root)."
                }
            },
            "additionalProperties": false
        });
        ListDirTool {
            sig: Signature::new(
                "list_dir",
                "List a directory in the workspace: each entry's name, type (file, dir or symlink) \
                 and size in bytes, sorted by name.",
                parameters,
            ),
            workspace,
        }
    }

    async fn run(&self, arguments: Value) -> ToolOutput {
        let arguments = match self.sig.accept(arguments) {
            Ok(arguments) => arguments,
            Err(out) => return out,
        };
        let path_arg = str_arg(&arguments, "path", ".").to_string();
        let path = match self.workspace.resolve(&path_arg) {
            Ok(path) => path,
            Err(message) => return ToolOutput::error(message),
        };
        let shown = self.workspace.shown(&path);
        let mut entries = match self.listing(path).await {
            Ok(entries) => entries,
            Err(e) => return ToolOutput::error(format!("cannot list `{shown}`: {e}")),
        };
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let total = entries.len();
        entries.truncate(MAX_ENTRIES);
        let data: Vec<Value> = entries
            .into_iter()
            .map(|(name, kind, size)| json!({"name": name, "type": kind, "size": size}))
            .collect();
        let mut out = ToolOutput::ok(data)
            .with_meta("path", shown)
            .with_meta("total_entries", total as u64)
            .with_meta("truncated", total > MAX_ENTRIES);
        if total > MAX_ENTRIES {
            out = out.with_meta(
                "note",
                format!("only the first {MAX_ENTRIES} of {total} entries are listed"),
            );
        }
        out
    }
}

/// An entry as listed: name, type, size (`None` for directories).
type Listed = (String, &'static str, Option<u64>);

/// Entries read on the runtime's own thread before the rest of a listing moves to the
/// blocking pool. A small directory is a handful of system calls, cheaper than the two
/// thread hand-offs of the pool; a large or slow one must not hold up the other calls of
/// the turn.
const READ_INLINE: usize = 64;

impl ListDirTool {
    /// The entries of `path` but runner's state directories, which are not the model's
    /// to see.
    async fn listing(&self, path: std::path::PathBuf) -> std::io::Result<Vec<Listed>> {
        let mut listing = Listing::open(&path)?;
        let mut entries = Vec::new();
        if listing.read(&mut entries, READ_INLINE, &self.workspace)? {
            return Ok(entries);
        }
        let workspace = self.workspace.clone();
        tokio::task::spawn_blocking(move || {
            listing.read(&mut entries, usize::MAX, &workspace)?;
            Ok(entries)
        })
        .await
        .map_err(std::io::Error::other)?
    }
}

/// A directory being read.
struct Listing(std::fs::ReadDir);

impl Listing {
    fn open(path: &std::path::Path) -> std::io::Result<Self> {
        // Opening it as a directory says whether it is one: no `stat` of its own.
        std::fs::read_dir(path)
            .map(Listing)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotADirectory => {
                    std::io::Error::other("not a directory; use read_file to read a file")
                }
                _ => e,
            })
    }

    /// Reads up to `at_most` more entries (the hidden ones count) into `entries`; true
    /// when the directory has no more. Symlinks are not followed: their size is the
    /// link's own.
    fn read(
        &mut self,
        entries: &mut Vec<Listed>,
        at_most: usize,
        workspace: &Workspace,
    ) -> std::io::Result<bool> {
        for _ in 0..at_most {
            let Some(entry) = self.0.next() else {
                return Ok(true);
            };
            let entry = entry?;
            if workspace.hides(&entry.path()) {
                continue;
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            entries.push(match described(&entry) {
                Some((kind, size)) => (name, kind, size),
                None => (name, "unknown", None),
            });
        }
        Ok(false)
    }
}

/// An entry's type and size. The type comes with the listing on most file systems, so only
/// an entry with a size (a file, a link) costs a `stat`.
fn described(entry: &std::fs::DirEntry) -> Option<(&'static str, Option<u64>)> {
    let kind = entry.file_type().ok()?;
    if kind.is_dir() {
        return Some(("dir", None));
    }
    if !kind.is_symlink() && !kind.is_file() {
        return Some(("other", None));
    }
    let size = entry.metadata().ok()?.len();
    Some((
        if kind.is_symlink() { "symlink" } else { "file" },
        Some(size),
    ))
}

impl Tool for ListDirTool {
    fn name(&self) -> &str {
        self.sig.name
    }
    fn description(&self) -> &str {
        &self.sig.description
    }
    fn parameters(&self) -> &Value {
        &self.sig.parameters
    }
    fn idempotent(&self) -> bool {
        true
    }
    fn policy_arguments(&self, arguments: &Value) -> Option<Value> {
        self.workspace.policy_path(arguments, Some("."))
    }
    fn call<'a>(&'a self, arguments: Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(self.run(arguments))
    }
}
