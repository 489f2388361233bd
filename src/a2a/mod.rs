//! The A2A protocol's typed data (Agent2Agent, version 1.0): what `runner serve`'s A2A
//! endpoints speak and what a remote A2A agent is called with.
//!
//! The JSON is the protobuf JSON mapping the official SDKs send (`@a2a-js/sdk` 1.3.0,
//! `a2a-sdk` on PyPI): camelCase fields, enums spelled `TASK_STATE_COMPLETED` and
//! `ROLE_USER`, a part's content one of `text`, `raw`, `url`, `data`, and empty or default
//! fields left out. Nothing here does I/O: the server (`serve::a2a`) and a client build on it.

// The vocabulary is kept whole, both directions of each type: the server speaks part of
// it, a client of remote A2A agents (reading cards, responses, error kinds) the rest.
#![allow(dead_code, unused_imports)]

mod artifact;
mod card;
mod error;
mod event;
mod fields;
mod jsonrpc;
mod message;
mod method;
mod part;
mod request;
mod state;
mod task;

pub use artifact::Artifact;
pub use card::{
    AgentCapabilities, AgentCard, AgentExtension, AgentInterface, AgentProvider, AgentSkill,
    HttpAuthSecurityScheme, SecurityRequirement, SecurityScheme, StringList,
};
pub use error::ErrorCode;
pub use event::{
    SendMessageResponse, StreamResponse, TaskArtifactUpdateEvent, TaskStatusUpdateEvent,
};
pub use jsonrpc::{JsonRpcError, JsonRpcRequest, JsonRpcResponse, RequestId};
pub use message::{Message, Role};
pub use method::Method;
pub use part::{Part, PartContent};
pub use request::{
    CancelTaskRequest, GetTaskRequest, SendMessageConfiguration, SendMessageRequest,
    SubscribeToTaskRequest,
};
pub use state::TaskState;
pub use task::{Task, TaskStatus};

/// The protocol version spoken (the `A2A-Version` header, an interface's `protocolVersion`).
pub const PROTOCOL_VERSION: &str = "1.0";

/// The header a client names the protocol version it speaks in.
pub const VERSION_HEADER: &str = "A2A-Version";

/// Where an agent's card is, relative to the agent's base URL (ending in `/`).
pub const AGENT_CARD_PATH: &str = ".well-known/agent-card.json";

/// The protocol binding name of JSON-RPC over HTTP in an [`AgentInterface`].
pub const JSONRPC_BINDING: &str = "JSONRPC";
