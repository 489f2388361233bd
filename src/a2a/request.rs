//! The params of the JSON-RPC methods.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Message;

/// `SendMessage` and `SendStreamingMessage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::fields::empty_as_none"
    )]
    pub tenant: Option<String>,
    pub message: Message,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// How a send behaves.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted_output_modes: Vec<String>,
    /// Push notifications, kept as sent (a server without them refuses it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_push_notification_config: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<u32>,
    /// Return at once with the task working instead of waiting for it to finish or pause.
    #[serde(default, skip_serializing_if = "super::fields::is_false")]
    pub return_immediately: bool,
}

/// `GetTask`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequest {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::fields::empty_as_none"
    )]
    pub tenant: Option<String>,
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<u32>,
}

/// `CancelTask`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelTaskRequest {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::fields::empty_as_none"
    )]
    pub tenant: Option<String>,
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// `SubscribeToTask`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeToTaskRequest {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::fields::empty_as_none"
    )]
    pub tenant: Option<String>,
    pub id: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_send_as_the_sdk_sends_it() {
        let json = json!({
            "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
            "configuration": {"acceptedOutputModes": ["text/plain"], "historyLength": 0, "returnImmediately": true}
        });
        let request: SendMessageRequest = serde_json::from_value(json.clone()).unwrap();
        let configuration = request.configuration.as_ref().unwrap();
        assert!(configuration.return_immediately);
        assert_eq!(configuration.history_length, Some(0));
        assert_eq!(serde_json::to_value(&request).unwrap(), json);
    }

    #[test]
    fn task_requests() {
        let get: GetTaskRequest =
            serde_json::from_value(json!({"id": "t", "historyLength": 2})).unwrap();
        assert_eq!(get.history_length, Some(2));
        let cancel: CancelTaskRequest = serde_json::from_value(json!({"id": "t"})).unwrap();
        assert_eq!(serde_json::to_value(&cancel).unwrap(), json!({"id": "t"}));
        let subscribe: SubscribeToTaskRequest =
            serde_json::from_value(json!({"id": "t", "tenant": ""})).unwrap();
        assert_eq!(subscribe.tenant, None);
    }
}
