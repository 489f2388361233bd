//! The agent (UAP §4): a compiled definition plus `generate`, `stream`, `ask`, `query`.
//! It knows nothing of YAML; `crate::compile` builds it from an agent file.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::{mpsc, watch};

use super::budget::{Budget, LimitHit, Price};
use super::checkpointing::Checkpointer;
use super::events::{Emitter, Event, EventBus};
use super::middleware::Middleware;
use super::state::AgentState;
use super::stop_when::StopWhen;
use super::strategy::ExecutionStrategy;
use super::subagent::AgentFactory;
use crate::provider::{Message, Provider, Usage};
use crate::tools::Tool;

/// A runnable agent.
pub struct Agent {
    pub name: String,
    pub description: Option<String>,
    /// The rendered system prompt.
    pub system: Option<String>,
    pub provider: Arc<dyn Provider>,
    /// Prices of the provider's model, when known (enables cost).
    pub price: Option<Price>,
    pub tools: Vec<Arc<dyn Tool>>,
    /// Tool name → tool names it waits for within a turn.
    pub depends_on: HashMap<String, Vec<String>>,
    pub strategy: Arc<dyn ExecutionStrategy>,
    pub middleware: Vec<Arc<dyn Middleware>>,
    /// The final answer must match this JSON Schema.
    pub output_schema: Option<Value>,
    /// At most this many tool calls at once (`None`: all of a turn).
    pub parallel_tools: Option<usize>,
    pub stop_when: Option<StopWhen>,
    /// How often the model may retry a structured answer that does not match.
    pub structured_retries: u32,
    /// Handoff tool name → the agent that takes over.
    pub handoffs: HashMap<String, Arc<dyn AgentFactory>>,
    /// Set when tools are offered as XML in the text (`tool_protocol: xml`).
    pub xml_tools: Option<super::xml_turn::XmlTools>,
}

/// What a run shares: its events, its budget, and the stop signal.
#[derive(Clone)]
pub struct RunContext {
    pub emitter: Emitter,
    pub budget: Arc<Budget>,
    pub cancel: watch::Receiver<bool>,
    /// Where the root agent's states are saved after each step (`None`: nowhere, and always
    /// for sub-agents, whose state lives in their caller's trace).
    pub checkpoints: Option<Arc<dyn Checkpointer>>,
    /// Problems that did not stop the run (a checkpoint that could not be saved).
    pub warnings: Arc<std::sync::Mutex<Vec<String>>>,
    /// `exec --watch`: new definitions of the root agent, swapped in between steps.
    pub reload: Option<Arc<dyn super::checkpointing::Reloader>>,
    /// A reloaded agent waiting to take over (set at a step boundary, taken by `generate`).
    pub reloaded: Arc<std::sync::Mutex<Option<Agent>>>,
}

impl RunContext {
    /// A context without checkpoints.
    pub fn new(emitter: Emitter, budget: Arc<Budget>, cancel: watch::Receiver<bool>) -> Self {
        RunContext {
            emitter,
            budget,
            cancel,
            checkpoints: None,
            warnings: Arc::default(),
            reload: None,
            reloaded: Arc::default(),
        }
    }

    pub fn interrupted(&self) -> bool {
        *self.cancel.borrow()
    }

    /// Notes a problem that does not stop the run.
    pub fn warn(&self, message: String) {
        eprintln!("warning: {message}");
        if let Ok(mut warnings) = self.warnings.lock() {
            warnings.push(message);
        }
    }
}

/// The answer of a finished run.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The final answer's text.
    pub output: String,
    /// The parsed answer when the agent has an output schema.
    pub structured: Option<Value>,
    /// Usage of this generate call.
    pub usage: Usage,
    /// The messages this call added to the history.
    pub messages: Vec<Message>,
    /// Set by a strategy when the agent called a handoff tool: the tool's name.
    pub handoff: Option<String>,
}

/// Why a run stopped without an answer; the state is kept for checkpoints and resume.
#[derive(Debug, Clone)]
pub struct Halt {
    /// Boxed: a halt travels through every `?` of the engine and should stay small.
    pub state: Box<AgentState>,
    pub reason: HaltReason,
}

