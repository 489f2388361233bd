//! `plan`: one planning call returns a plan as structured output; its steps run in
//! dependency order (independent steps at once), each as its own tool loop told its step
//! description; statuses move pending → in_progress → completed/failed in `state.plan` and
//! in events; a failed step (see [`step_failure`](super::step_failure)) triggers a new plan
//! that is told why when `allow_replan`, and otherwise fails the run; a final call composes
//! the answer from the step results.

use std::collections::HashSet;

use futures_util::future::join_all;
use serde_json::{Value, json};

use super::reply::{
    Answer, action_options, answer_options, bound_reached, check_answer, conclude, tool_title,
};
use super::step_failure::{STEP_FAILED, declared_failure, last_call_failure, step_failed_spec};
use crate::engine::ErrorCode;
use crate::engine::Limit;
use crate::engine::agent::{
    Agent, ExecutionStrategy, Halt, HaltReason, RunContext, StrategyEnd, StrategyResult,
};
use crate::engine::events::{PlanStepChanged, PlanUpdated};
use crate::engine::plan::{PlanStep, PlanStepStatus};
use crate::engine::state::AgentState;
use crate::engine::step::{
    AfterStep, CallOptions, SavePoint, StepEnd, after_step, call_model, end_step, fail_step,
    parse_json_answer, run_tools, save_checkpoint, start_step,
};
use crate::engine::thread;
use crate::provider::{BoxFuture, FinishReason, Message, ResponseFormat};

#[derive(Debug, Clone)]
pub struct PlanStrategy {
    pub max_plan_steps: Option<u64>,
    pub allow_replan: bool,
    /// A schema replacing the default plan shape (it must still have `steps`).
    pub plan_schema: Option<Value>,
    /// How many plans a run may make: the first, new ones after a failed step, and ones
    /// asked for again when malformed (`execution.max_plans`). `None`: as many as the
    /// run's limits allow (UAP §2.4, infinite by default).
    pub max_plans: Option<u32>,
    /// How many model calls one plan step may make (`execution.max_step_calls`); `None`:
    /// as many as the run's limits allow.
    pub max_step_calls: Option<u32>,
}

pub fn default_plan_schema() -> Value {
    json!({
        "type": "object",
        "required": ["steps"],
        "properties": {
            "steps": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["id", "description"],
                    "properties": {
                        "id": {"type": "string"},
                        "description": {"type": "string"},
                        "tool": {"type": ["string", "null"]},
                        "depends_on": {"type": "array", "items": {"type": "string"}}
                    }
                }
            }
        }
    })
}

impl ExecutionStrategy for PlanStrategy {
    fn name(&self) -> &str {
        "plan"
    }

    fn execute<'a>(
        &'a self,
        agent: &'a Agent,
        state: AgentState,
        ctx: &'a RunContext,
    ) -> BoxFuture<'a, StrategyResult> {
        Box::pin(async move {
            let mut state = state;
            let mut feedback: Option<String> = None;
            let mut plans = 0;
            loop {
                if let Some(max) = self.max_plans.filter(|&max| plans >= max) {
                    return Err(bound_reached(
                        state,
                        Limit::MaxPlans,
                        format!("no workable plan after {max} plans"),
                    ));
                }
                plans += 1;
                let (steps, next) = self.make_plan(agent, state, ctx, feedback.take()).await?;
                state = next;
                let Some(steps) = steps else {
                    feedback = Some("The plan was not valid JSON of the required shape.".into());
                    continue;
                };
                match self.run_plan(agent, steps, state, ctx).await? {
                    (Ran::Done, next) => {
                        state = next;
                        break;
                    }
                    (Ran::Reloaded(agent), next) => {
                        return Ok((StrategyEnd::Reloaded(agent), next));
                    }
                    (Ran::Failed(failure), next) => {
                        state = next;
                        if !self.allow_replan {
                            return Err(Halt::failed(state, ErrorCode::PlanStepFailed, failure));
                        }
                        feedback = Some(format!(
                            "The previous plan failed: {failure}. Make a new plan for what is left."
                        ));
                    }
                }
            }
            // Compose the final answer from the step results.
            let mut attempts = 0;
            let compose = Message::user(
                "All plan steps are done. Compose the final answer from their results.",
            );
            state = thread::add_one(ctx, state, None, compose);
            loop {
                let title = "Compose the answer";
                let (next, step_id) = start_step(ctx, state, title);
                let options = answer_options(agent);
                let (response, next) = call_model(agent, next, ctx, &options, &step_id)
                    .await
                    .map_err(|halt| fail_step(ctx, halt, &step_id, title))?;
                let truncated = response.finish_reason == FinishReason::Length;
                let concluded = (ctx, step_id.as_str());
                let (answer, next) =
                    conclude(agent, response.text, next, Some(&mut attempts), concluded)
                        .map_err(|halt| fail_step(ctx, halt, &step_id, title))?;
                state = next;
                match answer {
                    Answer::Final(turn) => {
                        state = check_answer(agent, ctx, (&turn.output, truncated), state)
                            .map_err(|halt| fail_step(ctx, halt, &step_id, title))?;
                        end_step(ctx, &state, &step_id, title, StepEnd::Completed);
                        return Ok((turn.into(), state));
                    }
                    Answer::Retry => end_step(ctx, &state, &step_id, title, StepEnd::Failed),
                }
            }
        })
    }
}

