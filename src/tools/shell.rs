//! `shell`: runs one allowed program, directly (never through `sh -c`).
//!
//! * `command` is split into argv with shell word rules (quotes and backslashes) and no
//!   expansion: `$(…)`, `$VAR`, `*`, `;`, `|`, `&&` and redirections are ordinary characters
//!   that reach the program as (parts of) arguments.
//! * argv\[0\] must be allowed: it equals an `allow` entry, or it is a bare name equal to the
//!   file name of an entry (`git` matches `git` and `/usr/bin/git`); the entry is what runs.
//!   A path not listed exactly (`./git`, `/tmp/git`) is refused.
//! * The working directory is the workspace root; stdin is empty.
//! * The child's environment is the runner's minus secrets, see [`scrub_env`].
//! * After `timeout` (default 60s), or when the run is interrupted, the child is killed.
//! * stdout and stderr are captured separately, each capped at [`MAX_OUTPUT_BYTES`].
//! * Under a `sandbox:` the program runs confined by the kernel (`crate::sandbox`); where
//!   the kernel cannot, it runs unconfined, its result saying `sandbox: unavailable`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use super::child::{ChildRun, End, Finished, run_child};
use super::text::capped_text;
use super::{BoxFuture, ChildEnv, Signature, Tool, ToolContext, ToolOutput, Workspace};
use crate::sandbox::{self, Confine, Sandbox};
use crate::secrets::is_secret_name;

/// The default time a program may run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// How much of stdout (and, separately, of stderr) is kept.
pub const MAX_OUTPUT_BYTES: usize = 1024 * 1024;

/// The `shell` built-in.
pub struct ShellTool {
    sig: Signature,
    workspace: Workspace,
    allow: Vec<String>,
    timeout: Duration,
    env: ChildEnv,
    sandbox: Option<Sandbox>,
}

