//! What every strategy does with a model's reply: the options of an action call, running
//! its tool calls, accepting (or retrying) a final answer, and the bounds of the loop.

use crate::engine::ErrorCode;
use crate::engine::Limit;
use crate::engine::agent::{Agent, Halt, HaltReason, RunContext, StrategyEnd, Turn};
use crate::engine::budget::LimitHit;
use crate::engine::state::AgentState;
use crate::engine::step::{AfterStep, CallOptions, check_structured};
use crate::engine::thread;
use crate::provider::{FinishReason, Message, ResponseFormat};

/// The options of every action call: tools offered, and JSON asked for when the agent has
/// an output schema (not with the text protocol, whose actions are not JSON). A server that
/// would enforce the schema as a grammar gets it only without tools
/// ([`Provider::schema_with_tools`]); the answer call ([`answer_options`]) then asks for it.
///
/// [`Provider::schema_with_tools`]: crate::provider::Provider::schema_with_tools
pub(crate) fn action_options(agent: &Agent) -> CallOptions {
    CallOptions {
        offer_tools: true,
        response_format: answer_format(agent).filter(|_| agent.xml_tools.is_none()),
        ..CallOptions::default()
    }
}

/// The options of the call that must give the final answer: no tools, the output schema
/// asked for. It follows an answer that did not match the schema.
pub(crate) fn answer_options(agent: &Agent) -> CallOptions {
    CallOptions {
        offer_tools: false,
        response_format: answer_format(agent),
        ..CallOptions::default()
    }
}

fn answer_format(agent: &Agent) -> Option<ResponseFormat> {
    agent.output_schema.as_ref().map(|schema| ResponseFormat {
        name: "final_answer".into(),
        schema: schema.clone(),
        strict: false,
    })
}

/// Whether the server held the model to the output schema on a call made with `options`.
/// Not when the schema was not asked for, nor when tools went with it to a server that
/// drops it then (see [`action_options`]).
fn schema_enforced(agent: &Agent, options: &CallOptions) -> bool {
    let with_tools = options.offer_tools && agent.xml_tools.is_none() && !agent.tools.is_empty();
    options.response_format.is_some() && (!with_tools || agent.provider.schema_with_tools())
}

/// What to do with a reply that made no tool call.
pub(crate) enum Answer {
    /// The run is over.
    Final(Turn),
    /// The structured answer did not match; the feedback is in the state, try again.
    Retry,
}

/// Accepts `text` as the final answer, or asks the model for a corrected structured answer
/// (bounded by `agent.structured_retries`; `attempts: None`: the schema was not enforced on
/// the call, and its answer is asked for again without counting).
pub(crate) fn conclude(
    agent: &Agent,
    text: String,
    state: AgentState,
    attempts: Option<&mut u32>,
    (ctx, step_id): (&RunContext, &str),
) -> Result<(Answer, AgentState), Halt> {
    match check_structured(agent, &text) {
        Ok(structured) => Ok((
            Answer::Final(Turn {
                output: text,
                structured,
                usage: Default::default(),
                messages: Vec::new(),
            }),
            state,
        )),
        Err(mismatch)
            if attempts
                .as_ref()
                .is_none_or(|n| **n < agent.structured_retries) =>
        {
            if let Some(attempts) = attempts {
                *attempts += 1;
            }
            let feedback = Message::user(mismatch.feedback());
            let state = thread::add_one(ctx, state, Some(step_id), feedback);
            Ok((Answer::Retry, state))
        }
        Err(mismatch) => Err(Halt::failed(
            state,
            ErrorCode::StructuredOutput,
            format!("the final answer never matched the output schema; the last one: {mismatch}"),
        )),
    }
}

/// A final answer cut off at the model's length limit, or an empty one: a warning, or the
/// run fails, as the agent file's `answer` says.
pub(crate) fn check_answer(
    agent: &Agent,
    ctx: &RunContext,
    (output, truncated): (&str, bool),
    state: AgentState,
) -> Result<AgentState, Halt> {
    let policy = agent.answer_policy;
    let (fail, code, key, message) = if truncated {
        let message = "the final answer was cut off at the model's length limit (finish_reason: length); raise the model's max_tokens, or ask for a shorter answer";
        (
            policy.fail_truncated,
            ErrorCode::Truncated,
            "truncated",
            message,
        )
    } else if output.trim().is_empty() {
        let message = "the final answer is empty";
        (policy.fail_empty, ErrorCode::EmptyAnswer, "empty", message)
    } else {
        return Ok(state);
    };
    if fail {
        return Err(Halt::failed(state, code, message));
    }
    ctx.warn(format!(
        "{message} (`answer: {{ {key}: fail }}` makes this a failure)"
    ));
    Ok(state)
}

