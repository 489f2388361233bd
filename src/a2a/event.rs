//! What a send returns, and what a stream carries.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Artifact, Message, Task, TaskStatus};

/// A change of a task's status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    pub task_id: String,
    pub context_id: String,
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// An artifact produced (or a chunk of it, appended to the one with the same id).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    pub task_id: String,
    pub context_id: String,
    pub artifact: Artifact,
    #[serde(default, skip_serializing_if = "super::fields::is_false")]
    pub append: bool,
    #[serde(default, skip_serializing_if = "super::fields::is_false")]
    pub last_chunk: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// The result of `SendMessage`: `{"task": ...}` or `{"message": ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SendMessageResponse {
    Task(Task),
    Message(Message),
}

/// One event of a stream (`SendStreamingMessage`, `SubscribeToTask`), each the `result` of
/// one JSON-RPC response in one server-sent event: `{"statusUpdate": ...}` and so on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamResponse {
    Task(Task),
    Message(Message),
    StatusUpdate(TaskStatusUpdateEvent),
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::TaskState;
    use serde_json::json;

    #[test]
    fn a_status_update_in_a_stream() {
        let json = json!({"statusUpdate": {
            "taskId": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_WORKING", "timestamp": "2026-11-27T20:00:00Z"}
        }});
        let event: StreamResponse = serde_json::from_value(json.clone()).unwrap();
        let StreamResponse::StatusUpdate(update) = &event else {
            panic!("{event:?}")
        };
        assert_eq!(update.status.state, TaskState::Working);
        assert_eq!(serde_json::to_value(&event).unwrap(), json);
    }

    #[test]
    fn an_artifact_update_in_a_stream() {
        let json = json!({"artifactUpdate": {
            "taskId": "t", "contextId": "c",
            "artifact": {"artifactId": "answer", "parts": [{"text": "done"}]},
            "lastChunk": true
        }});
        let event: StreamResponse = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(serde_json::to_value(&event).unwrap(), json);
    }

    #[test]
    fn a_send_result_holds_a_task() {
        let json = json!({"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}});
        let response: SendMessageResponse = serde_json::from_value(json.clone()).unwrap();
        assert!(matches!(response, SendMessageResponse::Task(_)));
        assert_eq!(serde_json::to_value(&response).unwrap(), json);
    }
}
