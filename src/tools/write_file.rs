//! `write_file`: writes a text file inside the workspace, atomically.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use super::{BoxFuture, Signature, Tool, ToolContext, ToolOutput, Workspace};

/// The `write_file` built-in.
pub struct WriteFileTool {
    sig: Signature,
    workspace: Workspace,
}

impl WriteFileTool {
    pub fn new(workspace: Workspace) -> Self {
        let parameters = json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "Path of the file, relative to the workspace root. Missing parent directories are created."
                },
                "content": {
                    "type": "string",
                    "description": "The complete new content of the file."
                }
            },
            "required": ["path", "content"],
            "additionalProperties": false
        });
        WriteFileTool {
            sig: Signature::new(
                "write_file",
                "Create or overwrite a text file in the workspace with the given content.",
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
        let path_arg = arguments["path"].as_str().unwrap_or_default().to_string();
        let content = arguments["content"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let path = match self.workspace.resolve_writable(&path_arg) {
            Ok(path) => path,
            Err(message) => return ToolOutput::error(message),
        };
        let shown = self.workspace.shown(&path);
        if path == self.workspace.root() {
            return ToolOutput::error("cannot write to the workspace root itself".to_string());
        }
        let result = tokio::task::spawn_blocking(move || write(&path, content.as_bytes())).await;
        match result {
            Ok(Ok(created)) => ToolOutput::ok(json!({
                "path": shown,
                "bytes": arguments["content"].as_str().map(str::len).unwrap_or(0),
            }))
            .with_meta("created", created),
            Ok(Err(e)) => ToolOutput::error(format!("cannot write `{shown}`: {e}")),
            Err(e) => ToolOutput::error(format!("cannot write `{shown}`: {e}")),
        }
    }
}

/// Creates the parent directories, then writes through a temp file in the same directory,
/// fsync and rename. Returns whether the file is new.
fn write(path: &Path, bytes: &[u8]) -> std::io::Result<bool> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    if let Ok(meta) = std::fs::symlink_metadata(path)
        && meta.is_dir()
    {
        return Err(std::io::Error::other("it is a directory"));
    }
    let created = std::fs::symlink_metadata(path).is_err();
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("it has no parent directory"))?;
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(
        ".{name}.tmp.{}.{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        // An overwritten file keeps its permissions (an executable script stays executable).
        if let Ok(old) = std::fs::metadata(path) {
            let _ = std::fs::set_permissions(&temp, old.permissions());
        }
        std::fs::rename(&temp, path)?;
        if let Ok(dir) = std::fs::File::open(dir) {
            let _ = dir.sync_all();
        }
        Ok(created)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

impl Tool for WriteFileTool {
    fn name(&self) -> &str {
        self.sig.name
    }
    fn description(&self) -> &str {
        &self.sig.description
    }
    fn parameters(&self) -> &Value {
        &self.sig.parameters
    }
    /// Writing the same content again leaves the same file.
    fn idempotent(&self) -> bool {
        true
    }
    fn policy_arguments(&self, arguments: &Value) -> Option<Value> {
        self.workspace.policy_path(arguments, None)
    }
    fn call<'a>(&'a self, arguments: Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(self.run(arguments))
    }
}
