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
        let workspace = self.workspace.clone();
        // runner's state directories are not the model's to see.
        let listing =
            tokio::task::spawn_blocking(move || list(&path, |entry| workspace.hides(entry))).await;
        let mut entries = match listing {
            Ok(Ok(entries)) => entries,
            Ok(Err(e)) => return ToolOutput::error(format!("cannot list `{shown}`: {e}")),
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

/// (name, type, size) of each entry but those `hidden` skips; size is `null` for
/// directories. Symlinks are not followed: their size is the link's own.
fn list(
    path: &std::path::Path,
    hidden: impl Fn(&std::path::Path) -> bool,
) -> std::io::Result<Vec<(String, &'static str, Option<u64>)>> {
    // Opening it as a directory says whether it is one: no `stat` of its own.
    let listing = std::fs::read_dir(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotADirectory => {
            std::io::Error::other("not a directory; use read_file to read a file")
        }
        _ => e,
    })?;
    let mut entries = Vec::new();
    for entry in listing {
        let entry = entry?;
        if hidden(&entry.path()) {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        entries.push(match described(&entry) {
            Some((kind, size)) => (name, kind, size),
            None => (name, "unknown", None),
        });
    }
    Ok(entries)
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
