//! The agent (UAP §4) and the types that refer back to it: its tools (a sub-agent or
//! handoff tool builds another agent), its strategy and the run context it executes in
//! (a reload swaps in a new agent). They live together so that no engine module imports
//! one that imports it back; their behaviour lives above: the driver (`run.rs`:
//! `generate`, `stream`, `ask`, `query`), sub-agents (`subagent.rs`), the turn's tool
//! dispatch (`toolset.rs`) and the strategies. It knows nothing of YAML; `crate::compile`
//! builds an agent from an agent file.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};
use tokio::sync::watch;

use super::budget::{Budget, ChainPrices, LimitHit, PricedModel, RunLimits};
use super::checkpointing::Checkpointer;
use super::context::HistoryEstimate;
use super::error_code::ErrorCode;
use super::events::{Emitter, Notice};
use super::middleware::Middleware;
use super::pending::Pending;
use super::request_params::RequestParams;
use super::state::AgentState;
use super::stop_when::StopWhen;
use super::xml_turn::XmlTools;
use crate::policy::ToolPolicy;
use crate::provider::history::History;
use crate::provider::{BoxFuture, Message, Provider, ToolSpec, Usage};
use crate::sync::lock;
use crate::tools::{ArgsValidator, AskUserTool, Tool};

/// A runnable agent.
pub struct Agent {
    /// The agent's stable id (UAP §3.4): from its file and name (`spec::agent_id`).
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    /// The rendered system prompt.
    pub system: Option<String>,
    pub provider: Arc<dyn Provider>,
    /// Prices of the provider's model and of its fallbacks, when known (enables cost).
    pub prices: ChainPrices,
    /// The sampling parameters the file sets for the model (`model.params`), as its model
    /// calls' events report them.
    pub request_params: RequestParams,
    /// The agent's own bounds, for its own run (the callers' bounds hold as well).
    pub limits: RunLimits,
    pub tools: Vec<AgentTool>,
    /// Tool name → tool names it waits for within a turn.
    pub depends_on: HashMap<String, Vec<String>>,
    /// Tools the file makes run alone within a turn (`ask_user`, handoffs and tools that
    /// say so themselves run alone anyway).
    pub sequential: HashSet<String>,
    /// Whether the model may order one reply's calls with an `after` argument (UAP §8.6).
    pub model_order: bool,
    pub strategy: Arc<dyn ExecutionStrategy>,
    pub middleware: Vec<Arc<dyn Middleware>>,
    /// How the history is kept inside the model's window (`None`: it is not).
    pub context: Option<crate::engine::context::ContextPolicy>,
    /// The final answer must match this JSON Schema.
    pub output_schema: Option<Value>,
    /// At most this many tool calls at once (`None`: all of a turn).
    pub parallel_tools: Option<usize>,
    /// At most this many tool calls of one reply run; the rest get a tool error.
    pub max_calls_per_turn: usize,
    pub stop_when: Option<StopWhen>,
    /// How often the model may retry a structured answer that does not match.
    pub structured_retries: u32,
    /// Whether a cut-off or empty final answer fails the run or is a warning.
    pub answer_policy: AnswerPolicy,
    /// Handoff tool name → the agent that takes over.
    pub handoffs: HashMap<String, Arc<dyn AgentFactory>>,
    /// Set when tools are offered as XML in the text (`tool_protocol: xml`).
    pub xml_tools: Option<XmlTools>,
    /// Which calls run, who approves, what is redacted; `None`: the caller's (a sub-agent or
    /// handoff target without `permissions` of its own), or none at the top.
    pub policy: Option<Arc<ToolPolicy>>,
    /// The tools as offered to the model, made at the first call and shared by every
    /// request after it (`tools` does not change once the agent runs). A new agent's is
    /// `OfferedTools::default()`.
    pub offered: OfferedTools,
}

/// An agent's tools as offered to the model ([`AgentTool::offered`]), and their estimated
/// size in tokens, each made once.
#[derive(Debug, Default)]
pub struct OfferedTools {
    specs: OnceLock<Arc<[ToolSpec]>>,
    tokens: OnceLock<u64>,
}

impl OfferedTools {
    pub(crate) fn specs(&self, tools: &[AgentTool], model_order: bool) -> &Arc<[ToolSpec]> {
        self.specs
            .get_or_init(|| tools.iter().map(|tool| tool.offered(model_order)).collect())
    }

