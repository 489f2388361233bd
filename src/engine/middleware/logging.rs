//! `logging`: one line per model call on stderr (a notice the progress subscriber prints);
//! never message contents unless asked, never secrets (the key never enters a request the
//! engine sees).

use std::time::Instant;

use serde_json::Value;

use super::chain::{CallContext, Middleware};
use crate::engine::events::Notice;
use crate::provider::{BoxFuture, ModelResponse, ProviderError};
use crate::spec::middleware::{LogLevel, LoggingConfig};

pub struct Logging {
    config: LoggingConfig,
    started: Instant,
}

impl Logging {
    pub fn new(config: LoggingConfig) -> Self {
        Logging {
            config,
            started: Instant::now(),
        }
    }

    fn enabled(&self, level: LogLevel) -> bool {
        let rank = |l: LogLevel| match l {
            LogLevel::Error => 0,
            LogLevel::Warn => 1,
            LogLevel::Info => 2,
            LogLevel::Debug => 3,
        };
        rank(level) <= rank(self.config.level)
    }
}

impl Middleware for Logging {
    fn name(&self) -> &str {
        "logging"
    }

    fn before<'a>(&'a self, mut ctx: CallContext) -> BoxFuture<'a, CallContext> {
        Box::pin(async move {
            ctx.metadata.insert(
                "logging.started_ms".into(),
                Value::from(self.started.elapsed().as_millis() as u64),
            );
            if self.enabled(LogLevel::Info) {
                log(
                    &ctx,
                    format!(
                        "{} step {}: model call with {} messages",
                        ctx.agent,
                        ctx.step,
                        ctx.state.messages.len()
                    ),
                );
                if self.config.include_messages
                    && let Some(last) = ctx.state.messages.last()
                {
                    let last = serde_json::to_string(last).unwrap_or_default();
                    log(&ctx, format!("  last message: {last}"));
                }
            }
            ctx
        })
    }

    fn after<'a>(
        &'a self,
        ctx: &'a CallContext,
        response: ModelResponse,
    ) -> BoxFuture<'a, ModelResponse> {
        Box::pin(async move {
            if self.enabled(LogLevel::Info) {
                let timing = if self.config.include_timing {
                    let started = ctx
                        .metadata
                        .get("logging.started_ms")
                        .and_then(Value::as_u64)
                        .unwrap_or(0);
                    format!(
                        " in {} ms",
                        (self.started.elapsed().as_millis() as u64).saturating_sub(started)
                    )
                } else {
                    String::new()
                };
                log(
                    ctx,
                    format!(
                        "{} step {}: {} tool call(s), {} tokens{timing}",
                        ctx.agent,
                        ctx.step,
                        response.tool_calls.len(),
                        response.usage.total_tokens
                    ),
                );
                if self.config.include_messages && !response.text.is_empty() {
                    log(ctx, format!("  reply: {}", response.text));
                }
            }
            response
        })
    }

    fn on_error<'a>(
        &'a self,
        ctx: &'a CallContext,
        error: &'a ProviderError,
    ) -> BoxFuture<'a, Option<ModelResponse>> {
        Box::pin(async move {
            if self.enabled(LogLevel::Error) {
                let line = format!(
                    "{} step {}: model call failed: {error}",
                    ctx.agent, ctx.step
                );
                log(ctx, line);
            }
            None
        })
    }
}

/// One line of the log, told to the person watching the run.
fn log(ctx: &CallContext, line: String) {
    ctx.emitter.notify(Notice::Log(line));
}
