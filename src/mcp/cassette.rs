//! MCP exchanges in a cassette (`--record FILE`, `--replay FILE`): each server's tool list
//! and every `tools/call` with what came back, on lines of their own beside the model
//! exchanges, told apart by their `mcp` key (docs/cassette.md). A replayed run starts no
//! server and reaches no network: its MCP tools and their results come from the recording.
//!
//! Servers are known by their label (the command line or URL as the agent file writes it),
//! calls by tool name and arguments; a server's calls are answered in recorded order, each
//! once, like the model's.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::connection::ServerTool;
use crate::provider::{
    CASSETTE_VERSION, CassetteRecorder, Secret, cassette_lines, is_mcp_line, shorten,
};
use crate::sync::lock;

/// One MCP line of a cassette.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mcp")]
pub enum McpExchange {
    /// A server's tools, as it listed them when the run started.
    #[serde(rename = "tools/list")]
    ToolsList {
        version: u32,
        server: String,
        tools: Vec<ServerTool>,
    },
    /// One call and what came back: the `tools/call` result as JSON (`isError` results
    /// included), or why there was none.
    #[serde(rename = "tools/call")]
    ToolsCall {
        version: u32,
        server: String,
        tool: String,
        arguments: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
}

/// Records one server's exchanges into the run's cassette, its `env` or `headers` values
/// kept out (they carry tokens, and a server may echo them).
pub struct McpRecorder {
    cassette: Arc<CassetteRecorder>,
    server: String,
    secrets: Vec<Secret>,
}

impl McpRecorder {
    pub fn new(
        cassette: Arc<CassetteRecorder>,
        server: &str,
        settings: &[(String, String)],
    ) -> Self {
        McpRecorder {
            cassette,
            server: server.to_string(),
            secrets: settings
                .iter()
                .map(|(_, value)| Secret::new(value.clone()))
                .collect(),
        }
    }

    pub fn tools(&self, tools: &[ServerTool]) {
        self.write(&McpExchange::ToolsList {
            version: CASSETTE_VERSION,
            server: self.server.clone(),
            tools: tools.to_vec(),
        });
    }

    pub fn call(&self, tool: &str, arguments: &Value, outcome: &Result<Value, String>) {
        let (result, error) = match outcome {
            Ok(result) => (Some(result.clone()), None),
            Err(problem) => (None, Some(problem.clone())),
        };
        self.write(&McpExchange::ToolsCall {
            version: CASSETTE_VERSION,
            server: self.server.clone(),
            tool: tool.to_string(),
            arguments: arguments.clone(),
            result,
            error,
        });
    }

    /// A line that cannot be written is a warning: the call it records has happened, and
    /// its result still goes to the model.
    fn write(&self, exchange: &McpExchange) {
        if let Err(error) = self.cassette.append_value(exchange, &self.secrets) {
            eprintln!("warning: MCP server `{}`: {error}", self.server);
        }
    }
}

/// The MCP exchanges of a cassette, shared by every server of a run (and every turn of a
/// chat): each recorded call is answered once.
#[derive(Debug)]
pub struct McpReplay {
    path: PathBuf,
    /// Each exchange with its line in the file.
    exchanges: Vec<(usize, McpExchange)>,
    used: Mutex<Vec<bool>>,
}

impl McpReplay {
    /// Reads the MCP lines of the cassette at `path` (the model exchanges are
    /// [`ReplayStore`](crate::provider::ReplayStore)'s).
    pub fn load(path: &Path) -> Result<Arc<Self>, String> {
        let mut exchanges = Vec::new();
        for (line, text) in cassette_lines(path).map_err(|e| e.to_string())? {
            if !is_mcp_line(&text) {
                continue;
            }
            let unreadable =
                |why: String| format!("cannot replay line {line} of {}: {why}", path.display());
            let exchange = serde_json::from_str::<McpExchange>(&text)
                .map_err(|e| unreadable(format!("not an MCP exchange: {e}")))?;
            if exchange.version() != CASSETTE_VERSION {
                return Err(unreadable(format!(
                    "cassette version {} is not supported (this runner reads version {CASSETTE_VERSION})",
                    exchange.version()
                )));
            }
            exchanges.push((line, exchange));
        }
        let used = Mutex::new(vec![false; exchanges.len()]);
        Ok(Arc::new(McpReplay {
            path: path.to_path_buf(),
            exchanges,
            used,
        }))
    }