impl ShellTool {
    /// `allow`: program names (or paths; relative paths are taken from the workspace root).
    /// `env`: what the child is started with (extra variable names kept from it, e.g.
    /// every `api_key_env`, and the run's trace).
    pub fn new(
        workspace: Workspace,
        allow: Vec<String>,
        timeout: Option<Duration>,
        env: ChildEnv,
    ) -> Self {
        let parameters = json!({
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "description": format!(
                        "The command line, e.g. `git status --short`. It is split into words like a shell \
                         would (quotes group words), but nothing is expanded and there are no pipes, \
                         redirections or `;`: one program runs. Allowed programs: {}.",
                        allow.join(", ")
                    )
                }
            },
            "required": ["command"],
            "additionalProperties": false
        });
        ShellTool {
            sig: Signature::new(
                "shell",
                format!(
                    "Run one program in the workspace directory and return its exit code, stdout and \
                     stderr. Allowed programs: {}.",
                    allow.join(", ")
                ),
                parameters,
            ),
            workspace,
            allow,
            timeout: timeout.unwrap_or(DEFAULT_TIMEOUT),
            env,
            sandbox: None,
        }
    }

    /// The same tool, its programs confined by `sandbox`.
    pub fn sandboxed(self, sandbox: Option<Sandbox>) -> Self {
        ShellTool { sandbox, ..self }
    }

    /// What the sandbox keeps out of reach: the runner's state (hidden) and the agent's
    /// own files (read-only), read at each call since a reload may change them.
    fn confine(&self) -> Confine {
        let protected = self.workspace.protected();
        Confine {
            workspace: self.workspace.root().to_path_buf(),
            hidden: sandbox::hidden_paths(protected.state_dirs()),
            read_only: protected.files(),
        }
    }

    /// The program to run for `argv0`, or why it is refused.
    fn program(&self, argv0: &str) -> Result<PathBuf, String> {
        let bare = !argv0.contains('/');
        let entry = self.allow.iter().find(|entry| {
            entry.as_str() == argv0
                || (bare
                    && std::path::Path::new(entry.as_str())
                        .file_name()
                        .is_some_and(|name| name == argv0))
        });
        match entry {
            Some(entry) if entry.contains('/') => {
                let program = self.workspace.root().join(entry);
                self.workspace.unchanged(&program)?;
                Ok(program)
            }
            Some(entry) => Ok(PathBuf::from(entry)),
            None => Err(format!(
                "program `{argv0}` is not allowed; allowed programs: {}",
                if self.allow.is_empty() {
                    "(none)".to_string()
                } else {
                    self.allow.join(", ")
                }
            )),
        }
    }

    async fn run(&self, arguments: Value, ctx: &ToolContext) -> ToolOutput {
        let arguments = match self.sig.accept(arguments) {
            Ok(arguments) => arguments,
            Err(out) => return out,
        };
        let command = arguments["command"].as_str().unwrap_or_default();
        let argv = match shell_words::split(command) {
            Ok(argv) => argv,
            Err(e) => {
                return ToolOutput::error(format!("cannot split the command into words: {e}"));
            }
        };
        let Some(argv0) = argv.first() else {
            return ToolOutput::error("the command is empty");
        };
        let program = match self.program(argv0) {
            Ok(program) => program,
            Err(message) => return ToolOutput::error(message),
        };
        let mut child = tokio::process::Command::new(&program);
        child
            .args(&argv[1..])
            .current_dir(self.workspace.root())
            .env_clear()
            .envs(self.env.vars());
        let mut unconfined = None;
        let mut confined = None;
        if let Some(sandbox) = &self.sandbox {
            match sandbox.prepare(&self.confine()) {
                Ok(Some(prepared)) => confined = Some(prepared),
                Ok(None) => unconfined = Some(sandbox::unavailable(sandbox)),
                Err(message) => return ToolOutput::error(message),
            }
        }
        let ran = run_child(
            child,
            ChildRun {
                stdin: None,
                sandbox: confined,
                timeout: self.timeout,
                cap: MAX_OUTPUT_BYTES,
                cancel: &ctx.cancel,
                live: ctx.live_output(),
            },
        );
        let finished = match ran.await {
            Ok(finished) => finished,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return ToolOutput::error(format!("cannot run `{argv0}`: program not found ({e})"));
            }
            Err(e) => return ToolOutput::error(format!("cannot run `{argv0}`: {e}")),
        };
        let exit_code = finished.exit_code();
        let Finished {
            end,
            stdout: out,
            stdout_total: out_total,
            stderr: err,
            stderr_total: err_total,
            elapsed,
        } = finished;
        let mut data = json!({
            "exit_code": exit_code,
            "stdout": capped_text(&out, out_total),
            "stderr": capped_text(&err, err_total),
            "timed_out": matches!(end, End::TimedOut),
        });
        if unconfined.is_some() {
            data["sandbox"] = json!("unavailable");
        }
        let error = match &end {
            End::TimedOut => Some(format!(
                "`{argv0}` did not finish within {} and was killed",
                show_duration(self.timeout)
            )),
            End::Cancelled => Some(format!(
                "cancelled: the run was interrupted and `{argv0}` was killed"
            )),
            End::WaitFailed(e) => Some(format!("waiting for `{argv0}` failed: {e}")),
            End::Exited(status) if status.success() => None,
            End::Exited(status) => Some(match status.code() {
                Some(code) => format!("`{argv0}` exited with status {code}"),
                None => format!("`{argv0}` was terminated: {status}"),
            }),
        };
        let mut output = match error {
            None => ToolOutput::ok(data),
            Some(message) => ToolOutput::error(message).with_data(data),
        };
        output = output
            .with_meta("argv", argv.clone())
            .with_meta("duration_ms", elapsed.as_millis() as u64)
            .with_meta("stdout_bytes", out_total)
            .with_meta("stderr_bytes", err_total);
        if matches!(end, End::Cancelled) {
            output = output.with_meta("cancelled", true);
        }
        if let Some(why) = unconfined {
            output = output.with_meta("sandbox_unavailable", why);
        }
        output
    }
}

/// The environment for a child: `vars` without secrets. Dropped: `OPENAI_API_KEY`,
/// `ANTHROPIC_API_KEY`, `API_KEY`, every name ending in `_API_KEY` or `_TOKEN` (compared
/// case-insensitively), the NATS credentials (`NATS_CREDS`, `NATS_USER`, `NATS_PASSWORD`,
/// `NATS_TOKEN`), and every name in `deny` (e.g. each agent's `api_key_env`). A run's
/// programs get this and the run's trace ([`ChildEnv`]).
pub fn scrub_env(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    deny: &[String],
) -> Vec<(OsString, OsString)> {
    vars.into_iter()
        .filter(|(name, _)| {
            let name = name.to_string_lossy();
            !is_secret_name(&name, deny)
        })
        .collect()
}

fn show_duration(duration: Duration) -> String {
    if duration.subsec_millis() == 0 {
        format!("{}s", duration.as_secs())
    } else {
        format!("{}ms", duration.as_millis())
    }
}

impl Tool for ShellTool {
    fn name(&self) -> &str {
        self.sig.name
    }
    fn description(&self) -> &str {
        &self.sig.description
    }
    fn parameters(&self) -> &Value {
        &self.sig.parameters
    }
    /// The command as its words joined by single spaces, so `git  push` and `'git' push`
    /// match `shell:command=git push*` like `git push`.
    fn policy_arguments(&self, arguments: &Value) -> Option<Value> {
        let words = shell_words::split(arguments.get("command")?.as_str()?).ok()?;
        let mut normalized = arguments.clone();
        normalized["command"] = Value::String(shell_words::join(words));
        Some(normalized)
    }
    fn call<'a>(&'a self, arguments: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(self.run(arguments, ctx))
    }
}
