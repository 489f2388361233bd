//! `- mcp: {config: .mcp.json, servers: [NAME…]}`: MCP servers imported from the JSON file
//! another MCP client keeps them in. An import is expanded, when the agent file is loaded,
//! into the inline entries it stands for, so everything after loading (starting servers,
//! `runner tools`, cassettes, the widening check of a reload or resume) knows only inline
//! entries, and treats imported servers exactly as written ones.

mod problem;
mod servers_file;
mod variables;

use std::collections::BTreeSet;
use std::path::Path;

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::duration::HumanDuration;
use super::tools::{McpHttp, McpServer, McpStdio};
use super::yaml::pointer_push;
pub use problem::ImportProblem;
use servers_file::{FileServer, FileServers, read_servers};
use variables::{first_reference, value_template};

/// Servers imported from an `mcpServers` JSON file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpImport {
    /// The JSON file, relative to this agent file: servers by name under `mcpServers`
    /// (Claude Desktop, Claude Code's `.mcp.json`, Cursor) or `servers` (VS Code).
    pub config: String,
    /// Only these servers of the file, in this order (default: every server it lists).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1), extend("uniqueItems" = true))]
    pub servers: Option<Vec<String>>,
    /// Only these tools of the server (only when one server is imported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Prepended to the tool names of every imported server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// How long each server may take to start and list its tools (default 30s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_timeout: Option<HumanDuration>,
    /// How long one call of an imported server's tools may take (default 300s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_timeout: Option<HumanDuration>,
}

/// An MCP server written inline, or servers imported from a file.
// Only the schema has the third form: loading expands it into the first two.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)] // exists for its schema only
pub enum McpServerOrImport {
    /// A server started as a child process, spoken to over stdio.
    Stdio(McpStdio),
    /// A server reached over Streamable HTTP.
    Http(McpHttp),
    /// Servers imported from a `.mcp.json` / `mcpServers` file.
    Import(McpImport),
}

impl McpImport {
    /// The inline entries this import stands for, or every problem found. `file_dir` is
    /// the agent file's directory; `declared_env` the agent's `env:` list, the only
    /// variables a `${NAME}` may read.
    pub fn servers(
        &self,
        file_dir: &Path,
        declared_env: &BTreeSet<String>,
    ) -> Result<Vec<McpServer>, Vec<ImportProblem>> {
        let path = super::paths::resolved(&file_dir.join(&self.config));
        let file = read_servers(&path, &self.config).map_err(|p| vec![p])?;
        let (chosen, mut problems) = self.choose(&file);
        if self.tools.is_some() && chosen.len() > 1 {
            problems.push(ImportProblem::ToolsOfSeveral {
                count: chosen.len(),
            });
        }
        let mut servers = Vec::new();
        for (name, server) in chosen {
            match self.inline(name, server, declared_env) {
                Ok(server) => servers.push(server),
                Err(found) => problems.extend(found),
            }
        }
        match problems.is_empty() {
            true => Ok(servers),
            false => Err(problems),
        }
    }

