//! The test file (`x.test.yaml`): which agent, its cases, and what each case expects.
//!
//! The types are the schema: `schemas/test.schema.json` is generated from them (schemars),
//! as `schemas/agent.schema.json` is from the agent file's, and a test file is checked
//! against it before anything runs.

use indexmap::IndexMap;
use schemars::JsonSchema;

use crate::output::result::Status;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::spec::duration::HumanDuration;
use crate::spec::model::{ModelRef, ModelShorthand, ScriptedResponse};

/// The schema's `$id`.
pub const TEST_SCHEMA_ID: &str = "https://runner.dev/schemas/test.schema.json";

/// Tests of one agent: the cases `runner test` runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "runner test file")]
pub struct TestFile {
    /// The agent file the cases run, relative to this file.
    pub agent: String,
    /// The model that grades `judge:` assertions that name none: `provider/name` or a
    /// mapping, as an agent's `model:`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_model: Option<ModelRef>,
    /// How long a case may run before it fails (default 5m); a case's own `timeout` wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<HumanDuration>,
    /// The cases, each a run of the agent in a fresh temporary workspace.
    #[schemars(length(min = 1))]
    pub cases: Vec<Case>,
}

/// One run of the agent and what it must leave behind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// The case's name, unique in the file: letters, digits, `-`, `_` and `.`.
    #[schemars(regex(pattern = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"))]
    pub name: String,
    /// What the case checks, for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The input text (`--input`): `{{ input }}`, or the first message when the agent has
    /// no `prompt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// Input values by name, typed as written (like `--vars FILE`).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub inputs: Map<String, Value>,
    /// A cassette to replay (relative to this file): no network, no key. `runner test
    /// --record` records it from the agent's real model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cassette: Option<String>,
    /// The model's answers, in order, instead of the agent's model (a scripted model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<Vec<ScriptedResponse>>,
    /// The model of the root agent instead of the file's (`--model provider/name`): for an
    /// agent with no model of its own, or a cassette recorded with another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelShorthand>,
    /// Run against the agent's real model every time; skipped unless `runner test --live`
    /// (or `--record`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub live: bool,
    /// Answers for `ask_user` and forms: a map from question id or text to answer, or a
    /// list used in order (as `--answers FILE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<Answers>,
    /// Files laid into the workspace before the run: path (relative, inside it) → text.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub files: IndexMap<String, String>,
    /// A shell command run in the workspace before the agent (`sh -c`), after `files`;
    /// `$RUNNER_TEST_DIR` is the test file's directory. A failure fails the case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<String>,
    /// Environment variables of the run: a value sets one, `null` removes it.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    #[schemars(schema_with = "env_schema")]
    pub env: IndexMap<String, Option<String>>,
    /// How long the run may take before the case fails (default: the file's, else 5m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<HumanDuration>,
    /// With `--repeat N`: the share of runs that must pass, 0 to 1 (default 1, all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1))]
    pub min_pass_rate: Option<f64>,
    /// Skip the case, saying why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip: Option<String>,
    /// What the run must leave behind; each entry is one assertion.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expect: Vec<Assertion>,
}

/// `env:`: text or `null` per variable. Written out because the published schema leaves
/// `null` out of optional values, where it is a slip; here it means "remove".
fn env_schema(_generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
        "additionalProperties": {"anyOf": [{"type": "string"}, {"const": null}]}
    })
}

/// `answers:` — a map or a list, as `--answers FILE` takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Answers {
    /// Question id or text → answer.
    ByQuestion(IndexMap<String, String>),
    /// Answers used in order.
    InOrder(Vec<String>),
}

