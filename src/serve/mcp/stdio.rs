//! `runner mcp [PATH...]`: the agents under the paths as MCP tools over stdio, for an
//! editor's `mcpServers` entry. The process trusts its parent: whoever can write to its
//! stdin can run the agents, as they could run `runner exec` (no token, no Host check).
//! stdout carries the protocol only; warnings and diagnostics go to stderr.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceExt;

use super::{Agents, Host};
use crate::serve::server::Server;
use crate::session::SessionsAt;
use crate::session::files::default_sessions_dir;

/// How long runs in flight get to end, checkpointed, once the client has gone.
const INTERRUPT_WAIT: Duration = Duration::from_secs(10);

/// Serves until the client closes stdin (or a signal), then returns.
/// `jobs` runs at once, `queue` calls may wait for one.
pub fn run(paths: Vec<PathBuf>, (jobs, queue): (usize, usize)) -> Result<(), String> {
    let sessions = SessionsAt::Dir(default_sessions_dir());
    let server = Arc::new(Server::at(paths, jobs, queue, sessions)?);
    // A path that does not exist is said now, not at the first `tools/list`.
    server.catalog.list()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| format!("cannot start the runtime: {error}"))?;
    runtime.block_on(async {
        let agents = Agents::new(Host(server.clone()));
        let service = agents
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|error| format!("the MCP handshake failed: {error}"))?;
        let cancel = service.cancellation_token();
        let served = tokio::select! {
            quit = service.waiting() => quit.map(|_| ()).map_err(|error| format!("the MCP connection failed: {error}")),
            () = signalled() => {
                cancel.cancel();
                Ok(())
            }
        };
        // The calls are over: their runs end interrupted, resumable.
        server.slots.close();
        server.runs.interrupt_all(INTERRUPT_WAIT).await;
        served
    })
}

/// The first SIGINT or SIGTERM.
async fn signalled() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = interrupt.recv() => {}
        _ = terminate.recv() => {}
    }
}
