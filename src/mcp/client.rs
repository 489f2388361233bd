//! runner's side of an MCP session: what it tells the server about itself, where the
//! server's `notifications/progress` go (to the call whose request they name, which hands
//! them to its tool context, and so to the run's events and progress lines), and who
//! answers its `elicitation/create` (`elicit.rs`).

use std::sync::Arc;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotification,
    CancelledNotificationParam, ClientConfig, ClientRequest, ElicitRequestParams, ElicitResult,
    ElicitationAction, ProgressNotificationParam, RequestId, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RequestContext};
use rmcp::{ClientHandler, ErrorData, Peer, RoleClient, ServiceError};
use serde_json::Value;

use super::elicit::{Elicited, elicit, question};
use super::progress::{ProgressBoard, Throttle};
use crate::sync::lock;
use crate::tools::{AnswerSource, FormRequest, ToolContext, ToolProgress};

/// The session's client: its `initialize` information, the board that keeps the latest
/// progress notification of each call by its token, and who answers the server's forms.
#[derive(Clone)]
pub struct RunnerClient {
    pub info: ClientConfig,
    pub progress: ProgressBoard,
    /// The server, as the person is told who asks.
    pub server: String,
    pub answers: Vec<Arc<dyn AnswerSource>>,
    /// The last form nobody could answer, for the call it came in to pause on.
    pub unanswered: Arc<std::sync::Mutex<Option<FormRequest>>>,
}

impl ClientHandler for RunnerClient {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        // Only forms are offered (the capability says so): a URL to open is declined.
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let schema = serde_json::to_value(&requested_schema).unwrap_or_default();
        let (answers, server) = (self.answers.clone(), self.server.clone());
        let form = FormRequest {
            question: question(&server, &message, &schema),
            server,
            message,
            schema,
        };
        // The terminal is read with blocking I/O.
        let asked = tokio::task::spawn_blocking({
            let form = form.clone();
            move || elicit(&answers, &form.server, &form.message, &form.schema)
        });
        Ok(match asked.await.unwrap_or(Elicited::Decline) {
            Elicited::Accept(fields) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(fields))
            }
            Elicited::Decline => ElicitResult::new(ElicitationAction::Decline),
            Elicited::Cancel => ElicitResult::new(ElicitationAction::Cancel),
            // The call ends ("cancel") and the run pauses on the form, to make the call
            // again on resume with the person's answer.
            Elicited::Unanswered => {
                *lock(&self.unanswered) = Some(form);
                ElicitResult::new(ElicitationAction::Cancel)
            }
        })
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        // Never waits: a flood of notifications leaves only the latest of each call.
        self.progress.post(params);
    }
}

/// What a `tools/call` came back with.
pub enum CallOutcome {
    Done(CallToolResult),
    /// The server answered with something runner does not handle (more input, a task).
    Other(&'static str),
}

/// Sends a `tools/call` and waits for its answer, passing the progress the server reports
/// for it to `context`, throttled (`progress.rs`). Dropping the future (an interrupt, a
/// timeout) tells the server the call was abandoned.
pub async fn call_with_progress(
    peer: &Peer<RoleClient>,
    progress: &ProgressBoard,
    params: CallToolRequestParams,
    context: &ToolContext,
) -> Result<CallOutcome, ServiceError> {
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await?;
    let mut guard = Abandoned {
        peer: peer.clone(),
        id: Some(handle.id.clone()),
    };
    let reports = progress.subscribe(handle.progress_token.clone());
    let pass_on = |report: ProgressNotificationParam| {
        context.report(ToolProgress {
            progress: report.progress,
            total: report.total,
            message: report.message,
        })
    };
    let mut throttle = Throttle::default();
    let response = handle.await_response();
    tokio::pin!(response);
    let answer = loop {
        let due = throttle.due();
        tokio::select! {
            biased;
            answer = &mut response => break answer,
            _ = reports.posted() => {
                if let Some(report) = reports.take() {
                    throttle.offer(report, tokio::time::Instant::now(), &pass_on);
                }
            }
            _ = sleep_until(due), if due.is_some() => {
                throttle.send(tokio::time::Instant::now(), &pass_on);
            }
        }
    };
    // A report the server sent just before its answer may still be on its way through the
    // session's handler: it is let through before the call ends, as the last one.
    tokio::task::yield_now().await;
    if let Some(report) = reports.take() {
        throttle.keep(report);
    }
    throttle.finish(&pass_on);
    guard.id = None;
    Ok(match answer? {
        ServerResult::CallToolResult(result) => CallOutcome::Done(result),
        ServerResult::InputRequiredResult(_) => CallOutcome::Other(
            "the server asked for more input from the client, which runner does not provide",
        ),
        _ => CallOutcome::Other(
            "the server answered with a task or another kind of result, which runner does not poll",
        ),
    })
}

/// Resolves at `due` (never without one).
async fn sleep_until(due: Option<tokio::time::Instant>) {
    match due {
        Some(due) => tokio::time::sleep_until(due).await,
        None => std::future::pending().await,
    }
}

/// Tells the server a call is abandoned, unless it was answered first.
struct Abandoned {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        let (Some(id), Ok(runtime)) = (self.id.take(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let notification = CancelledNotification::new(CancelledNotificationParam::new(
            Some(id),
            Some("runner stopped waiting for the call".into()),
        ));
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let _ = peer.send_notification(notification.into()).await;
        });
    }
}
