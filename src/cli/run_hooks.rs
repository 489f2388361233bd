//! The root agent's run hooks around one run of `exec`, `resume` or a chat turn:
//! `run_start` before it (it may refuse the run), `user_input` when it pauses for a
//! person, `run_end` with its result envelope. Failures that do not stop the run are
//! warnings on stderr; the hooks' own stderr is in the run directory's `hooks.log`.

use std::path::Path;

use tokio::runtime::Runtime;
use tokio::sync::watch;

use super::prepare::Stop;
use crate::engine::Agent;
use crate::engine::ErrorCode;
use crate::output::result::{RunResult, Status};
use crate::policy::hooks::RunHookInput;
use crate::policy::{HookPoint, Hooks};

/// One run's hooks and what they are told.
pub struct RunHooks<'a> {
    hooks: Option<&'a Hooks>,
    runtime: &'a Runtime,
    cancel: &'a watch::Receiver<bool>,
    run_dir: &'a Path,
}

impl<'a> RunHooks<'a> {
    pub fn new(
        agent: &'a Agent,
        runtime: &'a Runtime,
        cancel: &'a watch::Receiver<bool>,
        run_dir: &'a Path,
    ) -> Self {
        let hooks = agent.policy.as_ref().map(|policy| &policy.hooks);
        RunHooks {
            hooks: hooks.filter(|hooks| !hooks.is_empty()),
            runtime,
            cancel,
            run_dir,
        }
    }

    /// Runs the `run_start` hooks; a refusal is the run's stop (status `failed`).
    pub fn start(&self, (run_id, session_id): (&str, &str), agent: &str) -> Result<(), Stop> {
        let Some(hooks) = self.hooks else {
            return Ok(());
        };
        let input = self.input(run_id, session_id, agent);
        match self.runtime.block_on(hooks.run_start(&input)) {
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
    pub fn end(&self, result: &RunResult) {
        let Some(hooks) = self.hooks else {
            return;
        };
        let input = self.input(&result.run_id, &result.session_id, &result.agent);
        let envelope = serde_json::to_value(result).unwrap_or_default();
        let mut points = vec![HookPoint::RunEnd];
        if result.status == Status::InputRequired {
            points.insert(0, HookPoint::UserInput);
        }
        for point in points {
            warn(
                &self
                    .runtime
                    .block_on(hooks.notify(point, &input, &envelope)),
            );
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
            log_dir: Some(self.run_dir),
            cancel: self.cancel,
        }
    }
}

fn warn(warnings: &[String]) {
    for warning in warnings {
        eprintln!("warning: {warning}");
    }
}
