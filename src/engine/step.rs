//! The building blocks every strategy uses: one model call (middleware, budget, events,
//! cancellation), one turn of tool calls, and the check of a final answer.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::agent::{Agent, Halt, HaltReason, RunContext};
use super::budget::LimitHit;
use super::checkpointing::Pending;
use super::clock::new_id;
use super::effect::ToolEffect;
pub use super::events::StepEnd;
use super::events::{
    CheckpointSaved, Delta, InProgress, LlmUsage, MessageCompleted, MessageCreated, MessageDelta,
    MessageStarted, ModelMessage, Purpose, ReloadFailed, Reloaded, Role, StepCompleted,
    StepCreated, StepDetails, ToolCallCreated, ToolCompleted, ToolStarted,
};
use super::middleware::{CallContext, run_after, run_before, run_on_error};
use super::scheduler::{CallObserver, SchedulePolicy, run_calls};
use super::state::AgentState;
use super::toolset::{CallerRun, TurnTools};
use crate::protocol::XmlStreamParser;
use crate::provider::{
    Message, ModelRequest, ModelResponse, ResponseFormat, StreamDelta, ToolCall,
};
use crate::tools::ToolOutput;

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
}

/// Consecutive replies without a valid action (text protocol) before the run fails.
const MAX_FORMAT_RETRIES: u32 = 4;

/// Makes one model call from `state` and records the reply in the returned state. With the
/// text protocol, a reply without a valid action is answered with what was wrong and asked
/// again (each retry is a model call counted by the limits).
pub async fn call_model(
    agent: &Agent,
    state: AgentState,
    ctx: &RunContext,
    options: &CallOptions,
    step_id: &str,
) -> Result<(ModelResponse, AgentState), Halt> {
    let mut state = state;
    let mut retries = 0;
    loop {
        let (response, next, feedback) =
            call_model_once(agent, state, ctx, options, step_id).await?;
        let Some(feedback) = feedback else {
            return Ok((response, next));
        };
        if retries >= MAX_FORMAT_RETRIES {
            return Err(Halt::failed(
                next,
                "xml_format",
                format!(
                    "{} replies in a row had no valid action: {feedback}",
                    retries + 1
                ),
            ));
        }
        retries += 1;
        state = next.with_message(Message::user(feedback));
    }
}

