//! The run driver: one run from start to finish, for every caller — `exec`, `resume`, each
//! `chat` turn, a sub-agent, the library's `stream`. It emits the lifecycle (created,
//! status changes, requires_action, completed or failed, with the run's totals), follows
//! handoffs (the active agent is part of the state, so a resume continues with it), swaps
//! reloaded definitions in at step boundaries, saves the final checkpoint, and returns the
//! outcome. Everything a run leaves behind is derived from what it emits here.

use std::sync::Arc;

use tokio::sync::{mpsc, watch};

use super::agent::{
    Agent, BuildError, GenerateResult, Halt, HaltReason, RunContext, StrategyEnd, Turn,
};
use super::budget::Budget;
use super::clock::new_id;
use super::events::{
    ActionKind, ActionStatus, AwaitingApproval, CheckpointSaved, Emitter, Event, EventBus,
    ExternalCall, Failure, FailureDetails, Handoff, Phase, RequiredAction, RequiresAction,
    RunCompleted, RunCreated, RunFailed, StatusChanged, SubmitToolOutputs,
};
use super::outcome::{RunError, RunOutcome, RunStatus, RunTotals};
use super::pending::{Pending, Submitting};
use super::state::AgentState;
// From the file itself: the step module as a whole reaches sub-agents, which run through here.
use super::step::boundary::{SavePoint, save_checkpoint};
use crate::engine::ErrorCode;
use crate::provider::{BoxFuture, Message, Usage};
use crate::sync::lock;

/// What a paused run waits on, settled before it goes on (a resume's answer). It is
/// implemented above the driver (`engine/resume.rs`), where a paused sub-agent can be
/// driven again.
pub trait Settle: Send + Sync {
    fn settle<'a>(
        &'a self,
        agent: &'a Agent,
        state: AgentState,
        ctx: &'a RunContext,
    ) -> BoxFuture<'a, Result<AgentState, Halt>>;
}

/// What a run starts with besides its state.
#[derive(Clone, Default)]
pub struct RunStart {
    /// Messages added to the history first (the rendered prompt, a chat line); none on resume.
    pub opening: Vec<Message>,
    /// Settled first, inside the run (its events are the run's).
    pub settle: Option<Arc<dyn Settle>>,
    /// Reported in `agent.run.created` for root runs.
    pub session_id: Option<String>,
}

/// Runs `root` (or the agent it handed over to, as the state records) to the end.
pub async fn drive(
    root: &Agent,
    start: RunStart,
    state: AgentState,
    ctx: &RunContext,
) -> RunOutcome {
    // Every event of the run names the agent's id beside its name.
    let ctx = &ctx.for_agent(root);
    let emitter = &ctx.emitter;
    emitter.emit(RunCreated {
        status: Phase::InProgress,
        initial_messages: start.opening.clone(),
        session_id: start.session_id.clone(),
    });
    emitter.emit(StatusChanged {
        previous_status: Phase::Queued,
        current_status: Phase::InProgress,
    });
    ctx.set_step(state.step);
    let state = super::thread::add(ctx, state, None, start.opening);
    let result = match &start.settle {
        Some(settle) => match settle.settle(root, state, ctx).await {
            Ok(state) => follow(root, state.with_results_in_call_order(), ctx).await,
            Err(halt) => Err(halt),
        },
        None => follow(root, state, ctx).await,
    };
    let mut outcome = conclude(result);
    if let (Some(_), Some(session), Some(error)) =
        (&outcome.pending, &start.session_id, &mut outcome.error)
        && outcome.status == RunStatus::InputRequired
    {
        let pending = outcome.pending.as_ref();
        let how = match (
            pending.and_then(Pending::approving),
            pending.and_then(Pending::submitting),
        ) {
            (Some(_), _) => format!(
                "approve with `runner resume {session} --approve all`, or deny with `--deny CALL_ID --reason TEXT`"
            ),
            (None, Some(_)) => format!(
                "submit each output with `runner resume {session} --tool-output CALL_ID=JSON`"
            ),
            (None, None) => format!("answer with `runner resume {session} --answer TEXT`"),
        };
        error.message = format!("{} ({how})", error.message);
    }
    if ctx.checkpoints.is_some() {
        outcome.state.spent = Some(ctx.budget.tree_totals());
    }
    finish(ctx, &outcome);
    outcome
}

