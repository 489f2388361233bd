//! What every strategy does with a model's reply: the options of an action call, running
//! its tool calls, accepting (or retrying) a final answer, and the bounds of the loop.

use crate::engine::agent::{Agent, Halt, HaltReason, RunContext, Turn};
use crate::engine::budget::LimitHit;
use crate::engine::state::AgentState;
use crate::engine::step::{CallOptions, check_structured};
use crate::provider::{FinishReason, Message, ResponseFormat};

/// The options of every action call: tools offered, and JSON asked for when the agent has
/// an output schema and the schema can go with the tools (see [`schema_with_tools`]).
pub(crate) fn action_options(agent: &Agent) -> CallOptions {
    CallOptions {
        offer_tools: true,
        response_format: schema_with_tools(agent)
            .then(|| answer_format(agent))
            .flatten(),
        ..CallOptions::default()
    }
}

/// The options of the call that must give the final answer: no tools, the output schema
/// asked for.
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

/// Whether the output schema is sent on the calls that offer tools. Not when the server may
/// enforce it as a grammar (llama.cpp, Ollama, vLLM: [`Provider::schema_with_tools`]), where
/// the first reply would have to be the JSON and no tool could ever run; nor with the text
/// protocol, whose actions are not JSON. The schema then goes only on the answer call
/// ([`answer_options`]), made when the model answers without a tool call.
///
/// [`Provider::schema_with_tools`]: crate::provider::Provider::schema_with_tools
fn schema_with_tools(agent: &Agent) -> bool {
    agent.xml_tools.is_none() && (agent.tools.is_empty() || agent.provider.schema_with_tools())
}

/// What the model is told before the answer call, when its answer (made with the tools
/// offered and no schema enforced) is not yet the JSON the output schema asks for.
pub(crate) const ANSWER_NOW: &str =
    "Now give your final answer as a JSON value matching the output schema, with no other text.";

/// What to do with a reply that made no tool call.
pub(crate) enum Answer {
    /// The run is over.
    Final(Turn),
    /// The structured answer did not match; the feedback is in the state, try again.
    Retry(AgentState),
}

/// Accepts `text` as the final answer, or asks the model for a corrected structured answer
/// (bounded by `agent.structured_retries`).
pub(crate) fn conclude(
    agent: &Agent,
    text: String,
    state: AgentState,
    attempts: &mut u32,
) -> Result<(Answer, AgentState), Halt> {
    match check_structured(agent, &text) {
        Ok(structured) => Ok((
            Answer::Final(Turn {
                output: text,
                structured,
                usage: Default::default(),
                messages: Vec::new(),
                handoff: None,
            }),
            state,
        )),
        Err(feedback) if *attempts < agent.structured_retries => {
            *attempts += 1;
            let state = state.with_message(Message::user(feedback));
            Ok((Answer::Retry(state.clone()), state))
        }
        Err(feedback) => Err(Halt::failed(
            state,
            "structured_output",
            format!("the final answer never matched the output schema: {feedback}"),
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
        (policy.fail_truncated, "truncated", "truncated", message)
    } else if output.trim().is_empty() {
        let message = "the final answer is empty";
        (policy.fail_empty, "empty_answer", "empty", message)
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

/// The turn that hands the conversation over (the engine runs the target next).
pub(crate) fn handed_over(tool: String) -> Turn {
    Turn {
        output: String::new(),
        structured: None,
        usage: Default::default(),
        messages: Vec::new(),
        handoff: Some(tool),
    }
}

/// The halt for a strategy bound such as `max_iterations`.
pub(crate) fn bound_reached(state: AgentState, name: &str, detail: String) -> Halt {
    Halt::new(state, HaltReason::Limit(LimitHit::new(name, detail)))
}

/// What a step's action reply leads to.
pub(crate) enum Next {
    /// The run is over: the answer, or a handoff.
    Done(Turn, AgentState),
    /// Another step.
    Again(AgentState),
    /// The next call is the answer call ([`answer_options`]): the model answered, but not
    /// yet with JSON that matches the output schema.
    Answer(AgentState),
}

/// Handles an action reply, for loop and react alike: no tool call means an answer (or a
/// retry when it does not match the output schema); otherwise the calls run, and a handoff
/// ends the turn. Closes the step either way. `schema_sent`: the call asked for the output
/// schema; when it did not, an answer that does not match is followed by the answer call,
/// which is not counted as a retry.
pub(crate) async fn act_on_reply(
    agent: &Agent,
    ctx: &RunContext,
    response: crate::provider::ModelResponse,
    state: AgentState,
    (step_id, schema_sent): (&str, bool),
    attempts: &mut u32,
) -> Result<Next, Halt> {
    use crate::engine::step::{StepEnd, after_step, end_step, fail_step, run_tools};
    if response.tool_calls.is_empty() {
        if agent.output_schema.is_some()
            && !schema_sent
            && check_structured(agent, &response.text).is_err()
        {
            let state = state.with_message(Message::user(ANSWER_NOW));
            let title = "Answer, asked again as JSON";
            end_step(ctx, &state, step_id, title, StepEnd::Completed);
            return Ok(Next::Answer(after_step(agent, state, ctx)?));
        }
        return answer(agent, ctx, response, state, step_id, attempts);
    }
    let title = tool_title(&response.tool_calls);
    let (state, handoff) = run_tools(agent, &response.tool_calls, state, ctx, step_id)
        .await
        .map_err(|halt| fail_step(ctx, halt, step_id, &title))?;
    end_step(ctx, &state, step_id, &title, StepEnd::Completed);
    if let Some(tool) = handoff {
        return Ok(Next::Done(handed_over(tool), state));
    }
    Ok(Next::Again(after_step(agent, state, ctx)?))
}

/// A reply without tool calls: the final answer, or (when it does not match the output
/// schema) a retry, through the answer call when the schema does not go with the tools.
fn answer(
    agent: &Agent,
    ctx: &RunContext,
    response: crate::provider::ModelResponse,
    state: AgentState,
    step_id: &str,
    attempts: &mut u32,
) -> Result<Next, Halt> {
    use crate::engine::step::{StepEnd, after_step, end_step, fail_step};
    let truncated = response.finish_reason == FinishReason::Length;
    let (answer, state) = conclude(agent, response.text, state, attempts)
        .map_err(|halt| fail_step(ctx, halt, step_id, "Answer"))?;
    match answer {
        Answer::Final(turn) => {
            let state = check_answer(agent, ctx, (&turn.output, truncated), state)
                .map_err(|halt| fail_step(ctx, halt, step_id, "Answer"))?;
            end_step(ctx, &state, step_id, "Answer", StepEnd::Completed);
            Ok(Next::Done(turn, state))
        }
        Answer::Retry(state) => {
            let title = "Answer did not match the output schema";
            end_step(ctx, &state, step_id, title, StepEnd::Failed);
            let state = after_step(agent, state, ctx)?;
            Ok(match schema_with_tools(agent) {
                true => Next::Again(state),
                false => Next::Answer(state),
            })
        }
    }
}

/// "Called read_file, shell" for a step's title.
pub(super) fn tool_title(calls: &[crate::provider::ToolCall]) -> String {
    let mut names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
    names.dedup();
    format!("Called {}", names.join(", "))
}
