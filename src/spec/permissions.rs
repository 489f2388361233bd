//! `permissions:` as written: which tool calls run, which a person approves first, which
//! never run (docs/permissions.md). The patterns are checked by `runner validate` and
//! compiled into the engine's policy (`crate::policy`).

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What happens to a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// It runs.
    #[default]
    Allow,
    /// A person approves or denies it first.
    Ask,
    /// It does not run; the model gets an error saying why.
    Deny,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Allow => "allow",
            Verdict::Ask => "ask",
            Verdict::Deny => "deny",
        })
    }
}

/// Rules over the agent's tool calls: `deny` wins, then `allow`, then `ask`; `default`
/// decides the calls no pattern matches. Sub-agents and handoff targets without their own
/// follow these.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PermissionsSpec {
    /// For calls no pattern matches: `allow` (the default), `ask` or `deny`.
    #[serde(default)]
    pub default: Verdict,
    /// Calls that never run; the model is told why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<PermissionPattern>,
    /// Calls that run without asking.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<PermissionPattern>,
    /// Calls a person approves first: on the terminal, with `--answers`, `--yes`, or by
    /// `runner resume --approve` after the run pauses (exit 4).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ask: Vec<PermissionPattern>,
}

/// `TOOL` or `TOOL:ARGUMENT=VALUE`, both globs (`*` matches any characters, `/` included):
/// `shell`, `mcp_github_*`, `shell:command=git push*`, `write_file:path=src/**`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct PermissionPattern(#[schemars(length(min = 1))] pub String);

impl PermissionsSpec {
    /// The pattern texts of one list.
    pub fn texts(list: &[PermissionPattern]) -> Vec<String> {
        list.iter().map(|p| p.0.clone()).collect()
    }
}
