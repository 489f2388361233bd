//! MCP tool servers (SPEC §2.4): stdio servers started as child processes and Streamable
//! HTTP servers, spoken to with the official SDK (rmcp). Every server an agent tree names
//! is connected when the run starts, so a broken one stops the run before any model call;
//! their tools join the agents' tools under the servers' own schemas; the servers are shut
//! down when the run ends, whichever way it ends.

mod cassette;
mod client;
mod connection;
mod content;
mod elicit;
mod endpoint;
mod oversized;
mod process;
mod progress;
mod tool;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

pub use cassette::McpReplay;
pub use connection::{McpCassette, ServerTool, StartError, StartErrorKind};
pub use elicit::check_answer as check_form_answer;
pub use endpoint::Endpoint;

use crate::tools::{AnswerSource, ChildEnv, Protected, Tool};
use connection::{Connection, OpenOptions};
use tool::McpTool;

/// What starting servers needs besides their endpoints.
#[derive(Clone)]
pub struct StartOptions {
    /// The working directory of stdio servers (the run's workspace).
    pub workspace: PathBuf,
    /// `runner`'s own files, which a sandboxed server may not write (or read: its state).
    pub protected: Arc<Protected>,
    /// What stdio servers are started with (the agents' key variables withheld, the run's
    /// trace); servers over HTTP are sent the run's trace as a `traceparent` header.
    pub env: ChildEnv,
    /// The run's stop signal: starting gives up when it flips.
    pub cancel: watch::Receiver<bool>,
    /// Who answers a server's `elicitation/create` (terminal, `--answers`), in order.
    pub answers: Vec<Arc<dyn AnswerSource>>,
    /// Live, recorded (`--record`), or replayed with no server (`--replay`).
    pub cassette: McpCassette,
}

/// The run's connected servers, shared by every agent of the tree.
#[derive(Default)]
pub struct McpServers {
    connections: Vec<(Endpoint, Arc<Connection>)>,
}

impl McpServers {
    /// No servers (agents without `mcp` entries, tests).
    pub fn none() -> Arc<Self> {
        Arc::new(McpServers::default())
    }

    /// Connects every distinct endpoint, all at once, each within its start-up timeout.
    /// When one fails, those that did start are shut down and the first failure (in the
    /// order given) is returned.
    pub async fn start(
        endpoints: Vec<(Endpoint, Duration)>,
        options: &StartOptions,
    ) -> Result<Arc<Self>, StartError> {
        let mut distinct: Vec<(Endpoint, Duration)> = Vec::new();
        for (endpoint, timeout) in endpoints {
            match distinct.iter_mut().find(|(known, _)| *known == endpoint) {
                Some((_, longest)) => *longest = (*longest).max(timeout),
                None => distinct.push((endpoint, timeout)),
            }
        }
        let opened = futures_util::future::join_all(distinct.iter().map(|(endpoint, timeout)| {
            Connection::open(
                endpoint,
                OpenOptions {
                    timeout: *timeout,
                    workspace: &options.workspace,
                    protected: &options.protected,
                    env: &options.env,
                    cancel: options.cancel.clone(),
                    answers: &options.answers,
                    cassette: &options.cassette,
                },
            )
        }))
        .await;
        let mut servers = McpServers::default();
        let mut first_error = None;
        for ((endpoint, _), outcome) in distinct.into_iter().zip(opened) {
            match outcome {
                Ok(connection) => servers.connections.push((endpoint, Arc::new(connection))),
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
        match first_error {
            Some(error) => {
                servers.shutdown().await;
                Err(error)
            }
            None => Ok(Arc::new(servers)),
        }
    }

    /// The tools one `mcp` entry gives its agent: the server's tools (or the allowlisted
    /// ones, in the allowlist's order), named with `prefix`.
    pub fn tools(
        &self,
        endpoint: &Endpoint,
        prefix: &str,
        allowlist: Option<&[String]>,
        call_timeout: Duration,
    ) -> Result<Vec<Arc<dyn Tool>>, StartError> {
        let fail = |message: String| StartError {
            server: endpoint.label(),
            kind: StartErrorKind::Config,
            message,
        };
        let Some((_, server)) = self.connections.iter().find(|(known, _)| known == endpoint) else {
            return Err(fail(
                "was not started with the run: servers start when the run starts, so a server \
                 added or changed while the run goes on needs a new run"
                    .into(),
            ));
        };
        let offered = || {
            server
                .tools
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>()
        };
        let chosen: Vec<&ServerTool> = match allowlist {
            None => server.tools.iter().collect(),
            Some(names) => names
                .iter()
                .map(|name| {
                    server.tools.iter().find(|t| &t.name == name).ok_or_else(|| {
                        let hint = crate::spec::did_you_mean(name, offered())
                            .map(|close| format!("did you mean `{close}`? "))
                            .unwrap_or_default();
                        fail(format!(
                            "`tools` lists `{name}`, which the server does not offer; {hint}it offers: {}",
                            offered().join(", ")
                        ))
                    })
                })
                .collect::<Result<_, _>>()?,
        };
        Ok(chosen
            .into_iter()
            .map(|t| {
                let tool = McpTool::new(prefix, t.clone(), server.clone(), call_timeout);
                Arc::new(tool) as Arc<dyn Tool>
            })
            .collect())
    }

    /// Ends every session and stops every server process, all at once.
    pub async fn shutdown(&self) {
        futures_util::future::join_all(self.connections.iter().map(|(_, c)| c.close())).await;
    }
}
