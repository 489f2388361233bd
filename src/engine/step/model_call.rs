//! One model call: middleware around it, the budget, its events as it streams, the
//! text protocol's parsing and format retries, and cancellation.

use std::sync::Arc;

use super::fit_window::{Trigger, fit_window};
use super::metering::count_call;
use crate::engine::ErrorCode;
use crate::engine::agent::{Agent, Halt, HaltReason, RunContext};
use crate::engine::budget::{LimitHit, timeout_hit};
use crate::engine::clock::new_id;
use crate::engine::context::estimate_request;
use crate::engine::events::{
    Delta, InProgress, LlmFallback, LlmRetry, MessageCompleted, MessageCreated, MessageDelta,
    MessageRole, MessageStarted, ModelMessage, Purpose, Role, ToolCallChunk, ToolCallWritten,
};
use crate::engine::middleware::{CallContext, Spend, run_after, run_before, run_on_error};
use crate::engine::scheduler::until;
use crate::engine::state::AgentState;
use crate::engine::{thread, xml_turn};
use crate::protocol::XmlStreamParser;
use crate::provider::history::History;
use crate::provider::{
    ChainPosition, FinishReason, Message, ModelRequest, ModelResponse, ResponseFormat, StreamDelta,
    ToolSpec,
};
use crate::sync::lock;

/// Options of one model call.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// Offer the agent's tools (false for react's reasoning call).
    pub offer_tools: bool,
    /// Ask for JSON matching a schema.
    pub response_format: Option<ResponseFormat>,
    /// Extra system text for this call only (e.g. the current plan step).
    pub system_suffix: Option<String>,
    /// Keep the reply out of the history (react's reasoning, plan's planning call).
    pub unrecorded: bool,
    /// The reply is reasoning: the transcript shows it once, as thinking.
    pub reasoning: bool,
    /// Tools the strategy offers beside the agent's and answers itself (plan's
    /// `step_failed`); only with native tool calls.
    pub extra_tools: Vec<ToolSpec>,
}

/// What the text protocol asks after a reply: nothing, the same call again without stop
/// sequences, or an answer with what was wrong.
enum Redo {
    Nothing,
    /// A stop sequence cut the reply inside a parameter's value (a `<result>` that quotes a
    /// tool call): the cut reply is dropped and the call made again without stop sequences.
    WithoutStops,
    Feedback(String),
}

/// Makes one model call from `state` and records the reply in the returned state. With the
/// text protocol, a reply without a valid action is answered with what was wrong and asked
/// again (each retry is a model call counted by the limits); a reply cut by a stop sequence
/// inside a parameter's value is asked for once more without stop sequences.
pub async fn call_model(
    agent: &Agent,
    state: AgentState,
    ctx: &RunContext,
    options: &CallOptions,
    step_id: &str,
) -> Result<(ModelResponse, AgentState), Halt> {
    let mut state = state;
    let mut retries = 0;
    let mut stops = true;
    loop {
        let (response, next, redo) =
            call_model_once(agent, state, ctx, options, (step_id, stops)).await?;
        let feedback = match redo {
            Redo::Nothing => return Ok((response, next)),
            Redo::WithoutStops => {
                (state, stops) = (next, false);
                continue;
            }
            Redo::Feedback(feedback) => feedback,
        };
        let allowed = agent.xml_tools.as_ref().map_or(0, |xml| xml.retries);
        if retries >= allowed {
            return Err(Halt::failed(
                next,
                ErrorCode::XmlFormat,
                format!(
                    "{} replies in a row had no valid action: {feedback}",
                    retries + 1
                ),
            ));
        }
        retries += 1;
        state = thread::add_one(ctx, next, Some(step_id), Message::user(feedback));
    }
}

