//! The environment of a program a run starts (a `shell` command, a hook, a stdio MCP
//! server): the runner's, without its secrets ([`scrub_env`]), in the run's trace.

use std::ffi::OsString;

use super::scrub_env;
use crate::trace_env::ChildTrace;

/// What a run's programs are started with besides the runner's environment.
#[derive(Debug, Clone, Default)]
pub struct ChildEnv {
    /// Variable names withheld besides the usual secrets (each agent's `api_key_env`).
    pub deny: Vec<String>,
    /// The run's trace context: with OpenTelemetry export on, `TRACEPARENT` names the
    /// run's span.
    pub trace: ChildTrace,
}

impl ChildEnv {
    /// Withholding `deny` besides the usual secrets, with no trace of a run's own.
    pub fn withholding(deny: Vec<String>) -> Self {
        ChildEnv {
            deny,
            trace: ChildTrace::default(),
        }
    }

    /// The variables a child is started with (after `env_clear`).
    pub fn vars(&self) -> Vec<(OsString, OsString)> {
        let mut vars = scrub_env(std::env::vars_os(), &self.deny);
        self.trace.carry(&mut vars);
        vars
    }
}
