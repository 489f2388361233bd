//! The JSON-RPC 2.0 envelopes of the A2A JSON-RPC binding.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ErrorCode;

/// A request id: a number or a string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    Number(i64),
    String(String),
}

/// A request. `params` stays JSON until the method is known.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcRequest {
    pub jsonrpc: String,
    /// `None`: a notification (no response is due).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<RequestId>,
    pub method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

impl JsonRpcRequest {
    /// A request of this method with these params.
    pub fn new(id: RequestId, method: &str, params: Value) -> Self {
        Self {
            jsonrpc: "2.0".into(),
            id: Some(id),
            method: method.into(),
            params: Some(params),
        }
    }
}

/// A response: a `result` or an `error`. `id` is `null` when the request's could not be read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcResponse<T = Value> {
    pub jsonrpc: String,
    pub id: Option<RequestId>,
    // No `default`: it would ask `T: Default`; a missing `Option` is `None` anyway.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<T>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<JsonRpcError>,
}

impl<T> JsonRpcResponse<T> {
    /// A successful response.
    pub fn success(id: Option<RequestId>, result: T) -> Self {
        Self {
            jsonrpc: "2.0".into(),
            id,
            result: Some(result),
            error: None,
        }
    }

    /// A failed response.
    pub fn failure(id: Option<RequestId>, error: JsonRpcError) -> Self {
        Self {
            jsonrpc: "2.0".into(),
            id,
            result: None,
            error: Some(error),
        }
    }
}

/// An error: its code, a message for a person, and data (A2A's `ErrorInfo`, or details).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcError {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl JsonRpcError {
    /// An error of this kind, with the SDKs' `ErrorInfo` as its data when it has one.
    pub fn new(kind: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code: kind.code(),
            message: message.into(),
            data: kind.error_info(),
        }
    }

    /// The kind of this error, when its code is one of the protocol's.
    pub fn kind(&self) -> Option<ErrorCode> {
        ErrorCode::from_code(self.code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::{SendMessageResponse, StreamResponse};
    use serde_json::json;

    #[test]
    fn a_request_as_the_sdk_sends_it() {
        let json = json!({"jsonrpc": "2.0", "method": "GetTask", "params": {"id": "t"}, "id": 1});
        let request: JsonRpcRequest = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(request.id, Some(RequestId::Number(1)));
        assert_eq!(request.method, "GetTask");
        assert_eq!(serde_json::to_value(&request).unwrap(), json);
    }

    #[test]
    fn a_typed_success() {
        let json = json!({"jsonrpc": "2.0", "id": "a", "result": {"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}}});
        let response: JsonRpcResponse<SendMessageResponse> =
            serde_json::from_value(json.clone()).unwrap();
        assert!(matches!(
            response.result,
            Some(SendMessageResponse::Task(_))
        ));
        assert_eq!(serde_json::to_value(&response).unwrap(), json);
        let event: JsonRpcResponse<StreamResponse> = serde_json::from_value(json).unwrap();
        assert!(event.error.is_none());
    }

    #[test]
    fn an_error_with_a_null_id() {
        let response = JsonRpcResponse::<Value>::failure(
            None,
            JsonRpcError::new(ErrorCode::ParseError, "not JSON"),
        );
        let json = serde_json::to_value(&response).unwrap();
        assert_eq!(
            json,
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "not JSON"}})
        );
        let back: JsonRpcResponse = serde_json::from_value(json).unwrap();
        assert_eq!(back.error.unwrap().kind(), Some(ErrorCode::ParseError));
    }
}