impl PlanStrategy {
    /// The planning call. `Ok((None, state))`: the reply was not a usable plan.
    async fn make_plan(
        &self,
        agent: &Agent,
        state: AgentState,
        ctx: &RunContext,
        feedback: Option<String>,
    ) -> Result<(Option<Vec<PlanStep>>, AgentState), Halt> {
        let schema = self.plan_schema.clone().unwrap_or_else(default_plan_schema);
        let limit = self
            .max_plan_steps
            .map(|max| format!(" Use at most {max} steps."))
            .unwrap_or_default();
        let tools: Vec<&str> = agent.tools.iter().map(|t| t.name()).collect();
        let mut instruction = format!(
            "First make a plan. Reply with JSON only: {{\"steps\": [{{\"id\": \"1\", \"description\": \"...\", \
             \"tool\": null, \"depends_on\": []}}]}}. Steps whose depends_on are done may run at the same time.{limit} \
             Tools available to the steps: {}.",
            if tools.is_empty() {
                "none".to_string()
            } else {
                tools.join(", ")
            }
        );
        if let Some(feedback) = feedback {
            instruction.push_str("\n\n");
            instruction.push_str(&feedback);
        }
        let options = CallOptions {
            offer_tools: false,
            response_format: Some(ResponseFormat {
                name: "plan".into(),
                schema,
                strict: false,
            }),
            system_suffix: Some(instruction),
            unrecorded: true,
            reasoning: false,
            extra_tools: Vec::new(),
        };
        let title = "Make a plan";
        let (state, step_id) = start_step(ctx, state, title);
        let (response, state) = call_model(agent, state, ctx, &options, &step_id)
            .await
            .map_err(|halt| fail_step(ctx, halt, &step_id, title))?;
        let steps = parse_plan(&response.text);
        let steps = match steps {
            Some(steps)
                if self
                    .max_plan_steps
                    .is_some_and(|max| steps.len() as u64 > max) =>
            {
                None
            }
            Some(steps) if steps.is_empty() => None,
            other => other,
        };
        let end = if steps.is_some() {
            StepEnd::Completed
        } else {
            StepEnd::Failed
        };
        end_step(ctx, &state, &step_id, title, end);
        let Some(steps) = steps else {
            return Ok((None, state));
        };
        ctx.emitter.emit(PlanUpdated {
            plan: steps.clone(),
        });
        let state = state.with_plan(steps.clone());
        let state = save_checkpoint(ctx, state, SavePoint::StepEnd)?;
        Ok((Some(steps), state))
    }

