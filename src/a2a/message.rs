//! One unit of communication between a client and an agent.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Part;

/// Who sent a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    #[serde(rename = "ROLE_UNSPECIFIED")]
    Unspecified,
    /// The client.
    #[serde(rename = "ROLE_USER", alias = "user")]
    User,
    /// The agent.
    #[serde(rename = "ROLE_AGENT", alias = "agent")]
    Agent,
}

/// A message. A client's message may name the context (the conversation) and the task it
/// continues; the agent's always names the context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub message_id: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::fields::empty_as_none"
    )]
    pub context_id: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::fields::empty_as_none"
    )]
    pub task_id: Option<String>,
    pub role: Role,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reference_task_ids: Vec<String>,
}

impl Message {
    /// A message from the agent with these parts.
    pub fn agent(message_id: String, parts: Vec<Part>) -> Self {
        Self::new(message_id, Role::Agent, parts)
    }

    /// A message from the client with these parts.
    pub fn user(message_id: String, parts: Vec<Part>) -> Self {
        Self::new(message_id, Role::User, parts)
    }

    fn new(message_id: String, role: Role, parts: Vec<Part>) -> Self {
        Self {
            message_id,
            context_id: None,
            task_id: None,
            role,
            parts,
            metadata: None,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        }
    }

    /// The text parts, joined by newlines (`None` when there is none).
    pub fn text(&self) -> Option<String> {
        let texts: Vec<&str> = self.parts.iter().filter_map(Part::as_text).collect();
        (!texts.is_empty()).then(|| texts.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_client_message_as_the_sdk_sends_it() {
        let json = json!({
            "messageId": "m-1",
            "contextId": "ctx",
            "taskId": "t-1",
            "role": "ROLE_USER",
            "parts": [{"text": "hello"}, {"data": {"n": 1}}],
            "metadata": {"k": "v"},
            "referenceTaskIds": ["t-0"]
        });
        let message: Message = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(message.role, Role::User);
        assert_eq!(message.text().as_deref(), Some("hello"));
        assert_eq!(serde_json::to_value(&message).unwrap(), json);
    }

    #[test]
    fn unset_ids_are_left_out() {
        let message = Message::agent("m-2".into(), vec![Part::text("hi")]);
        let json = serde_json::to_value(&message).unwrap();
        assert_eq!(
            json,
            json!({"messageId": "m-2", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]})
        );
        let empty: Message =
            serde_json::from_value(json!({"messageId": "m", "role": "ROLE_USER", "contextId": ""}))
                .unwrap();
        assert_eq!(empty.context_id, None);
    }
}
