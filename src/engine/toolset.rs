//! An agent's tools as the engine sees them. Most act on the world (`Plain`); the engine's
//! own act on the run — `ask_user` can pause it, a sub-agent runs an agent one level deeper,
//! a handoff gives the conversation away — and report that as a typed [`ToolEffect`].

use std::collections::HashMap;

use super::agent::AgentTool;
use super::effect::ToolEffect;
use super::scheduler::{Called, Dispatch};
use super::subagent::CallerRun;
use crate::provider::{BoxFuture, ToolCall};
use crate::tools::ToolContext;

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