async fn call_model_once(
    agent: &Agent,
    state: AgentState,
    ctx: &RunContext,
    options: &CallOptions,
    step_id: &str,
) -> Result<(ModelResponse, AgentState, Option<String>), Halt> {
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
    };
    let mut call = run_before(&agent.middleware, call).await;
    // The history moves into the request and back afterwards: no copy per call. `after` and
    // `on_error` see the call's metadata; the state is the engine's again.
    let mut state = std::mem::take(&mut call.state);
    let xml = agent.xml_tools.as_ref();
    let messages = match xml {
        // The text protocol shows the model a rewritten history; the state keeps its own.
        Some(_) => super::xml_turn::wire_history(&state.messages),
        None => std::mem::take(&mut state.messages),
    };
    let mut request = build_request(agent, messages, options);
    let parser = xml.filter(|_| options.offer_tools).map(|xml| {
        Arc::new(std::sync::Mutex::new(XmlStreamParser::new(
            xml.names.clone(),
        )))
    });

    let message_id = new_id();
    ctx.emitter.emit(MessageCreated {
        step_id: step_id.to_string(),
        message: MessageStarted {
            id: message_id.clone(),
            role: Role::Assistant,
            metadata: InProgress { in_progress: true },
        },
    });
    let emitter = ctx.emitter.clone();
    let delta_id = message_id.clone();
    let stream_parser = parser.clone();
    let tool_names = xml.map(|x| x.names.clone()).unwrap_or_default();
    let sink = move |delta: StreamDelta| {
        // The text protocol's parser reads the reply as it arrives.
        if let Some(parser) = &stream_parser
            && let Ok(mut parser) = parser.lock()
        {
            match &delta {
                StreamDelta::Text { text } => parser.push(text),
                StreamDelta::Reset { .. } => *parser = XmlStreamParser::new(tool_names.clone()),
                _ => {}
            }
        }
        if let Some(delta) = delta_event(&delta_id, &delta) {
            emitter.emit(delta);
        }
    };
    let outcome = tokio::select! {
        result = agent.provider.stream(&request, &sink) => Some(result),
        _ = crate::tools::stopped(&ctx.cancel) => None,
    };
    if xml.is_none() {
        state.messages = std::mem::take(&mut request.messages);
    }
    let response = match outcome {
        None => {
            return Err(Halt::new(state, HaltReason::Interrupted));
        }
        Some(Ok(response)) => response,
        Some(Err(error)) => match run_on_error(&agent.middleware, &call, &error).await {
            Some(response) => response,
            None => {
                return Err(Halt::failed(
                    state,
                    &format!("provider_{}", error.kind.as_str()),
                    error.to_string(),
                ));
            }
        },
    };
    let response = run_after(&agent.middleware, &call, response).await;

    let spend = ctx.budget.after_llm_call(&response.usage, agent.price);
    let (response, message, feedback) = match parser {
        Some(parser) => {
            // The parser has read the reply as it streamed; take it out of the sink's hands.
            let taken = parser.lock().map(|mut p| {
                std::mem::replace(&mut *p, XmlStreamParser::new(Vec::<String>::new()))
            });
            let outcome = match taken {
                Ok(parser) => parser.finish(),
                Err(_) => crate::protocol::parse_reply(
                    &response.text,
                    xml.map(|x| x.names.clone()).unwrap_or_default(),
                ),
            };
            super::xml_turn::apply(&agent.tools, response, outcome)
        }
        None => {
            let message = response.to_message();
            (response, message, None)
        }
    };
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
    });
    let totals = ctx.budget.totals();
    ctx.emitter.emit(LlmUsage {
        model: response.model.clone(),
        usage: response.usage,
        total_usage: totals.usage,
        cost_usd: totals.cost_usd,
    });
    let state = state.with_llm_call(&response.usage);
    let state = if options.unrecorded {
        state
    } else {
        state.with_message(message)
    };
    if let Err(hit) = spend {
        return Err(Halt::new(state, HaltReason::Limit(hit)));
    }
    Ok((response, state, feedback))
}

fn build_request(agent: &Agent, messages: Vec<Message>, options: &CallOptions) -> ModelRequest {
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
    let tools = if options.offer_tools && agent.xml_tools.is_none() {
        agent.tools.iter().map(|tool| tool.spec()).collect()
    } else {
        Vec::new()
    };
    ModelRequest {
        system,
        messages,
        tools,
        response_format: options.response_format.clone(),
        ..ModelRequest::default()
    }
}

fn delta_event(message_id: &str, delta: &StreamDelta) -> Option<MessageDelta> {
    let delta = match delta {
        StreamDelta::Text { text } => Delta::Chunk {
            content_chunk: text.clone(),
        },
        // A retried call: consumers drop what they showed of the failed attempt.
        StreamDelta::Reset { attempt, reason } => Delta::Reset {
            reset: true,
            attempt: *attempt,
            reason: reason.clone(),
        },
        _ => return None,
    };
    Some(MessageDelta {
        message_id: message_id.to_string(),
        delta,
    })
}