/// One assertion: a mapping with exactly one key, the kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Assertion {
    /// The run's status.
    Status(Status),
    /// The process's exit code (0 completed, 1 failed, 2 invalid, 3 limit, 4 input, 130).
    ExitCode(u8),
    /// The bound that ended a `limit_reached` run (`max_llm_calls`, `timeout`, ...).
    Limit(String),
    /// The final answer is this text (leading and trailing whitespace ignored).
    Output(String),
    /// The final answer contains this text.
    OutputContains(String),
    /// The final answer matches this regular expression.
    OutputMatches(String),
    /// A value of the structured answer (`output.schema`), by JSON pointer.
    Structured(StructuredCheck),
    /// The structured answer matches this JSON Schema.
    StructuredSchema(Map<String, Value>),
    /// A tool was called (by any agent of the run): a name, or a mapping with argument
    /// patterns and counts.
    ToolCalled(NameOr<ToolCallCheck>),
    /// No agent of the run called this tool.
    ToolNotCalled(String),
    /// The sequence of tool calls: `in_order` (these, in this order, others between
    /// allowed), `exactly` (this whole sequence) or `set` (these tools and no others).
    ToolCalls(ToolSequence),
    /// A sub-agent tool was called: its name, or `{name, times}`.
    SubAgentCalled(NameOr<CountCheck>),
    /// A file exists in the workspace after the run.
    FileExists(String),
    /// A file does not exist in the workspace after the run.
    FileAbsent(String),
    /// A file of the workspace after the run contains a text or matches a pattern.
    FileContains(FileCheck),
    /// At most this many steps (the whole tree's).
    MaxSteps(u64),
    /// At most this many model calls.
    MaxLlmCalls(u64),
    /// At most this many tool calls.
    MaxToolCalls(u64),
    /// At most this many tokens, input and output.
    MaxTokens(u64),
    /// At most this cost in US dollars (needs the model's `pricing`).
    MaxCostUsd(f64),
    /// `true`: every tool call of the run succeeded.
    NoToolErrors(bool),
    /// A model grades the answer against a rubric, answering pass or fail with a reason.
    Judge(JudgeCheck),
}

/// A name, or a mapping that says more.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum NameOr<T> {
    Name(String),
    Full(T),
}

/// `structured:` — the value at `pointer` equals, contains or matches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StructuredCheck {
    /// A JSON pointer into the structured answer (`/verdict`; "" is all of it).
    #[serde(default)]
    pub pointer: String,
    /// The value there equals this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<Value>,
    /// The value there is text containing this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contains: Option<String>,
    /// The value there is text matching this regular expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matches: Option<String>,
}

/// `tool_called:` in full.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolCallCheck {
    /// The tool's name, as the model sees it.
    pub name: String,
    /// Argument name → regular expression its value must match (text as is, other values
    /// as JSON). Only calls whose arguments all match count.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub args: IndexMap<String, String>,
    /// Exactly this many matching calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<u64>,
    /// At least this many (default 1 when no count is given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_times: Option<u64>,
    /// At most this many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_times: Option<u64>,
}

/// `sub_agent_called:` in full.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CountCheck {
    /// The sub-agent tool's name.
    pub name: String,
    /// Exactly this many calls.
    pub times: u64,
}

/// `tool_calls:` — one of the three forms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolSequence {
    /// These calls happened in this order; other calls may come between them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_order: Option<Vec<String>>,
    /// The run's tool calls were exactly these, in this order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exactly: Option<Vec<String>>,
    /// The tools called were these, each at least once, and no others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set: Option<Vec<String>>,
}

/// `file_contains:`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileCheck {
    /// The file, relative to the workspace.
    pub path: String,
    /// It contains this text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// It matches this regular expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matches: Option<String>,
}

/// `judge:` — a rubric and the model that grades against it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JudgeCheck {
    /// What a good answer does, in words; the judge passes or fails the answer by it.
    pub rubric: String,
    /// The grading model (default: the file's `judge_model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelRef>,
}

impl Assertion {
    /// The assertion's kind, as written (`output_contains`).
    pub fn kind(&self) -> &'static str {
        match self {
            Assertion::Status(_) => "status",
            Assertion::ExitCode(_) => "exit_code",
            Assertion::Limit(_) => "limit",
            Assertion::Output(_) => "output",
            Assertion::OutputContains(_) => "output_contains",
            Assertion::OutputMatches(_) => "output_matches",
            Assertion::Structured(_) => "structured",
            Assertion::StructuredSchema(_) => "structured_schema",
            Assertion::ToolCalled(_) => "tool_called",
            Assertion::ToolNotCalled(_) => "tool_not_called",
            Assertion::ToolCalls(_) => "tool_calls",
            Assertion::SubAgentCalled(_) => "sub_agent_called",
            Assertion::FileExists(_) => "file_exists",
            Assertion::FileAbsent(_) => "file_absent",
            Assertion::FileContains(_) => "file_contains",
            Assertion::MaxSteps(_) => "max_steps",
            Assertion::MaxLlmCalls(_) => "max_llm_calls",
            Assertion::MaxToolCalls(_) => "max_tool_calls",
            Assertion::MaxTokens(_) => "max_tokens",
            Assertion::MaxCostUsd(_) => "max_cost_usd",
            Assertion::NoToolErrors(_) => "no_tool_errors",
            Assertion::Judge(_) => "judge",
        }
    }
}
