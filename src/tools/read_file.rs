//! `read_file`: reads a text file inside the workspace, optionally a range of lines.

use serde_json::{Value, json};

use super::text::looks_binary;
use super::{BoxFuture, Signature, Tool, ToolContext, ToolOutput, Workspace, u64_arg};

/// Files larger than this are refused (read them in pieces with `search_files` or `shell`).
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// The `read_file` built-in.
pub struct ReadFileTool {
    sig: Signature,
    workspace: Workspace,
}

impl ReadFileTool {
    pub fn new(workspace: Workspace) -> Self {
        let parameters = json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "Path of the file, relative to the workspace root."
                },
                "offset": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "First line to return, 1-based (default 1)."
                },
                "limit": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "How many lines to return at most (default: to the end of the file)."
                }
            },
            "required": ["path"],
            "additionalProperties": false
        });
        ReadFileTool {
            sig: Signature::new(
                "read_file",
                "Read a text file in the workspace. Returns its content, or the lines \
                 offset..offset+limit (1-based) of it; the metadata gives the total number of lines.",
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
        let path_arg = arguments["path"].as_str().unwrap_or_default();
        let path = match self.workspace.resolve(path_arg) {
            Ok(path) => path,
            Err(message) => return ToolOutput::error(message),
        };
        let shown = self.workspace.shown(&path);
        let meta = match tokio::fs::metadata(&path).await {
            Ok(meta) => meta,
            Err(e) => return ToolOutput::error(format!("cannot read `{shown}`: {e}")),
        };
        if meta.is_dir() {
            return ToolOutput::error(format!(
                "`{shown}` is a directory; use list_dir to see its entries"
            ));
        }
        // A FIFO or a device would block the call forever or never end.
        if !meta.is_file() {
            return ToolOutput::error(format!(
                "`{shown}` is not a regular file (a pipe, socket or device); read_file reads files only"
            ));
        }
        if meta.len() > MAX_FILE_BYTES {
            return ToolOutput::error(format!(
                "`{shown}` is {} bytes, more than the {MAX_FILE_BYTES} bytes read_file reads",
                meta.len()
            ));
        }
        let bytes = match tokio::fs::read(&path).await {
            Ok(bytes) => bytes,
            Err(e) => return ToolOutput::error(format!("cannot read `{shown}`: {e}")),
        };
        if looks_binary(&bytes) {
            return ToolOutput::error(format!(
                "`{shown}` looks like a binary file (it contains NUL bytes); read_file reads text only"
            ));
        }
        let text = String::from_utf8_lossy(&bytes);
        let lossy = matches!(text, std::borrow::Cow::Owned(_));
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let total = lines.len() as u64;
        let offset = u64_arg(&arguments, "offset").unwrap_or(1).max(1);
        let limit = u64_arg(&arguments, "limit");
        let start = (offset - 1).min(total) as usize;
        let end = match limit {
            Some(limit) => (start as u64).saturating_add(limit).min(total) as usize,
            None => total as usize,
        };
        let content: String = lines[start..end].concat();
        let mut out = ToolOutput::ok(content)
            .with_meta("path", shown)
            .with_meta("total_lines", total)
            .with_meta("offset", offset)
            .with_meta("returned_lines", (end - start) as u64)
            .with_meta("truncated", end < total as usize);
        if lossy {
            out = out.with_meta("invalid_utf8_replaced", true);
        }
        if offset > total && total > 0 {
            out = out.with_meta(
                "note",
                format!("offset {offset} is past the end of the file ({total} lines)"),
            );
        }
        out
    }
}

impl Tool for ReadFileTool {
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
        self.workspace.policy_path(arguments, None)
    }
    fn call<'a>(&'a self, arguments: Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(self.run(arguments))
    }
}
