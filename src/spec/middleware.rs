//! The `middleware` key: an ordered chain; `before` runs in order, `after` in reverse.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::duration::HumanDuration;
use super::hooks::HookCommand;
use super::model::ModelRef;

/// One middleware, written as a single-key mapping: `- sliding_window: { max_messages: 60 }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum MiddlewareEntry {
    /// Logs each model call and tool call to stderr (never secrets).
    Logging(LoggingConfig),
    /// Keeps only the most recent messages; never separates a tool call from its results.
    SlidingWindow(SlidingWindowConfig),
    /// Replaces old, large tool outputs with a short marker when the context grows too big.
    PruneToolOutputs(PruneToolOutputsConfig),
    /// Summarises old history with a model call when the context grows too big.
    Summarize(SummarizeConfig),
    /// A program that sees each model request before it is sent and each response after,
    /// as JSON on stdin, and may answer with changed messages or a changed response.
    Command(CommandMiddlewareConfig),
}

/// Options of `command`: the program as a hook's, its bound, what its failure means.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandMiddlewareConfig {
    /// The program and its arguments, run directly (never through a shell). A first word
    /// with a `/` is a path from the agent file's directory; a bare name is looked up on
    /// `PATH`.
    pub command: HookCommand,
    /// How long one run of the program may take (default 10s); then it is killed and
    /// counts as failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<HumanDuration>,
    /// What a failure (no start, non-zero exit, timeout, an answer that is not one) means:
    /// `fail` (the default: the model call fails, and the run with it) or `continue` (the
    /// request or response goes on as it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_error: Option<OnMiddlewareError>,
}

/// What a `command` middleware that fails means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnMiddlewareError {
    Fail,
    Continue,
}

/// Options of `logging`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoggingConfig {
    /// error, warn, info (default) or debug.
    #[serde(default)]
    pub level: LogLevel,
    /// Also log message contents (default false).
    #[serde(default)]
    pub include_messages: bool,
    /// Log how long each call took (default true).
    #[serde(default = "default_true")]
    pub include_timing: bool,
}

fn default_true() -> bool {
    true
}

/// Log levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    Error,
    Warn,
    #[default]
    Info,
    Debug,
}

/// Options of `sliding_window`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SlidingWindowConfig {
    /// The most messages sent to the model (the system prompt is not counted).
    #[schemars(range(min = 1))]
    pub max_messages: u64,
}

/// Options of `prune_tool_outputs` (sizes in tokens, estimated).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PruneToolOutputsConfig {
    /// The model's context size.
    #[schemars(range(min = 1))]
    pub context_limit: u64,
    /// Room kept free for the model's answer.
    #[serde(default)]
    pub output_reserve: u64,
    /// The most recent tokens of tool output that are never pruned.
    #[serde(default)]
    pub protect_recent: u64,
}

/// Options of `summarize`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SummarizeConfig {
    /// Summarise once the history exceeds this many tokens (estimated).
    #[schemars(range(min = 1))]
    pub threshold: u64,
    /// The most recent messages kept verbatim.
    #[serde(default = "default_keep_recent")]
    pub keep_recent: u64,
    /// The model that writes the summary (default: the agent's model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelRef>,
}

fn default_keep_recent() -> u64 {
    10
}
