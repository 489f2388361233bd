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

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};

use super::text::capped_text;
use super::{BoxFuture, Signature, Tool, ToolContext, ToolOutput, Workspace};

/// The default time a program may run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// How much of stdout (and, separately, of stderr) is kept.
pub const MAX_OUTPUT_BYTES: usize = 1024 * 1024;
/// After the child ended (or was killed), how long to wait for its output pipes to close
/// (a grandchild may still hold them).
const PIPE_GRACE: Duration = Duration::from_secs(2);

/// The `shell` built-in.
pub struct ShellTool {
    sig: Signature,
    workspace: Workspace,
    allow: Vec<String>,
    timeout: Duration,
    deny_env: Vec<String>,
}

impl ShellTool {
    /// `allow`: program names (or paths; relative paths are taken from the workspace root).
    /// `deny_env`: extra variable names kept from the child (e.g. every `api_key_env`).
    pub fn new(
        workspace: Workspace,
        allow: Vec<String>,
        timeout: Option<Duration>,
        deny_env: Vec<String>,
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
            deny_env,
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
            Some(entry) if entry.contains('/') => Ok(self.workspace.root().join(entry)),
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
            .envs(scrub_env(std::env::vars_os(), &self.deny_env))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // Its own process group: a Ctrl-C at the terminal reaches the runner, which then
        // cancels the call, rather than the child directly.
        #[cfg(unix)]
        child.process_group(0);
        let started = Instant::now();
        let mut child = match child.spawn() {
            Ok(child) => child,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return ToolOutput::error(format!("cannot run `{argv0}`: program not found ({e})"));
            }
            Err(e) => return ToolOutput::error(format!("cannot run `{argv0}`: {e}")),
        };
        // Killed with everything it started if this call is dropped before it ends: a run
        // that is interrupted must not leave the command's children behind.
        let mut group = ProcessGroup::of(&child);
        let out_buf = Captured::default();
        let err_buf = Captured::default();
        let stdout = tokio::spawn(read_capped(
            child.stdout.take(),
            MAX_OUTPUT_BYTES,
            out_buf.clone(),
        ));
        let stderr = tokio::spawn(read_capped(
            child.stderr.take(),
            MAX_OUTPUT_BYTES,
            err_buf.clone(),
        ));

        enum End {
            Exited(ExitStatus),
            WaitFailed(std::io::Error),
            TimedOut,
            Cancelled,
        }
        let end = tokio::select! {
            waited = tokio::time::timeout(self.timeout, child.wait()) => match waited {
                Ok(Ok(status)) => End::Exited(status),
                Ok(Err(e)) => End::WaitFailed(e),
                Err(_) => End::TimedOut,
            },
            _ = ctx.cancelled() => End::Cancelled,
        };
        let mut status = None;
        if let End::Exited(s) = &end {
            status = Some(*s);
            group.release();
        } else {
            // The child leads its own process group: kill the group, so programs it started
            // (rustc under cargo, a test binary) do not outlive the timeout.
            group.kill();
            let _ = child.start_kill();
            status = child.wait().await.ok().or(status);
        }
        let elapsed = started.elapsed();
        let (out, out_total) = collect(stdout, out_buf).await;
        let (err, err_total) = collect(stderr, err_buf).await;

        let exit_code = status.and_then(|s| s.code());
        let data = json!({
            "exit_code": exit_code,
            "stdout": capped_text(&out, out_total),
            "stderr": capped_text(&err, err_total),
            "timed_out": matches!(end, End::TimedOut),
        });
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
        output
    }
}

/// The process group a command leads, killed (SIGKILL) when the call gives up on it or is
/// dropped while it runs.
struct ProcessGroup {
    pid: Option<i32>,
}

impl ProcessGroup {
    fn of(child: &tokio::process::Child) -> Self {
        ProcessGroup {
            pid: child.id().and_then(|pid| i32::try_from(pid).ok()),
        }
    }

    fn kill(&mut self) {
        if let Some(pid) = self.pid.take() {
            // SAFETY: killpg only sends a signal; a stale group id makes it fail harmlessly.
            unsafe {
                libc::killpg(pid, libc::SIGKILL);
            }
        }
    }

    /// The command ended by itself: what it left running is its own business.
    fn release(&mut self) {
        self.pid = None;
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The environment for a child: `vars` without secrets. Dropped: `OPENAI_API_KEY`,
/// `ANTHROPIC_API_KEY`, `API_KEY`, every name ending in `_API_KEY` or `_TOKEN` (compared
/// case-insensitively), and every name in `deny` (e.g. each agent's `api_key_env`).
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

fn is_secret_name(name: &str, deny: &[String]) -> bool {
    let upper = name.to_ascii_uppercase();
    upper == "OPENAI_API_KEY"
        || upper == "ANTHROPIC_API_KEY"
        || upper == "API_KEY"
        || upper.ends_with("_API_KEY")
        || upper.ends_with("_TOKEN")
        || deny.iter().any(|d| d == name)
}

/// What has been read from one pipe: the first bytes (up to the cap) and the total size.
type Captured = Arc<Mutex<(Vec<u8>, u64)>>;

/// Reads all of `reader` into `into`, keeping the first `cap` bytes and counting the rest.
async fn read_capped<R: AsyncRead + Unpin>(reader: Option<R>, cap: usize, into: Captured) {
    let Some(mut reader) = reader else {
        return;
    };
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let mut captured = into.lock().unwrap_or_else(|e| e.into_inner());
                captured.1 += n as u64;
                let room = cap.saturating_sub(captured.0.len());
                captured.0.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
}

/// Waits (briefly) for a pipe reader to finish, then returns what it captured. A pipe still
/// held open by a grandchild after the grace period is abandoned with what was read so far.
async fn collect(task: tokio::task::JoinHandle<()>, captured: Captured) -> (Vec<u8>, u64) {
    let abort = task.abort_handle();
    if tokio::time::timeout(PIPE_GRACE, task).await.is_err() {
        abort.abort();
    }
    let mut captured = captured.lock().unwrap_or_else(|e| e.into_inner());
    (std::mem::take(&mut captured.0), captured.1)
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