    /// The estimated size of `specs` (which [`OfferedTools::specs`] made).
    pub(crate) fn tokens(&self, specs: &[ToolSpec]) -> u64 {
        *self
            .tokens
            .get_or_init(|| crate::engine::context::estimate_tools(specs))
    }
}

/// What a final answer's problems do: `true` fails the run, `false` makes a warning.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AnswerPolicy {
    /// The model stopped at its length limit (`finish_reason: length`).
    pub fail_truncated: bool,
    /// The answer is empty or only whitespace.
    pub fail_empty: bool,
}

impl AnswerPolicy {
    /// What fails under either policy: a handoff target answers under the stricter of its
    /// own `answer` and the root's.
    pub fn stricter(self, other: AnswerPolicy) -> AnswerPolicy {
        AnswerPolicy {
            fail_truncated: self.fail_truncated || other.fail_truncated,
            fail_empty: self.fail_empty || other.fail_empty,
        }
    }
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
    pub reload: Option<Arc<dyn Reloader>>,
    /// The policy of the agent that called this one, for an agent without its own.
    pub policy: Option<Arc<ToolPolicy>>,
    /// The run directory, where hooks' stderr goes (`hooks.log`); `None` for a run that
    /// keeps no files.
    pub run_dir: Option<std::path::PathBuf>,
    /// The last step number given out in this run (shared by a handoff's agents and the
    /// parallel branches of a plan, so numbers never repeat).
    steps: Arc<AtomicU64>,
    /// The estimated size of the history the last call sent (a handoff's agents continue
    /// it; a sub-agent has its own).
    history_estimate: Arc<std::sync::Mutex<HistoryEstimate>>,
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
            policy: None,
            run_dir: None,
            steps: Arc::default(),
            history_estimate: Arc::default(),
        }
    }

    /// The context of a sub-agent's run: its own events one level deeper, its own step
    /// numbers and its own budget under the caller's, no checkpoints or reloads; the same
    /// stop signal and warnings, and the caller's policy unless the agent has its own.
    pub fn child(&self, agent: &Agent) -> Self {
        RunContext {
            policy: self.policy_for(agent),
            emitter: self.emitter.child((&agent.name, &agent.id)),
            budget: Arc::new(Budget::child(&self.budget, agent.limits.clone())),
            checkpoints: None,
            reload: None,
            steps: Arc::default(),
            history_estimate: Arc::default(),
            ..self.clone()
        }
    }

    /// The estimated size of `history`, in tokens; only what this run added to it since the
    /// last estimate is estimated ([`HistoryEstimate`]).
    pub(crate) fn history_size(&self, history: &History) -> u64 {
        lock(&self.history_estimate).of(history)
    }

    /// The same run with `agent` in control (the root, or the target of a handoff).
    pub fn for_agent(&self, agent: &Agent) -> Self {
        RunContext {
            emitter: self.emitter.handed_off((&agent.name, &agent.id)),
            ..self.clone()
        }
    }

    /// The same run with `agent`'s own limits holding as well as the current ones.
    pub fn bounded_by(self, agent: &Agent) -> Self {
        RunContext {
            budget: Arc::new(Budget::child(&self.budget, agent.limits.clone())),
            ..self
        }
    }

    /// The policy `agent`'s calls go through: its own, else its caller's.
    pub fn policy_for(&self, agent: &Agent) -> Option<Arc<ToolPolicy>> {
        match (&agent.policy, &self.policy) {
            (Some(own), Some(caller)) => Some(own.inheriting(caller)),
            (Some(own), None) => Some(own.clone()),
            (None, caller) => caller.clone(),
        }
    }

    /// The same run, agents without a policy of their own following `agent`'s.
    pub fn governed_by(self, agent: &Agent) -> Self {
        RunContext {
            policy: self.policy_for(agent),
            ..self
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

    /// Notes a problem that does not stop the run: in its `warnings`, and told to the
    /// person watching.
    pub fn warn(&self, message: String) {
        self.emitter.notify(Notice::Warning(message.clone()));
        lock(&self.warnings).push(message);
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
}

/// Why a strategy gave control back to the driver without a halt: the one way a strategy
/// says it is done, so the driver (`run.rs`) follows each case in one place.
pub enum StrategyEnd {
    /// The agent answered: the run is over.
    Answered(Turn),
    /// The agent called this handoff tool: the agent behind it takes over.
    HandedOff(String),
    /// A new definition of the root agent was saved (`exec --watch`): it takes over from
    /// the same state.
    Reloaded(Box<Agent>),
}

impl From<Turn> for StrategyEnd {
    fn from(turn: Turn) -> Self {
        StrategyEnd::Answered(turn)
    }
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
    Failed { code: ErrorCode, message: String },
    /// SIGINT/SIGTERM (exit 130).
    Interrupted,
    /// `ask_user` found no answer, here or in a sub-agent: the run pauses until `runner
    /// resume --answer` (exit 4). The asking call's result is missing; the answer becomes it.
    InputRequired(Box<Pending>),
}

impl Halt {
    pub fn new(state: AgentState, reason: HaltReason) -> Self {
        Halt {
            state: Box::new(state),
            reason,
        }
    }

    pub fn failed(state: AgentState, code: ErrorCode, message: impl Into<String>) -> Self {
        Halt::new(
            state,
            HaltReason::Failed {
                code,
                message: message.into(),
            },
        )
    }
}

pub type GenerateResult = Result<(Turn, AgentState), Halt>;

/// How a strategy ends: why it gave control back, and the state then; or a halt.
pub type StrategyResult = Result<(StrategyEnd, AgentState), Halt>;

/// A strategy runs an agent from a state until it answers, hands the conversation over,
/// a reload takes over, or it halts.
pub trait ExecutionStrategy: Send + Sync {
    fn name(&self) -> &str;
    fn execute<'a>(
        &'a self,
        agent: &'a Agent,
        state: AgentState,
        ctx: &'a RunContext,
    ) -> BoxFuture<'a, StrategyResult>;
}

/// One tool of an agent.
#[derive(Clone)]
pub enum AgentTool {
    Plain(Arc<dyn Tool>),
    AskUser(Arc<AskUserTool>),
    SubAgent(Arc<SubAgentTool>),
    /// A remote agent (A2A) used as a tool.
    Remote(Arc<RemoteAgentTool>),
    Handoff(Arc<HandoffTool>),
    /// A client-side tool: its calls wait for the output the program running the agent
    /// submits.
    External(Arc<super::external::ExternalTool>),
}

impl From<Arc<dyn Tool>> for AgentTool {
    fn from(tool: Arc<dyn Tool>) -> Self {
        AgentTool::Plain(tool)
    }
}

impl AgentTool {
    pub fn name(&self) -> &str {
        match self {
            AgentTool::Plain(tool) => tool.name(),
            AgentTool::AskUser(tool) => tool.name(),
            AgentTool::SubAgent(tool) => &tool.name,
            AgentTool::Remote(tool) => &tool.name,
            AgentTool::Handoff(tool) => &tool.name,
            AgentTool::External(tool) => &tool.name,
        }
    }

    pub fn description(&self) -> &str {
        match self {
            AgentTool::Plain(tool) => tool.description(),
            AgentTool::AskUser(tool) => tool.description(),
            AgentTool::SubAgent(tool) => &tool.description,
            AgentTool::Remote(tool) => &tool.description,
            AgentTool::Handoff(tool) => &tool.description,
            AgentTool::External(tool) => &tool.description,
        }
    }

    pub fn parameters(&self) -> &Value {
        match self {
            AgentTool::Plain(tool) => tool.parameters(),
            AgentTool::AskUser(tool) => tool.parameters(),
            AgentTool::SubAgent(tool) => &tool.parameters,
            AgentTool::Remote(tool) => &tool.parameters,
            AgentTool::Handoff(tool) => tool.parameters(),
            AgentTool::External(tool) => &tool.parameters,
        }
    }

    /// Whether other calls of the turn wait while it runs.
    pub fn sequential(&self) -> bool {
        match self {
            AgentTool::Plain(tool) => tool.sequential(),
            AgentTool::SubAgent(tool) => tool.sequential,
            AgentTool::Remote(tool) => tool.sequential,
            AgentTool::AskUser(_) | AgentTool::Handoff(_) => true,
            // Nothing runs here: it waits beside the others.
            AgentTool::External(_) => false,
        }
    }

    /// Whether running the call again after a power cut does no harm: a plain tool that
    /// says it is idempotent (read-only tools, idempotent writes). Sub-agents act through
    /// their own tools, and a person should not be asked twice.
    pub fn rerun_harmless(&self) -> bool {
        match self {
            AgentTool::Plain(tool) => tool.idempotent(),
            // It runs nothing here, so a call lost in a power cut had no effect to repeat.
            AgentTool::External(_) => true,
            AgentTool::AskUser(_)
            | AgentTool::SubAgent(_)
            | AgentTool::Remote(_)
            | AgentTool::Handoff(_) => false,
        }
    }

    /// The tool as offered to the model.
    pub fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name().to_string(),
            description: self.description().to_string(),
            parameters: self.parameters().clone(),
        }
    }

    /// The tool as offered to the model of an agent that lets it order its calls
    /// (`model_order`): with an `after` parameter, unless the tool has one of its own.
    pub fn offered(&self, model_order: bool) -> ToolSpec {
        match model_order {
            true => super::call_order::offer_after(self.spec()),
            false => self.spec(),
        }
    }
}