    /// The servers `servers` names, in its order (every server when it is absent), and a
    /// problem for each name the file does not list.
    fn choose<'f>(&self, file: &'f FileServers) -> (Vec<Chosen<'f>>, Vec<ImportProblem>) {
        let Some(names) = &self.servers else {
            let all = file.iter().map(|(name, server)| (name.as_str(), server));
            let none = file.is_empty().then(|| ImportProblem::NoServers {
                config: self.config.clone(),
            });
            return (all.collect(), none.into_iter().collect());
        };
        let mut chosen = Vec::new();
        let mut unknown = Vec::new();
        for name in names {
            match file.get_key_value(name) {
                Some((name, server)) => chosen.push((name.as_str(), server)),
                None => unknown.push(ImportProblem::UnknownServer {
                    config: self.config.clone(),
                    name: name.clone(),
                    known: file.keys().cloned().collect(),
                }),
            }
        }
        (chosen, unknown)
    }

    /// One server of the file as the inline entry that would say the same.
    fn inline(
        &self,
        name: &str,
        server: &Result<FileServer, String>,
        declared_env: &BTreeSet<String>,
    ) -> Result<McpServer, Vec<ImportProblem>> {
        let problem = |message: String| ImportProblem::Server {
            config: self.config.clone(),
            server: name.to_string(),
            message,
        };
        let server = server.as_ref().map_err(|why| vec![problem(why.clone())])?;
        let transport = transport(server).map_err(|message| vec![problem(message)])?;
        let mut problems = Vec::new();
        // The command line and URL name the server in messages, events and cassettes, so
        // they must not carry a variable's value (a token): only `env` and `headers` may.
        let literal: Vec<&String> = match transport {
            Transport::Stdio(command) => [command].into_iter().chain(&server.args).collect(),
            Transport::Http(url) => vec![url],
        };
        if let Some(reference) = literal.into_iter().find_map(|v| first_reference(v)) {
            let keys = match transport {
                Transport::Stdio(_) => "`command` and `args`",
                Transport::Http(_) => "`url`",
            };
            problems.push(problem(format!(
                "`{reference}` in {keys} is not expanded: they name the server in messages and recordings; pass values in `env` or `headers`"
            )));
        }
        let (values_key, values) = match transport {
            Transport::Stdio(_) => ("env", &server.env),
            Transport::Http(_) => ("headers", &server.headers),
        };
        let mut templates = IndexMap::new();
        for (key, value) in values {
            let template = match value_template(value) {
                Ok(template) => template,
                Err(message) => {
                    problems.push(problem(format!("`{values_key}.{key}`: {message}")));
                    continue;
                }
            };
            for variable in &template.variables {
                if !declared_env.contains(variable) {
                    problems.push(ImportProblem::Undeclared {
                        config: self.config.clone(),
                        server: name.to_string(),
                        key: format!("{values_key}.{key}"),
                        name: variable.clone(),
                    });
                }
            }
            templates.insert(key.clone(), template.source);
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(match transport {
            Transport::Stdio(command) => McpServer::Stdio(McpStdio {
                kind: None,
                command: command.clone(),
                args: server.args.clone(),
                env: templates,
                tools: self.tools.clone(),
                prefix: self.prefix.clone(),
                startup_timeout: self.startup_timeout,
                call_timeout: self.call_timeout,
                sandbox: None,
            }),
            Transport::Http(url) => McpServer::Http(McpHttp {
                kind: None,
                url: url.clone(),
                headers: templates,
                tools: self.tools.clone(),
                prefix: self.prefix.clone(),
                startup_timeout: self.startup_timeout,
                call_timeout: self.call_timeout,
            }),
        })
    }
}

/// A server of the file by name, as it reads.
type Chosen<'f> = (&'f str, &'f Result<FileServer, String>);

/// How a server of the file is reached.
#[derive(Clone, Copy)]
enum Transport<'f> {
    Stdio(&'f String),
    Http(&'f String),
}

/// The transport `type`, `command` and `url` say together, or why they do not agree.
fn transport(server: &FileServer) -> Result<Transport<'_>, String> {
    let stdio = match server.kind.as_deref() {
        None => None,
        Some("stdio") => Some(true),
        Some("http" | "streamable-http") => Some(false),
        Some("sse") => {
            return Err(
                "`type: sse` is the legacy HTTP+SSE transport, which runner does not support: use the server's Streamable HTTP endpoint (`type: http`)".into(),
            );
        }
        Some(other) => {
            return Err(format!(
                "`type: {other}` is not a transport runner knows (`stdio`, `http` or `streamable-http`)"
            ));
        }
    };
    let transport = match (stdio, &server.command, &server.url) {
        (_, Some(_), Some(_)) => return Err("it has both `command` and `url`".into()),
        (Some(true) | None, Some(command), None) => Transport::Stdio(command),
        (Some(false) | None, None, Some(url)) => Transport::Http(url),
        (Some(true), None, _) => return Err("`type: stdio` needs a `command`".into()),
        (Some(false), _, None) => return Err("an HTTP server needs a `url`".into()),
        (None, None, None) => {
            return Err("it has neither `command` (stdio) nor `url` (Streamable HTTP)".into());
        }
    };
    let misplaced = match transport {
        Transport::Stdio(_) if !server.headers.is_empty() => Some("`headers`"),
        Transport::Http(_) if !server.args.is_empty() => Some("`args`"),
        Transport::Http(_) if !server.env.is_empty() => Some("`env`"),
        _ => None,
    };
    match misplaced {
        Some(key) => Err(format!(
            "{key} does not apply to a {} server",
            match transport {
                Transport::Stdio(_) => "stdio",
                Transport::Http(_) => "Streamable HTTP",
            }
        )),
        None => Ok(transport),
    }
}