/// Runs the tool calls of one reply and appends their results, in call order. Returns the
/// handoff tool that was called, if any.
pub async fn run_tools(
    agent: &Agent,
    calls: &[ToolCall],
    state: AgentState,
    ctx: &RunContext,
    step_id: &str,
) -> Result<(AgentState, Option<String>), Halt> {
    for call in calls {
        ctx.emitter.emit(ToolCallCreated {
            step_id: step_id.to_string(),
            tool_call: call.clone(),
        });
    }
    let limits = ctx.budget.limits();
    let policy = SchedulePolicy {
        parallel: agent.parallel_tools,
        tool_timeout: limits.tool_timeout,
        max_output_chars: limits.max_output_chars,
    };
    let observer = EventObserver { ctx, step_id };
    let caller = CallerRun {
        ctx: ctx.clone(),
        step_id: step_id.to_string(),
        provider: agent.provider.clone(),
    };
    let tools = TurnTools::new(&agent.tools, caller);
    // The calls in flight are on disk before they run: a resume after a crash knows them.
    let in_flight = Pending::ToolsInFlight {
        calls: calls.to_vec(),
    };
    save_checkpoint(ctx, &state, Some(&in_flight), false);
    let (results, hit) = run_calls(
        calls,
        &tools,
        &agent.depends_on,
        &policy,
        &observer,
        &ctx.cancel,
    )
    .await;
    let mut state = state.with_tool_calls(results.iter().filter(|r| r.ran).count() as u64);
    let mut handoff = None;
    let mut input_required = None;
    let mut messages = Vec::with_capacity(results.len());
    for result in results {
        match result.effect {
            // An unanswered question has no result yet: the answer becomes it on resume.
            Some(ToolEffect::InputRequired { question, id }) => {
                input_required.get_or_insert(HaltReason::InputRequired {
                    question,
                    id,
                    call: Box::new(result.call),
                });
                continue;
            }
            Some(ToolEffect::SubAgent(trace)) => state = state.with_subagent_trace(*trace),
            Some(ToolEffect::Handoff { tool }) => {
                handoff.get_or_insert(tool);
            }
            None => {}
        }
        messages.push(Message::tool_result(
            &result.call,
            result_for_model(&result.output),
            !result.output.success,
        ));
    }
    let state = state.with_messages(messages);
    if let Some(reason) = input_required {
        return Err(Halt::new(state, reason));
    }
    if ctx.interrupted() {
        return Err(Halt::new(state, HaltReason::Interrupted));
    }
    if let Some(hit) = hit {
        return Err(Halt::new(state, HaltReason::Limit(hit)));
    }
    Ok((state, handoff))
}

/// The text the model gets back for a tool result.
pub fn result_for_model(output: &ToolOutput) -> String {
    if output.success {
        match &output.data {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        }
    } else {
        let mut text = format!(
            "Error: {}",
            output.error.as_deref().unwrap_or("the tool failed")
        );
        match &output.data {
            Value::Null => {}
            Value::String(data) if data.is_empty() => {}
            Value::String(data) => text.push_str(&format!("\n{data}")),
            other => text.push_str(&format!("\n{other}")),
        }
        text
    }
}

struct EventObserver<'a> {
    ctx: &'a RunContext,
    step_id: &'a str,
}

impl CallObserver for EventObserver<'_> {
    fn admit(&self, _call: &ToolCall) -> Result<(), LimitHit> {
        self.ctx.budget.check_time()?;
        self.ctx.budget.reserve_tool_call()
    }

    fn started(&self, call: &ToolCall) {
        self.ctx.emitter.emit(ToolStarted {
            step_id: self.step_id.to_string(),
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            input: call.arguments.clone(),
        });
    }

    fn finished(&self, call: &ToolCall, output: &ToolOutput, duration: Duration) {
        self.ctx.emitter.emit(ToolCompleted {
            step_id: self.step_id.to_string(),
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            result: output.clone(),
            duration_ms: duration.as_millis() as u64,
        });
    }
}

/// Checks a final answer against the output schema. `Ok(None)`: no schema.
/// `Err(feedback)`: what to tell the model so it can try again.
pub fn check_structured(agent: &Agent, text: &str) -> Result<Option<Value>, String> {
    let Some(schema) = &agent.output_schema else {
        return Ok(None);
    };
    let value = parse_json_answer(text).ok_or_else(|| {
        "Your answer must be a JSON value matching the output schema, with no other text."
            .to_string()
    })?;
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| format!("the output schema does not compile: {e}"))?;
    let problems: Vec<String> = validator
        .iter_errors(&value)
        .map(|error| format!("{} at `{}`", error, error.instance_path().as_str()))
        .collect();
    if problems.is_empty() {
        Ok(Some(value))
    } else {
        Err(format!(
            "Your answer does not match the output schema: {}. Answer again with corrected JSON only.",
            problems.join("; ")
        ))
    }
}