/// Runs the active agent's strategy, following handoffs and reloads, until an answer or a
/// halt. No lifecycle events: `drive` emits those.
pub async fn follow(root: &Agent, state: AgentState, ctx: &RunContext) -> GenerateResult {
    let mut reloaded_root: Option<Agent> = None;
    let mut active = match handed_chain(root, &state.handoffs) {
        Ok(active) => active.map(|target| answering_for(target, root)),
        Err(error) => return Err(Halt::failed(state, ErrorCode::Handoff, error.to_string())),
    };
    let mut state = state;
    loop {
        let root_now = reloaded_root.as_ref().unwrap_or(root);
        let agent = active.as_ref().unwrap_or(root_now);
        // A handoff target's own limits bound its share of the run, inside the root's.
        let scoped = match &active {
            Some(target) => ctx
                .for_agent(target)
                .bounded_by(target)
                .governed_by(root_now),
            None => ctx.for_agent(agent),
        };
        let (end, next) = agent.strategy.execute(agent, state, &scoped).await?;
        match end {
            StrategyEnd::Answered(turn) => return Ok((turn, next)),
            StrategyEnd::HandedOff(tool) => {
                let target = match hand_over(agent, &tool, ctx) {
                    Ok(target) => target,
                    Err(error) => {
                        return Err(Halt::failed(next, ErrorCode::Handoff, error.to_string()));
                    }
                };
                active = Some(answering_for(target, root_now));
                // The handoff step ends with its checkpoint like any other (UAP §12.4.5),
                // taken once the state says who has control, so a resume goes on with it.
                state = save_checkpoint(ctx, next.with_handoff(tool), SavePoint::StepEnd)?;
            }
            // A new root definition: the agents it handed over to are rebuilt from it.
            StrategyEnd::Reloaded(new_root) => {
                active = match handed_chain(&new_root, &next.handoffs) {
                    Ok(active) => active.map(|target| answering_for(target, &new_root)),
                    Err(error) => {
                        return Err(Halt::failed(next, ErrorCode::Handoff, error.to_string()));
                    }
                };
                reloaded_root = Some(*new_root);
                state = next;
            }
        }
    }
}

/// A handoff target answers for the run the root started: a cut-off or empty answer
/// fails when either the root's `answer` or the target's says so.
fn answering_for(mut target: Agent, root: &Agent) -> Agent {
    target.answer_policy = target.answer_policy.stricter(root.answer_policy);
    target
}