async fn call_model_once(
    agent: &Agent,
    state: AgentState,
    ctx: &RunContext,
    options: &CallOptions,
    (step_id, stops): (&str, bool),
) -> Result<(ModelResponse, AgentState, Redo), Halt> {
    if ctx.interrupted() {
        return Err(Halt::new(state, HaltReason::Interrupted));
    }
    if let Err(hit) = ctx.budget.before_llm_call() {
        return Err(Halt::new(state, HaltReason::Limit(hit)));
    }
    let call = CallContext {
        agent: agent.name.clone(),
        step: state.step,
        state,
        metadata: Default::default(),
        spent: Vec::new(),
        emitter: ctx.emitter.clone(),
        run_dir: ctx.run_dir.clone(),
        cancel: ctx.cancel.clone(),
        warnings: ctx.warnings.clone(),
    };
    if !agent.middleware.is_empty() {
        // A middleware may wait (a command, a summary call): what the files hold back (a
        // step's end) goes out first.
        ctx.emitter.flush();
    }
    let (mut call, refused) = run_before(&agent.middleware, call).await;
    if let Some(message) = refused {
        let state = std::mem::take(&mut call.state);
        return Err(Halt::failed(state, ErrorCode::Middleware, message));
    }
    // The history moves into the request and back afterwards: no copy per call. `after` and
    // `on_error` see the call's metadata; the state is the engine's again.
    let mut state = std::mem::take(&mut call.state);
    for spend in std::mem::take(&mut call.spent) {
        state = state.with_llm_call(&spend.usage);
        if let Err(hit) = count_call(ctx, &spend) {
            return Err(Halt::new(state, HaltReason::Limit(hit)));
        }
    }
    if let Some(policy) = &agent.context {
        let fixed = || fixed_size(agent, options);
        (state, _) = fit_window(agent, policy, state, ctx, fixed, Trigger::Estimate).await?;
    }
    let xml = agent.xml_tools.as_ref();
    let message_id = new_id();
    ctx.emitter.emit(MessageCreated {
        step_id: Some(step_id.to_string()),
        message: MessageStarted {
            id: message_id.clone(),
            role: MessageRole::Assistant,
            content: None,
            tool_call_id: None,
            name: None,
            is_error: false,
            metadata: InProgress { in_progress: true },
        },
        provider: Some(agent.provider.name().to_string()),
        model: Some(agent.provider.model().to_string()),
        params: agent.request_params.with_stop(&if stops {
            stop_sequences(agent, options)
        } else {
            Vec::new()
        }),
    });
    // A request the model refuses as too long is compacted once and sent again.
    let mut refused = false;
    let (request, parser, outcome) = loop {
        let messages = match xml {
            // The text protocol shows the model a rewritten history; the state keeps its own.
            Some(_) => History::from(xml_turn::wire_history(&state.messages)),
            None => std::mem::take(&mut state.messages),
        };
        let mut request = build_request(agent, messages, options);
        request.route = state.model_chain;
        if !stops {
            request.stop.clear();
        }
        let parser = xml.filter(|_| options.offer_tools).map(|xml| {
            Arc::new(std::sync::Mutex::new(XmlStreamParser::new(
                xml.names.clone(),
            )))
        });
        // Where the fallback chain stands after the call (the sink hears every move).
        let chain = Arc::new(std::sync::Mutex::new(state.model_chain));
        let sink = stream_sink(ctx, &message_id, parser.clone(), chain.clone(), xml);
        // The call is abandoned when the run is interrupted or reaches its deadline.
        let outcome = tokio::select! {
            result = agent.provider.stream(&request, &sink) => Ok(result),
            _ = crate::tools::stopped(&ctx.cancel) => Err(HaltReason::Interrupted),
            _ = until(ctx.budget.deadline()) => Err(HaltReason::Limit(time_up(ctx))),
        };
        if xml.is_none() {
            state.messages = std::mem::take(&mut request.messages);
        }
        state.model_chain = *lock(&chain);
        match (&outcome, &agent.context) {
            (Ok(Err(error)), Some(policy)) if !refused && error.is_context_overflow() => {
                refused = true;
                let compacted;
                (state, compacted) = fit_window(
                    agent,
                    policy,
                    state,
                    ctx,
                    || fixed_size(agent, options),
                    Trigger::Refused,
                )
                .await?;
                if !compacted {
                    break (request, parser, outcome);
                }
            }
            _ => break (request, parser, outcome),
        }
    };
    let answered_by = state.model_chain.map_or(0, |position| position.index);
    let response = match outcome {
        Err(reason) => return Err(Halt::new(state, reason)),
        Ok(Ok(response)) => response,
        Ok(Err(error)) => match run_on_error(&agent.middleware, &call, &error).await {
            Some(response) => response,
            None => {
                return Err(Halt::failed(
                    state,
                    ErrorCode::Provider(error.kind),
                    error.to_string(),
                ));
            }
        },
    };
    // The call was made: it is metered even when a middleware then fails it.
    let spend = Spend {
        model: response.model.clone(),
        usage: response.usage,
        price: agent.prices.at(answered_by),
    };
    let mut response = match run_after(&agent.middleware, &call, response).await {
        Ok(response) => response,
        Err(message) => {
            let state = state.with_llm_call(&spend.usage);
            if let Err(hit) = count_call(ctx, &spend) {
                return Err(Halt::new(state, HaltReason::Limit(hit)));
            }
            return Err(Halt::failed(state, ErrorCode::Middleware, message));
        }
    };
    let mut cut_in_value = false;
    if let Some(parser) = &parser {
        let stopped = Stopped {
            stop: &request.stop,
            ctx,
            message_id: &message_id,
        };
        cut_in_value = stopped.close_action(parser, &mut response);
    }

    // A middleware cannot change what the call cost: its usage is the server's.
    let spend = count_call(ctx, &spend);
    let (response, message, feedback) = match (parser, xml) {
        // Dropped: the call is made again without stop sequences.
        (Some(_), Some(_)) if cut_in_value => {
            let message = response.to_message();
            (response, message, None)
        }
        (Some(parser), Some(xml)) => {
            // The parser has read the reply as it streamed; take it out of the sink's hands.
            let taken = std::mem::replace(
                &mut *lock(&parser),
                XmlStreamParser::new(Vec::<String>::new()),
            );
            // A parser that panicked in the middle of a piece may hold half of it: the
            // whole reply is parsed again instead.
            let outcome = match parser.is_poisoned() {
                true => crate::protocol::parse_reply(&response.text, xml.names.clone()),
                false => taken.finish(),
            };
            xml_turn::apply(xml, response, outcome)
        }
        _ => {
            let message = response.to_message();
            (response, message, None)
        }
    };
    // Each call the model wrote, whole, before the reply's completion (and before any of
    // them is decided on or runs).
    for call in &response.tool_calls {
        ctx.emitter.emit(ToolCallWritten {
            step_id: step_id.to_string(),
            tool_call: call.clone(),
        });
    }
    ctx.emitter.emit(MessageCompleted {
        step_id: step_id.to_string(),
        message: ModelMessage {
            id: message_id,
            role: Role::Assistant,
            content: response.text.clone(),
            thinking: response.thinking.iter().map(|t| t.text.clone()).collect(),
            tool_calls: response.tool_calls.clone(),
            finish_reason: response.finish_reason.clone(),
        },
        purpose: if options.reasoning {
            Purpose::Reasoning
        } else {
            Purpose::Reply
        },
        response_id: response.id.clone(),
    });
    let state = state.with_llm_call(&response.usage);
    let state = if options.unrecorded || cut_in_value {
        state
    } else {
        state.with_message(message)
    };
    if let Err(hit) = spend {
        return Err(Halt::new(state, HaltReason::Limit(hit)));
    }
    let redo = match feedback {
        _ if cut_in_value => Redo::WithoutStops,
        Some(feedback) => Redo::Feedback(feedback),
        None => Redo::Nothing,
    };
    Ok((response, state, redo))
}

