//! `SendMessage` and `SendStreamingMessage`: where a client's message goes.
//!
//! * With a `taskId`: a follow-up of that task. An `input-required` task takes it as the
//!   answer to what it waits for and the run goes on (a new run of its session, the same
//!   task); a working or ended task refuses it.
//! * With a `contextId` (a session): the answer to the session's task that waits, if one
//!   does; else a new task that continues the session as `POST /api/sessions/{id}/answer`
//!   (a paused session, the message its answer) or `…/resume` (an interrupted, failed or
//!   limited one, which goes on where it stopped: the message's text is not given to the
//!   model) would. A completed session is not continued (as `runner resume` refuses it);
//!   a context id no session has yet names the new task's new session.
//! * With neither: a new task, a new run in a new session.

use std::sync::Arc;

use super::A2a;
use super::answer;
use super::inputs::{self, check_parts};
use super::task::{Agent, Task};
use crate::a2a::{ErrorCode, JsonRpcError, Message, Role, SendMessageRequest, TaskState};
use crate::checkpoint::{SessionStatus, check_session_id};
use crate::engine::RunStatus;
use crate::engine::clock::new_id;
use crate::serve::agents::AgentEntry;
use crate::session::RunSettings;

/// The task a message went to, and where its updates from this message start.
pub struct Sent {
    pub task: Arc<Task>,
    pub from: usize,
}

impl A2a {
    pub async fn send(
        &self,
        entry: &AgentEntry,
        request: SendMessageRequest,
        settings: RunSettings,
    ) -> Result<Sent, JsonRpcError> {
        let configuration = request.configuration.unwrap_or_default();
        if configuration.task_push_notification_config.is_some() {
            return Err(JsonRpcError::new(
                ErrorCode::PushNotificationNotSupported,
                "this server sends no push notifications: stream the task, or poll it with GetTask",
            ));
        }
        let message = request.message;
        if message.role != Role::User {
            return Err(invalid("a client's message has the role ROLE_USER"));
        }
        check_parts(&message)?;
        if let Some(task_id) = &message.task_id {
            let task = self.task_of(entry, task_id)?;
            if message
                .context_id
                .as_ref()
                .is_some_and(|c| *c != task.context_id)
            {
                return Err(invalid(&format!(
                    "task `{task_id}` is of context `{}`, not of the message's",
                    task.context_id
                )));
            }
            return self.follow_up(task, message, settings).await;
        }
        let Some(context_id) = message.context_id.clone() else {
            return self.new_task(entry, None, message, settings).await;
        };
        check_session_id(&context_id).map_err(|error| invalid(&format!("contextId: {error}")))?;
        if let Some(task) = self.tasks.latest_in(&context_id) {
            if task.agent.name != entry.name {
                return Err(invalid(&format!(
                    "context `{context_id}` is agent `{}`'s",
                    task.agent.name
                )));
            }
            if !task.state().is_terminal() {
                return self.follow_up(task, message, settings).await;
            }
        }
        self.in_context(entry, context_id, message, settings).await
    }

    /// A message on a task.
    async fn follow_up(
        &self,
        task: Arc<Task>,
        mut message: Message,
        settings: RunSettings,
    ) -> Result<Sent, JsonRpcError> {
        let state = task.state();
        if state != TaskState::InputRequired {
            return Err(JsonRpcError::new(
                ErrorCode::UnsupportedOperation,
                refusal(&task, state),
            ));
        }
        let action = task
            .waits_for()
            .ok_or_else(|| invalid(&format!("task `{}` waits for nothing", task.id)))?;
        let answer = answer::of_message(&action, &message)?;
        let from = task.position();
        let run = self
            .resume_run(&task.context_id, Some(answer), settings)
            .await?;
        message.task_id = Some(task.id.clone());
        message.context_id = Some(task.context_id.clone());
        self.launch(&task, run, message);
        Ok(Sent { task, from })
    }

