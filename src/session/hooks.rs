//! The root agent's run hooks around every run (`exec`, `resume`, a chat turn, `RunFile`):
//! `run_start` before it (it may refuse the run), `user_input` when it pauses for a
//! person, `run_end` with its result envelope. Failures that do not stop the run are
//! warnings on stderr; the hooks' own stderr is in the run directory's `hooks.log`.

use std::path::{Path, PathBuf};

use tokio::sync::watch;

use super::prepare::Stop;
use crate::engine::Agent;
use crate::engine::ErrorCode;
use crate::output::result::{RunResult, Status};
use crate::policy::hooks::RunHookInput;
use crate::policy::{HookPoint, Hooks};

/// One run's hooks and what they are told.
pub struct RunHooks {
    hooks: Option<Hooks>,
    cancel: watch::Receiver<bool>,
    /// Where the hooks' stderr goes (`hooks.log`); `None` for a run without files.
    run_dir: Option<PathBuf>,
}

impl RunHooks {
    pub fn new(agent: &Agent, cancel: &watch::Receiver<bool>, run_dir: Option<&Path>) -> Self {
        let hooks = agent.policy.as_ref().map(|policy| &policy.hooks);
        RunHooks {
            hooks: hooks.filter(|hooks| !hooks.is_empty()).cloned(),
            cancel: cancel.clone(),
            run_dir: run_dir.map(Path::to_path_buf),
        }
    }

    /// Runs the `run_start` hooks; a refusal is the run's stop (status `failed`).
    pub async fn start(&self, (run_id, session_id): (&str, &str), agent: &str) -> Result<(), Stop> {
        let Some(hooks) = &self.hooks else {
            return Ok(());
        };
        let input = self.input(run_id, session_id, agent);
        match hooks.run_start(&input).await {
            Ok(warnings) => {
                warn(&warnings);
                Ok(())
            }
            Err(refused) => Err(Stop {
                status: Status::Failed,
                ..Stop::invalid(ErrorCode::Hook, refused.to_string()).named(agent)
            }),
        }
    }

    /// Tells the `user_input` hooks (when the run waits for a person) and the `run_end`
    /// hooks about the run's result.
    pub async fn end(&self, result: &RunResult) {
        let Some(hooks) = &self.hooks else {
            return;
        };
        let input = self.input(&result.run_id, &result.session_id, &result.agent);
        let envelope = serde_json::to_value(result).unwrap_or_default();
        let mut points = vec![HookPoint::RunEnd];
        if result.status == Status::InputRequired {
            points.insert(0, HookPoint::UserInput);
        }
        for point in points {
            warn(&hooks.notify(point, &input, &envelope).await);
        }
    }

    fn input<'b>(
        &'b self,
        run_id: &'b str,
        session_id: &'b str,
        agent: &'b str,
    ) -> RunHookInput<'b> {
        RunHookInput {
            run_id,
            session_id,
            agent,
            log_dir: self.run_dir.as_deref(),
            cancel: &self.cancel,
        }
    }
}

fn warn(warnings: &[String]) {
    for warning in warnings {
        eprintln!("warning: {warning}");
    }
}