/// The sink of a call's deltas: the text protocol's parser reads the reply as it arrives,
/// retries and fallbacks become events (a fallback also moves `chain`), text and thinking
/// become delta events.
fn stream_sink(
    ctx: &RunContext,
    message_id: &str,
    stream_parser: Option<Arc<std::sync::Mutex<XmlStreamParser>>>,
    moved: Arc<std::sync::Mutex<Option<ChainPosition>>>,
    xml: Option<&crate::engine::xml_turn::XmlTools>,
) -> impl Fn(StreamDelta) + Send + Sync + 'static {
    let emitter = ctx.emitter.clone();
    let delta_id = message_id.to_string();
    let tool_names = xml.map(|x| x.names.clone()).unwrap_or_default();
    move |delta: StreamDelta| {
        if let Some(parser) = &stream_parser {
            let mut parser = lock(parser);
            match &delta {
                StreamDelta::Text { text } => parser.push(text),
                StreamDelta::Reset { .. } => *parser = XmlStreamParser::new(tool_names.clone()),
                _ => {}
            }
        }
        if let StreamDelta::Retrying {
            attempt,
            wait_ms,
            reason,
        } = &delta
        {
            emitter.emit(LlmRetry {
                message_id: delta_id.clone(),
                attempt: *attempt,
                wait_ms: *wait_ms,
                reason: reason.clone(),
            });
        }
        if let StreamDelta::Fallback {
            from,
            to,
            reason,
            position,
        } = &delta
        {
            *lock(&moved) = Some(*position);
            emitter.emit(LlmFallback {
                message_id: delta_id.clone(),
                from: from.clone(),
                to: to.clone(),
                reason: reason.clone(),
            });
        }
        if let StreamDelta::Idle = delta {
            emitter.flush();
        }
        if let Some(delta) = delta_event(&delta_id, delta) {
            emitter.emit(delta);
        }
    }
}

