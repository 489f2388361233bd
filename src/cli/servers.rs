//! The run's MCP servers as the commands see them: started before the agent is compiled,
//! stopped when the guard is dropped, so every return path of a command stops them.

use std::sync::Arc;

use tokio::runtime::{Handle, Runtime};
use tokio::sync::watch;

use crate::compile::{CompileError, CompileInput, start_mcp_servers};
use crate::engine::ErrorCode;
use crate::mcp::{McpServers, StartErrorKind};
use crate::output::result::Status;

/// Started servers; dropping this shuts them down.
pub struct RunningServers {
    servers: Arc<McpServers>,
    runtime: Handle,
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
    pub fn start(
        runtime: &Runtime,
        input: &CompileInput<'_>,
        cancel: watch::Receiver<bool>,
    ) -> Result<Self, StartFailure> {
        match runtime.block_on(start_mcp_servers(input, cancel)) {
            Ok(servers) => Ok(RunningServers {
                servers,
                runtime: runtime.handle().clone(),
            }),
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
}

/// The async runtime of a run: two workers (the machine's tools are mostly waiting on I/O).
pub fn runtime() -> Result<Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|error| format!("cannot start the async runtime: {error}"))
}

impl Drop for RunningServers {
    fn drop(&mut self) {
        self.runtime.block_on(self.servers.shutdown());
    }
}