    /// The tools `server` listed when the run was recorded; a server the recording never
    /// started is an error naming those it did.
    pub fn tools(&self, server: &str) -> Result<Vec<ServerTool>, String> {
        let listed = self
            .exchanges
            .iter()
            .find_map(|(_, exchange)| match exchange {
                McpExchange::ToolsList {
                    server: recorded,
                    tools,
                    ..
                } if recorded == server => Some(tools.clone()),
                _ => None,
            });
        listed.ok_or_else(|| {
            let recorded: Vec<String> = self
                .exchanges
                .iter()
                .filter_map(|(_, exchange)| match exchange {
                    McpExchange::ToolsList { server, .. } => Some(format!("`{server}`")),
                    McpExchange::ToolsCall { .. } => None,
                })
                .collect();
            let recorded = match recorded.is_empty() {
                true => "none".to_string(),
                false => recorded.join(", "),
            };
            format!(
                "{} has no recording of this server (it recorded: {recorded}); record the run again with --record",
                self.path.display()
            )
        })
    }

    /// The recorded answer to the first unused call of `tool` on `server` with these
    /// arguments; a miss says which server, tool and arguments, and the closest recorded call.
    pub fn call(&self, server: &str, tool: &str, arguments: &Value) -> Result<Value, String> {
        let mut used = lock(&self.used);
        let hit = self
            .exchanges
            .iter()
            .enumerate()
            .find(|(i, (_, exchange))| {
                !used[*i] && exchange.is_call(server, tool, Some(arguments))
            });
        let Some((i, (_, McpExchange::ToolsCall { result, error, .. }))) = hit else {
            return Err(self.explain_miss(server, tool, arguments, &used));
        };
        used[i] = true;
        match (result, error) {
            (Some(result), _) => Ok(result.clone()),
            (None, Some(error)) => Err(error.clone()),
            (None, None) => Err("the recorded call has neither result nor error".into()),
        }
    }

    fn explain_miss(&self, server: &str, tool: &str, arguments: &Value, used: &[bool]) -> String {
        let mut message = format!(
            "--replay: no recorded answer for `{tool}` with arguments {} in {}",
            shorten(&arguments.to_string(), 200),
            self.path.display()
        );
        let same_tool: Vec<(usize, &Value, bool)> = self
            .exchanges
            .iter()
            .enumerate()
            .filter_map(|(i, (line, exchange))| match exchange {
                McpExchange::ToolsCall { arguments, .. }
                    if exchange.is_call(server, tool, None) =>
                {
                    Some((*line, arguments, used[i]))
                }
                _ => None,
            })
            .collect();
        match same_tool.iter().find(|(_, recorded, _)| *recorded == arguments) {
            Some((line, _, _)) => message.push_str(&format!(
                "; it matches the call on line {line}, whose answer was already used: the run called it more often than the recording"
            )),
            None => match same_tool.first() {
                Some((line, recorded, _)) => message.push_str(&format!(
                    "; the recording called it with {} (line {line})",
                    shorten(&recorded.to_string(), 200)
                )),
                None => message.push_str("; the recording never called this tool"),
            },
        }
        message.push_str(" (record the run again with --record)");
        message
    }
}

impl McpExchange {
    fn version(&self) -> u32 {
        match self {
            McpExchange::ToolsList { version, .. } | McpExchange::ToolsCall { version, .. } => {
                *version
            }
        }
    }

    fn is_call(&self, server: &str, tool: &str, with: Option<&Value>) -> bool {
        match self {
            McpExchange::ToolsCall {
                server: recorded,
                tool: called,
                arguments,
                ..
            } => recorded == server && called == tool && with.is_none_or(|a| a == arguments),
            McpExchange::ToolsList { .. } => false,
        }
    }
}