/// An import that gives no servers, at the JSON pointer of its `config` key.
#[derive(Debug)]
pub struct ImportFailure {
    pub pointer: String,
    pub problem: ImportProblem,
}

/// Replaces each import of the agent at `at` (and of its inline sub-agents and handoff
/// targets) by the inline entries it stands for. Entries that are not imports, or that do
/// not read as one, are left as they are.
pub fn expand_imports(agent: &mut Value, file_dir: &Path, at: &str) -> Result<(), ImportFailure> {
    let declared_env = declared_env(agent);
    let tools_at = pointer_push(at, "tools");
    if let Some(Value::Array(tools)) = agent.get_mut("tools") {
        let mut expanded = Vec::with_capacity(tools.len());
        for (index, mut entry) in std::mem::take(tools).into_iter().enumerate() {
            let entry_at = pointer_push(&tools_at, &index.to_string());
            let Some(import) = import_of(&entry) else {
                expand_inline_agent(&mut entry, file_dir, &entry_at)?;
                expanded.push(entry);
                continue;
            };
            let servers = import
                .servers(file_dir, &declared_env)
                .map_err(|problems| ImportFailure {
                    pointer: pointer_push(&pointer_push(&entry_at, "mcp"), "config"),
                    problem: problems
                        .into_iter()
                        .next()
                        .unwrap_or(ImportProblem::NoServers {
                            config: import.config.clone(),
                        }),
                })?;
            // The entry's own keys beside `mcp` (`sequential`, `depends_on`) apply to each
            // server it stands for.
            let beside: Vec<(String, Value)> = entry
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(key, _)| *key != "mcp")
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect();
            expanded.extend(servers.into_iter().map(|server| {
                let mut inline = json!({ "mcp": server });
                if let Some(inline) = inline.as_object_mut() {
                    inline.extend(beside.iter().cloned());
                }
                inline
            }));
        }
        *tools = expanded;
    }
    let handoffs_at = pointer_push(at, "handoffs");
    if let Some(Value::Array(handoffs)) = agent.get_mut("handoffs") {
        for (index, handoff) in handoffs.iter_mut().enumerate() {
            let handoff_at = pointer_push(&handoffs_at, &index.to_string());
            expand_inline_agent(handoff, file_dir, &handoff_at)?;
        }
    }
    Ok(())
}

/// The inline agent of a sub-agent tool or handoff, whose paths are relative to the same file.
fn expand_inline_agent(entry: &mut Value, file_dir: &Path, at: &str) -> Result<(), ImportFailure> {
    match entry.get_mut("agent") {
        Some(inline @ Value::Object(_)) => {
            expand_imports(inline, file_dir, &pointer_push(at, "agent"))
        }
        _ => Ok(()),
    }
}

/// The import an entry of `tools` is, if it is one.
pub fn import_of(entry: &Value) -> Option<McpImport> {
    let mcp = entry.get("mcp")?;
    mcp.get("config")?;
    serde_json::from_value(mcp.clone()).ok()
}