    /// Runs the steps in dependency order.
    async fn run_plan(
        &self,
        agent: &Agent,
        mut steps: Vec<PlanStep>,
        mut state: AgentState,
        ctx: &RunContext,
    ) -> Result<(Ran, AgentState), Halt> {
        let ids: HashSet<String> = steps.iter().map(|s| s.id.clone()).collect();
        loop {
            let done: HashSet<String> = steps
                .iter()
                .filter(|s| s.status == PlanStepStatus::Completed)
                .map(|s| s.id.clone())
                .collect();
            if done.len() == steps.len() {
                return Ok((Ran::Done, state));
            }
            // Unknown dependencies count as done, so a sloppy plan cannot deadlock.
            let ready: Vec<usize> = steps
                .iter()
                .enumerate()
                .filter(|(_, s)| s.status == PlanStepStatus::Pending)
                .filter(|(_, s)| {
                    s.depends_on
                        .iter()
                        .all(|d| done.contains(d) || !ids.contains(d))
                })
                .map(|(i, _)| i)
                .collect();
            if ready.is_empty() {
                let cycle = "the plan's dependencies form a cycle".to_string();
                return Ok((Ran::Failed(cycle), state));
            }
            for &i in &ready {
                set_status(ctx, &mut steps[i], PlanStepStatus::InProgress);
            }
            state = state.with_plan(steps.clone());
            let base = state.clone();
            let runs = ready
                .iter()
                .map(|&i| run_step(agent, &steps[i], base.clone(), ctx, self.max_step_calls));
            let outcomes = join_all(runs).await;
            let mut failure = None;
            let mut halt = None;
            for (&i, outcome) in ready.iter().zip(outcomes) {
                let (result, branch) = match outcome {
                    Ok(pair) => pair,
                    Err(stop) => match &stop.reason {
                        HaltReason::Failed { code, message } if step_failure(code) => {
                            (Err(message.clone()), *stop.state)
                        }
                        reason => {
                            let why = match reason {
                                HaltReason::Failed { message, .. } => message.clone(),
                                _ => "interrupted".into(),
                            };
                            halt.get_or_insert(stop.clone());
                            (Err(why), *stop.state)
                        }
                    },
                };
                state = merge_branch(state, &base, &branch);
                match result {
                    Ok(text) => {
                        steps[i].result = Some(Value::String(text.clone()));
                        set_status(ctx, &mut steps[i], PlanStepStatus::Completed);
                        state = thread::add(
                            ctx,
                            state,
                            None,
                            [
                                Message::user(format!(
                                    "Plan step {}: {}",
                                    steps[i].id, steps[i].description
                                )),
                                Message::assistant(text),
                            ],
                        );
                    }
                    Err(message) => {
                        steps[i].result = Some(json!({"error": message}));
                        set_status(ctx, &mut steps[i], PlanStepStatus::Failed);
                        failure.get_or_insert(format!(
                            "step {} ({}) failed: {message}",
                            steps[i].id, steps[i].description
                        ));
                    }
                }
            }
            state = state.with_plan(steps.clone());
            if let Some(mut halt) = halt {
                halt.state = Box::new(state);
                return Err(halt);
            }
            if let Some(failure) = failure {
                return Ok((Ran::Failed(failure), state));
            }
            state = match after_step(agent, state, ctx)? {
                AfterStep::Next(state) => state,
                AfterStep::Reload(agent, state) => return Ok((Ran::Reloaded(agent), state)),
            };
        }
    }
}

/// How running a plan ended.
enum Ran {
    /// Every step is done.
    Done,
    /// A step failed (or the plan cannot go on): why.
    Failed(String),
    /// A new definition of the root agent takes over (`exec --watch`).
    Reloaded(Box<Agent>),
}

/// `text` ending as a sentence: with a full stop, unless it has one (or `!`, `?`) already.
fn sentence(text: &str) -> String {
    let text = text.trim_end();
    match text.ends_with(['.', '!', '?']) {
        true => text.to_string(),
        false => format!("{text}."),
    }
}