#[derive(Debug, Clone, PartialEq)]
pub enum HaltReason {
    /// A bound was reached (exit 3).
    Limit(LimitHit),
    /// A provider error after retries, structured output never valid, an internal error (exit 1).
    Failed { code: String, message: String },
    /// SIGINT/SIGTERM (exit 130).
    Interrupted,
    /// `ask_user` found no answer: the run pauses until `runner resume --answer` (exit 4).
    /// The call's result is missing from the state; the answer becomes it.
    InputRequired {
        question: String,
        id: Option<String>,
        call: Box<crate::provider::ToolCall>,
    },
    /// A new definition of the agent was saved (`exec --watch`): `generate` swaps it in and
    /// goes on from the same state. Never leaves `generate`.
    Reloaded,
}

impl Halt {
    pub fn new(state: AgentState, reason: HaltReason) -> Self {
        Halt {
            state: Box::new(state),
            reason,
        }
    }

    pub fn failed(state: AgentState, code: &str, message: impl Into<String>) -> Self {
        Halt::new(
            state,
            HaltReason::Failed {
                code: code.to_string(),
                message: message.into(),
            },
        )
    }
}

pub type GenerateResult = Result<(Turn, AgentState), Halt>;

impl Agent {
    /// Runs the agent on `input` (appended as a user message when given) from `state`
    /// (UAP §4.4): `(input, state) -> (turn, new state)`.
    pub async fn generate(
        &self,
        input: Option<Message>,
        state: AgentState,
        ctx: &RunContext,
    ) -> GenerateResult {
        let before = state.messages.len();
        let usage_before = state.usage;
        let mut state = match input {
            Some(message) => state.with_message(message),
            None => state,
        };
        // Handoffs: the target continues the same conversation at the same depth, until an
        // agent answers without handing over. Reloads: the new definition continues the same
        // state from the next step.
        let mut current: Option<Agent> = None;
        let (mut turn, mut state) = loop {
            let agent = current.as_ref().unwrap_or(self);
            match agent.strategy.execute(agent, state, ctx).await {
                Err(halt) if halt.reason == HaltReason::Reloaded => {
                    let next = ctx.reloaded.lock().ok().and_then(|mut slot| slot.take());
                    state = *halt.state;
                    if let Some(next) = next {
                        current = Some(next);
                    }
                }
                other => break other?,
            }
        };
        while let Some(tool) = turn.handoff.take() {
            let owner = current.as_ref().unwrap_or(self);
            let Some(factory) = owner.handoffs.get(&tool).cloned() else {
                return Err(Halt::failed(
                    state,
                    "handoff",
                    format!("`{tool}` is not a handoff of `{}`", owner.name),
                ));
            };
            let target = match factory.build(&owner.provider) {
                Ok(target) => target,
                Err(message) => return Err(Halt::failed(state, "handoff", message)),
            };
            ctx.emitter.emit(
                super::events::kind::HANDOFF,
                serde_json::json!({"from": owner.name, "to": target.name, "toolName": tool}),
            );
            let handed = RunContext {
                emitter: ctx.emitter.handed_off(&target.name),
                ..ctx.clone()
            };
            let (next_turn, next_state) = target.strategy.execute(&target, state, &handed).await?;
            turn = next_turn;
            state = next_state;
            current = Some(target);
        }
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

    /// `generate`, delivering every event of the run on a channel as it happens (UAP §4.5).
    /// The final result is the same as `generate`'s.
    pub async fn stream(
        &self,
        input: Option<Message>,
        state: AgentState,
        budget: Arc<Budget>,
        cancel: watch::Receiver<bool>,
        events: mpsc::UnboundedSender<Event>,
    ) -> GenerateResult {
        let sink = move |event: &Event| {
            let _ = events.send(event.clone());
        };
        let bus = EventBus::new(vec![Arc::new(sink)]);
        let emitter = Emitter::root(
            bus,
            &self.name,
            super::clock::new_id(),
            super::clock::new_id(),
        );
        let ctx = RunContext::new(emitter, budget, cancel);
        self.generate(input, state, &ctx).await
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

    /// The tools by name.
    pub fn tool_map(&self) -> HashMap<String, Arc<dyn Tool>> {
        self.tools
            .iter()
            .map(|tool| (tool.name().to_string(), tool.clone()))
            .collect()
    }
}