/// The names under an agent's `env:`.
pub fn declared_env(agent: &Value) -> BTreeSet<String> {
    agent
        .get("env")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(String::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A directory of its own for each test, with `servers.json` holding `file`.
    fn dir_with(name: &str, file: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("runner-mcp-import-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("servers.json"), file).unwrap();
        dir
    }

    /// `entry` (an import without `config`) of `servers.json` holding `file`, for an agent
    /// that declares `TOKEN`.
    fn import(name: &str, file: Value, entry: Value) -> Result<Vec<McpServer>, Vec<String>> {
        let dir = dir_with(name, &file.to_string());
        let mut entry = entry;
        entry["config"] = "servers.json".into();
        let import: McpImport = serde_json::from_value(entry).unwrap();
        let result = import.servers(&dir, &BTreeSet::from(["TOKEN".to_string()]));
        std::fs::remove_dir_all(&dir).unwrap();
        result.map_err(|problems| problems.iter().map(ToString::to_string).collect())
    }

    fn inline(entry: Value) -> McpServer {
        serde_json::from_value(entry).unwrap()
    }

    #[test]
    fn an_imported_server_is_the_inline_entry_that_says_the_same() {
        let file = json!({
            "globalShortcut": "ignored: the file configures a whole application",
            "mcpServers": {
                "local": {"command": "node", "args": ["s.js"], "env": {"A": "x ${TOKEN} {{ y }}"}},
                "remote": {"type": "streamable-http", "url": "http://127.0.0.1:1/mcp",
                           "headers": {"Authorization": "Bearer ${env:TOKEN}"}},
                "plain": {"type": "http", "url": "http://127.0.0.1:2/mcp"}
            }
        });
        let entry =
            json!({"servers": ["remote", "local"], "prefix": "p_", "startup_timeout": "5s"});
        let servers = import("same", file, entry).unwrap();
        assert_eq!(
            servers,
            [
                inline(json!({"url": "http://127.0.0.1:1/mcp",
                    "headers": {"Authorization": "Bearer {{ env.TOKEN }}"},
                    "prefix": "p_", "startup_timeout": "5s"})),
                inline(json!({"command": "node", "args": ["s.js"],
                    "env": {"A": "x {{ env.TOKEN }}{{ \" {{ y }}\" }}"},
                    "prefix": "p_", "startup_timeout": "5s"})),
            ]
        );
    }

    #[test]
    fn without_servers_every_server_is_imported_in_file_order() {
        let file = json!({"servers": {
            "b": {"command": "b"},
            "a": {"type": "stdio", "command": "a"}
        }});
        let servers = import("all", file, json!({"tools": ["x"]}));
        assert_eq!(
            servers.unwrap_err(),
            ["`tools` names the tools of one server, but this entry imports 2"]
        );
        let file = json!({"servers": {"b": {"command": "b"}, "a": {"command": "a"}}});
        let servers = import("order", file, json!({})).unwrap();
        let commands: Vec<&str> = servers
            .iter()
            .map(|server| match server {
                crate::spec::tools::McpServer::Stdio(stdio) => stdio.command.as_str(),
                crate::spec::tools::McpServer::Http(http) => http.url.as_str(),
            })
            .collect();
        assert_eq!(commands, ["b", "a"]);
    }

    #[test]
    fn a_file_needs_one_object_of_servers() {
        let cases = [
            (json!([]), "the file is not a JSON object"),
            (json!({"other": {}}), "has no `mcpServers`"),
            (
                json!({"mcpServers": {}, "servers": {}}),
                "both `mcpServers` and `servers`",
            ),
            (
                json!({"mcpServers": []}),
                "not an object of servers by name",
            ),
            (json!({"mcpServers": {}}), "lists no servers"),
        ];
        for (index, (file, expected)) in cases.into_iter().enumerate() {
            let problems = import(&format!("shape-{index}"), file, json!({})).unwrap_err();
            assert!(problems[0].contains(expected), "{problems:?}");
        }
    }

    #[test]
    fn keys_and_transports_runner_does_not_read_are_refused() {
        let cases = [
            (
                json!({"command": "x", "cwd": "/tmp"}),
                "unknown field `cwd`",
            ),
            (
                json!({"command": "x", "env": {"PORT": 1}}),
                "invalid type: integer",
            ),
            (
                json!("npx server"),
                "expected an object with `command` or `url`",
            ),
            (
                json!({"type": "sse", "url": "http://h/sse"}),
                "legacy HTTP+SSE",
            ),
            (
                json!({"type": "ws", "url": "ws://h"}),
                "`type: ws` is not a transport",
            ),
            (
                json!({"type": "stdio", "url": "http://h"}),
                "`type: stdio` needs a `command`",
            ),
            (
                json!({"type": "http", "command": "x"}),
                "an HTTP server needs a `url`",
            ),
            (
                json!({"command": "x", "url": "http://h"}),
                "both `command` and `url`",
            ),
            (
                json!({"args": ["x"]}),
                "neither `command` (stdio) nor `url`",
            ),
            (
                json!({"command": "x", "headers": {"A": "b"}}),
                "`headers` does not apply to a stdio",
            ),
            (
                json!({"url": "http://h", "args": ["x"]}),
                "`args` does not apply",
            ),
            (
                json!({"url": "http://h", "env": {"A": "b"}}),
                "`env` does not apply",
            ),
            (
                json!({"command": "x", "args": ["--t=${TOKEN}"]}),
                "`${TOKEN}` in `command` and `args` is not expanded",
            ),
            (
                json!({"url": "http://h/${TOKEN}"}),
                "`${TOKEN}` in `url` is not expanded",
            ),
            (
                json!({"command": "x", "env": {"A": "${input:token}"}}),
                "`env.A`: `${input:token}` is not understood",
            ),
            (
                json!({"command": "x", "env": {"A": "${OTHER}"}}),
                "reads `${OTHER}` in `env.A`, a variable this agent does not declare",
            ),
        ];
        for (index, (server, expected)) in cases.into_iter().enumerate() {
            let file = json!({"mcpServers": {"s": server}});
            let problems = import(&format!("server-{index}"), file, json!({})).unwrap_err();
            assert_eq!(problems.len(), 1, "{problems:?}");
            assert!(
                problems[0].starts_with("server `s` of `servers.json`"),
                "{problems:?}"
            );
            assert!(problems[0].contains(expected), "{expected}: {problems:?}");
        }
    }

    #[test]
    fn only_imported_servers_are_checked_and_every_unknown_name_is_reported() {
        let file =
            json!({"mcpServers": {"good": {"command": "x"}, "odd": {"command": "y", "cwd": "/"}}});
        let servers = import("chosen", file.clone(), json!({"servers": ["good"]})).unwrap();
        assert_eq!(servers, [inline(json!({"command": "x"}))]);
        let problems = import("unknown", file, json!({"servers": ["god", "nope"]})).unwrap_err();
        assert_eq!(
            problems,
            [
                "`servers.json` has no server `god`",
                "`servers.json` has no server `nope`"
            ]
        );
    }

    #[test]
    fn loading_expands_imports_in_place_in_inline_agents_too() {
        let dir = dir_with(
            "expand",
            r#"{"mcpServers": {"a": {"command": "a"}, "b": {"url": "http://h/mcp"}}}"#,
        );
        let mut agent = json!({
            "name": "top",
            "tools": [
                {"builtin": "read_file"},
                {"mcp": {"config": "servers.json"}},
                {"name": "helper", "description": "d", "parameters": {"type": "object"},
                 "agent": {"name": "inner", "tools": [{"mcp": {"config": "servers.json", "servers": ["b"]}}]}}
            ],
            "handoffs": [{"name": "h", "description": "d",
                          "agent": {"name": "next", "tools": [{"mcp": {"config": "missing.json"}}]}}]
        });
        let failure = expand_imports(&mut agent, &dir, "").unwrap_err();
        assert_eq!(failure.pointer, "/handoffs/0/agent/tools/0/mcp/config");
        assert!(matches!(failure.problem, ImportProblem::MissingFile { .. }));
        agent["handoffs"] = json!([]);
        expand_imports(&mut agent, &dir, "").unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            agent["tools"],
            json!([
                {"builtin": "read_file"},
                {"mcp": {"command": "a"}},
                {"mcp": {"url": "http://h/mcp"}},
                {"name": "helper", "description": "d", "parameters": {"type": "object"},
                 "agent": {"name": "inner", "tools": [{"mcp": {"url": "http://h/mcp"}}]}}
            ])
        );
    }
}