    /// A message on a context no task of this server's memory waits in.
    async fn in_context(
        &self,
        entry: &AgentEntry,
        context_id: String,
        message: Message,
        settings: RunSettings,
    ) -> Result<Sent, JsonRpcError> {
        let (store, id) = (self.server.store.clone(), context_id.clone());
        let metadata = tokio::task::spawn_blocking(move || store.metadata(&id))
            .await
            .map_err(|error| super::start::internal(error.to_string()))?
            .map_err(|error| super::start::internal(error.to_string()))?;
        let Some(metadata) = metadata else {
            return self
                .new_task(entry, Some(context_id), message, settings)
                .await;
        };
        if metadata.agent_file != entry.file {
            return Err(invalid(&format!(
                "context `{context_id}` is a session of {}, not of agent `{}`",
                metadata.agent_file, entry.name
            )));
        }
        let answer = match metadata.status {
            SessionStatus::Ended(RunStatus::Completed) => {
                return Err(JsonRpcError::new(
                    ErrorCode::UnsupportedOperation,
                    format!(
                        "context `{context_id}` is completed: a completed session is not \
                         continued (as `runner resume` refuses it); send the message without a \
                         contextId for a new one"
                    ),
                ));
            }
            SessionStatus::Ended(RunStatus::InputRequired) => {
                let action = self.paused_on(&context_id).await?;
                Some(answer::of_message(&action, &message)?)
            }
            _ => None,
        };
        let run = self.resume_run(&context_id, answer, settings).await?;
        let task = self.add_task(entry, context_id);
        self.launch(&task, run, with_ids(message, &task));
        Ok(Sent { task, from: 0 })
    }

    /// A new run of the agent, in a new session (named `session_id`, if given).
    async fn new_task(
        &self,
        entry: &AgentEntry,
        session_id: Option<String>,
        message: Message,
        settings: RunSettings,
    ) -> Result<Sent, JsonRpcError> {
        let typed = self.check_agent(entry).await?;
        let inputs = inputs::of_message(&entry.name, typed, &message)?;
        let run = self.start_run(entry, session_id, inputs, settings).await?;
        let context_id = run.0.session_id().to_string();
        let task = self.add_task(entry, context_id);
        self.launch(&task, run, with_ids(message, &task));
        Ok(Sent { task, from: 0 })
    }

    fn add_task(&self, entry: &AgentEntry, context_id: String) -> Arc<Task> {
        let agent = Agent {
            name: entry.name.clone(),
            structured: entry.output_schema.is_some(),
        };
        let task = Arc::new(Task::new(new_id(), context_id, agent));
        self.tasks.add(task.clone());
        task
    }

    /// The task `id` of this agent.
    pub fn task_of(&self, entry: &AgentEntry, id: &str) -> Result<Arc<Task>, JsonRpcError> {
        match self.tasks.get(id) {
            Some(task) if task.agent.name == entry.name => Ok(task),
            _ => Err(JsonRpcError::new(
                ErrorCode::TaskNotFound,
                format!(
                    "no task `{id}` of agent `{}` (tasks are kept in this server's memory: \
                     after a restart, continue the session with its contextId)",
                    entry.name
                ),
            )),
        }
    }
}

/// The message with the task's ids, as the history keeps it.
fn with_ids(mut message: Message, task: &Task) -> Message {
    message.task_id = Some(task.id.clone());
    message.context_id = Some(task.context_id.clone());
    message
}

/// Why a task that does not wait for input takes no message.
fn refusal(task: &Task, state: TaskState) -> String {
    match state {
        TaskState::Submitted | TaskState::Working => format!(
            "task `{}` is working: follow it (SubscribeToTask), or cancel it (CancelTask)",
            task.id
        ),
        _ => format!(
            "task `{}` has ended ({}): it takes no more messages; send one with its contextId \
             and no taskId to continue its session in a new task",
            task.id,
            state_name(state)
        ),
    }
}

pub fn state_name(state: TaskState) -> String {
    serde_json::to_value(state)
        .ok()
        .and_then(|value| value.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn invalid(message: &str) -> JsonRpcError {
    JsonRpcError::new(ErrorCode::InvalidParams, message)
}
