//! Model providers: one streaming-first trait, clients for the OpenAI-compatible (Chat
//! Completions), OpenAI Responses and Anthropic wire formats, a scripted model, and wrappers (retry, record, replay) that
//! compose around any provider, tower-style.
//!
//! ```text
//! build_provider(cfg) = Recording? ( Retry ( OpenAi | Responses | Anthropic ) | Scripted )  or  Replay
//! Fallback [ build_provider(cfg), build_provider(fallback 1), ... ]   (a model with `fallback:`)
//! ```
//!
//! Every provider is used as `Arc<dyn Provider>`. A call streams [`StreamDelta`]s into a
//! sink while it runs and returns the assembled [`ModelResponse`]. The final response is
//! authoritative; a [`StreamDelta::Reset`] tells the sink to forget what it got so far
//! because the call is being retried from scratch.

use std::future::Future;
use std::pin::Pin;

pub mod anthropic;
mod anthropic_body;
pub mod anthropic_stream;
pub mod body_limits;
pub mod cassette;
pub mod config;
pub mod error;
pub mod fallback;
pub mod history;
mod http;
mod item_cache;
mod loopback;
pub mod openai;
mod openai_body;
pub mod openai_stream;
pub mod redact;
pub mod replay;
mod request_body;
pub mod responses;
mod responses_body;
pub mod responses_stream;
pub mod retry;
pub mod scripted;
mod send_error;
pub mod services;
pub mod sse;
mod tools_cache;
pub mod types;
pub mod windows;
mod wire_body;

pub use cassette::{CASSETTE_VERSION, CassetteRecorder, cassette_lines, is_a2a_line, is_mcp_line};
pub use config::{BuildOptions, ProviderConfig, ProviderKind, RetryConfig, build_provider_with};
pub use error::{ErrorKind, ProviderError, shorten};
pub use fallback::ChainPosition;
pub use http::{Secret, http_client};
pub use replay::ReplayStore;
pub use scripted::{ScriptedProvider, ScriptedResponse, ScriptedToolCall, ScriptedUsage};
pub use types::{
    AssistantMessage, FinishReason, InvalidArguments, Message, ModelRequest, ModelResponse,
    ResponseFormat, StreamDelta, ThinkingBlock, ToolCall, ToolSpec, Usage,
};
// For the crate's own tests and benchmarks (the `testing` feature).
#[cfg(any(test, feature = "testing"))]
pub use {
    config::build_provider,
    http::parse_retry_after,
    types::{ReasoningItem, ToolResult},
};

/// A boxed, sendable future (what [`Provider`] methods return, keeping the trait
/// object-safe).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Receives the deltas of a call as they arrive. Called from the task running the
/// call; keep it quick (forward to a channel if the work is heavy).
pub type DeltaSink<'a> = dyn Fn(StreamDelta) + Send + Sync + 'a;

/// A model behind some API.
///
/// `stream` sends one request and resolves to the assembled response; while it runs,
/// each piece of text, reasoning, tool call and usage goes to `sink`. Errors are
/// classified ([`ProviderError::is_retryable`]); retrying is the job of the
/// `Retry` wrapper, not of the clients.
pub trait Provider: Send + Sync {
    /// Short name for errors and cassettes: "openai", "openai_responses", "anthropic",
    /// "ollama", "scripted".
    fn name(&self) -> &str;

    /// The model name requests are sent for.
    fn model(&self) -> &str;

    fn stream<'a>(
        &'a self,
        req: &'a ModelRequest,
        sink: &'a DeltaSink<'a>,
    ) -> BoxFuture<'a, Result<ModelResponse, ProviderError>>;

    /// Whether a `response_format` goes along with tools on one call. `false` for a server
    /// that may enforce the schema as a grammar (llama.cpp, Ollama, vLLM: every
    /// OpenAI-compatible server but OpenAI's and Azure's own), where it would leave the model
    /// no way to call a tool: such a client leaves the schema out of a request with tools,
    /// and the engine, knowing it was not enforced, follows an answer that does not match
    /// with the answer call (no tools, the schema) without counting a retry.
    fn schema_with_tools(&self) -> bool {
        true
    }

    /// `stream` with the deltas dropped.
    fn complete<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ProviderError>> {
        self.stream(req, &ignore_delta)
    }
}

/// A sink that drops every delta.
pub fn ignore_delta(_: StreamDelta) {}
