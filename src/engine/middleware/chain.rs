//! The middleware trait and the chain that runs it around every model call.

use serde_json::{Map, Value};

use crate::engine::budget::Price;
use crate::engine::events::Emitter;
use crate::engine::state::AgentState;
use crate::provider::{BoxFuture, ModelResponse, ProviderError, Usage};

/// What a middleware sees of one model call. `before` may replace `state` (the history the
/// call sends and the run keeps); by `after` and `on_error` the state is back with the
/// engine and `state` is empty.
#[derive(Debug, Clone)]
pub struct CallContext {
    pub agent: String,
    pub step: u64,
    pub state: AgentState,
    /// Scratch space shared by the middleware of this call (e.g. a start time).
    pub metadata: Map<String, Value>,
    /// Model calls a middleware made for this call (a summary): the engine meters and
    /// emits each like its own.
    pub spent: Vec<Spend>,
    /// The run's emitter, where a middleware's log lines go ([`Emitter::notify`]): the
    /// engine never prints.
    pub emitter: Emitter,
}

/// One model call made by a middleware.
#[derive(Debug, Clone, PartialEq)]
pub struct Spend {
    pub model: String,
    pub usage: Usage,
    pub price: Option<Price>,
}

/// One layer around model calls.
pub trait Middleware: Send + Sync {
    fn name(&self) -> &str;

    fn before<'a>(&'a self, ctx: CallContext) -> BoxFuture<'a, CallContext> {
        Box::pin(async move { ctx })
    }

    fn after<'a>(
        &'a self,
        _ctx: &'a CallContext,
        response: ModelResponse,
    ) -> BoxFuture<'a, ModelResponse> {
        Box::pin(async move { response })
    }

    /// Returns a response to use instead of the error, or `None` to let it through.
    fn on_error<'a>(
        &'a self,
        _ctx: &'a CallContext,
        _error: &'a ProviderError,
    ) -> BoxFuture<'a, Option<ModelResponse>> {
        Box::pin(async move { None })
    }
}

/// Runs `before` of every middleware in order.
pub async fn run_before(
    chain: &[std::sync::Arc<dyn Middleware>],
    mut ctx: CallContext,
) -> CallContext {
    for middleware in chain {
        ctx = middleware.before(ctx).await;
    }
    ctx
}

/// Runs `after` of every middleware in reverse order.
pub async fn run_after(
    chain: &[std::sync::Arc<dyn Middleware>],
    ctx: &CallContext,
    mut response: ModelResponse,
) -> ModelResponse {
    for middleware in chain.iter().rev() {
        response = middleware.after(ctx, response).await;
    }
    response
}

/// Gives each middleware, in reverse order, the chance to recover from an error.
pub async fn run_on_error(
    chain: &[std::sync::Arc<dyn Middleware>],
    ctx: &CallContext,
    error: &ProviderError,
) -> Option<ModelResponse> {
    for middleware in chain.iter().rev() {
        if let Some(response) = middleware.on_error(ctx, error).await {
            return Some(response);
        }
    }
    None
}
