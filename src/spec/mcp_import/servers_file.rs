//! The JSON file other MCP clients keep their servers in: `{"mcpServers": {NAME: SERVER}}`
//! (Claude Desktop, Claude Code's `.mcp.json`, Cursor) or `{"servers": {…}}` (VS Code).
//! Other top-level keys are left alone (such a file often configures the whole
//! application); a server's keys are only those runner understands, so nothing a server
//! needs is dropped without a word.

use std::path::Path;

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::Value;

use super::ImportProblem;

/// One server as the file writes it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, expecting = "an object with `command` or `url`")]
pub struct FileServer {
    /// `stdio`, `http`, `streamable-http` or `sse`; absent, `command` or `url` says it.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: IndexMap<String, String>,
    pub url: Option<String>,
    #[serde(default)]
    pub headers: IndexMap<String, String>,
}

/// The file's servers by name, in file order; one runner cannot read is kept with why, so
/// that it matters only when it is imported.
pub type FileServers = IndexMap<String, Result<FileServer, String>>;

/// Reads the servers of the file at `path`; `config` is the path as the agent file
/// writes it, for messages.
pub fn read_servers(path: &Path, config: &str) -> Result<FileServers, ImportProblem> {
    let text = read_text(path, config)?;
    let document: Value = serde_json::from_str(&text).map_err(|error| ImportProblem::Syntax {
        config: config.to_string(),
        line: error.line(),
        column: error.column(),
        message: without_position(&error),
    })?;
    let shape = |message: String| ImportProblem::Shape {
        config: config.to_string(),
        message,
    };
    let Value::Object(mut top) = document else {
        return Err(shape("the file is not a JSON object".into()));
    };
    let servers = match (top.remove("mcpServers"), top.remove("servers")) {
        (Some(servers), None) | (None, Some(servers)) => servers,
        (Some(_), Some(_)) => {
            return Err(shape(
                "the file has both `mcpServers` and `servers`: keep one".into(),
            ));
        }
        (None, None) => {
            return Err(shape(
                "the file has no `mcpServers` (or VS Code's `servers`) object".into(),
            ));
        }
    };
    let Value::Object(servers) = servers else {
        return Err(shape(
            "its `mcpServers` is not an object of servers by name".into(),
        ));
    };
    Ok(servers
        .into_iter()
        .map(|(name, server)| {
            (
                name,
                FileServer::deserialize(server).map_err(|e| e.to_string()),
            )
        })
        .collect())
}

/// The file's text, within the bound of agent files.
fn read_text(path: &Path, config: &str) -> Result<String, ImportProblem> {
    let unreadable = |reason: String| ImportProblem::Unreadable {
        config: config.to_string(),
        reason,
    };
    let bytes = match crate::spec::validate::read_bounded(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(ImportProblem::MissingFile {
                config: config.to_string(),
                looked: path.to_path_buf(),
            });
        }
        Err(error) => return Err(unreadable(error.to_string())),
    };
    if bytes.len() > crate::spec::yaml::MAX_INPUT_BYTES {
        return Err(unreadable(format!(
            "it is larger than {} MiB",
            crate::spec::yaml::MAX_INPUT_BYTES / (1024 * 1024)
        )));
    }
    String::from_utf8(bytes).map_err(|_| unreadable("it is not UTF-8".into()))
}

/// serde_json's message without the ` at line L column C` it appends (said separately).
fn without_position(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let suffix = format!(" at line {} column {}", error.line(), error.column());
    text.strip_suffix(&suffix).unwrap_or(&text).to_string()
}
