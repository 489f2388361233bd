//! runner's side of an MCP session: what it tells the server about itself, where the
//! server's `notifications/progress` go (to the call whose request they name, which hands
//! them to its tool context, and so to the run's events and progress lines), and who
//! answers its `elicitation/create` (`elicit.rs`).

use std::sync::Arc;

use futures_util::{FutureExt, StreamExt};
use rmcp::handler::client::progress::ProgressDispatcher;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotification,
    CancelledNotificationParam, ClientConfig, ClientRequest, ElicitRequestParams, ElicitResult,
    ElicitationAction, ProgressNotificationParam, RequestId, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RequestContext};
use rmcp::{ClientHandler, ErrorData, Peer, RoleClient, ServiceError};
use serde_json::Value;

use super::elicit::{Elicited, elicit, question};
use crate::tools::{AnswerSource, FormRequest, ToolContext, ToolProgress};

/// The session's client: its `initialize` information, the dispatcher that routes
/// progress notifications by their token, and who answers the server's forms.
#[derive(Clone)]
pub struct RunnerClient {
    pub info: ClientConfig,
    pub progress: ProgressDispatcher,
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
                if let Ok(mut slot) = self.unanswered.lock() {
                    *slot = Some(form);
                }
                ElicitResult::new(ElicitationAction::Cancel)
            }
        })
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.handle_notification(params).await;
    }
}

/// What a `tools/call` came back with.
pub enum CallOutcome {
    Done(CallToolResult),
    /// The server answered with something runner does not handle (more input, a task).
    Other(&'static str),
}

/// Sends a `tools/call` and waits for its answer, passing the progress the server reports
/// for it to `context`. Dropping the future (an interrupt, a timeout) tells the server the
/// call was abandoned.
pub async fn call_with_progress(
    peer: &Peer<RoleClient>,
    progress: &ProgressDispatcher,
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
    let mut reports = progress.subscribe(handle.progress_token.clone()).await;
    let pass_on = |report: ProgressNotificationParam| {
        context.report(ToolProgress {
            progress: report.progress,
            total: report.total,
            message: report.message,
        })
    };
    let response = handle.await_response();
    tokio::pin!(response);
    let answer = loop {
        tokio::select! {
            biased;
            Some(report) = reports.next() => pass_on(report),
            answer = &mut response => break answer,
        }
    };
    // A report the server sent just before its answer may still be on its way through the
    // session's handler: it is let through before the call ends.
    tokio::task::yield_now().await;
    while let Some(Some(report)) = reports.next().now_or_never() {
        pass_on(report);
    }
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