/// Why control could not go to a handoff's target (the run fails with `handoff`).
#[derive(Debug, thiserror::Error)]
pub enum HandoffError {
    #[error("`{tool}` is not a handoff of `{owner}`")]
    NotAHandoff { tool: String, owner: String },
    /// A resumed session's path of handoffs names a tool the agent file no longer has.
    #[error("the session was handed over through `{tool}`, which `{owner}` no longer has")]
    Gone { tool: String, owner: String },
    #[error(transparent)]
    Build(#[from] BuildError),
}

/// Builds the target of `owner`'s handoff tool and announces the handoff.
fn hand_over(owner: &Agent, tool: &str, ctx: &RunContext) -> Result<Agent, HandoffError> {
    let factory = owner
        .handoffs
        .get(tool)
        .ok_or_else(|| HandoffError::NotAHandoff {
            tool: tool.to_string(),
            owner: owner.name.clone(),
        })?;
    let target = factory.build(&owner.model())?;
    ctx.emitter.emit(Handoff {
        from: owner.name.clone(),
        to: target.name.clone(),
        tool_name: tool.to_string(),
    });
    Ok(target)
}

/// The agent that has control after the handoffs `path` (tool names, from the root);
/// `None` when the root has it.
pub fn handed_chain(root: &Agent, path: &[String]) -> Result<Option<Agent>, HandoffError> {
    let mut active: Option<Agent> = None;
    for tool in path {
        let owner = active.as_ref().unwrap_or(root);
        let factory = owner.handoffs.get(tool).ok_or_else(|| HandoffError::Gone {
            tool: tool.to_string(),
            owner: owner.name.clone(),
        })?;
        active = Some(factory.build(&owner.model())?);
    }
    Ok(active)
}

/// The outcome of a finished `follow`, with what a resume will need.
fn conclude(result: GenerateResult) -> RunOutcome {
    let halt = match result {
        Ok((turn, state)) => return completed(turn, state),
        Err(halt) => halt,
    };
    let (status, code, message, limit, pending) = match halt.reason {
        HaltReason::Limit(hit) => (
            RunStatus::LimitReached,
            ErrorCode::LimitReached,
            format!("the run reached `{}`: {}", hit.limit, hit.detail),
            Some(hit.limit),
            None,
        ),
        HaltReason::Failed { code, message } => (RunStatus::Failed, code, message, None, None),
        HaltReason::Interrupted => (
            RunStatus::Interrupted,
            ErrorCode::Interrupted,
            "the run was interrupted".to_string(),
            None,
            None,
        ),
        HaltReason::InputRequired(pending) => (
            RunStatus::InputRequired,
            ErrorCode::InputRequired,
            question_message(&pending),
            None,
            Some(*pending),
        ),
    };
    RunOutcome {
        status,
        state: *halt.state,
        output: None,
        structured: None,
        error: Some(RunError { code, message }),
        limit,
        pending,
    }
}

/// What a paused run waits for, as its `requires_action` event says it.
pub fn required_action(pending: &Pending) -> Option<RequiredAction> {
    if let Some(asked) = pending.asked() {
        return Some(RequiredAction {
            kind: ActionKind::UserInput,
            question: asked.question.to_string(),
            id: asked.id.map(String::from),
            tool_call_id: asked.call.id.clone(),
            agent: asked.agent.map(String::from),
            calls: Vec::new(),
            submit_tool_outputs: None,
        });
    }
    if let Some(submitting) = pending.submitting() {
        return Some(outputs_action(submitting));
    }
    let approving = pending.approving()?;
    let calls: Vec<AwaitingApproval> = approving
        .calls
        .iter()
        .map(|waiting| AwaitingApproval {
            id: waiting.call.id.clone(),
            name: waiting.call.name.clone(),
            arguments: serde_json::Value::clone(&waiting.call.arguments),
            rule: waiting.rule.clone(),
        })
        .collect();
    Some(RequiredAction {
        kind: ActionKind::ToolApproval,
        question: approval_question(&calls),
        id: None,
        tool_call_id: calls.first().map(|c| c.id.clone()).unwrap_or_default(),
        agent: approving.agent.map(String::from),
        calls,
        submit_tool_outputs: None,
    })
}

/// What a run paused on external calls waits for: their outputs.
fn outputs_action(submitting: Submitting<'_>) -> RequiredAction {
    let tool_calls: Vec<ExternalCall> = submitting
        .calls
        .iter()
        .map(|call| ExternalCall {
            id: call.id.clone(),
            name: call.name.clone(),
            arguments: serde_json::Value::clone(&call.arguments),
        })
        .collect();
    let each: Vec<String> = tool_calls
        .iter()
        .map(|c| format!("`{}` (call {})", c.name, c.id))
        .collect();
    RequiredAction {
        kind: ActionKind::SubmitToolOutputs,
        question: format!("submit the output of {}", each.join(", ")),
        id: None,
        tool_call_id: tool_calls.first().map(|c| c.id.clone()).unwrap_or_default(),
        agent: submitting.agent.map(String::from),
        calls: Vec::new(),
        submit_tool_outputs: Some(SubmitToolOutputs { tool_calls }),
    }
}

/// "approve `write_file` (call_1, rule `ask: write_file`)", one clause per call.
fn approval_question(calls: &[AwaitingApproval]) -> String {
    let each: Vec<String> = calls
        .iter()
        .map(|c| format!("`{}` (call {}, rule `{}`)", c.name, c.id, c.rule))
        .collect();
    format!("approve {}", each.join(", "))
}

/// "the agent asks: …", or "`researcher` asks: …" when a sub-agent asked; for calls
/// awaiting approval, which.
fn question_message(pending: &Pending) -> String {
    match required_action(pending) {
        Some(action) => match (&action.agent, action.kind) {
            (Some(agent), ActionKind::UserInput) => format!("`{agent}` asks: {}", action.question),
            (None, ActionKind::UserInput) => format!("the agent asks: {}", action.question),
            (Some(agent), ActionKind::ToolApproval) => {
                format!("`{agent}` waits for approval: {}", action.question)
            }
            (None, ActionKind::ToolApproval) => {
                format!("the agent waits for approval: {}", action.question)
            }
            (Some(agent), ActionKind::SubmitToolOutputs) => {
                format!("`{agent}` waits for tool outputs: {}", action.question)
            }
            (None, ActionKind::SubmitToolOutputs) => {
                format!("the agent waits for tool outputs: {}", action.question)
            }
        },
        None => "the run waits for an answer".to_string(),
    }
}

fn completed(turn: Turn, state: AgentState) -> RunOutcome {
    RunOutcome {
        status: RunStatus::Completed,
        state,
        output: Some(turn.output),
        structured: turn.structured,
        error: None,
        limit: None,
        pending: None,
    }
}

/// Saves the final checkpoint and emits the end of the run.
fn finish(ctx: &RunContext, outcome: &RunOutcome) {
    let pending = outcome.pending.as_ref();
    let emitter = &ctx.emitter;
    let checkpoint = ctx.checkpoints.as_ref().and_then(|store| {
        store
            .finish(&outcome.state, outcome.status, pending, &emitter.run_id)
            .map_err(|message| ctx.warn(format!("the final checkpoint was not saved: {message}")))
            .ok()
    });
    // The final step's checkpoint is this one (UAP §12.4.5: every step ends with one):
    // announced like the others, so events and the transcript show it.
    if outcome.status == RunStatus::Completed
        && let Some(name) = &checkpoint
    {
        emitter.emit(CheckpointSaved {
            name: name.clone(),
            step: outcome.state.step,
        });
    }
    if let Some(required_action) = pending.and_then(required_action) {
        emitter.emit(RequiresAction {
            status: ActionStatus::RequiresAction,
            required_action,
            checkpoint_name: checkpoint,
        });
    }
    emitter.emit(StatusChanged {
        previous_status: Phase::InProgress,
        current_status: outcome.status.into(),
    });
    let totals = totals(ctx, &outcome.state);
    let warnings = lock(&ctx.warnings).clone();
    match &outcome.error {
        None => emitter.emit(RunCompleted {
            status: outcome.status,
            final_messages: vec![Message::assistant(
                outcome.output.clone().unwrap_or_default(),
            )],
            structured: outcome.structured.clone(),
            totals,
            warnings,
        }),
        Some(error) => emitter.emit(RunFailed {
            status: outcome.status,
            error: Failure {
                code: error.code,
                message: error.message.clone(),
                details: FailureDetails {
                    limit: outcome.limit,
                },
            },
            totals,
            warnings,
        }),
    }
}

fn totals(ctx: &RunContext, state: &AgentState) -> RunTotals {
    let budget = ctx.budget.totals();
    RunTotals {
        steps: state.step,
        llm_calls: budget.llm_calls,
        tool_calls: budget.tool_calls,
        usage: budget.usage,
        cost_usd: budget.cost_usd,
    }
}

impl Agent {
    /// Runs the agent on `input` (appended as a user message when given) from `state`
    /// (UAP §4.4): `(input, state) -> (turn, new state)`, following handoffs. No lifecycle
    /// events; `drive` is the whole run.
    pub async fn generate(
        &self,
        input: Option<Message>,
        state: AgentState,
        ctx: &RunContext,
    ) -> GenerateResult {
        let before = state.messages.len();
        let usage_before = state.usage;
        let state = match input {
            Some(message) => super::thread::add_one(ctx, state, None, message),
            None => state,
        };
        let (mut turn, state) = follow(self, state, ctx).await?;
        turn.messages = state
            .messages
            .get(before..)
            .map(<[Message]>::to_vec)
            .unwrap_or_default();
        turn.usage = Usage::new(
            state
                .usage
                .input_tokens
                .saturating_sub(usage_before.input_tokens),
            state
                .usage
                .output_tokens
                .saturating_sub(usage_before.output_tokens),
        );
        Ok((turn, state))
    }

