//! `hooks:` as written: programs the runner starts at points of a run, each given one JSON
//! object on stdin and answering with JSON on stdout (docs/hooks.md). Compiled into the
//! engine's policy (`crate::policy::Hooks`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::duration::HumanDuration;
use super::permissions::PermissionPattern;

/// Programs run at points of a run. Sub-agents and handoff targets without `hooks` of their
/// own follow their caller's tool hooks; `run_start`, `run_end` and `user_input` are the
/// root agent's.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HooksSpec {
    /// Before a call runs (after `permissions` let it): may allow it, deny it with a reason,
    /// or rewrite its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pre_tool_use: Vec<ToolHookSpec>,
    /// After a call ran, before anyone sees its result: may replace it, fail it or add a note.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub post_tool_use: Vec<ToolHookSpec>,
    /// Before the first model call; may refuse the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub run_start: Vec<RunStartHookSpec>,
    /// After the run, with its result envelope.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub run_end: Vec<NoticeHookSpec>,
    /// When the run pauses to wait for a person (exit 4), with what it waits for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub user_input: Vec<NoticeHookSpec>,
}

/// A hook on tool calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolHookSpec {
    pub command: HookCommand,
    /// Only calls matching one of these patterns (as in `permissions`); absent: every call.
    #[serde(default, rename = "match", skip_serializing_if = "Vec::is_empty")]
    pub matches: Vec<PermissionPattern>,
    /// How long the program may take (default 10s); then it is killed and counts as failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<HumanDuration>,
    /// What a failure (no start, non-zero exit, timeout, an answer that is not one) means
    /// for the call: `deny` (the default: it does not run, or its result is withheld) or
    /// `allow` (as if the hook had not been there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_error: Option<OnHookError>,
}

/// The `run_start` hook.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunStartHookSpec {
    pub command: HookCommand,
    /// How long the program may take (default 10s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<HumanDuration>,
    /// What a failure means: `allow` (the default: a warning, the run goes on) or `deny`
    /// (the run does not start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_error: Option<OnHookError>,
}

/// A hook told of something that happened; its answer is not read, and a failure is a
/// warning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoticeHookSpec {
    pub command: HookCommand,
    /// How long the program may take (default 10s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<HumanDuration>,
}

/// The program and its arguments, run directly (never through a shell: write
/// `[sh, -c, "…"]` for one). A first word with a `/` is a path from the agent file's
/// directory; a bare name is looked up on `PATH`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct HookCommand(#[schemars(length(min = 1))] pub Vec<String>);

/// What a hook that fails means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnHookError {
    Deny,
    Allow,
}

/// What every kind of hook entry has: its command.
pub trait HookEntry {
    fn command(&self) -> &HookCommand;
}

impl HookEntry for ToolHookSpec {
    fn command(&self) -> &HookCommand {
        &self.command
    }
}

impl HookEntry for RunStartHookSpec {
    fn command(&self) -> &HookCommand {
        &self.command
    }
}

impl HookEntry for NoticeHookSpec {
    fn command(&self) -> &HookCommand {
        &self.command
    }
}