/// One plan step: a tool loop from the shared history plus the step's instruction.
/// Returns the step's result (or why it failed) and the branch's final state. The step
/// fails when the model calls `step_failed` (offered with native tool calls, unless the
/// agent has a tool of that name; the reply's other calls do not run), or answers right
/// after a turn whose last tool call failed.
async fn run_step(
    agent: &Agent,
    step: &PlanStep,
    state: AgentState,
    ctx: &RunContext,
    max_calls: Option<u32>,
) -> Result<(Result<String, String>, AgentState), Halt> {
    let tool_hint = step
        .tool
        .as_ref()
        .map(|t| format!(" Use the `{t}` tool."))
        .unwrap_or_default();
    let offer_failure =
        agent.xml_tools.is_none() && !agent.tools.iter().any(|t| t.name() == STEP_FAILED);
    let failure_hint = if offer_failure {
        format!(" If it cannot be done, call `{STEP_FAILED}` with the reason.")
    } else {
        String::new()
    };
    let task = Message::user(format!(
        "Do plan step {}: {}{tool_hint} Reply with the step's result when done.{failure_hint}",
        step.id,
        sentence(&step.description)
    ));
    let mut state = thread::add_one(ctx, state, None, task);
    let mut options = action_options(agent);
    options.response_format = None;
    if offer_failure {
        options.extra_tools = vec![step_failed_spec()];
    }
    let mut last_failure: Option<String> = None;
    let mut calls = 0;
    while max_calls.is_none_or(|max| calls < max) {
        calls += 1;
        let title = format!("Plan step {}: {}", step.id, step.description);
        let (next, step_id) = start_step(ctx, state, &title);
        let (response, next) = call_model(agent, next, ctx, &options, &step_id)
            .await
            .map_err(|h| fail_step(ctx, h, &step_id, &title))?;
        state = next;
        let declared = offer_failure
            .then(|| declared_failure(&response.tool_calls))
            .flatten();
        if let Some(failure) = declared.or_else(|| {
            last_failure
                .take()
                .filter(|_| response.tool_calls.is_empty())
        }) {
            end_step(ctx, &state, &step_id, &title, StepEnd::Failed);
            return Ok((Err(failure), state));
        }
        if response.tool_calls.is_empty() {
            end_step(ctx, &state, &step_id, &title, StepEnd::Completed);
            return Ok((Ok(response.text), state));
        }
        let title = tool_title(&response.tool_calls);
        // Handoffs are not followed inside a plan step; the step goes on.
        state = run_tools(agent, &response.tool_calls, state, ctx, &step_id)
            .await
            .map_err(|h| fail_step(ctx, h, &step_id, &title))?
            .0;
        last_failure = last_call_failure(&state.messages);
        end_step(ctx, &state, &step_id, &title, StepEnd::Completed);
    }
    Err(bound_reached(
        state,
        Limit::MaxStepCalls,
        format!("a plan step made {calls} model calls"),
    ))
}

/// Whether a step's failure is the model's (it never gave a usable reply), which a new
/// plan may get round. Anything else (a provider error, a checkpoint that could not be
/// written) would fail the same way again: it ends the run with its own code.
fn step_failure(code: &ErrorCode) -> bool {
    *code == ErrorCode::XmlFormat
}

/// Adds what a branch counted (calls, usage, traces) to the main state; its messages stay
/// in the branch (the step's result is added as a summary instead).
fn merge_branch(state: AgentState, base: &AgentState, branch: &AgentState) -> AgentState {
    let mut next = state.with_tool_calls(branch.tool_calls.saturating_sub(base.tool_calls));
    next.llm_calls += branch.llm_calls.saturating_sub(base.llm_calls);
    let added = crate::provider::Usage::new(
        branch
            .usage
            .input_tokens
            .saturating_sub(base.usage.input_tokens),
        branch
            .usage
            .output_tokens
            .saturating_sub(base.usage.output_tokens),
    );
    next.usage = next.usage.plus(&added);
    next.step = next.step.max(branch.step);
    next.subagent_traces.extend(
        branch
            .subagent_traces
            .iter()
            .skip(base.subagent_traces.len())
            .cloned(),
    );
    next
}

fn set_status(ctx: &RunContext, step: &mut PlanStep, status: PlanStepStatus) {
    let previous = step.status;
    step.status = status;
    ctx.emitter.emit(PlanStepChanged {
        plan_step_id: step.id.clone(),
        description: step.description.clone(),
        previous_status: previous,
        status,
    });
}

/// Reads a plan (bare or fenced JSON); `None` when it is not one.
pub fn parse_plan(text: &str) -> Option<Vec<PlanStep>> {
    let value = parse_json_answer(text)?;
    let steps = value.get("steps")?.as_array()?;
    steps
        .iter()
        .map(|step| {
            let id = match step.get("id")? {
                Value::String(id) => id.clone(),
                Value::Number(n) => n.to_string(),
                _ => return None,
            };
            Some(PlanStep {
                id,
                description: step.get("description")?.as_str()?.to_string(),
                tool: step.get("tool").and_then(Value::as_str).map(String::from),
                depends_on: step
                    .get("depends_on")
                    .and_then(Value::as_array)
                    .map(|d| {
                        d.iter()
                            .map(|v| v.as_str().map_or_else(|| v.to_string(), String::from))
                            .collect()
                    })
                    .unwrap_or_default(),
                status: PlanStepStatus::Pending,
                result: None,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_description_ends_with_one_full_stop() {
        assert_eq!(sentence("List the commits"), "List the commits.");
        assert_eq!(
            sentence("List the commits (since HEAD)."),
            "List the commits (since HEAD)."
        );
        assert_eq!(sentence("Why did it fail? "), "Why did it fail?");
    }
}