/// A text-protocol reply that ended at one of the request's stop sequences.
struct Stopped<'a> {
    stop: &'a [String],
    ctx: &'a RunContext,
    message_id: &'a str,
}

impl Stopped<'_> {
    /// A server that stopped at an action's closing tag left the tag out of the reply: put
    /// it back, in the text the history keeps, in what the parser read and in what was
    /// streamed. Returns whether the stop instead cut the reply inside a parameter's value
    /// (a closing tag quoted in a `<result>`), where nothing can be put back: the reply
    /// goes on after the quoted tag, but the server ended it.
    fn close_action(
        &self,
        parser: &std::sync::Mutex<XmlStreamParser>,
        response: &mut ModelResponse,
    ) -> bool {
        let mut parser = lock(parser);
        if response.finish_reason != FinishReason::Stop || self.stop.is_empty() {
            return false;
        }
        if parser.in_value() {
            return true;
        }
        let Some(tag) = parser.open_action().map(|name| format!("</{name}>")) else {
            return false;
        };
        if self.stop.contains(&tag) {
            parser.push(&tag);
            response.text.push_str(&tag);
            self.ctx.emitter.emit(MessageDelta {
                message_id: self.message_id.to_string(),
                delta: Delta::Chunk { content_chunk: tag },
            });
        }
        false
    }
}

/// The bound that a call stopped at its deadline reached.
fn time_up(ctx: &RunContext) -> LimitHit {
    let timeout = ctx.budget.limits().timeout.unwrap_or_default();
    ctx.budget
        .check_time()
        .err()
        .unwrap_or_else(|| timeout_hit(timeout))
}

fn build_request(agent: &Agent, messages: History, options: &CallOptions) -> ModelRequest {
    let system = match (&agent.system, &options.system_suffix) {
        (Some(system), Some(suffix)) => Some(format!("{system}\n\n{suffix}")),
        (None, Some(suffix)) => Some(suffix.clone()),
        (system, None) => system.clone(),
    };
    let system = match (&agent.xml_tools, options.offer_tools) {
        (Some(xml), true) => Some(match system {
            Some(system) => format!("{system}\n\n{}", xml.prompt),
            None => xml.prompt.clone(),
        }),
        _ => system,
    };
    let tools = match options.offer_tools && agent.xml_tools.is_none() {
        true => offered_tools(agent, options),
        false => Arc::default(),
    };
    ModelRequest {
        system,
        messages,
        tools,
        response_format: options.response_format.clone(),
        stop: stop_sequences(agent, options),
        ..ModelRequest::default()
    }
}

/// The stop sequences a request is sent with: the text protocol's, when it offers tools.
fn stop_sequences(agent: &Agent, options: &CallOptions) -> Vec<String> {
    match &agent.xml_tools {
        Some(xml) if options.offer_tools => xml.stop_sequences(),
        _ => Vec::new(),
    }
}

