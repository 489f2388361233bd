//! The port through which the engine calls a remote agent (an A2A agent; the compile layer
//! plugs the client in): send a message, a new task's or a follow-up on a task that asked a
//! question, hear the task's status updates, get how it ended; cancel a task.

use serde_json::Value;

pub use super::pending::RemoteTask;
use crate::provider::BoxFuture;

/// What is sent: the text, or the call's arguments as data (then `text` is their JSON),
/// and the task it continues (an answer to its question).
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteRequest {
    pub text: String,
    pub data: Option<Value>,
    pub task: Option<RemoteTask>,
}

/// One status update of the remote task.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteUpdate {
    pub task: RemoteTask,
    /// The state as A2A spells it, e.g. `TASK_STATE_WORKING`.
    pub state: String,
    /// The text of its message, if it has one.
    pub message: Option<String>,
}

/// How a remote call ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RemoteReply {
    /// The answer: the artifacts' text, or their data.
    Completed(Value),
    /// `failed`, `rejected`, `canceled`: the remote agent's message.
    Failed { state: String, message: String },
    /// The remote agent asks a question; the task waits for a follow-up message.
    InputRequired { task: RemoteTask, question: String },
}

/// Where status updates go while a call runs.
pub type UpdateSink<'a> = &'a (dyn Fn(RemoteUpdate) + Send + Sync);

/// A remote agent (the compile layer implements it over A2A).
pub trait RemoteAgent: Send + Sync {
    /// Where it is (shown in events, never with credentials).
    fn url(&self) -> &str;
    /// Sends a message and follows the task until it ends or waits. `Err`: the call itself
    /// failed (unreachable, not A2A, too large).
    fn send<'a>(
        &'a self,
        request: RemoteRequest,
        updates: UpdateSink<'a>,
    ) -> BoxFuture<'a, Result<RemoteReply, String>>;
    /// Cancels the task, for a call the run gave up on (its time limit, an interrupt).
    /// Blocking: it is called while the call is being dropped, and must be bounded.
    fn cancel_blocking(&self, task_id: &str);
}
