//! The `command` middleware: a program of the user's (run like a hook: directly, in the
//! workspace, secrets withheld, bounded by its timeout, its stderr in `hooks.log`) that
//! reads each model request before it is sent and each response after, as one JSON object
//! on stdin, and may answer with the messages to send instead, or with a changed reply.
//! docs/agent-file.md#middleware is the user's side of this.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::chain::{CallContext, Middleware};
use crate::policy::hooks::{Hook, HookFailure, HookRunner, HookScene, OnError};
use crate::provider::{BoxFuture, Message, ModelResponse, ToolCall};

/// One `command` middleware.
pub struct CommandMiddleware {
    pub hook: Hook,
    pub runner: HookRunner,
}

/// What the program may answer before a call: the history to send (and keep) instead,
/// and entries for the call's metadata, which its `after` run reads.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BeforeAnswer {
    messages: Option<Vec<Message>>,
    metadata: Option<Map<String, Value>>,
}

/// What the program may answer after a call: the reply's text and calls. Its usage and
/// model are the server's, so the run's accounting cannot be rewritten.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AfterAnswer {
    response: Option<ResponseEdit>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResponseEdit {
    text: Option<String>,
    tool_calls: Option<Vec<ToolCall>>,
}

impl CommandMiddleware {
    /// Runs the program with `input`; its answer as `T`, `None` for an empty stdout, or
    /// why it failed.
    async fn ask<T: serde::de::DeserializeOwned>(
        &self,
        ctx: &CallContext,
        input: Value,
    ) -> Result<Option<T>, String> {
        let failed = |failure: HookFailure| {
            format!(
                "the command middleware `{}` failed: {failure}",
                self.hook.label()
            )
        };
        if let Some(refused) = self.runner.refuses(&self.hook) {
            return Err(failed(refused));
        }
        let scene = HookScene {
            point: "middleware",
            about: format!("(step {} of {})", ctx.step, ctx.agent),
            log_dir: ctx.run_dir.as_deref(),
            cancel: &ctx.cancel,
        };
        let (answer, _) = self.runner.run(&self.hook, &input, &scene).await;
        let Some(answer) = answer.map_err(failed)? else {
            return Ok(None);
        };
        serde_json::from_value(answer)
            .map(Some)
            .map_err(|error| failed(HookFailure::Garbage(error.to_string())))
    }

    /// What every input says: the call it is about.
    fn input(&self, event: &str, ctx: &CallContext) -> Value {
        let emitter = &ctx.emitter;
        let mut input = json!({
            "event": event,
            "run_id": emitter.run_id,
            "session_id": emitter.thread_id,
            "agent": ctx.agent,
            "depth": emitter.depth,
            "step": ctx.step,
            "metadata": ctx.metadata,
        });
        if let Some(dir) = &ctx.run_dir {
            input["run_dir"] = dir.display().to_string().into();
        }
        input
    }

    /// A failure under `on_error: continue` is a notice, and the call goes on unchanged.
    fn settle<T>(&self, ctx: &CallContext, failure: String, unchanged: T) -> Result<T, String> {
        match self.hook.on_error {
            OnError::Deny => Err(failure),
            OnError::Allow => {
                ctx.warn(failure);
                Ok(unchanged)
            }
        }
    }
}

impl Middleware for CommandMiddleware {
    fn name(&self) -> &str {
        "command"
    }

    fn try_before<'a>(
        &'a self,
        mut ctx: CallContext,
    ) -> BoxFuture<'a, (CallContext, Option<String>)> {
        Box::pin(async move {
            let mut input = self.input("before_model", &ctx);
            input["messages"] = json!(ctx.state.messages.iter().collect::<Vec<_>>());
            let answer = match self.ask::<BeforeAnswer>(&ctx, input).await {
                Ok(answer) => answer,
                Err(failure) => {
                    let failed = self.settle(&ctx, failure, ()).err();
                    return (ctx, failed);
                }
            };
            if let Some(answer) = answer {
                if let Some(messages) = answer.messages {
                    ctx.state.messages = messages.into();
                }
                ctx.metadata.extend(answer.metadata.unwrap_or_default());
            }
            (ctx, None)
        })
    }

    fn try_after<'a>(
        &'a self,
        ctx: &'a CallContext,
        mut response: ModelResponse,
    ) -> BoxFuture<'a, Result<ModelResponse, String>> {
        Box::pin(async move {
            let mut input = self.input("after_model", ctx);
            input["response"] = json!(response);
            let answer = match self.ask::<AfterAnswer>(ctx, input).await {
                Ok(answer) => answer,
                Err(failure) => return self.settle(ctx, failure, response),
            };
            if let Some(edit) = answer.and_then(|answer| answer.response) {
                if let Some(text) = edit.text {
                    response.text = text;
                }
                if let Some(calls) = edit.tool_calls {
                    response.tool_calls = calls;
                }
            }
            Ok(response)
        })
    }
}
