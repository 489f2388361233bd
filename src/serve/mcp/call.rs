//! One tool call followed to its end: the run's steps and tool calls as progress
//! notifications (when the client sent a `progressToken`), `notifications/cancelled` as
//! the run's interrupt (it ends `interrupted`, checkpointed), and each pause asked of the
//! client as an elicitation when it can answer one, the session then resumed with the
//! answer; otherwise the result says what the run waits for.

use rmcp::model::{CallToolResult, ElicitRequestParams, ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RoleServer};
use tokio_util::sync::CancellationToken;

use super::host::{Going, Host};
use super::{pause, reply};
use crate::engine::events::{Event, EventData, RequiredAction};
use crate::output::result::Status;
use crate::session::{self, Answer, ResumeRequest, SessionsAt};

/// How many times one call may pause and be answered: a run that keeps asking is
/// handed back to the client after that many.
const MOST_PAUSES: usize = 32;

/// What a call needs besides its run.
pub struct Call {
    pub host: Host,
    pub peer: Peer<RoleServer>,
    pub progress: Option<ProgressToken>,
    /// Cancelled by the client's `notifications/cancelled` (or its going away).
    pub cancelled: CancellationToken,
    /// The client declared form elicitation.
    pub elicit: bool,
    /// Where the session is kept; `None`: the agent keeps no checkpoints.
    pub sessions: Option<SessionsAt>,
    /// `Some(true)`: the output schema is an object; `Some(false)`: another type.
    pub object_output: Option<bool>,
}

/// What the call saw of a run.
struct Watched {
    action: Option<RequiredAction>,
    cancelled: bool,
}

impl Call {
    /// Follows `going`, and the runs that continue it, to the call's result; a pause is
    /// remembered with `remember` (the session and what it waits for).
    pub async fn follow(
        &self,
        mut going: Going,
        remember: impl Fn(&str, &RequiredAction),
    ) -> CallToolResult {
        let mut sent = 0u64;
        for _ in 0..MOST_PAUSES {
            let watched = self.watch(&mut going, &mut sent).await;
            let session_id = going.session_id.clone();
            let result = match going.result().await {
                Ok(result) => result,
                Err(message) => return reply::error(&message),
            };
            let action = match (result.status, watched.action) {
                (Status::InputRequired, Some(action)) if !watched.cancelled => action,
                _ => return reply::of_result(&result, self.object_output),
            };
            remember(&session_id, &action);
            let Some(answer) = self.ask(&action).await else {
                return reply::error(&pause::waiting_text(&action, &session_id));
            };
            going = match self.resume(session_id, Some(answer)).await {
                Ok(going) => going,
                Err(message) => return reply::error(&message),
            };
        }
        reply::error(&format!(
            "the run paused {MOST_PAUSES} times in one call: continue it with `runner_resume`"
        ))
    }

    /// Reads the run's events to their end: progress for its steps and calls, the
    /// client's cancellation passed on, what it paused on kept.
    async fn watch(&self, going: &mut Going, sent: &mut u64) -> Watched {
        let mut watched = Watched {
            action: None,
            cancelled: false,
        };
        loop {
            tokio::select! {
                event = going.events.next() => {
                    let Some(event) = event else { return watched };
                    if let EventData::RequiresAction(requires) = &event.data {
                        watched.action = Some(requires.required_action.clone());
                    }
                    self.report(&event, sent).await;
                }
                () = self.cancelled.cancelled(), if !watched.cancelled => {
                    watched.cancelled = true;
                    going.cancel.cancel();
                }
            }
        }
    }

    /// A progress notification for a step or a tool call, when the client asked for them.
    async fn report(&self, event: &Event, sent: &mut u64) {
        let Some(token) = &self.progress else { return };
        let what = match &event.data {
            EventData::StepCreated(step) => format!("step {}", step.details.step),
            EventData::ToolStarted(tool) => tool.tool_name.clone(),
            _ => return,
        };
        let message = match event.depth {
            0 => what,
            _ => format!("{}: {what}", event.agent),
        };
        *sent += 1;
        let note =
            ProgressNotificationParam::new(token.clone(), *sent as f64).with_message(message);
        // A client gone is seen by the cancellation; a lost report is only a report.
        let _ = self.peer.notify_progress(note).await;
    }

    /// The client's answer to the pause, or `None` when it cannot elicit or did not answer.
    async fn ask(&self, action: &RequiredAction) -> Option<Answer> {
        if !self.elicit || self.sessions.is_none() {
            return None;
        }
        let (message, requested_schema) = pause::form(action);
        let request = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            requested_schema,
        };
        let reply = tokio::select! {
            reply = self.peer.create_elicitation(request) => reply.ok()?,
            () = self.cancelled.cancelled() => return None,
        };
        pause::answer_of(action, reply)
    }

    /// A new run of the session, with `answer` to what it waits for.
    pub async fn resume(
        &self,
        session_id: String,
        answer: Option<Answer>,
    ) -> Result<Going, String> {
        let Some(sessions) = self.sessions.clone() else {
            return Err(format!(
                "session `{session_id}` keeps no checkpoints (`checkpoints: false`): it cannot be continued"
            ));
        };
        let slot = self.host.slot().await?;
        let handle = session::resume(ResumeRequest {
            session_id,
            run_id: None,
            answer,
            branch: None,
            sessions,
            settings: self.host.settings(),
        })
        .await
        .map_err(|stop| format!("{}: {}", stop.code.name(), stop.message))?;
        Ok(self.host.host(handle, slot))
    }
}