    /// The whole run — its lifecycle events included — delivering every event on a channel
    /// as it happens (UAP §4.5). The turn and state are the same as `generate`'s.
    pub async fn stream(
        &self,
        input: Option<Message>,
        state: AgentState,
        budget: Arc<Budget>,
        cancel: watch::Receiver<bool>,
        events: mpsc::UnboundedSender<Event>,
    ) -> RunOutcome {
        let sink = move |event: &Event| {
            let _ = events.send(event.clone());
        };
        let bus = EventBus::new(vec![Arc::new(sink)]);
        let emitter = Emitter::root(bus, &self.name, new_id(), new_id());
        let ctx = RunContext::new(emitter, budget, cancel);
        let start = RunStart {
            opening: input.into_iter().collect(),
            ..Default::default()
        };
        drive(self, start, state, &ctx).await
    }

    /// Multi-turn: the input and the answer stay in the returned state (UAP §4.6).
    pub async fn ask(&self, input: &str, state: AgentState, ctx: &RunContext) -> GenerateResult {
        self.generate(Some(Message::user(input)), state, ctx).await
    }

    /// Stateless single turn (UAP §4.7).
    pub async fn query(&self, input: &str, ctx: &RunContext) -> Result<Turn, Halt> {
        self.generate(Some(Message::user(input)), AgentState::initial(), ctx)
            .await
            .map(|(turn, _)| turn)
    }
}
