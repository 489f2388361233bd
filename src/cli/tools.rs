//! `runner tools AGENT.yaml [--format text|json]`: the tools the model would see, with
//! where each comes from. MCP servers are started (and stopped again) to list theirs, so
//! this is also the quickest check that a server entry works.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::signals::cancelled_by_signals;
use super::{Exit, Format};
use crate::compile::BuildOptions;
use crate::compile::build_tools;
use crate::engine::clock::new_id;
use crate::session::blocking;
use crate::session::prepare::{Prepared, Request, load, state_dirs};

pub fn run(agent_file: &Path, format: Format) -> Exit {
    let listed = load(agent_file).and_then(|spec| {
        let id = new_id();
        let request = Request {
            agent_file: agent_file.to_path_buf(),
            state_dirs: state_dirs(&spec, None),
            spec,
            inputs: Map::new(),
            input_text: String::new(),
            ids: (id.clone(), id),
            model_override: None,
            build: BuildOptions::default(),
            human: Default::default(),
            protect: Vec::new(),
            tree: None,
        };
        let cancel = cancelled_by_signals();
        blocking::runtime()?.block_on(async {
            let prepared = Prepared::start(request, cancel.receiver()).await?;
            let tools = build_tools(&prepared.compile_input()).map_err(|e| prepared.located(&e));
            let name = prepared.spec.name.clone();
            prepared.shutdown().await;
            Ok((name, tools?))
        })
    });
    let (name, tools) = match listed {
        Ok(listed) => listed,
        Err(stop) => {
            stop.print();
            return stop.status;
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
                    if let Some(sandbox) = &t.sandbox {
                        entry["sandbox"] = json!(sandbox);
                    }
                    entry
                })
                .collect();
            let document = json!({"agent": name, "tools": listed});
            match serde_json::to_string_pretty(&document) {
                Ok(text) => outln!("{text}"),
                Err(error) => {
                    eprintln!("error: cannot print the tools: {error}");
                    return Exit::Failed;
                }
            }
        }
        Format::Text => {
            let width = tools.iter().map(|t| t.tool.name().len()).max().unwrap_or(0);
            outln!("{name}: {} tools", tools.len());
            for t in &tools {
                let summary = first_line(t.tool.description());
                let server = t
                    .server
                    .as_ref()
                    .map(|s| format!("  [{s}]"))
                    .unwrap_or_default();
                outln!(
                    "  {:width$}  {:9}  {summary}{server}",
                    t.tool.name(),
                    t.kind
                );
                if let Some(sandbox) = &t.sandbox {
                    outln!("  {:width$}  {:9}  sandbox: {sandbox}", "", "");
                }
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
