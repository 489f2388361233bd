//! An agent's tools as the engine sees them. Most act on the world (`Plain`); the engine's
//! own act on the run — `ask_user` can pause it, a sub-agent runs an agent one level deeper,
//! a handoff gives the conversation away — and report that as a typed [`ToolEffect`].

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::agent::RunContext;
use super::effect::ToolEffect;
use super::scheduler::{Called, Dispatch};
use super::subagent::{HandoffTool, SubAgentTool};
use crate::provider::{BoxFuture, Provider, ToolCall, ToolSpec};
use crate::tools::{AskUserTool, Tool, ToolContext};

/// One tool of an agent.
#[derive(Clone)]
pub enum AgentTool {
    Plain(Arc<dyn Tool>),
    AskUser(Arc<AskUserTool>),
    SubAgent(Arc<SubAgentTool>),
    Handoff(Arc<HandoffTool>),
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
            AgentTool::Handoff(tool) => &tool.name,
        }
    }

    pub fn description(&self) -> &str {
        match self {
            AgentTool::Plain(tool) => tool.description(),
            AgentTool::AskUser(tool) => tool.description(),
            AgentTool::SubAgent(tool) => &tool.description,
            AgentTool::Handoff(tool) => &tool.description,
        }
    }

    pub fn parameters(&self) -> &Value {
        match self {
            AgentTool::Plain(tool) => tool.parameters(),
            AgentTool::AskUser(tool) => tool.parameters(),
            AgentTool::SubAgent(tool) => &tool.parameters,
            AgentTool::Handoff(tool) => tool.parameters(),
        }
    }

    /// Whether other calls of the turn wait while it runs.
    pub fn sequential(&self) -> bool {
        match self {
            AgentTool::Plain(tool) => tool.sequential(),
            AgentTool::SubAgent(tool) => tool.sequential,
            AgentTool::AskUser(_) | AgentTool::Handoff(_) => true,
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
}

/// The calling run, as the engine's own tools need it.
#[derive(Clone)]
pub struct CallerRun {
    pub ctx: RunContext,
    pub step_id: String,
    /// The calling agent's model, inherited by sub-agents without one.
    pub provider: Arc<dyn Provider>,
}

/// One turn's tools, bound to the calling run.
pub struct TurnTools {
    tools: HashMap<String, AgentTool>,
    caller: CallerRun,
}

impl TurnTools {
    pub fn new(tools: &[AgentTool], caller: CallerRun) -> Self {
        TurnTools {
            tools: tools
                .iter()
                .map(|tool| (tool.name().to_string(), tool.clone()))
                .collect(),
            caller,
        }
    }
}

impl Dispatch for TurnTools {
    fn sequential(&self, name: &str) -> Option<bool> {
        self.tools.get(name).map(AgentTool::sequential)
    }

    fn start(&self, call: &ToolCall, context: ToolContext) -> BoxFuture<'static, Called> {
        let Some(tool) = self.tools.get(&call.name).cloned() else {
            return Box::pin(async { crate::tools::ToolOutput::error("unknown tool").into() });
        };
        let (arguments, caller) = (call.arguments.clone(), self.caller.clone());
        Box::pin(async move {
            match tool {
                AgentTool::Plain(tool) => tool.call(arguments, &context).await.into(),
                AgentTool::AskUser(tool) => match tool.ask(&arguments) {
                    Ok(output) => output.into(),
                    Err((output, question)) => Called {
                        output,
                        effect: Some(ToolEffect::InputRequired {
                            question: question.question,
                            id: question.id,
                        }),
                    },
                },
                AgentTool::SubAgent(tool) => tool.run(arguments, &caller, &context.call_id).await,
                AgentTool::Handoff(tool) => tool.hand_over(),
            }
        })
    }
}