/// Builds an agent when it is needed (the compile layer implements it from agent files).
pub trait AgentFactory: Send + Sync {
    /// The agent's name.
    fn name(&self) -> &str;
    /// Builds the agent; `inherited` is the caller's model, used when the agent has none.
    fn build(&self, inherited: &PricedModel) -> Result<Agent, BuildError>;
}

/// The reason of the layer that builds agents, kept whole (its text and its source).
pub type Reason = Box<dyn std::error::Error + Send + Sync>;

/// Why an [`AgentFactory`] could not build its agent. Its text is the reason alone: the
/// engine says which agent (a sub-agent's tool error, a failed handoff).
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The agent's own inputs do not resolve (a default that is not of its type).
    #[error(transparent)]
    Inputs(Reason),
    /// The agent does not compile (its model, a tool, a template).
    #[error(transparent)]
    Compile(Reason),
}

impl Agent {
    /// The tools whose calls carry the runner's `after` argument: every tool without an
    /// `after` parameter of its own, when the model may order calls; none otherwise.
    pub fn after_tools(&self) -> HashSet<String> {
        if !self.model_order {
            return HashSet::new();
        }
        self.tools
            .iter()
            .filter(|tool| !super::call_order::has_own_after(tool.parameters()))
            .map(|tool| tool.name().to_string())
            .collect()
    }

