//! The error codes of the JSON-RPC binding: JSON-RPC's own and A2A's.

use serde_json::{Value, json};

/// An error a JSON-RPC response carries, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// The body is not JSON.
    ParseError,
    /// The body is JSON but not a JSON-RPC request.
    InvalidRequest,
    MethodNotFound,
    /// The params do not fit the method (or the agent's inputs).
    InvalidParams,
    InternalError,
    TaskNotFound,
    /// The task is in a terminal state.
    TaskNotCancelable,
    PushNotificationNotSupported,
    /// The operation is not supported here (or not in the task's state).
    UnsupportedOperation,
    ContentTypeNotSupported,
    InvalidAgentResponse,
    ExtendedCardNotConfigured,
    ExtensionSupportRequired,
    VersionNotSupported,
}

use ErrorCode::*;

const ALL: [ErrorCode; 14] = [
    ParseError,
    InvalidRequest,
    MethodNotFound,
    InvalidParams,
    InternalError,
    TaskNotFound,
    TaskNotCancelable,
    PushNotificationNotSupported,
    UnsupportedOperation,
    ContentTypeNotSupported,
    InvalidAgentResponse,
    ExtendedCardNotConfigured,
    ExtensionSupportRequired,
    VersionNotSupported,
];

impl ErrorCode {
    /// The number on the wire.
    pub fn code(self) -> i64 {
        match self {
            ParseError => -32700,
            InvalidRequest => -32600,
            MethodNotFound => -32601,
            InvalidParams => -32602,
            InternalError => -32603,
            TaskNotFound => -32001,
            TaskNotCancelable => -32002,
            PushNotificationNotSupported => -32003,
            UnsupportedOperation => -32004,
            ContentTypeNotSupported => -32005,
            InvalidAgentResponse => -32006,
            ExtendedCardNotConfigured => -32007,
            ExtensionSupportRequired => -32008,
            VersionNotSupported => -32009,
        }
    }

    /// The kind of a number read from a response (`None`: a code of neither list).
    pub fn from_code(code: i64) -> Option<Self> {
        ALL.into_iter().find(|kind| kind.code() == code)
    }

    /// The `google.rpc.ErrorInfo` reason the SDKs give an A2A error (`None` for JSON-RPC's
    /// own codes, which carry no reason).
    pub fn reason(self) -> Option<&'static str> {
        Some(match self {
            TaskNotFound => "TASK_NOT_FOUND",
            TaskNotCancelable => "TASK_NOT_CANCELABLE",
            PushNotificationNotSupported => "PUSH_NOTIFICATION_NOT_SUPPORTED",
            UnsupportedOperation => "UNSUPPORTED_OPERATION",
            ContentTypeNotSupported => "CONTENT_TYPE_NOT_SUPPORTED",
            InvalidAgentResponse => "INVALID_AGENT_RESPONSE",
            ExtendedCardNotConfigured => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            ExtensionSupportRequired => "EXTENSION_SUPPORT_REQUIRED",
            VersionNotSupported => "VERSION_NOT_SUPPORTED",
            InvalidParams => "INVALID_PARAMS",
            ParseError | InvalidRequest | MethodNotFound | InternalError => return None,
        })
    }

    /// The `data` of an error response: `[ErrorInfo]`, as the SDKs' servers write it.
    pub fn error_info(self) -> Option<Value> {
        let reason = self.reason()?;
        Some(json!([{
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": reason,
            "domain": "a2a-protocol.org",
        }]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for kind in ALL {
            assert_eq!(ErrorCode::from_code(kind.code()), Some(kind));
        }
        assert_eq!(ErrorCode::from_code(-1), None);
        assert_eq!(TaskNotFound.code(), -32001);
    }

    #[test]
    fn an_a2a_error_carries_its_reason() {
        let data = TaskNotFound.error_info().unwrap();
        assert_eq!(data[0]["reason"], "TASK_NOT_FOUND");
        assert_eq!(MethodNotFound.error_info(), None);
    }
}
