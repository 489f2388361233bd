//! Command hooks: programs the agent file names, started at points of a run — before and
//! after each tool call, at the start and end of the run, when it pauses for a person.
//! Each gets one JSON object on stdin and may answer with one on stdout; what an answer can
//! do depends on the point (`answer.rs`), and a hook that fails is treated as its
//! `on_error` says. `docs/hooks.md` is the user's side of this.

mod answer;
mod invoke;
mod run;
mod tool_call;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use invoke::{HookFailure, HookScene};
pub use run::RunHookInput;
pub use tool_call::{CallHookInput, Checked};

use super::{Pattern, Redactor};
use crate::tools::{ChildEnv, Protected};

/// The default bound on one hook's run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// An agent's hooks, and how their programs run.
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    pub pre_tool_use: Vec<ToolHook>,
    pub post_tool_use: Vec<ToolHook>,
    pub run_start: Vec<Hook>,
    pub run_end: Vec<Hook>,
    pub user_input: Vec<Hook>,
    pub runner: HookRunner,
}

/// One program and its bounds.
#[derive(Debug, Clone, PartialEq)]
pub struct Hook {
    /// The program and its arguments, as written (in messages and `hooks.log`).
    pub command: Vec<String>,
    /// The program that runs: `command[0]`, a relative path made absolute.
    pub program: PathBuf,
    pub timeout: Duration,
    pub on_error: OnError,
}

/// A hook on tool calls, for the calls its patterns match (all, without patterns).
#[derive(Debug, Clone)]
pub struct ToolHook {
    pub hook: Hook,
    pub matches: Vec<Pattern>,
}

/// What a hook that fails (cannot start, exits non-zero, times out, answers garbage) means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnError {
    /// The call does not run, its result is withheld, or the run does not start.
    Deny,
    /// As if the hook had not been there (a warning says it failed).
    Allow,
}

/// Where hook programs run, with what, and where their stderr goes.
#[derive(Debug, Clone, Default)]
pub struct HookRunner {
    /// The working directory: the workspace.
    pub workspace: PathBuf,
    /// What hooks are started with, as `shell` commands are: the environment without the
    /// usual secrets and these names, in the run's trace.
    pub env: ChildEnv,
    /// Applied to what a hook writes to stderr before it reaches `hooks.log`.
    pub redactor: Redactor,
    /// The run's definition files: a hook program among them runs only unchanged.
    pub protected: Arc<Protected>,
}

/// The point of a run a hook is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HookPoint {
    PreToolUse,
    PostToolUse,
    RunStart,
    RunEnd,
    UserInput,
}

impl HookPoint {
    pub fn name(self) -> &'static str {
        match self {
            HookPoint::PreToolUse => "pre_tool_use",
            HookPoint::PostToolUse => "post_tool_use",
            HookPoint::RunStart => "run_start",
            HookPoint::RunEnd => "run_end",
            HookPoint::UserInput => "user_input",
        }
    }
}

/// What one hook's run did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HookOutcome {
    /// It answered nothing (or nothing to do): the call goes on as it was.
    NoChange,
    /// It let the call run (a call `permissions` sent to `ask` runs without asking).
    Allowed,
    /// It stopped the call (or withheld its result); the model is told why.
    Denied,
    /// It changed the call's arguments.
    Rewrote,
    /// It replaced the call's result (its data, or made it a failure).
    Replaced,
    /// It added a note to the result.
    Annotated,
    /// The hook itself failed; its `on_error` decided what happened.
    Failed,
}

/// One hook's run, for the events: which hook, what it did, how long it took.
#[derive(Debug, Clone, PartialEq)]
pub struct HookReport {
    pub point: HookPoint,
    /// The hook's command line.
    pub command: String,
    pub outcome: HookOutcome,
    pub duration: Duration,
    /// Why the hook failed, or the reason it gave for a denial.
    pub detail: Option<String>,
}

impl Hook {
    /// The command line as people read it (in events, warnings and `hooks.log`).
    pub fn label(&self) -> String {
        shell_words::join(&self.command)
    }
}

impl ToolHook {
    /// Whether the hook is for a call of `tool` with `arguments` (as the rules see them).
    pub fn applies(&self, tool: &str, arguments: &serde_json::Value) -> bool {
        self.matches.is_empty() || self.matches.iter().any(|p| p.matches(tool, arguments))
    }
}

impl HookRunner {
    /// Why `hook` may not run: its program, a file of the definition, changed since the
    /// run started (a hook rewritten by an allowed program would decide for the model).
    pub fn refuses(&self, hook: &Hook) -> Option<HookFailure> {
        let message = self.protected.unchanged(&hook.program).err()?;
        Some(HookFailure::Start {
            program: hook.program.display().to_string(),
            message,
        })
    }
}

impl Hooks {
    /// No hooks at all.
    pub fn is_empty(&self) -> bool {
        self.pre_tool_use.is_empty()
            && self.post_tool_use.is_empty()
            && self.run_start.is_empty()
            && self.run_end.is_empty()
            && self.user_input.is_empty()
    }
}
