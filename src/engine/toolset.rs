//! An agent's tools as the engine sees them. Most act on the world (`Plain`); the engine's
//! own act on the run — `ask_user` can pause it, a sub-agent runs an agent one level deeper,
//! a handoff gives the conversation away — and report that as a typed [`ToolEffect`].

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::agent::AgentTool;
use super::effect::ToolEffect;
use super::events::{OutputStream, ToolOutputLine, ToolProgressed, UserInputProvided};
use super::external::{ExternalCall, ExternalTool, SubmittedOutput};
use super::guard::CallGuard;
use super::scheduler::{Authorization, Called, Dispatch};
use super::subagent::CallerRun;

use crate::policy::ToolPolicy;
use crate::provider::{BoxFuture, ToolCall};
use crate::tools::{
    AskUserTool, Asked, FormRequest, OutputLine, OutputSink, ProgressSink, Stream, ToolContext,
    ToolOutput, ToolProgress,
};

/// One turn's tools, bound to the calling run and the policy its calls go through.
pub struct TurnTools {
    tools: HashMap<String, AgentTool>,
    caller: CallerRun,
    policy: Arc<ToolPolicy>,
    /// Calls a person approved on `runner resume`: they run without being decided again.
    approved: HashSet<String>,
    /// External calls whose outputs were submitted on `runner resume`, by call id: those
    /// outputs are their results.
    submitted: HashMap<String, Value>,
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
            submitted: HashMap::new(),
        }
    }

    /// The guardrails a call of a known tool goes through.
    fn guard<'a>(&'a self, call: &'a ToolCall) -> Option<CallGuard<'a>> {
        Some(CallGuard {
            policy: &self.policy,
            caller: &self.caller,
            tool: self.tools.get(&call.name)?,
            call,
            approved: self.approved.contains(&call.id),
        })
    }

    /// The same tools, the calls with these ids approved already.
    pub fn approving(mut self, call_ids: impl IntoIterator<Item = String>) -> Self {
        self.approved.extend(call_ids);
        self
    }

    /// The same tools, these external calls answered with the outputs submitted for them.
    pub fn submitting(mut self, outputs: &[SubmittedOutput]) -> Self {
        let outputs = outputs
            .iter()
            .map(|o| (o.call_id.clone(), o.output.clone()));
        self.submitted.extend(outputs);
        self
    }

    /// An external call's way through the guardrails: its arguments checked against its
    /// schema, then the rules and `pre_tool_use` hooks as for any call; one they let
    /// through waits for its output instead of running. A call whose output was submitted
    /// passed them when it was made: it goes on to its result.
    async fn authorize_external(
        &self,
        tool: &ExternalTool,
        guard: CallGuard<'_>,
        call: &ToolCall,
    ) -> Authorization {
        if self.submitted.contains_key(&call.id) {
            return Authorization::Run {
                note: Map::new(),
                arguments: None,
            };
        }
        if let ExternalCall::Invalid(error) = tool.called(&call.arguments) {
            return Authorization::Refuse(error);
        }
        match guard.authorize().await {
            Authorization::Run { arguments, .. } => {
                let arguments = arguments.map(Arc::unwrap_or_clone);
                Authorization::Wait(ToolEffect::OutputRequired { arguments })
            }
            other => other,
        }
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

    fn authorize<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, Authorization> {
        Box::pin(async move {
            match self.guard(call) {
                Some(guard) => match guard.tool {
                    AgentTool::External(tool) => self.authorize_external(tool, guard, call).await,
                    _ => guard.authorize().await,
                },
                None => Authorization::Run {
                    note: Map::new(),
                    arguments: None,
                },
            }
        })
    }

    fn after<'a>(&'a self, call: &'a ToolCall, output: ToolOutput) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            match self.guard(call) {
                Some(guard) => guard.after(output).await,
                None => output,
            }
        })
    }

    fn redact(&self, output: ToolOutput) -> ToolOutput {
        self.policy.redactor.redact(output)
    }

    fn start(&self, call: &ToolCall, context: ToolContext) -> BoxFuture<'static, Called> {
        let Some(tool) = self.tools.get(&call.name).cloned() else {
            return Box::pin(async { crate::tools::ToolOutput::error("unknown tool").into() });
        };
        if let AgentTool::External(_) = tool {
            let output = match self.submitted.get(&call.id) {
                Some(output) => ToolOutput::ok(output.clone()),
                None => ToolOutput::error("no output was submitted for this call"),
            };
            return Box::pin(async { output.into() });
        }
        // The one copy of the arguments a call makes: the tool takes them as its own.
        let (arguments, caller) = (Value::clone(&call.arguments), self.caller.clone());
        let context = context
            .with_progress(progress_events(&caller, call))
            .with_output(output_events(&caller, call, self.policy.clone()));
        Box::pin(async move {
            match tool {
                AgentTool::Plain(tool) => {
                    let output = tool.call(arguments, &context).await;
                    match context.waiting_form() {
                        Some(form) => waiting_for(form, output),
                        None => output.into(),
                    }
                }
                AgentTool::AskUser(tool) => ask(&tool, &arguments, &caller, &context.call_id),
                // Boxed: their futures are large, and inline they would make every call's
                // future as large (moved whole into its box, for a `list_dir` too).
                AgentTool::SubAgent(tool) => {
                    Box::pin(tool.run(arguments, &caller, &context.call_id)).await
                }
                AgentTool::Remote(tool) => {
                    Box::pin(tool.run(arguments, &caller, &context.call_id)).await
                }
                AgentTool::Handoff(tool) => tool.hand_over(),
                // Answered above, from the submitted outputs.
                AgentTool::External(_) => ToolOutput::error("not run here").into(),
            }
        })
    }
}

/// A call whose service waits for a form: its result says so (what the service answered
/// to the "cancel" it heard is of no use), and the run pauses on the form.
fn waiting_for(form: FormRequest, output: ToolOutput) -> Called {
    let message = format!(
        "not finished: MCP server `{}` needs a form filled in; the call is made again once it is answered",
        form.server
    );
    let mut waiting = ToolOutput::error(message);
    waiting.metadata = output.metadata;
    Called {
        output: waiting,
        effect: Some(ToolEffect::FormRequired(form)),
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

/// The lines a call's program prints as `agent.tool.output` events, in the caller's step
/// (so at its depth), each redacted as the call's result will be.
fn output_events(caller: &CallerRun, call: &ToolCall, policy: Arc<ToolPolicy>) -> OutputSink {
    let emitter = caller.ctx.emitter.clone();
    let (step_id, tool_call_id, tool_name) =
        (caller.step_id.clone(), call.id.clone(), call.name.clone());
    OutputSink::new(move |output: OutputLine| {
        let line = output
            .line
            .map(|line| policy.redactor.redact_text(&line).unwrap_or(line));
        emitter.emit(ToolOutputLine {
            step_id: step_id.clone(),
            tool_call_id: tool_call_id.clone(),
            tool_name: tool_name.clone(),
            stream: match output.stream {
                Stream::Stdout => OutputStream::Stdout,
                Stream::Stderr => OutputStream::Stderr,
            },
            line,
            skipped: output.skipped,
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