    /// This agent's model, as a sub-agent or handoff target would inherit it.
    pub fn model(&self) -> PricedModel {
        PricedModel {
            provider: self.provider.clone(),
            prices: self.prices.clone(),
            windows: self
                .context
                .as_ref()
                .map(|context| context.windows.clone())
                .unwrap_or_default(),
            params: self.request_params.clone(),
        }
    }
}

/// Renders a sub-agent's first message from the call's arguments.
pub trait PromptRenderer: Send + Sync {
    fn render(&self, arguments: &Value) -> Result<String, RenderError>;
}

/// Why a sub-agent's prompt could not be rendered from a call's arguments (the template's
/// error; the engine says which sub-agent).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct RenderError(pub Reason);

/// A sub-agent exposed as a tool.
pub struct SubAgentTool {
    pub name: String,
    pub description: String,
    pub parameters: Value,
    pub sequential: bool,
    pub validator: ArgsValidator,
    pub prompt: Arc<dyn PromptRenderer>,
    pub agent: Arc<dyn AgentFactory>,
}

/// A remote agent exposed as a tool.
pub struct RemoteAgentTool {
    pub name: String,
    pub description: String,
    pub parameters: Value,
    pub sequential: bool,
    pub validator: ArgsValidator,
    /// The message's text from the arguments; `None`: the arguments go as a data part.
    pub prompt: Option<Arc<dyn PromptRenderer>>,
    pub agent: Arc<dyn super::remote_port::RemoteAgent>,
}

/// A transfer of the conversation to another agent.
pub struct HandoffTool {
    pub name: String,
    pub description: String,
    pub target: Arc<dyn AgentFactory>,
    parameters: Value,
}

impl HandoffTool {
    pub fn new(name: String, description: String, target: Arc<dyn AgentFactory>) -> Self {
        HandoffTool {
            name,
            description,
            target,
            parameters: json!({"type": "object", "properties": {
                "reason": {"type": "string", "description": "Why the conversation is handed over."}
            }}),
        }
    }

    pub fn parameters(&self) -> &Value {
        &self.parameters
    }
}

/// What a reload poll found: the new agent and the keys that changed, or the diagnostics of
/// an invalid save.
pub type ReloadOutcome = Result<(Agent, Vec<String>), Vec<String>>;

/// Hot reload at step boundaries: the engine asks after each step of the root agent whether
/// a new definition is ready.
pub trait Reloader: Send + Sync {
    /// `Some(Ok((agent, changes)))`: swap in `agent` (`changes` names what differs);
    /// `Some(Err(diagnostics))`: the saved file is invalid, keep running the old one;
    /// `None`: nothing changed.
    fn poll(&self) -> Option<ReloadOutcome>;
}
