//! A task and its status.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Artifact, Message, TaskState};

/// A task: one unit of work in a context, with its current status, its outputs and the
/// messages exchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub id: String,
    pub context_id: String,
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// Where a task is, with the agent's message about it (a question, an error) and when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    pub state: TaskState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// ISO 8601, e.g. `2026-11-27T20:00:00Z`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

impl TaskStatus {
    /// A status without a message or time.
    pub fn of(state: TaskState) -> Self {
        Self {
            state,
            message: None,
            timestamp: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_task_as_the_sdk_reads_it() {
        let json = json!({
            "id": "t-1",
            "contextId": "ctx",
            "status": {
                "state": "TASK_STATE_INPUT_REQUIRED",
                "message": {"messageId": "m", "contextId": "ctx", "taskId": "t-1", "role": "ROLE_AGENT", "parts": [{"text": "Which file?"}]},
                "timestamp": "2026-11-27T20:00:00Z"
            },
            "artifacts": [{"artifactId": "a", "parts": [{"data": {"ok": true}}]}],
            "history": [{"messageId": "u", "role": "ROLE_USER", "parts": [{"text": "go"}]}],
            "metadata": {"runner": {"runId": "r"}}
        });
        let task: Task = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(task.status.state, TaskState::InputRequired);
        assert_eq!(serde_json::to_value(&task).unwrap(), json);
    }

    #[test]
    fn a_bare_status() {
        let json = serde_json::to_value(TaskStatus::of(TaskState::Working)).unwrap();
        assert_eq!(json, json!({"state": "TASK_STATE_WORKING"}));
    }
}
