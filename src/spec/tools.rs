//! The `tools` and `handoffs` keys: built-in tools, sub-agents, MCP servers, transfers.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::agent::AgentSpec;
use super::duration::HumanDuration;
use super::sandbox::SandboxSpec;

/// One entry of `tools`: a built-in tool, a sub-agent, or an MCP server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ToolEntry {
    /// A tool that ships with runner: `- builtin: read_file`.
    Builtin(BuiltinTool),
    /// An MCP tool server whose tools join the agent's tools.
    Mcp(McpEntry),
    /// Another agent used as a tool, with an explicit parameter schema.
    SubAgent(Box<SubAgentTool>),
    /// A remote A2A agent used as a tool: `- name: ..., a2a: {url: ...}`.
    Remote(Box<RemoteAgentTool>),
    /// A tool the program running the agent implements: `- external: {name, ...}`.
    External(ExternalEntry),
}

impl ToolEntry {
    /// The name the model sees (`None` for MCP servers, whose names come from the server).
    pub fn name(&self) -> Option<&str> {
        match self {
            ToolEntry::Builtin(tool) => Some(tool.name()),
            ToolEntry::SubAgent(tool) => Some(&tool.name),
            ToolEntry::Remote(tool) => Some(&tool.name),
            ToolEntry::External(entry) => Some(&entry.external.name),
            ToolEntry::Mcp(_) => None,
        }
    }

    /// Its ordering within a turn (UAP §8.5): whether its tools run alone, and the tool
    /// names whose calls they wait for. An MCP entry's apply to every tool of the server.
    pub fn ordering(&self) -> (bool, &[String]) {
        match self {
            ToolEntry::Builtin(tool) => tool.ordering(),
            ToolEntry::SubAgent(tool) => (tool.sequential, &tool.depends_on),
            ToolEntry::Remote(tool) => (tool.sequential, &tool.depends_on),
            ToolEntry::Mcp(entry) => (entry.sequential, &entry.depends_on),
            // Never runs within the turn: its calls wait for the client, after the others.
            ToolEntry::External(_) => (false, &[]),
        }
    }
}

/// `- external: {...}`: a client-side tool. The model sees its name, description and
/// parameters; a call pauses the run (`requires_action` of type `submit_tool_outputs`)
/// until the program running the agent submits its output (`runner resume --tool-output`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExternalEntry {
    /// The tool as the model sees it; runner never runs it.
    pub external: ExternalTool,
}

/// A tool declared by its interface only: who runs the agent runs the tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExternalTool {
    /// The tool name the model calls.
    #[schemars(regex(pattern = r"^[A-Za-z_][A-Za-z0-9_-]*$"))]
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// The tool's parameters as an explicit JSON Schema (`type: object`); a call whose
    /// arguments do not match is answered with the error and does not pause the run.
    pub parameters: ParameterSchema,
}

/// A built-in tool, chosen by `builtin:`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "builtin", rename_all = "snake_case", deny_unknown_fields)]
pub enum BuiltinTool {
    /// Reads a text file inside the workspace (parameters: path, offset, limit).
    ReadFile {
        /// The workspace root the tool is confined to (default: the current directory).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        root: Option<String>,
        /// true: this tool runs alone; other calls of the same turn wait.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        sequential: bool,
        /// Tool names that must finish first when called in the same turn.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        depends_on: Vec<String>,
    },
    /// Writes a text file inside the workspace (parameters: path, content).
    WriteFile {
        /// The workspace root the tool is confined to (default: the current directory).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        root: Option<String>,
        /// true: this tool runs alone; other calls of the same turn wait.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        sequential: bool,
        /// Tool names that must finish first when called in the same turn.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        depends_on: Vec<String>,
    },
    /// Lists a directory inside the workspace (parameter: path).
    ListDir {
        /// The workspace root the tool is confined to (default: the current directory).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        root: Option<String>,
        /// true: this tool runs alone; other calls of the same turn wait.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        sequential: bool,
        /// Tool names that must finish first when called in the same turn.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        depends_on: Vec<String>,
    },
    /// Searches files by regular expression (parameters: pattern, path, glob).
    SearchFiles {
        /// The workspace root the tool is confined to (default: the current directory).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        root: Option<String>,
        /// true: this tool runs alone; other calls of the same turn wait.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        sequential: bool,
        /// Tool names that must finish first when called in the same turn.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        depends_on: Vec<String>,
    },
    /// Runs an allowed program directly, never through a shell (parameter: command).
    Shell {
        /// Program names the model may run, e.g. [git, cargo].
        allow: Vec<String>,
        /// Kill the program after this long (default 60s).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout: Option<HumanDuration>,
        /// Working directory, confined like the file tools (default: the current directory).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        root: Option<String>,
        /// The kernel sandbox the programs run in (on top of the agent's `sandbox`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sandbox: Option<SandboxSpec>,
        /// true: this tool runs alone; other calls of the same turn wait.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        sequential: bool,
        /// Tool names that must finish first when called in the same turn.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        depends_on: Vec<String>,
    },
    /// Fetches a URL from an allowed host (parameter: url).
    HttpGet {
        /// Host names the tool may fetch from, e.g. [api.github.com].
        allow_hosts: Vec<String>,
        /// Give up after this long (default 30s).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout: Option<HumanDuration>,
        /// true: this tool runs alone; other calls of the same turn wait.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        sequential: bool,
        /// Tool names that must finish first when called in the same turn.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        depends_on: Vec<String>,
    },
    /// Asks the user a question (parameters: question, id).
    AskUser {
        /// true: this tool runs alone; other calls of the same turn wait.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        sequential: bool,
        /// Tool names that must finish first when called in the same turn.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        depends_on: Vec<String>,
    },
}

