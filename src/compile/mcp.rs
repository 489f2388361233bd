//! The agent file's `mcp` entries: endpoints rendered from their templates, every server of
//! the agent tree started before the run, and each entry's tools taken from its server.

use std::sync::Arc;

use super::BuildOptions;
use super::tree::for_each_agent;
use super::{CompileError, CompileInput, build_tools, render_field, secret_env_names};
use crate::mcp::{Endpoint, McpCassette, McpServers, StartOptions};
use crate::spec::tools::{McpServer, ToolEntry};
use crate::tools::Tool;

/// The tools one `mcp` entry gives its agent, from the run's started servers.
pub fn entry_tools(
    input: &CompileInput<'_>,
    server: &McpServer,
) -> Result<Vec<Arc<dyn Tool>>, CompileError> {
    let endpoint = endpoint(input, server)?;
    input
        .mcp
        .tools(
            &endpoint,
            server.prefix(),
            server.allowlist(),
            server.call_timeout(),
        )
        .map_err(CompileError::Mcp)
}

/// Starts every MCP server of the agent tree (the agent, its sub-agents and handoff
/// targets, to any depth), then builds every agent's tool list once, so an unknown
/// allowlisted tool or a name collision stops the run before it starts rather than when a
/// sub-agent is first called.
pub async fn start_servers(
    input: &CompileInput<'_>,
    cancel: tokio::sync::watch::Receiver<bool>,
) -> Result<Arc<McpServers>, CompileError> {
    let mut endpoints = Vec::new();
    let mut deny_env = Vec::new();
    for_each_agent(input, &mut |agent, _| {
        deny_env.extend(secret_env_names(agent.spec));
        for entry in &agent.spec.tools {
            if let ToolEntry::Mcp(entry) = entry {
                endpoints.push((endpoint(agent, &entry.mcp)?, entry.mcp.startup_timeout()));
            }
        }
        Ok(())
    })?;
    if endpoints.is_empty() {
        return Ok(McpServers::none());
    }
    let options = StartOptions {
        workspace: input.workspace.dir.clone(),
        protected: input.workspace.protected.clone(),
        env: input.child_env(deny_env),
        cancel,
        answers: input.human.answers.clone(),
        cassette: cassette(input.build),
    };
    let servers = McpServers::start(endpoints, &options)
        .await
        .map_err(CompileError::Mcp)?;
    let started = input.with_mcp(servers.clone());
    if let Err(error) = for_each_agent(&started, &mut |agent, _| build_tools(agent).map(drop)) {
        servers.shutdown().await;
        return Err(error);
    }
    Ok(servers)
}

/// What `--record` and `--replay` make of the servers (the two options exclude each other).
fn cassette(build: &BuildOptions) -> McpCassette {
    match (&build.mcp_replay, &build.models.record) {
        (Some(replay), _) => McpCassette::Replay(replay.clone()),
        (None, Some(record)) => McpCassette::Record(record.clone()),
        (None, None) => McpCassette::Live,
    }
}

/// The entry's endpoint with its `env` and `headers` templates rendered.
fn endpoint(input: &CompileInput<'_>, server: &McpServer) -> Result<Endpoint, CompileError> {
    let render = |field: String, source: &str| {
        render_field(input.templates(), &field, source, input.context)
    };
    Ok(match server {
        McpServer::Stdio(stdio) => Endpoint::Stdio {
            command: stdio.command.clone(),
            args: stdio.args.clone(),
            env: stdio
                .env
                .iter()
                .map(|(name, value)| {
                    remember_tokens(input, value, crate::secrets::looks_secret(name));
                    Ok((name.clone(), render(format!("mcp.env.{name}"), value)?))
                })
                .collect::<Result<_, CompileError>>()?,
            sandbox: (input.workspace.over(input.spec).into_iter())
                .chain(stdio.sandbox.as_ref())
                .cloned()
                .collect(),
        },
        McpServer::Http(http) => Endpoint::Http {
            url: http.url.clone(),
            headers: http
                .headers
                .iter()
                .map(|(name, value)| {
                    // Headers carry credentials (`Authorization`, `X-Api-Key`).
                    remember_tokens(input, value, true);
                    Ok((name.clone(), render(format!("mcp.headers.{name}"), value)?))
                })
                .collect::<Result<_, CompileError>>()?,
        },
    })
}

/// Remembers as secrets (no tool result may show them) the environment values the
/// template `source` reads: all of them when it fills a credential (`all`), else those
/// read from a variable whose name looks secret.
pub(super) fn remember_tokens(input: &CompileInput<'_>, source: &str, all: bool) {
    let read = input.context.env_values_in(source).into_iter();
    crate::secrets::remember_all(
        read.filter(|(name, _)| all || crate::secrets::looks_secret(name))
            .map(|(_, value)| value),
    );
}
