//! The agent (UAP §4): a compiled definition plus `generate`, `stream`, `ask`, `query`.
//! It knows nothing of YAML; `crate::compile` builds it from an agent file.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

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
use super::toolset::AgentTool;
use crate::provider::{Message, Provider, Usage};

/// A runnable agent.
pub struct Agent {
    pub name: String,
    pub description: Option<String>,
    /// The rendered system prompt.
    pub system: Option<String>,
    pub provider: Arc<dyn Provider>,
    /// Prices of the provider's model, when known (enables cost).
    pub price: Option<Price>,
    pub tools: Vec<AgentTool>,
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
    /// A reloaded agent waiting to take over (set at a step boundary, taken by the driver).
    pub reloaded: Arc<std::sync::Mutex<Option<Agent>>>,
    /// The last step number given out in this run (shared by a handoff's agents and the
    /// parallel branches of a plan, so numbers never repeat).
    steps: Arc<AtomicU64>,
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
            steps: Arc::default(),
        }
    }

    /// The context of a sub-agent's run: its own events one level deeper, its own step
    /// numbers, no checkpoints or reloads; the same budget, stop signal and warnings.
    pub fn child(&self, agent: &str) -> Self {
        RunContext {
            emitter: self.emitter.child(agent),
            checkpoints: None,
            reload: None,
            reloaded: Arc::default(),
            steps: Arc::default(),
            ..self.clone()
        }
    }

    /// The same run with `agent` in control (after a handoff).
    pub fn for_agent(&self, agent: &str) -> Self {
        RunContext {
            emitter: self.emitter.handed_off(agent),
            ..self.clone()
        }
    }

    /// Continues step numbering after `step` (a resumed or continued state).
    pub fn set_step(&self, step: u64) {
        self.steps.store(step, Ordering::SeqCst);
    }

    /// The next step number of the run.
    pub fn next_step_number(&self) -> u64 {
        self.steps.fetch_add(1, Ordering::SeqCst) + 1
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
    /// Set by a strategy when the agent called a handoff tool: the tool's name (the driver
    /// hands over and clears it).
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
    /// A new definition of the agent was saved (`exec --watch`): the driver swaps it in and
    /// goes on from the same state. Never leaves the driver.
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
    /// The whole run — its lifecycle events included — delivering every event on a channel
    /// as it happens (UAP §4.5). The turn and state are the same as `generate`'s.
    pub async fn stream(
        &self,
        input: Option<Message>,
        state: AgentState,
        budget: Arc<Budget>,
        cancel: watch::Receiver<bool>,
        events: mpsc::UnboundedSender<Event>,
    ) -> super::outcome::RunOutcome {
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
        let start = super::run::RunStart {
            opening: input.into_iter().collect(),
            ..Default::default()
        };
        super::run::drive(self, start, state, &ctx).await
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
