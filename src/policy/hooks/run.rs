//! The hooks of a whole run: `run_start` before its first model call (it may refuse the
//! run), `run_end` with its result envelope, `user_input` when it pauses for a person.
//! Only `run_start` is listened to; the others are told, and a failure is a warning.

use std::path::Path;

use serde_json::{Value, json};
use tokio::sync::watch;

use super::answer::{HookDecision, RunStartAnswer, read};
use super::invoke::HookScene;
use super::{Hook, HookPoint, Hooks, OnError};

/// The run a hook is told about, and where its run belongs.
pub struct RunHookInput<'a> {
    pub run_id: &'a str,
    pub session_id: &'a str,
    pub agent: &'a str,
    pub log_dir: Option<&'a Path>,
    pub cancel: &'a watch::Receiver<bool>,
}

/// A `run_start` hook refused the run (or failed, with `on_error: deny`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RunRefused(pub String);

impl Hooks {
    /// Runs the `run_start` hooks in order; the warnings of those that failed and were
    /// let pass, or the refusal that stops the run.
    pub async fn run_start(&self, run: &RunHookInput<'_>) -> Result<Vec<String>, RunRefused> {
        let mut warnings = Vec::new();
        for hook in &self.run_start {
            let input = run.stdin(HookPoint::RunStart, None);
            let answer = self.run_one(hook, HookPoint::RunStart, run, &input).await;
            let label = hook.label();
            match answer.and_then(read::<RunStartAnswer>) {
                Ok(RunStartAnswer {
                    decision: Some(HookDecision::Deny),
                    reason,
                }) => {
                    let reason = reason.map(|r| format!(": {r}")).unwrap_or_default();
                    let message = format!("the run_start hook `{label}` refused the run{reason}");
                    return Err(RunRefused(message));
                }
                Ok(_) => {}
                Err(failure) => {
                    let message = format!("the run_start hook `{label}` failed: {failure}");
                    match hook.on_error {
                        OnError::Deny => return Err(RunRefused(message)),
                        OnError::Allow => warnings.push(message),
                    }
                }
            }
        }
        Ok(warnings)
    }

    /// Tells the `run_end` or `user_input` hooks about the run's `result` envelope; the
    /// warnings of those that failed.
    pub async fn notify(
        &self,
        point: HookPoint,
        run: &RunHookInput<'_>,
        result: &Value,
    ) -> Vec<String> {
        let hooks = match point {
            HookPoint::RunEnd => &self.run_end,
            HookPoint::UserInput => &self.user_input,
            _ => return Vec::new(),
        };
        let mut warnings = Vec::new();
        for hook in hooks {
            let input = run.stdin(point, Some(result));
            if let Err(failure) = self.run_one(hook, point, run, &input).await {
                let name = point.name();
                warnings.push(format!(
                    "the {name} hook `{}` failed: {failure}",
                    hook.label()
                ));
            }
        }
        warnings
    }

    async fn run_one(
        &self,
        hook: &Hook,
        point: HookPoint,
        run: &RunHookInput<'_>,
        input: &Value,
    ) -> Result<Option<Value>, super::HookFailure> {
        let scene = HookScene {
            point: point.name(),
            about: format!("(run {})", run.run_id),
            log_dir: run.log_dir,
            cancel: run.cancel,
        };
        if let Some(refused) = self.runner.refuses(hook) {
            return Err(refused);
        }
        self.runner.run(hook, input, &scene).await.0
    }
}

impl RunHookInput<'_> {
    /// The JSON object a run hook reads on stdin.
    fn stdin(&self, point: HookPoint, result: Option<&Value>) -> Value {
        let mut input = json!({
            "event": point.name(),
            "run_id": self.run_id,
            "session_id": self.session_id,
            "agent": self.agent,
            "depth": 0,
        });
        if let Some(dir) = self.log_dir {
            input["run_dir"] = dir.display().to_string().into();
        }
        if let Some(result) = result {
            input["result"] = result.clone();
        }
        input
    }
}
