//! A run of a task followed to its end: its steps and tool calls become `working` status
//! updates, what it paused on is kept, and its result becomes the task's last updates
//! (`outcome`).

use std::sync::Arc;
use std::time::Duration;

use super::outcome;
use super::task::Task;
use crate::a2a::{Message, Part, TaskState, TaskStatus};
use crate::engine::clock::{new_id, now_rfc3339};
use crate::engine::events::{Event, EventData};
use crate::serve::runs::LiveRun;
use crate::session::EventStream;

/// How long a task waits for its run to end: a run is bounded by its own limits, this only
/// keeps a broken run from holding the task forever.
const LONGEST_RUN: Duration = Duration::from_secs(24 * 60 * 60);

/// Follows `run` (whose events are `events`) on a task of its own.
pub fn follow(task: Arc<Task>, mut events: EventStream, run: Arc<LiveRun>) {
    tokio::spawn(async move {
        let mut waits_for = None;
        while let Some(event) = events.next().await {
            if let EventData::RequiresAction(requires) = &event.data {
                waits_for = Some(requires.required_action.clone());
            }
            if let Some(text) = progress(&event) {
                task.status(status(&task, TaskState::Working, vec![Part::text(text)]));
            }
        }
        let result = run.wait_ended(LONGEST_RUN).await;
        outcome::settle(&task, result.as_deref(), waits_for);
    });
}

/// What a step or a tool call is, as a person reads it.
fn progress(event: &Event) -> Option<String> {
    let what = match &event.data {
        EventData::StepCreated(step) => format!("step {}", step.details.step),
        EventData::ToolStarted(tool) => format!("calls {}", tool.tool_name),
        _ => return None,
    };
    Some(match event.depth {
        0 => what,
        _ => format!("{}: {what}", event.agent),
    })
}

/// A status of the task, now, with the agent's message of these parts.
pub fn status(task: &Task, state: TaskState, parts: Vec<Part>) -> TaskStatus {
    let message = (!parts.is_empty()).then(|| agent_message(task, parts));
    TaskStatus {
        state,
        message,
        timestamp: Some(now_rfc3339()),
    }
}

/// A message of the agent in the task.
pub fn agent_message(task: &Task, parts: Vec<Part>) -> Message {
    let mut message = Message::agent(new_id(), parts);
    message.context_id = Some(task.context_id.clone());
    message.task_id = Some(task.id.clone());
    message
}
