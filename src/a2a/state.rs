//! The lifecycle state of a task.

use serde::{Deserialize, Serialize};

/// Where a task is in its life. The 0.3 spellings (`completed`, `input-required`...) are
/// read too, so a task written by an older peer still parses; 1.0's are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TaskState {
    #[serde(rename = "TASK_STATE_UNSPECIFIED", alias = "unknown")]
    Unspecified,
    #[serde(rename = "TASK_STATE_SUBMITTED", alias = "submitted")]
    Submitted,
    #[serde(rename = "TASK_STATE_WORKING", alias = "working")]
    Working,
    #[serde(rename = "TASK_STATE_COMPLETED", alias = "completed")]
    Completed,
    #[serde(rename = "TASK_STATE_FAILED", alias = "failed")]
    Failed,
    #[serde(rename = "TASK_STATE_CANCELED", alias = "canceled")]
    Canceled,
    #[serde(rename = "TASK_STATE_INPUT_REQUIRED", alias = "input-required")]
    InputRequired,
    #[serde(rename = "TASK_STATE_REJECTED", alias = "rejected")]
    Rejected,
    #[serde(rename = "TASK_STATE_AUTH_REQUIRED", alias = "auth-required")]
    AuthRequired,
}

impl TaskState {
    /// A terminal state: the task will not change again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Completed | Self::Failed | Self::Canceled | Self::Rejected
        )
    }

    /// An interrupted state: the task waits for the client (an answer, credentials).
    pub fn is_interrupted(self) -> bool {
        matches!(self, Self::InputRequired | Self::AuthRequired)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spelled_as_the_sdk_spells_it() {
        let json = serde_json::to_string(&TaskState::InputRequired).unwrap();
        assert_eq!(json, r#""TASK_STATE_INPUT_REQUIRED""#);
        let back: TaskState = serde_json::from_str(&json).unwrap();
        assert_eq!(back, TaskState::InputRequired);
    }

    #[test]
    fn the_legacy_spelling_reads() {
        let state: TaskState = serde_json::from_str(r#""input-required""#).unwrap();
        assert_eq!(state, TaskState::InputRequired);
    }

    #[test]
    fn terminal_and_interrupted() {
        assert!(TaskState::Canceled.is_terminal());
        assert!(!TaskState::Working.is_terminal());
        assert!(TaskState::InputRequired.is_interrupted());
    }
}
