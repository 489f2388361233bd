//! An agent's tools as the engine sees them. Most act on the world (`Plain`); the engine's
//! own act on the run — `ask_user` can pause it, a sub-agent runs an agent one level deeper,
//! a handoff gives the conversation away — and report that as a typed [`ToolEffect`].

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::agent::AgentTool;
use super::effect::ToolEffect;
use super::events::{PermissionDecided, ToolProgressed, UserInputProvided};
use super::scheduler::{Authorization, Called, Dispatch};
use super::subagent::CallerRun;

use crate::policy::{ApprovalRequest, Decider, Decision, ToolPolicy, Verdict};
use crate::provider::{BoxFuture, ToolCall};
use crate::tools::{AskUserTool, Asked, ProgressSink, ToolContext, ToolOutput, ToolProgress};

/// One turn's tools, bound to the calling run and the policy its calls go through.
pub struct TurnTools {
    tools: HashMap<String, AgentTool>,
    caller: CallerRun,
    policy: Arc<ToolPolicy>,
    /// Calls a person approved on `runner resume`: they run without being decided again.
    approved: HashSet<String>,
}

impl TurnTools {
    pub fn new(tools: &[AgentTool], caller: CallerRun) -> Self {
        let policy = caller.ctx.policy.clone().unwrap_or_else(ToolPolicy::open);
        TurnTools {
            tools: tools
                .iter()
                .map(|tool| (tool.name().to_string(), tool.clone()))
                .collect(),
            caller,
            policy,
            approved: HashSet::new(),
        }
    }

    /// The same tools, the calls with these ids approved already.
    pub fn approving(mut self, call_ids: impl IntoIterator<Item = String>) -> Self {
        self.approved.extend(call_ids);
        self
    }

    /// Announces a decision and notes it in the call's result.
    fn decided(&self, call: &ToolCall, decision: &Decision) -> Map<String, Value> {
        self.caller.ctx.emitter.emit(PermissionDecided {
            step_id: self.caller.step_id.clone(),
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            decision: decision.verdict,
            rule: decision.rule.clone(),
            by: decision.by,
            reason: decision.reason.clone(),
        });
        let note = json!({"decision": decision.verdict, "rule": decision.rule, "by": decision.by});
        Map::from_iter([("permission".to_string(), note)])
    }
}

impl Dispatch for TurnTools {
    fn sequential(&self, name: &str) -> Option<bool> {
        self.tools.get(name).map(AgentTool::sequential)
    }

    fn origin(&self, name: &str) -> Map<String, Value> {
        match self.tools.get(name) {
            Some(AgentTool::Plain(tool)) => tool.origin(),
            _ => Map::new(),
        }
    }

    fn authorize(&self, call: &ToolCall) -> Authorization {
        let Some(tool) = self.tools.get(&call.name) else {
            return Authorization::Run(Map::new());
        };
        if self.approved.contains(&call.id) {
            let note = json!({"decision": Verdict::Allow, "by": Decider::Resume});
            return Authorization::Run(Map::from_iter([("permission".to_string(), note)]));
        }
        let normalized = match tool {
            AgentTool::Plain(tool) => tool.policy_arguments(&call.arguments),
            _ => None,
        };
        let arguments = normalized.as_ref().unwrap_or(&call.arguments);
        let Some(mut decision) = self.policy.rule(&call.name, arguments) else {
            return Authorization::Run(Map::new());
        };
        let mut note = self.decided(call, &decision);
        if decision.verdict == Verdict::Ask {
            // Announced first, so progress on a terminal makes way for the question.
            decision = self.policy.approve(&ApprovalRequest {
                tool: &call.name,
                call_id: &call.id,
                arguments: &call.arguments,
                rule: &decision.rule,
            });
            if decision.verdict != Verdict::Ask {
                note = self.decided(call, &decision);
            }
        }
        match decision.verdict {
            Verdict::Allow => Authorization::Run(note),
            Verdict::Deny => {
                let reason = decision.reason.unwrap_or_else(|| "denied".into());
                let mut output = ToolOutput::error(reason);
                output.metadata.extend(note);
                Authorization::Refuse(output)
            }
            Verdict::Ask => Authorization::Wait(ToolEffect::ApprovalRequired {
                rule: decision.rule,
            }),
        }
    }

    fn redact(&self, output: ToolOutput) -> ToolOutput {
        self.policy.redactor.redact(output)
    }

    fn start(&self, call: &ToolCall, context: ToolContext) -> BoxFuture<'static, Called> {
        let Some(tool) = self.tools.get(&call.name).cloned() else {
            return Box::pin(async { crate::tools::ToolOutput::error("unknown tool").into() });
        };
        let (arguments, caller) = (call.arguments.clone(), self.caller.clone());
        let context = context.with_progress(progress_events(&caller, call));
        Box::pin(async move {
            match tool {
                AgentTool::Plain(tool) => tool.call(arguments, &context).await.into(),
                AgentTool::AskUser(tool) => ask(&tool, &arguments, &caller, &context.call_id),
                AgentTool::SubAgent(tool) => tool.run(arguments, &caller, &context.call_id).await,
                AgentTool::Handoff(tool) => tool.hand_over(),
            }
        })
    }
}

/// A call's progress as `agent.tool.progress` events, in the caller's step.
fn progress_events(caller: &CallerRun, call: &ToolCall) -> ProgressSink {
    let emitter = caller.ctx.emitter.clone();
    let (step_id, tool_call_id, tool_name) =
        (caller.step_id.clone(), call.id.clone(), call.name.clone());
    ProgressSink::new(move |progress: ToolProgress| {
        emitter.emit(ToolProgressed {
            step_id: step_id.clone(),
            tool_call_id: tool_call_id.clone(),
            tool_name: tool_name.clone(),
            progress: progress.progress,
            total: progress.total,
            message: progress.message,
        });
    })
}

/// Runs `ask_user`: an answer at hand (terminal, answers file) is recorded in the stream
/// inside the caller's step; none pauses the run on the question.
fn ask(tool: &AskUserTool, arguments: &Value, caller: &CallerRun, call_id: &str) -> Called {
    let asked = tool.ask(arguments);
    let output = asked.output();
    match asked {
        Asked::Invalid(_) => output.into(),
        Asked::Answered { question, answer } => {
            caller.ctx.emitter.emit(UserInputProvided {
                question: question.question,
                answer,
                tool_call_id: call_id.to_string(),
                step_id: Some(caller.step_id.clone()),
            });
            output.into()
        }
        Asked::Waiting(question) => Called {
            output,
            effect: Some(ToolEffect::InputRequired {
                question: question.question,
                id: question.id,
            }),
        },
    }
}
