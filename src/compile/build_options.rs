//! Run-wide options of a compile: the cassettes of `--record` and `--replay`, shared by
//! every model and MCP server of the agent tree, and the run's trace context, which every
//! program and server the tree starts or calls is given. They live here, above `provider`
//! and `mcp`, because they are both's: a provider knows nothing of MCP.

use std::sync::Arc;

use crate::mcp::McpReplay;
use crate::trace_env::ChildTrace;

#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// The models' recorder (which the MCP servers record into too) and replay store.
    pub models: crate::provider::BuildOptions,
    /// The MCP servers' exchanges of the `--replay` cassette.
    pub mcp_replay: Option<Arc<McpReplay>>,
    /// The remote A2A agents' exchanges of the `--replay` cassette.
    pub a2a_replay: Option<Arc<crate::a2a_client::cassette::A2aReplay>>,
    /// The run's trace context (OpenTelemetry export): its hooks, `shell` commands and
    /// stdio MCP servers get it as `TRACEPARENT`, MCP servers over HTTP and remote A2A
    /// agents as a `traceparent` header. One per run, never shared with another run.
    pub trace: ChildTrace,
}