/// The halt for a strategy bound such as `max_iterations`.
pub(crate) fn bound_reached(state: AgentState, limit: Limit, detail: String) -> Halt {
    Halt::new(state, HaltReason::Limit(LimitHit::new(limit, detail)))
}

/// What a step's action reply leads to.
pub(crate) enum Next {
    /// The strategy is done: the answer, a handoff or a reload.
    Done(StrategyEnd, AgentState),
    /// Another step.
    Again(AgentState),
    /// The next call is the answer call ([`answer_options`]): the model answered, but not
    /// with JSON that matches the output schema.
    Answer(AgentState),
}

/// Handles an action reply, for loop and react alike: no tool call means an answer (or a
/// retry when it does not match the output schema); otherwise the calls run, and a handoff
/// ends the turn. Closes the step either way. `options` are those the call was made with.
pub(crate) async fn act_on_reply(
    agent: &Agent,
    ctx: &RunContext,
    response: crate::provider::ModelResponse,
    state: AgentState,
    (step_id, options): (&str, &CallOptions),
    attempts: &mut u32,
) -> Result<Next, Halt> {
    use crate::engine::step::{StepEnd, after_step, end_step, fail_step, run_tools};
    if response.tool_calls.is_empty() {
        let attempts = schema_enforced(agent, options).then_some(attempts);
        return answer(agent, ctx, response, state, step_id, attempts);
    }
    let title = tool_title(&response.tool_calls);
    let (state, handoff) = run_tools(agent, &response.tool_calls, state, ctx, step_id)
        .await
        .map_err(|halt| fail_step(ctx, halt, step_id, &title))?;
    end_step(ctx, &state, step_id, &title, StepEnd::Completed);
    if let Some(tool) = handoff {
        return Ok(Next::Done(StrategyEnd::HandedOff(tool), state));
    }
    Ok(after_step(agent, state, ctx)?.then(Next::Again))
}

/// A reply without tool calls: the final answer, or (when it does not match the output
/// schema) the answer call next.
fn answer(
    agent: &Agent,
    ctx: &RunContext,
    response: crate::provider::ModelResponse,
    state: AgentState,
    step_id: &str,
    attempts: Option<&mut u32>,
) -> Result<Next, Halt> {
    use crate::engine::step::{StepEnd, after_step, end_step, fail_step};
    let truncated = response.finish_reason == FinishReason::Length;
    let (answer, state) = conclude(agent, response.text, state, attempts, (ctx, step_id))
        .map_err(|halt| fail_step(ctx, halt, step_id, "Answer"))?;
    match answer {
        Answer::Final(turn) => {
            let state = check_answer(agent, ctx, (&turn.output, truncated), state)
                .map_err(|halt| fail_step(ctx, halt, step_id, "Answer"))?;
            end_step(ctx, &state, step_id, "Answer", StepEnd::Completed);
            Ok(Next::Done(turn.into(), state))
        }
        Answer::Retry => {
            let title = "Answer did not match the output schema";
            end_step(ctx, &state, step_id, title, StepEnd::Failed);
            Ok(after_step(agent, state, ctx)?.then(Next::Answer))
        }
    }
}

impl AfterStep {
    /// The next step as `next` says, or the strategy's end when a reload takes over.
    fn then(self, next: fn(AgentState) -> Next) -> Next {
        match self {
            AfterStep::Next(state) => next(state),
            AfterStep::Reload(agent, state) => Next::Done(StrategyEnd::Reloaded(agent), state),
        }
    }
}

/// "Called read_file, shell" for a step's title.
pub(super) fn tool_title(calls: &[crate::provider::ToolCall]) -> String {
    let mut names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
    names.dedup();
    format!("Called {}", names.join(", "))
}