/// A JSON answer, bare or inside a ```json fence.
pub fn parse_json_answer(text: &str) -> Option<Value> {
    let trimmed = text.trim();
    if let Ok(value) = serde_json::from_str(trimmed) {
        return Some(value);
    }
    let start = trimmed.find("```")?;
    let after = &trimmed[start + 3..];
    let body_start = after.find('\n')? + 1;
    let body = &after[body_start..];
    let end = body.find("```")?;
    serde_json::from_str(body[..end].trim()).ok()
}

/// Starts the run's next step: gives it the next number (unique in the run, parallel plan
/// branches included), emits its start, and returns the state at that step and its id.
pub fn start_step(ctx: &RunContext, state: AgentState, title: &str) -> (AgentState, String) {
    let step_id = new_id();
    let state = state.with_step(ctx.next_step_number());
    ctx.emitter.emit(StepCreated {
        step_id: step_id.clone(),
        details: StepDetails {
            step: state.step,
            title: title.to_string(),
        },
    });
    (state, step_id)
}

/// Emits the end of a step, which closes its transcript block.
pub fn end_step(ctx: &RunContext, state: &AgentState, step_id: &str, title: &str, end: StepEnd) {
    ctx.emitter.emit(StepCompleted {
        step_id: step_id.to_string(),
        details: StepDetails {
            step: state.step,
            title: title.to_string(),
        },
        status: end,
    });
}

/// Ends the step that a halt stopped (paused for a question, failed otherwise) and passes
/// the halt on.
pub fn fail_step(ctx: &RunContext, halt: Halt, step_id: &str, title: &str) -> Halt {
    let end = match halt.reason {
        HaltReason::InputRequired { .. } => StepEnd::Paused,
        _ => StepEnd::Failed,
    };
    end_step(ctx, &halt.state, step_id, title, end);
    halt
}

/// After a step: `stop_when`, then the time bound.
pub fn after_step(agent: &Agent, state: AgentState, ctx: &RunContext) -> Result<AgentState, Halt> {
    if let Some(stop_when) = &agent.stop_when {
        let totals = ctx.budget.totals();
        match stop_when.check(&state, &totals, ctx.budget.elapsed().as_millis() as u64) {
            Ok(true) => {
                let hit =
                    LimitHit::new("stop_when", format!("`{}` became true", stop_when.source()));
                return Err(Halt::new(state, HaltReason::Limit(hit)));
            }
            Ok(false) => {}
            Err(message) => return Err(Halt::failed(state, "stop_when", message)),
        }
    }
    if let Err(hit) = ctx.budget.check_time() {
        return Err(Halt::new(state, HaltReason::Limit(hit)));
    }
    save_checkpoint(ctx, &state, None, true);
    if let Some(reload) = &ctx.reload
        && ctx.emitter.depth == 0
    {
        match reload.poll() {
            Some(Ok((next, changes))) => {
                ctx.emitter.emit(Reloaded {
                    changes,
                    step: state.step,
                });
                if let Ok(mut slot) = ctx.reloaded.lock() {
                    *slot = Some(next);
                }
                return Err(Halt::new(state, HaltReason::Reloaded));
            }
            Some(Err(diagnostics)) => {
                for line in &diagnostics {
                    eprintln!("{line}");
                }
                eprintln!(
                    "warning: the saved agent file is invalid; the run goes on with the previous definition"
                );
                ctx.emitter.emit(ReloadFailed { diagnostics });
            }
            None => {}
        }
    }
    Ok(state)
}

/// Saves the state when the run keeps checkpoints; a failed save is a warning, and the run
/// goes on (UAP §12.4.7). `announce`: emit `agent.checkpoint.saved` (step ends only).
pub fn save_checkpoint(
    ctx: &RunContext,
    state: &AgentState,
    pending: Option<&Pending>,
    announce: bool,
) {
    let Some(store) = &ctx.checkpoints else {
        return;
    };
    match store.save(state, pending) {
        Ok(name) if announce => ctx.emitter.emit(CheckpointSaved {
            name,
            step: state.step,
        }),
        Ok(_) => {}
        Err(message) => ctx.warn(format!("checkpoint not saved: {message}")),
    }
}
