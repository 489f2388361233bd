//! Running one hook program: started directly in the workspace with the environment `shell`
//! gives its commands (secrets withheld), its input written to stdin, bounded by its
//! timeout and by the run's stop signal, its stdout read as the answer and its stderr
//! appended to the run directory's `hooks.log`.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use tokio::process::Command;
use tokio::sync::watch;

use super::{Hook, HookRunner};
use crate::tools::{ChildRun, End, Finished, run_child};

/// The most of a hook's stdout (its answer) or stderr that is kept.
const MAX_HOOK_OUTPUT: usize = 1024 * 1024;

/// Why a hook gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookFailure {
    #[error("cannot start `{program}`: {message}")]
    Start { program: String, message: String },
    #[error("it exited with status {code}{stderr}")]
    Exit { code: String, stderr: String },
    #[error("it did not finish within {0} and was killed")]
    TimedOut(String),
    #[error("the run was interrupted")]
    Interrupted,
    /// Its stdout is not an answer of the kind this point takes.
    #[error("its answer is not understood: {0}")]
    Garbage(String),
}

/// Where a hook's run belongs: the run directory for its stderr, what it is about (for
/// the log's heading), and the run's stop signal.
pub struct HookScene<'a> {
    /// The point's name (`pre_tool_use`, ...; `middleware` for a `command` middleware).
    pub point: &'static str,
    /// E.g. `call call_1 (shell)`; empty for run hooks.
    pub about: String,
    pub log_dir: Option<&'a Path>,
    pub cancel: &'a watch::Receiver<bool>,
}

impl HookRunner {
    /// Runs `hook` with `input` on stdin; its answer: the JSON object it printed, `None`
    /// for an empty stdout.
    pub async fn run(
        &self,
        hook: &Hook,
        input: &Value,
        scene: &HookScene<'_>,
    ) -> (Result<Option<Value>, HookFailure>, Duration) {
        let (program, arguments) = (&hook.program, hook.command.get(1..).unwrap_or_default());
        let mut command = Command::new(program);
        command
            .args(arguments)
            .current_dir(&self.workspace)
            .env_clear()
            .envs(self.env.vars());
        let stdin = serde_json::to_vec(input).unwrap_or_default();
        let ran = run_child(
            command,
            ChildRun {
                stdin: Some(stdin),
                sandbox: None,
                timeout: hook.timeout,
                cap: MAX_HOOK_OUTPUT,
                cancel: scene.cancel,
                live: None,
            },
        );
        let finished = match ran.await {
            Ok(finished) => finished,
            Err(error) => {
                let failure = HookFailure::Start {
                    program: program.display().to_string(),
                    message: error.to_string(),
                };
                self.log(hook, scene, &format!("{failure}\n"));
                return (Err(failure), Duration::ZERO);
            }
        };
        let stderr = String::from_utf8_lossy(&finished.stderr).into_owned();
        let stderr = self.redactor.redact_text(&stderr).unwrap_or(stderr);
        let answer = answer_of(&finished, &stderr, hook.timeout);
        if !stderr.is_empty() || answer.is_err() {
            let failure = answer.as_ref().err().map(|f| format!("[{f}]\n"));
            let text = format!("{stderr}{}", failure.unwrap_or_default());
            self.log(hook, scene, &text);
        }
        (answer, finished.elapsed)
    }

    /// Appends a hook's stderr to `hooks.log` under a heading naming the hook; nowhere
    /// without a run directory. A log that cannot be written loses only the log.
    fn log(&self, hook: &Hook, scene: &HookScene<'_>, text: &str) {
        let Some(dir) = scene.log_dir else {
            return;
        };
        let heading = format!("== {} `{}` {}", scene.point, hook.label(), scene.about);
        let entry = format!("{}\n{}\n", heading.trim_end(), text.trim_end());
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("hooks.log"));
        // One write per entry: entries of hooks running at once do not interleave.
        if let Ok(mut file) = file {
            let _ = file.write_all(entry.as_bytes());
        }
    }
}

/// The answer in a finished hook's stdout, or why there is none.
fn answer_of(
    finished: &Finished,
    stderr: &str,
    timeout: Duration,
) -> Result<Option<Value>, HookFailure> {
    match &finished.end {
        End::Exited(status) if status.success() => {}
        End::Exited(status) => {
            let code = match status.code() {
                Some(code) => code.to_string(),
                None => format!("{status}"),
            };
            let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
            let stderr = last.map(|l| format!(": {}", l.trim())).unwrap_or_default();
            return Err(HookFailure::Exit { code, stderr });
        }
        End::WaitFailed(error) => {
            return Err(HookFailure::Exit {
                code: "unknown".into(),
                stderr: format!(": {error}"),
            });
        }
        End::TimedOut => {
            let shown = crate::spec::duration::HumanDuration(timeout).to_string();
            return Err(HookFailure::TimedOut(shown));
        }
        End::Cancelled => return Err(HookFailure::Interrupted),
    }
    if finished.stdout_total > finished.stdout.len() as u64 {
        let message = format!("it printed {} bytes", finished.stdout_total);
        return Err(HookFailure::Garbage(message));
    }
    let text = String::from_utf8_lossy(&finished.stdout);
    if text.trim().is_empty() {
        return Ok(None);
    }
    match serde_json::from_str::<Value>(&text) {
        Ok(value @ Value::Object(_)) => Ok(Some(value)),
        Ok(_) => Err(HookFailure::Garbage(
            "it printed JSON that is not an object".into(),
        )),
        Err(error) => Err(HookFailure::Garbage(format!(
            "it printed something that is not JSON ({error})"
        ))),
    }
}
