//! The middleware trait and the chain that runs it around every model call.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};
use tokio::sync::watch;

use crate::engine::budget::Price;
use crate::engine::events::{Emitter, Notice};
use crate::engine::state::AgentState;
use crate::provider::{BoxFuture, ModelResponse, ProviderError, Usage};
use crate::sync::lock;

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
    /// The run's directory, where a `command` middleware's stderr goes (`hooks.log`).
    pub run_dir: Option<PathBuf>,
    /// The run's stop signal: a `command` middleware's program is stopped with the run.
    pub cancel: watch::Receiver<bool>,
    /// The run's warnings (the result's `warnings`).
    pub warnings: Arc<Mutex<Vec<String>>>,
}

impl CallContext {
    /// A problem that did not stop the call: on stderr and in the result's `warnings`.
    pub fn warn(&self, message: String) {
        self.emitter.notify(Notice::Warning(message.clone()));
        lock(&self.warnings).push(message);
    }
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

    /// `before`, for a middleware that can fail: the context, and why the call must not
    /// be made (a `command` middleware whose program failed, under `on_error: fail`).
    /// The built-ins cannot fail.
    fn try_before<'a>(&'a self, ctx: CallContext) -> BoxFuture<'a, (CallContext, Option<String>)> {
        Box::pin(async move { (self.before(ctx).await, None) })
    }

    /// `after`, for a middleware that can fail: the response, or why the call failed.
    fn try_after<'a>(
        &'a self,
        ctx: &'a CallContext,
        response: ModelResponse,
    ) -> BoxFuture<'a, Result<ModelResponse, String>> {
        Box::pin(async move { Ok(self.after(ctx, response).await) })
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

/// Runs `before` of every middleware in order, until one fails: then the context, and
/// why the call must not be made.
pub async fn run_before(
    chain: &[std::sync::Arc<dyn Middleware>],
    mut ctx: CallContext,
) -> (CallContext, Option<String>) {
    for middleware in chain {
        let failed;
        (ctx, failed) = middleware.try_before(ctx).await;
        if failed.is_some() {
            return (ctx, failed);
        }
    }
    (ctx, None)
}

/// Runs `after` of every middleware in reverse order, until one fails.
pub async fn run_after(
    chain: &[std::sync::Arc<dyn Middleware>],
    ctx: &CallContext,
    mut response: ModelResponse,
) -> Result<ModelResponse, String> {
    for middleware in chain.iter().rev() {
        response = middleware.try_after(ctx, response).await?;
    }
    Ok(response)
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
