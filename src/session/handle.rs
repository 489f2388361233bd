//! A run going on: its events from the first, a way to cancel it, its outcome, and an
//! answer to the pause it ended in.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::task::JoinHandle;

use super::event_log::{EventLog, EventStream};
use super::prepare::Stop;
use super::request::{Answer, ResumeRequest, RunSettings};
use super::{Cancel, resume};
use crate::engine::ErrorCode;
use crate::engine::outcome::RunOutcome;
use crate::nats::SessionsAt;
use crate::output::result::{RunResult, Status};

/// How a run ended.
#[derive(Debug)]
pub struct Ended {
    /// The result envelope, as `result.json` has it.
    pub result: RunResult,
    /// The engine's outcome: the final state with the history.
    pub outcome: RunOutcome,
    /// Whether the run kept checkpoints (it can be resumed).
    pub resumable: bool,
    /// The agent file that ran.
    pub agent_file: PathBuf,
    /// The run's directory, when it has one.
    pub run_dir: Option<PathBuf>,
}

/// One run, started by [`super::start`] or [`super::resume()`]. Dropping the handle does not
/// stop the run: [`RunHandle::cancel`] does.
pub struct RunHandle {
    run_id: String,
    session_id: String,
    agent_file: PathBuf,
    log: Arc<EventLog>,
    task: JoinHandle<Result<Ended, Stop>>,
    /// Where the session is kept, when it keeps checkpoints.
    sessions: Option<SessionsAt>,
    settings: RunSettings,
}

impl RunHandle {
    pub(crate) fn new(
        (run_id, session_id): (String, String),
        agent_file: PathBuf,
        (log, task): (Arc<EventLog>, JoinHandle<Result<Ended, Stop>>),
        sessions: Option<SessionsAt>,
        settings: RunSettings,
    ) -> Self {
        RunHandle {
            run_id,
            session_id,
            agent_file,
            log,
            task,
            sessions,
            settings,
        }
    }

    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The agent file that runs (for a resume, the session's).
    pub fn agent_file(&self) -> &std::path::Path {
        &self.agent_file
    }

    /// Every event of the run from its first, then the live ones, until the run ends.
    /// Each call is a reader of its own. With `RunSettings::no_event_log`, none.
    pub fn events(&self) -> EventStream {
        self.log.stream()
    }

    /// Stops the run: it ends `interrupted`, its session checkpointed and resumable.
    pub fn cancel(&self) {
        self.settings.cancel.cancel();
    }

    /// The run's stop signal, to cancel it from elsewhere (a signal handler, a request).
    pub fn canceller(&self) -> Cancel {
        self.settings.cancel.clone()
    }

    /// Waits for the run to end.
    pub async fn outcome(self) -> Result<Ended, Stop> {
        self.task.await.unwrap_or_else(|error| {
            Err(Stop {
                status: Status::Failed,
                ..Stop::invalid(
                    ErrorCode::Internal,
                    format!("the run's task failed: {error}"),
                )
            })
        })
    }

    /// Waits for the run to end and, when it ended waiting for a person
    /// (`input_required`), resumes its session with `answer`, with the same settings and a
    /// stop signal of its own.
    pub async fn answer(self, answer: Answer) -> Result<RunHandle, Stop> {
        let session_id = self.session_id.clone();
        let sessions = self.sessions.clone();
        let settings = RunSettings {
            cancel: Cancel::new(),
            ..self.settings.clone()
        };
        let ended = self.outcome().await?;
        let refused = |message: String| Stop::invalid(ErrorCode::InvalidSession, message);
        if ended.result.status != Status::InputRequired {
            return Err(refused(format!(
                "session `{session_id}` does not wait for an answer: its run ended {}",
                ended.result.status.name()
            )));
        }
        let Some(sessions) = sessions else {
            return Err(refused(format!(
                "session `{session_id}` keeps no checkpoints: there is nothing to resume"
            )));
        };
        resume(ResumeRequest {
            session_id,
            run_id: None,
            answer: Some(answer),
            branch: None,
            sessions,
            settings,
        })
        .await
    }
}
