//! The methods of the JSON-RPC binding, by their 1.0 names.

/// A method. 0.3's names (`message/send`, `tasks/get`...) are recognized only to be refused
/// with a clear error: their params have another shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    SendMessage,
    SendStreamingMessage,
    GetTask,
    ListTasks,
    CancelTask,
    SubscribeToTask,
    CreateTaskPushNotificationConfig,
    GetTaskPushNotificationConfig,
    ListTaskPushNotificationConfigs,
    DeleteTaskPushNotificationConfig,
    GetExtendedAgentCard,
}

use Method::*;

const ALL: [Method; 11] = [
    SendMessage,
    SendStreamingMessage,
    GetTask,
    ListTasks,
    CancelTask,
    SubscribeToTask,
    CreateTaskPushNotificationConfig,
    GetTaskPushNotificationConfig,
    ListTaskPushNotificationConfigs,
    DeleteTaskPushNotificationConfig,
    GetExtendedAgentCard,
];

/// 0.3's method names.
const LEGACY: [&str; 10] = [
    "message/send",
    "message/stream",
    "tasks/get",
    "tasks/cancel",
    "tasks/resubscribe",
    "tasks/pushNotificationConfig/set",
    "tasks/pushNotificationConfig/get",
    "tasks/pushNotificationConfig/list",
    "tasks/pushNotificationConfig/delete",
    "agent/getAuthenticatedExtendedCard",
];

impl Method {
    /// The name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            SendMessage => "SendMessage",
            SendStreamingMessage => "SendStreamingMessage",
            GetTask => "GetTask",
            ListTasks => "ListTasks",
            CancelTask => "CancelTask",
            SubscribeToTask => "SubscribeToTask",
            CreateTaskPushNotificationConfig => "CreateTaskPushNotificationConfig",
            GetTaskPushNotificationConfig => "GetTaskPushNotificationConfig",
            ListTaskPushNotificationConfigs => "ListTaskPushNotificationConfigs",
            DeleteTaskPushNotificationConfig => "DeleteTaskPushNotificationConfig",
            GetExtendedAgentCard => "GetExtendedAgentCard",
        }
    }

    /// The method of a 1.0 name.
    pub fn from_name(name: &str) -> Option<Self> {
        ALL.into_iter().find(|method| method.name() == name)
    }

    /// Whether `name` is a method of A2A 0.3.
    pub fn is_legacy(name: &str) -> bool {
        LEGACY.contains(&name)
    }

    /// Whether its result is a stream of server-sent events.
    pub fn streams(self) -> bool {
        matches!(self, SendStreamingMessage | SubscribeToTask)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for method in ALL {
            assert_eq!(Method::from_name(method.name()), Some(method));
        }
        assert_eq!(Method::from_name("message/send"), None);
        assert!(Method::is_legacy("message/send"));
        assert!(SubscribeToTask.streams());
    }
}
