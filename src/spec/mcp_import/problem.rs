//! What keeps an import from giving its servers, said for the person who wrote it, with
//! the diagnostic code `runner validate` reports it under.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::spec::diagnostic::{Code, Diagnostic, did_you_mean};
use crate::spec::yaml::Position;

/// Why an import gives no servers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImportProblem {
    MissingFile {
        config: String,
        looked: PathBuf,
    },
    Unreadable {
        config: String,
        reason: String,
    },
    /// Not JSON.
    Syntax {
        config: String,
        line: usize,
        column: usize,
        message: String,
    },
    /// JSON, but not an object of servers under `mcpServers` or `servers`.
    Shape {
        config: String,
        message: String,
    },
    /// A server runner cannot use as the file writes it.
    Server {
        config: String,
        server: String,
        message: String,
    },
    UnknownServer {
        config: String,
        name: String,
        known: Vec<String>,
    },
    NoServers {
        config: String,
    },
    /// `${NAME}` of a variable the agent does not declare under `env:`.
    Undeclared {
        config: String,
        server: String,
        key: String,
        name: String,
    },
    /// `tools` with several servers: an allowlist names one server's tools.
    ToolsOfSeveral {
        count: usize,
    },
}

impl ImportProblem {
    pub fn code(&self) -> Code {
        match self {
            ImportProblem::MissingFile { .. } => Code::MissingFile,
            ImportProblem::Unreadable { .. } => Code::Io,
            ImportProblem::Undeclared { .. } => Code::UndeclaredVariable,
            _ => Code::McpConfig,
        }
    }

    fn hint(&self) -> Option<String> {
        match self {
            ImportProblem::MissingFile { looked, .. } => Some(format!(
                "paths are relative to this agent file; looked for {}",
                looked.display()
            )),
            ImportProblem::Shape { .. } => Some(
                r#"runner reads {"mcpServers": {"NAME": {"command": "…", "args": […]}}}"#.into(),
            ),
            ImportProblem::UnknownServer { name, known, .. } => Some(match known.as_slice() {
                [] => "the file lists no servers".to_string(),
                _ => {
                    let guess = did_you_mean(name, known.iter().map(String::as_str));
                    let guess = guess
                        .map(|g| format!("did you mean `{g}`? "))
                        .unwrap_or_default();
                    format!("{guess}its servers: {}", quoted(known))
                }
            }),
            ImportProblem::Undeclared { name, .. } => Some(format!(
                "add `{name}` to the agent's `env:` list: an agent reads only the variables it declares"
            )),
            ImportProblem::ToolsOfSeveral { .. } => Some(
                "name one server in `servers`, or import each server in an entry of its own".into(),
            ),
            _ => None,
        }
    }

    /// The problem as `runner validate` reports it, at the entry's `config` key.
    pub fn diagnostic(&self, file: &Path, at: Position, pointer: &str) -> Diagnostic {
        Diagnostic::error(file, at, self.code(), pointer, self.to_string())
            .with_optional_hint(self.hint())
    }
}

impl fmt::Display for ImportProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImportProblem::MissingFile { config, .. } => {
                write!(f, "MCP config file `{config}` does not exist")
            }
            ImportProblem::Unreadable { config, reason } => {
                write!(f, "cannot read MCP config file `{config}`: {reason}")
            }
            ImportProblem::Syntax {
                config,
                line,
                column,
                message,
            } => write!(
                f,
                "`{config}` is not valid JSON: {message} (line {line}, column {column})"
            ),
            ImportProblem::Shape { config, message } => {
                write!(f, "`{config}` is not an MCP servers file: {message}")
            }
            ImportProblem::Server {
                config,
                server,
                message,
            } => write!(f, "server `{server}` of `{config}`: {message}"),
            ImportProblem::UnknownServer { config, name, .. } => {
                write!(f, "`{config}` has no server `{name}`")
            }
            ImportProblem::NoServers { config } => write!(f, "`{config}` lists no servers"),
            ImportProblem::Undeclared {
                config,
                server,
                key,
                name,
            } => write!(
                f,
                "server `{server}` of `{config}` reads `${{{name}}}` in `{key}`, a variable this agent does not declare"
            ),
            ImportProblem::ToolsOfSeveral { count } => write!(
                f,
                "`tools` names the tools of one server, but this entry imports {count}"
            ),
        }
    }
}

fn quoted(names: &[impl AsRef<str>]) -> String {
    names
        .iter()
        .map(|name| format!("`{}`", name.as_ref()))
        .collect::<Vec<_>>()
        .join(", ")
}
