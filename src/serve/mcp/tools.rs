//! An agent file as an MCP tool: its name and description, its `inputs:` as the input
//! schema (`{input: string}` for an agent with no inputs, whose input is free text), its
//! `output.schema` as the output schema, and annotations from what its tools can do. And
//! `runner_resume`, listed for clients that cannot answer a question themselves.

use std::collections::HashSet;
use std::path::Path;

use rmcp::model::Tool;
use serde_json::{Value, json};

use crate::serve::agents::AgentEntry;
use crate::spec::AgentSpec;
use crate::spec::load::load_agent;
use crate::spec::tools::{BuiltinTool, ToolEntry};
use crate::spec::tree::AgentTree;

/// The tool that continues a paused session.
pub const RESUME: &str = "runner_resume";

/// What a call of an agent's tool gives the run.
pub enum Arguments {
    /// The input values of an agent with `inputs:`.
    Inputs(serde_json::Map<String, Value>),
    /// The input text of an agent without.
    Text(String),
}

/// The tools of the valid agents, one per name (the first file of a name: a tool is
/// called by its name, so a second file of that name cannot be told apart).
pub fn agent_tools(entries: &[AgentEntry]) -> Vec<Tool> {
    let mut seen = HashSet::new();
    entries
        .iter()
        .filter(|entry| entry.valid && entry.name != RESUME)
        .filter(|entry| seen.insert(entry.name.clone()))
        .filter_map(tool_of)
        .collect()
}

fn tool_of(entry: &AgentEntry) -> Option<Tool> {
    let file = Path::new(&entry.file);
    let (spec, _) = load_agent(file).ok()?;
    let description = entry
        .description
        .clone()
        .unwrap_or_else(|| format!("Runs the agent `{}` ({}).", entry.name, entry.file));
    let mut tool = json!({
        "name": entry.name,
        "title": entry.name,
        "description": description,
        "inputSchema": input_schema(&spec, entry),
        "annotations": {
            "title": entry.name,
            "readOnlyHint": read_only(file, &spec),
        },
    });
    if let Some(schema) = &entry.output_schema {
        tool["outputSchema"] = output_schema(schema);
    }
    serde_json::from_value(tool).ok()
}

fn input_schema(spec: &AgentSpec, entry: &AgentEntry) -> Value {
    if spec.inputs.is_empty() {
        return json!({
            "type": "object",
            "properties": {"input": {"type": "string", "description": "The input text."}},
            "required": ["input"],
        });
    }
    entry.input_schema.clone()
}

/// MCP's `outputSchema` and `structuredContent` are objects: a schema of another type is
/// the `value` of one.
fn output_schema(schema: &Value) -> Value {
    match is_object_schema(schema) {
        true => schema.clone(),
        false => json!({"type": "object", "properties": {"value": schema}, "required": ["value"]}),
    }
}

pub fn is_object_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}

/// The call's arguments as the run's inputs: checked against the schema by the run
/// (as `runner exec --var` values are).
pub fn arguments_of(
    spec_has_inputs: bool,
    arguments: Option<serde_json::Map<String, Value>>,
) -> Result<Arguments, String> {
    let arguments = arguments.unwrap_or_default();
    if spec_has_inputs {
        return Ok(Arguments::Inputs(arguments));
    }
    match arguments.get("input") {
        Some(Value::String(text)) => Ok(Arguments::Text(text.clone())),
        Some(_) => Err("`input` must be a string".into()),
        None if arguments.is_empty() => Ok(Arguments::Text(String::new())),
        None => Err(format!(
            "this agent takes one argument, `input` (a string); got {}",
            arguments
                .keys()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// Read-only when no agent of its tree (sub-agents and handoff targets included) has a
/// tool that writes or acts outside: `write_file`, `shell`, an MCP server (which may do
/// anything). A tree that cannot be read is not called read-only.
fn read_only(file: &Path, spec: &AgentSpec) -> bool {
    let workspace = std::env::current_dir().unwrap_or_default();
    let Ok(tree) = AgentTree::resolve(file, spec, &workspace) else {
        return false;
    };
    tree.specs().all(|agent| agent.tools.iter().all(reads_only))
}

fn reads_only(tool: &ToolEntry) -> bool {
    match tool {
        ToolEntry::Builtin(builtin) => !matches!(
            builtin,
            BuiltinTool::WriteFile { .. } | BuiltinTool::Shell { .. }
        ),
        // Its agent is one of the tree's, checked with them.
        ToolEntry::SubAgent(_) => true,
        // What a remote agent does is not known here.
        ToolEntry::Remote(_) => false,
        // What the client's program does is not known here.
        ToolEntry::External(_) => false,
        ToolEntry::Mcp(_) => false,
    }
}

/// `runner_resume`: continues a session that paused on a question or an approval (or was
/// interrupted).
pub fn resume_tool() -> Tool {
    let tool = json!({
        "name": RESUME,
        "title": "Resume a paused run",
        "description": "Continues a run that paused: give the session id its result named, and \
            `answer` (the answer to its question), `approve` (true or false: its calls that \
            wait for approval run, or are denied with `reason`), or `tool_outputs` (the \
            outputs of the external tools' calls it waits for). An interrupted run is \
            continued with the session id alone.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "session_id": {"type": "string", "description": "The session to continue."},
                "answer": {"type": "string", "description": "The answer to the question."},
                "approve": {"type": "boolean", "description": "Whether the calls waiting for approval may run."},
                "reason": {"type": "string", "description": "Why they may not (the model is told)."},
                "tool_outputs": {"type": "object", "description": "The outputs of the external tools' calls it waits on, by call id (any JSON each)."},
            },
            "required": ["session_id"],
            "additionalProperties": false,
        },
        "annotations": {"title": "Resume a paused run", "readOnlyHint": false},
    });
    serde_json::from_value(tool).expect("the runner_resume tool is a valid tool")
}

/// The agent a tool name calls: the first valid file of that name, as listed.
pub fn agent_tools_entry(entries: &[AgentEntry], name: &str) -> Option<AgentEntry> {
    entries
        .iter()
        .find(|entry| entry.valid && entry.name == name && entry.name != RESUME)
        .cloned()
}