impl BuiltinTool {
    /// The tool's name as the model sees it.
    pub fn name(&self) -> &'static str {
        match self {
            BuiltinTool::ReadFile { .. } => "read_file",
            BuiltinTool::WriteFile { .. } => "write_file",
            BuiltinTool::ListDir { .. } => "list_dir",
            BuiltinTool::SearchFiles { .. } => "search_files",
            BuiltinTool::Shell { .. } => "shell",
            BuiltinTool::HttpGet { .. } => "http_get",
            BuiltinTool::AskUser { .. } => "ask_user",
        }
    }

    /// Whether it runs alone, and the tool names whose calls it waits for.
    pub fn ordering(&self) -> (bool, &[String]) {
        match self {
            BuiltinTool::ReadFile {
                sequential,
                depends_on,
                ..
            }
            | BuiltinTool::WriteFile {
                sequential,
                depends_on,
                ..
            }
            | BuiltinTool::ListDir {
                sequential,
                depends_on,
                ..
            }
            | BuiltinTool::SearchFiles {
                sequential,
                depends_on,
                ..
            }
            | BuiltinTool::Shell {
                sequential,
                depends_on,
                ..
            }
            | BuiltinTool::HttpGet {
                sequential,
                depends_on,
                ..
            }
            | BuiltinTool::AskUser {
                sequential,
                depends_on,
            } => (*sequential, depends_on),
        }
    }
}

/// A sub-agent used as a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubAgentTool {
    /// The tool name the model calls.
    #[schemars(regex(pattern = r"^[A-Za-z_][A-Za-z0-9_-]*$"))]
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// The tool's parameters as an explicit JSON Schema (`type: object`). Never generated.
    pub parameters: ParameterSchema,
    /// The sub-agent: a path relative to this file, or an inline agent mapping.
    pub agent: AgentRef,
    /// Template for the sub-agent's first message, over the call's arguments
    /// (default: the arguments as JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// true: this tool runs alone; other calls of the same turn wait.
    #[serde(default)]
    pub sequential: bool,
    /// Tool names that must finish first when called in the same turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
}

/// A remote agent used as a tool, spoken to over A2A (JSON-RPC binding, protocol 1.0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoteAgentTool {
    /// The tool name the model calls.
    #[schemars(regex(pattern = r"^[A-Za-z_][A-Za-z0-9_-]*$"))]
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// The tool's parameters as an explicit JSON Schema (`type: object`); default: one
    /// string parameter `input`, sent as the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<ParameterSchema>,
    /// The remote agent.
    pub a2a: A2aAgent,
    /// Template for the message sent, over the call's arguments (default: the `input`
    /// argument of the default parameters, or the arguments as JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// true: this tool runs alone; other calls of the same turn wait.
    #[serde(default)]
    pub sequential: bool,
    /// Tool names that must finish first when called in the same turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
}

/// Where a remote A2A agent is and how to reach it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct A2aAgent {
    /// The agent's JSON-RPC endpoint (http or https), e.g. `https://host/a2a/reviewer`;
    /// its card is read from `{url}/.well-known/agent-card.json`.
    pub url: String,
    /// Request headers; each value is a template that reads a declared `env` var, e.g.
    /// `Authorization: "Bearer {{ env.REVIEWER_TOKEN }}"`. Never recorded or shown.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub headers: IndexMap<String, String>,
    /// How long one call may take before it fails and its task is cancelled (default 300s;
    /// the run's `limits.timeout` and `limits.tool_timeout` bound it too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<HumanDuration>,
}

/// A JSON Schema written by the user (checked against the JSON Schema meta-schema).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct ParameterSchema(
    #[schemars(schema_with = "super::schema_gen::json_schema_object")] pub Value,
);

