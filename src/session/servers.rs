//! The run's MCP servers as a run sees them: started before the agent is compiled,
//! stopped by [`RunningServers::stop`] as the run ends; a guard dropped without it (an
//! early error, a panic) kills their processes.

use std::sync::Arc;

use tokio::runtime::Runtime;
use tokio::sync::watch;

use crate::compile::{CompileError, CompileInput, start_mcp_servers};
use crate::engine::ErrorCode;
use crate::mcp::{McpServers, StartErrorKind};
use crate::output::result::Status;

/// Started servers.
pub struct RunningServers {
    servers: Arc<McpServers>,
}

/// Why the servers could not be started, and how the command ends because of it.
pub struct StartFailure {
    /// `invalid` (exit 2) for a configuration problem, `failed` (1), `interrupted` (130).
    pub status: Status,
    /// The result's error code: `mcp_server`, or `invalid_agent` for the rest of the file.
    pub code: ErrorCode,
    pub message: String,
}

impl RunningServers {
    /// Starts every MCP server of the agent tree that `input` roots.
    pub async fn start(
        input: &CompileInput<'_>,
        cancel: watch::Receiver<bool>,
    ) -> Result<Self, StartFailure> {
        match start_mcp_servers(input, cancel).await {
            Ok(servers) => Ok(RunningServers { servers }),
            Err(CompileError::Mcp(error)) => Err(StartFailure {
                status: match error.kind {
                    StartErrorKind::Config => Status::Invalid,
                    StartErrorKind::Failed => Status::Failed,
                    StartErrorKind::Interrupted => Status::Interrupted,
                },
                code: ErrorCode::McpServer,
                message: error.to_string(),
            }),
            Err(error) => Err(StartFailure {
                status: Status::Invalid,
                code: ErrorCode::InvalidAgent,
                message: error.to_string(),
            }),
        }
    }

    pub fn servers(&self) -> Arc<McpServers> {
        self.servers.clone()
    }

    /// Ends every server's session and stops its process.
    pub async fn stop(self) {
        self.servers.shutdown().await;
    }
}

/// The async runtime of the CLI's runs: one thread, the caller's. A run mostly waits (on
/// a model, a tool, a process), and with worker threads each wake-up crossed threads: the
/// HTTP connection's task woke the run on another thread for every chunk of a reply, a
/// futex and an eventfd write each, the larger part of a step's system calls. Blocking work
/// (file listings, searches, fsync-heavy writes of tools) still goes to tokio's blocking
/// threads, and every program a tool starts is a process of its own.
///
/// At most 64 blocking threads (tokio's default is 512): one thread spawns a turn's calls
/// all at once, so a reply of 10,000 `list_dir` calls started a thread for each until the
/// cap, 60 MiB of stacks and allocator arenas more at its peak than with worker threads.
pub fn runtime() -> Result<Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .max_blocking_threads(64)
        .enable_all()
        .build()
        .map_err(|error| format!("cannot start the async runtime: {error}"))
}
