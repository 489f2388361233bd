//! Building an [`Agent`] in code, part by part, with the defaults an agent file has: the
//! `loop` strategy, no middleware, all of a turn's tool calls at once, two retries for a
//! structured answer that does not match.
//!
//! ```
//! use std::sync::Arc;
//! use runner::{Agent, ScriptedProvider};
//!
//! // Any provider; the scripted one answers from a list (here, none).
//! let provider = Arc::new(ScriptedProvider::new("m", Vec::new()));
//! let agent = Agent::builder("reviewer", provider)
//!     .system("You review diffs.")
//!     .build();
//! assert_eq!(agent.name, "reviewer");
//! ```

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::agent::{Agent, AgentFactory, AgentTool, ExecutionStrategy, HandoffTool};
use super::budget::{ChainPrices, Price, RunLimits};
use super::middleware::Middleware;
use super::stop_when::StopWhen;
use super::strategy::LoopStrategy;
use crate::provider::Provider;

/// `execution.max_calls_per_turn` when the file does not say.
pub const DEFAULT_MAX_CALLS_PER_TURN: usize = 256;

/// `output.retries` when the file does not say.
pub const DEFAULT_STRUCTURED_RETRIES: u32 = 2;

/// An agent under construction; [`AgentBuilder::build`] finishes it.
pub struct AgentBuilder {
    agent: Agent,
}

impl Agent {
    /// Starts an agent named `name` that talks to `provider`.
    pub fn builder(name: impl Into<String>, provider: Arc<dyn Provider>) -> AgentBuilder {
        let name = name.into();
        AgentBuilder {
            agent: Agent {
                id: crate::spec::agent_id::unwritten_agent_id(&name),
                name,
                description: None,
                system: None,
                provider,
                prices: ChainPrices::default(),
                request_params: Default::default(),
                limits: RunLimits::default(),
                tools: Vec::new(),
                depends_on: HashMap::new(),
                sequential: Default::default(),
                model_order: false,
                strategy: Arc::new(LoopStrategy::default()),
                middleware: Vec::new(),
                context: None,
                output_schema: None,
                parallel_tools: None,
                max_calls_per_turn: DEFAULT_MAX_CALLS_PER_TURN,
                stop_when: None,
                structured_retries: DEFAULT_STRUCTURED_RETRIES,
                answer_policy: Default::default(),
                handoffs: HashMap::new(),
                xml_tools: None,
                policy: None,
                offered: Default::default(),
            },
        }
    }
}

impl AgentBuilder {
    /// Which calls run, who approves the ones that ask, what is redacted from results.
    pub fn policy(mut self, policy: crate::policy::ToolPolicy) -> Self {
        self.agent.policy = Some(Arc::new(policy));
        self
    }

    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.agent.description = Some(text.into());
        self
    }

    /// The system prompt, as rendered.
    pub fn system(mut self, text: impl Into<String>) -> Self {
        self.agent.system = Some(text.into());
        self
    }

    /// The model's prices, so the run reports its cost.
    pub fn price(mut self, price: Price) -> Self {
        self.agent.prices = ChainPrices::single(Some(price));
        self
    }

    /// The agent's own bounds (its callers' hold as well).
    pub fn limits(mut self, limits: RunLimits) -> Self {
        self.agent.limits = limits;
        self
    }

    /// Adds a tool: any `Arc<dyn Tool>`, or one of the engine's own (`AgentTool`).
    pub fn tool(mut self, tool: impl Into<AgentTool>) -> Self {
        self.agent.tools.push(tool.into());
        self
    }

    /// Within a turn, `tool` waits for the calls of `after` to finish.
    pub fn depends_on(mut self, tool: &str, after: Vec<String>) -> Self {
        self.agent.depends_on.insert(tool.to_string(), after);
        self
    }

    /// Within a turn, the calls of `tool` run alone: other calls wait for them.
    pub fn sequential(mut self, tool: &str) -> Self {
        self.agent.sequential.insert(tool.to_string());
        self
    }

    /// Lets the model order one reply's calls with an `after` argument (UAP §8.6).
    pub fn model_order(mut self, enabled: bool) -> Self {
        self.agent.model_order = enabled;
        self
    }

    /// Adds a handoff: the model's call of the tool `tool` gives the conversation to the
    /// agent `target` builds.
    pub fn handoff(mut self, tool: &str, description: &str, target: Arc<dyn AgentFactory>) -> Self {
        let handoff = HandoffTool::new(tool.into(), description.into(), target.clone());
        self.agent.tools.push(AgentTool::Handoff(Arc::new(handoff)));
        self.agent.handoffs.insert(tool.to_string(), target);
        self
    }

    pub fn strategy(mut self, strategy: Arc<dyn ExecutionStrategy>) -> Self {
        self.agent.strategy = strategy;
        self
    }

    /// Adds a middleware around every model call (`before` runs in the order added).
    pub fn middleware(mut self, middleware: Arc<dyn Middleware>) -> Self {
        self.agent.middleware.push(middleware);
        self
    }

    /// The final answer must be JSON matching this schema.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.agent.output_schema = Some(schema);
        self
    }

    /// At most `limit` tool calls of a turn at once.
    pub fn parallel_tools(mut self, limit: usize) -> Self {
        self.agent.parallel_tools = Some(limit);
        self
    }

    pub fn stop_when(mut self, stop_when: StopWhen) -> Self {
        self.agent.stop_when = Some(stop_when);
        self
    }

    /// How often the model may retry a structured answer that does not match.
    pub fn structured_retries(mut self, retries: u32) -> Self {
        self.agent.structured_retries = retries;
        self
    }

    pub fn build(self) -> Agent {
        self.agent
    }
}
