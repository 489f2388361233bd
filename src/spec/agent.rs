//! The agent file: one agent per file (schema version 1).

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::context::ContextSpec;
use super::execution::Execution;
use super::hooks::HooksSpec;
use super::limits::Limits;
use super::middleware::MiddlewareEntry;
use super::model::ModelRef;
use super::permissions::PermissionsSpec;
use super::sandbox::SandboxSpec;
use super::telemetry::TelemetrySpec;
use super::tools::{Handoff, ParameterSchema, ToolEntry};

/// A runner agent: its model, prompts, typed inputs, tools, strategy, middleware and limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "runner agent file")]
pub struct AgentSpec {
    /// Schema version of the file; only 1 exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<SchemaVersion>,
    /// The agent's name: lowercase letters, digits, `-` and `_`, starting with a letter or digit.
    #[schemars(regex(pattern = r"^[a-z0-9][a-z0-9_-]*$"))]
    pub name: String,
    /// What the agent does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The model: `provider/name` or a mapping. Optional in a file (a sub-agent inherits its
    /// parent's); `runner exec` needs one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelRef>,
    /// Typed parameters, available to every template by name.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    #[schemars(extend("propertyNames" = {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}))]
    pub inputs: IndexMap<String, InputSpec>,
    /// Environment variables templates may read as `{{ env.NAME }}`; no others are visible.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvName>,
    /// The system prompt (a minijinja template).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The first user message (a minijinja template). Absent: the `--input` text is the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Built-in tools, sub-agents and MCP servers the model can call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolEntry>,
    /// Agents this one can hand the conversation over to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub handoffs: Vec<Handoff>,
    /// How tools are offered: native provider tool calling, or XML in the text.
    #[serde(default)]
    pub tool_protocol: ToolProtocol,
    /// The execution strategy and its bounds.
    #[serde(default)]
    pub execution: Execution,
    /// Middleware, in order: `before` runs in order, `after` in reverse.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub middleware: Vec<MiddlewareEntry>,
    /// How the conversation is kept inside the model's context window (default: summarize
    /// at 80% of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextSpec>,
    /// Bounds of the run; absent means unbounded.
    #[serde(default)]
    pub limits: Limits,
    /// Which tool calls run, which need a person's approval, which never run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<PermissionsSpec>,
    /// The kernel sandbox of every `shell` tool and stdio MCP server of this agent and of
    /// its sub-agents and handoff targets, which can only narrow it (docs/security.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxSpec>,
    /// Regular expressions whose matches are replaced by `[REDACTED]` in every tool result,
    /// besides the built-in token formats, before the model, events or transcript see it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redact: Vec<String>,
    /// Programs run before and after tool calls, at the start and end of the run, and when
    /// it pauses for a person (docs/hooks.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hooks: Option<HooksSpec>,
    /// A minijinja expression checked after each step over `step`, `usage`, `llm_calls`,
    /// `tool_calls`, `elapsed_ms` and `metadata`; true ends the run with `limit_reached`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_when: Option<String>,
    /// Structured output: the final answer must match `schema`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<OutputSpec>,
    /// What a final answer cut off by the model's length limit, or an empty one, does to
    /// the run: `warn` (default: a warning in the result and on stderr) or `fail`.
    #[serde(default, skip_serializing_if = "AnswerChecks::is_default")]
    pub answer: AnswerChecks,
    /// Checkpoint after every step: true (default), false, or `{ dir: ... }`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoints: Option<Checkpoints>,
    /// The initial `state.metadata`.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
    /// What the OpenTelemetry export of this agent's runs adds to the resource, when export
    /// is on (docs/telemetry.md); the root agent's counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<TelemetrySpec>,
}

/// Schema version 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(try_from = "u64", into = "u64")]
#[schemars(with = "SchemaVersionNumber")]
pub struct SchemaVersion;

/// The only schema version.
#[derive(JsonSchema)]
#[allow(dead_code)] // exists for its schema only
#[schemars(extend("const" = 1))]
struct SchemaVersionNumber(u64);

impl TryFrom<u64> for SchemaVersion {
    type Error = String;
    fn try_from(value: u64) -> Result<Self, Self::Error> {
        if value == 1 {
            Ok(SchemaVersion)
        } else {
            Err(format!(
                "version {value} is not supported; only version 1 exists"
            ))
        }
    }
}

impl From<SchemaVersion> for u64 {
    fn from(_: SchemaVersion) -> u64 {
        1
    }
}

/// The name of an environment variable.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct EnvName(#[schemars(regex(pattern = r"^[A-Za-z_][A-Za-z0-9_]*$"))] pub String);

/// A typed input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InputSpec {
    /// The value's type; `--var` values are converted to it.
    #[serde(rename = "type", default)]
    pub kind: InputType,
    /// What the input is, for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The run fails with exit 2 when a required input has no value.
    #[serde(default)]
    pub required: bool,
    /// The value when none is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// The allowed values.
    #[serde(rename = "enum", default, skip_serializing_if = "Option::is_none")]
    pub allowed: Option<Vec<Value>>,
}

/// The types an input can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum InputType {
    #[default]
    String,
    Number,
    Integer,
    Boolean,
    Array,
    Object,
}

impl InputType {
    pub fn as_str(self) -> &'static str {
        match self {
            InputType::String => "string",
            InputType::Number => "number",
            InputType::Integer => "integer",
            InputType::Boolean => "boolean",
            InputType::Array => "array",
            InputType::Object => "object",
        }
    }
}

/// How tools are offered to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ToolProtocol {
    /// The provider's own tool calling.
    #[default]
    Native,
    /// Tools described in the system prompt and called as XML in the reply's text, for models
    /// without native tool calling.
    Xml,
}

/// The checks of a final answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerChecks {
    /// The model stopped at its length limit (`finish_reason: length`): the answer is cut off.
    #[serde(default)]
    pub truncated: OnProblem,
    /// The answer is empty (or only whitespace).
    #[serde(default)]
    pub empty: OnProblem,
}

impl AnswerChecks {
    pub fn is_default(&self) -> bool {
        *self == AnswerChecks::default()
    }
}

/// What a problem with the final answer does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OnProblem {
    /// A warning in the result's `warnings` and on stderr; the run completes.
    #[default]
    Warn,
    /// The run fails (exit 1) with the problem's code (`truncated`, `empty_answer`).
    Fail,
}

/// Structured output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    /// The JSON Schema the final answer must match; the value lands in the result's `structured`.
    pub schema: ParameterSchema,
    /// How many more answers the model may give when one does not match; default 2. Never
    /// matching ends the run `failed` (`structured_output`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<u32>,
}

/// Whether and where checkpoints are written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Checkpoints {
    /// true (default): under `.runner/sessions`; false: none.
    Enabled(bool),
    /// Under another directory.
    Dir(CheckpointDir),
}

/// `checkpoints: { dir: ... }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointDir {
    /// The sessions directory (default `.runner/sessions`).
    pub dir: String,
}
