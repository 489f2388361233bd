//! A server's tool as one of the agent's tools: the model sees the (prefixed) name and the
//! server's own schema; a call goes to the server under its own name.

use std::sync::Arc;

use serde_json::Value;

use super::connection::{Connection, ServerTool};
use super::content::tool_output;
use crate::tools::{BoxFuture, Tool, ToolContext, ToolOutput};

pub struct McpTool {
    /// The name the model calls it by: the entry's `prefix` and the server's name.
    name: String,
    tool: ServerTool,
    server: Arc<Connection>,
}

impl McpTool {
    pub fn new(prefix: &str, tool: ServerTool, server: Arc<Connection>) -> Self {
        McpTool {
            name: format!("{prefix}{}", tool.name),
            tool,
            server,
        }
    }
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

    fn call<'a>(&'a self, arguments: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let label = &self.server.label;
            tokio::select! {
                outcome = self.server.call(&self.tool.name, arguments) => match outcome {
                    Ok(result) => tool_output(label, &result),
                    Err(problem) => ToolOutput::error(format!("MCP server `{label}`: {problem}"))
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