/// The agent's tools as offered, shared from one call to the next, and the strategy's own
/// after them.
fn offered_tools(agent: &Agent, options: &CallOptions) -> Arc<[ToolSpec]> {
    let own = agent.offered.specs(&agent.tools, agent.model_order);
    match options.extra_tools.is_empty() {
        true => own.clone(),
        false => own.iter().chain(&options.extra_tools).cloned().collect(),
    }
}

/// The estimated size of the call's request without its messages: the system prompt and
/// the tools (the agent's own estimated once).
fn fixed_size(agent: &Agent, options: &CallOptions) -> u64 {
    let mut request = build_request(agent, History::default(), options);
    let own = agent.offered.specs(&agent.tools, agent.model_order);
    if Arc::ptr_eq(&request.tools, own) {
        request.tools = Arc::default();
        return estimate_request(&request) + agent.offered.tokens(own);
    }
    estimate_request(&request)
}

/// The delta event of a streamed piece, which it takes (no copy of the piece per event).
fn delta_event(message_id: &str, delta: StreamDelta) -> Option<MessageDelta> {
    let delta = match delta {
        StreamDelta::Text { text } => Delta::Chunk {
            content_chunk: text,
        },
        StreamDelta::Thinking { text } => Delta::Thinking {
            thinking_chunk: text,
        },
        StreamDelta::ToolCallStart { index, id, name } => Delta::ToolCalls {
            tool_calls_chunk: vec![ToolCallChunk {
                index,
                id: Some(id),
                name: Some(name),
                arguments_chunk: None,
            }],
        },
        StreamDelta::ToolCallArguments { index, fragment } => Delta::ToolCalls {
            tool_calls_chunk: vec![ToolCallChunk {
                index,
                id: None,
                name: None,
                arguments_chunk: Some(fragment),
            }],
        },
        // A retried call: consumers drop what they showed of the failed attempt.
        StreamDelta::Reset { attempt, reason } => Delta::Reset {
            reset: true,
            attempt,
            reason,
        },
        StreamDelta::Usage { .. }
        | StreamDelta::Retrying { .. }
        | StreamDelta::Fallback { .. }
        | StreamDelta::Idle => {
            return None;
        }
    };
    Some(MessageDelta {
        message_id: message_id.to_string(),
        delta,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ScriptedProvider;
    use crate::tools::AskUserTool;

    fn agent() -> Agent {
        let provider = Arc::new(ScriptedProvider::new("m", Vec::new()));
        Agent::builder("a", provider)
            .tool(Arc::new(AskUserTool::new(Vec::new())) as Arc<dyn crate::tools::Tool>)
            .build()
    }

    #[test]
    fn every_call_of_an_agent_shares_its_offered_tools() {
        let agent = agent();
        let options = CallOptions {
            offer_tools: true,
            ..CallOptions::default()
        };
        let first = build_request(&agent, History::default(), &options).tools;
        let second = build_request(&agent, History::default(), &options).tools;
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(*first, [agent.tools[0].offered(agent.model_order)]);
    }

    #[test]
    fn a_strategys_own_tools_follow_the_agents_and_the_estimate_counts_them() {
        let agent = agent();
        let extra = ToolSpec {
            name: "step_failed".into(),
            description: "Says the step failed.".into(),
            parameters: serde_json::json!({"type": "object"}),
        };
        let options = CallOptions {
            offer_tools: true,
            extra_tools: vec![extra.clone()],
            ..CallOptions::default()
        };
        let tools = build_request(&agent, History::default(), &options).tools;
        assert_eq!(tools.len(), 2);
        assert_eq!(tools[1], extra);
        let whole = estimate_request(&build_request(&agent, History::default(), &options));
        assert_eq!(fixed_size(&agent, &options), whole);
        let own = CallOptions {
            offer_tools: true,
            ..CallOptions::default()
        };
        let whole = estimate_request(&build_request(&agent, History::default(), &own));
        assert_eq!(fixed_size(&agent, &own), whole);
        assert_eq!(fixed_size(&agent, &own), whole, "the kept estimate");
    }
}
