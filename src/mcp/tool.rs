//! A server's tool as one of the agent's tools: the model sees the (prefixed) name and the
//! server's own schema; a call goes to the server under its own name.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::connection::{Connection, ServerTool};
use super::content::tool_output;
use crate::tools::{BoxFuture, Tool, ToolContext, ToolOutput};

pub struct McpTool {
    /// The name the model calls it by: the entry's `prefix` and the server's name.
    name: String,
    tool: ServerTool,
    server: Arc<Connection>,
    /// How long a call may take (the entry's `call_timeout`).
    timeout: Duration,
}

impl McpTool {
    pub fn new(prefix: &str, tool: ServerTool, server: Arc<Connection>, timeout: Duration) -> Self {
        McpTool {
            name: model_name(prefix, &tool.name),
            tool,
            server,
            timeout,
        }
    }
}

/// The name the model sees. Model APIs accept `[A-Za-z0-9_-]{1,64}` while MCP also allows
/// dots (`github.list_issues`), so other characters become `_` and the name is cut at 64;
/// two tools that end up with one name are reported as a collision.
pub fn model_name(prefix: &str, name: &str) -> String {
    format!("{prefix}{name}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.tool.description
    }

    fn parameters(&self) -> &Value {
        &self.tool.input_schema
    }

    fn idempotent(&self) -> bool {
        self.tool.idempotent
    }

    fn origin(&self) -> Map<String, Value> {
        Map::from_iter([(
            "mcp_server".to_string(),
            Value::from(self.server.label.as_str()),
        )])
    }

    fn call<'a>(&'a self, arguments: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let label = &self.server.label;
            let call = tokio::time::timeout(
                self.timeout,
                self.server.call(&self.tool.name, arguments, ctx),
            );
            tokio::select! {
                // Dropping a call that timed out sends the server a cancellation too.
                outcome = call => match outcome {
                    Ok(Ok(result)) => tool_output(label, &result),
                    Ok(Err(problem)) => ToolOutput::error(format!("MCP server `{label}`: {problem}"))
                        .with_meta("mcp_server", label.as_str()),
                    Err(_) => ToolOutput::error(format!(
                        "MCP server `{label}` did not answer within {} (call_timeout)",
                        crate::spec::duration::HumanDuration(self.timeout)
                    ))
                    .with_meta("mcp_server", label.as_str()),
                },
                // Dropping the call sends the server a cancellation for the request.
                _ = ctx.cancelled() => ToolOutput::error("interrupted before the MCP server answered")
                    .with_meta("mcp_server", label.as_str())
                    .with_meta("cancelled", true),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::model_name;

    #[test]
    fn names_are_made_acceptable_to_model_apis() {
        assert_eq!(model_name("ev_", "get-sum"), "ev_get-sum");
        assert_eq!(model_name("", "github.list_issues"), "github_list_issues");
        assert_eq!(model_name("x/", "é"), "x__");
        assert_eq!(model_name("", &"a".repeat(100)).len(), 64);
    }
}