/// Where an agent comes from: a file or an inline definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum AgentRef {
    /// Path to an agent file, relative to the file that refers to it.
    Path(String),
    /// An inline agent definition (same keys as a file).
    Inline(Box<AgentSpec>),
}

/// A transfer of control to another agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Handoff {
    /// The transfer tool's name, e.g. `transfer_to_fixer`.
    #[schemars(regex(pattern = r"^[A-Za-z_][A-Za-z0-9_-]*$"))]
    pub name: String,
    /// When to hand over, for the model.
    pub description: String,
    /// The agent that takes over: a path relative to this file, or an inline mapping.
    pub agent: AgentRef,
}

/// `- mcp: {...}`: an MCP tool server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpEntry {
    /// The server: `command` (stdio) or `url` (Streamable HTTP); or `config`: servers
    /// imported from a `.mcp.json` / `mcpServers` file.
    // Loading expands an import into entries of the first two forms (spec::mcp_import).
    #[schemars(with = "super::mcp_import::McpServerOrImport")]
    pub mcp: McpServer,
    /// true: each tool of the server runs alone; other calls of the same turn wait.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sequential: bool,
    /// Tool names whose calls in the same turn the server's tools wait for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
}

/// How to reach an MCP server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum McpServer {
    /// A server started as a child process, spoken to over stdio.
    Stdio(McpStdio),
    /// A server reached over Streamable HTTP.
    Http(McpHttp),
}

/// An MCP server over stdio.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpStdio {
    /// `stdio`, as other tools' MCP configuration writes it (optional: `command` says it).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<StdioKind>,
    /// The program to start, e.g. `node` or `npx`.
    pub command: String,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Extra environment variables for the server process. Values are templates, so a
    /// token can be passed from a declared `env` var: `GITHUB_TOKEN: "{{ env.GITHUB_TOKEN }}"`
    /// (the server does not inherit names ending in `_TOKEN` or `_API_KEY`).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub env: IndexMap<String, String>,
    /// Only these tools of the server (default: every tool it lists).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Prepended to the server's tool names, e.g. `gh_`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// How long the server may take to start and list its tools (default 30s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_timeout: Option<HumanDuration>,
    /// How long one call of its tools may take before it fails (default 300s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_timeout: Option<HumanDuration>,
    /// The kernel sandbox the server runs in (on top of the agent's `sandbox`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxSpec>,
}

/// An MCP server over Streamable HTTP.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpHttp {
    /// `http` (Streamable HTTP), as other tools' MCP configuration writes it (optional:
    /// `url` says it). The legacy HTTP+SSE transport (`sse`) is not supported.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<HttpKind>,
    /// The server's endpoint, e.g. `http://127.0.0.1:3001/mcp`.
    pub url: String,
    /// Request headers; values are templates, so tokens can come from declared `env`.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub headers: IndexMap<String, String>,
    /// Only these tools of the server (default: every tool it lists).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Prepended to the server's tool names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// How long the server may take to answer `initialize` and list its tools (default 30s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_timeout: Option<HumanDuration>,
    /// How long one call of its tools may take before it fails (default 300s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_timeout: Option<HumanDuration>,
}

/// The `type` of a stdio entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StdioKind {
    Stdio,
}

/// The `type` of a Streamable HTTP entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HttpKind {
    Http,
}

impl McpServer {
    /// The allowlist of server tool names (`None`: every tool the server lists).
    pub fn allowlist(&self) -> Option<&[String]> {
        match self {
            McpServer::Stdio(s) => s.tools.as_deref(),
            McpServer::Http(h) => h.tools.as_deref(),
        }
    }

    /// What is prepended to the server's tool names.
    pub fn prefix(&self) -> &str {
        match self {
            McpServer::Stdio(s) => s.prefix.as_deref(),
            McpServer::Http(h) => h.prefix.as_deref(),
        }
        .unwrap_or_default()
    }

    /// How long the server may take to start and list its tools.
    pub fn startup_timeout(&self) -> std::time::Duration {
        match self {
            McpServer::Stdio(s) => s.startup_timeout.as_ref(),
            McpServer::Http(h) => h.startup_timeout.as_ref(),
        }
        .map(|d| d.0)
        .unwrap_or(std::time::Duration::from_secs(30))
    }

    /// How long one call of the server's tools may take.
    pub fn call_timeout(&self) -> std::time::Duration {
        match self {
            McpServer::Stdio(s) => s.call_timeout.as_ref(),
            McpServer::Http(h) => h.call_timeout.as_ref(),
        }
        .map_or(DEFAULT_MCP_CALL_TIMEOUT, |d| d.0)
    }
}

/// How long an MCP tool call may take when its entry sets no `call_timeout`: a server
/// that never answers (or whose answer is lost) must not hold the run forever.
pub const DEFAULT_MCP_CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);
