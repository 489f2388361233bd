//! `runner tools AGENT.yaml [--format text|json]`: the tools the model would see, with
//! where each comes from. MCP servers are started (and stopped again) to list theirs, so
//! this is also the quickest check that a server entry works.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value, json};
use tokio::sync::watch;

use super::servers::{RunningServers, runtime};
use super::{Exit, Format};
use crate::compile::{CompileInput, EnvLookup, TemplateContext, build_tools, file_dir};
use crate::engine::clock::{new_id, now_rfc3339};
use crate::mcp::McpServers;
use crate::provider::BuildOptions;
use crate::spec::load::load_agent;

pub fn run(agent_file: &Path, format: Format) -> Exit {
    let (spec, _) = match load_agent(agent_file) {
        Ok(loaded) => loaded,
        Err(diagnostics) => {
            for diagnostic in &diagnostics {
                eprintln!("{diagnostic}");
            }
            eprintln!("error: {} is not a valid agent file", agent_file.display());
            return Exit::Invalid;
        }
    };
    let env: EnvLookup = Arc::new(|name: &str| std::env::var(name).ok());
    let declared_env: Vec<String> = spec.env.iter().map(|e| e.0.clone()).collect();
    let id = new_id();
    let context = TemplateContext::new(
        &Map::new(),
        &declared_env,
        &*env,
        (&spec.name, spec.description.as_deref()),
        "",
        (&id, &id),
        &now_rfc3339(),
    );
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(message) => {
            eprintln!("error: {message}");
            return Exit::Failed;
        }
    };
    let build = BuildOptions::default();
    let mut input = CompileInput {
        spec: &spec,
        file_dir: file_dir(agent_file),
        workspace: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        context: &context,
        model_override: None,
        build: &build,
        env,
        inherited: None,
        answers: Vec::new(),
        mcp: McpServers::none(),
    };
    let (_stop, cancel) = watch::channel(false);
    let servers = match RunningServers::start(&runtime, &input, cancel) {
        Ok(servers) => servers,
        Err(failure) => {
            eprintln!("error: {}", failure.message);
            return Exit::from(failure.status);
        }
    };
    input.mcp = servers.servers();
    let tools = match build_tools(&input) {
        Ok(tools) => tools,
        Err(error) => {
            eprintln!("error: {error}");
            return Exit::Invalid;
        }
    };
    match format {
        Format::Json => {
            let listed: Vec<Value> = tools
                .iter()
                .map(|t| {
                    let mut entry = json!({
                        "name": t.tool.name(),
                        "kind": t.kind,
                        "description": t.tool.description(),
                        "parameters": t.tool.parameters(),
                    });
                    if let Some(server) = &t.server {
                        entry["server"] = json!(server);
                    }
                    entry
                })
                .collect();
            let document = json!({"agent": spec.name, "tools": listed});
            match serde_json::to_string_pretty(&document) {
                Ok(text) => println!("{text}"),
                Err(error) => {
                    eprintln!("error: cannot print the tools: {error}");
                    return Exit::Failed;
                }
            }
        }
        Format::Text => {
            let width = tools.iter().map(|t| t.tool.name().len()).max().unwrap_or(0);
            println!("{}: {} tools", spec.name, tools.len());
            for t in &tools {
                let summary = first_line(t.tool.description());
                let server = t
                    .server
                    .as_ref()
                    .map(|s| format!("  [{s}]"))
                    .unwrap_or_default();
                println!(
                    "  {:width$}  {:9}  {summary}{server}",
                    t.tool.name(),
                    t.kind
                );
            }
        }
    }
    Exit::Completed
}

/// The first line of a description, cut at 80 characters.
fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default().trim();
    match line.char_indices().nth(80) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}
