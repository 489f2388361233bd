//! Remote agents as tools: a sub-agent that runs elsewhere (an A2A agent).
//!
//! The engine knows only the [`RemoteAgent`] port: send a message (a new task, or a
//! follow-up on a task that asked a question), hear its status updates, get its answer;
//! cancel a task. The compile layer plugs the A2A client in. A call runs one level below
//! its caller: `agent.sub_agent.invocation.started`/`completed` (with `remote`: the URL)
//! frame it in the caller's step, and each status update of the remote task is an
//! `agent.tool.progress` event at the caller's depth + 1.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::agent::PromptRenderer;
use super::clock::now_ms;
use super::effect::ToolEffect;
use super::events::{Emitter, SubAgentCompleted, SubAgentStarted, ToolProgressed};
use super::scheduler::Called;
use super::subagent::CallerRun;
use super::trace::SubagentTrace;
use crate::provider::BoxFuture;
use crate::tools::{ArgsValidator, ToolOutput};

/// The most characters a message sent to a remote agent may have.
pub const MAX_MESSAGE_CHARS: usize = 1 << 20;

/// What is sent: the text, or the call's arguments as data (then `text` is their JSON),
/// and the task it continues (an answer to its question).
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteRequest {
    pub text: String,
    pub data: Option<Value>,
    pub task: Option<RemoteTask>,
}

/// A remote task, by its ids.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RemoteTask {
    pub task_id: String,
    pub context_id: String,
}

/// One status update of the remote task.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteUpdate {
    pub task: RemoteTask,
    /// The state as A2A spells it, e.g. `TASK_STATE_WORKING`.
    pub state: String,
    /// The text of its message, if it has one.
    pub message: Option<String>,
}

/// How a remote call ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RemoteReply {
    /// The answer: the artifacts' text, or their data.
    Completed(Value),
    /// `failed`, `rejected`, `canceled`: the remote agent's message.
    Failed { state: String, message: String },
    /// The remote agent asks a question; the task waits for a follow-up message.
    InputRequired { task: RemoteTask, question: String },
}

/// Where status updates go while a call runs.
pub type UpdateSink<'a> = &'a (dyn Fn(RemoteUpdate) + Send + Sync);

/// A remote agent (the compile layer implements it over A2A).
pub trait RemoteAgent: Send + Sync {
    /// Where it is (shown in events, never with credentials).
    fn url(&self) -> &str;
    /// Sends a message and follows the task until it ends or waits. `Err`: the call itself
    /// failed (unreachable, not A2A, too large).
    fn send<'a>(
        &'a self,
        request: RemoteRequest,
        updates: UpdateSink<'a>,
    ) -> BoxFuture<'a, Result<RemoteReply, String>>;
    /// Cancels the task, for a call the run gave up on (its time limit, an interrupt).
    /// Blocking: it is called while the call is being dropped, and must be bounded.
    fn cancel_blocking(&self, task_id: &str);
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
    pub agent: Arc<dyn RemoteAgent>,
}

impl RemoteAgentTool {
    /// Runs one call: checks the arguments and the depth bound, renders the message, sends
    /// it and follows the remote task.
    pub async fn run(&self, arguments: Value, caller: &CallerRun, call_id: &str) -> Called {
        if let Err(invalid) = self.validator.check(&arguments) {
            return invalid.into();
        }
        let depth = caller.ctx.emitter.depth + 1;
        if let Some(max) = caller.ctx.budget.max_depth().filter(|max| depth > *max) {
            let message = format!(
                "`{}` was not started: it would run at depth {depth}, deeper than limits.max_depth = {max}",
                self.name
            );
            return ToolOutput::error(message).into();
        }
        let request = match &self.prompt {
            Some(prompt) => match prompt.render(&arguments) {
                Ok(text) => RemoteRequest {
                    text,
                    data: None,
                    task: None,
                },
                Err(message) => {
                    let message = format!("cannot render the prompt of `{}`: {message}", self.name);
                    return ToolOutput::error(message).into();
                }
            },
            None => RemoteRequest {
                text: arguments.to_string(),
                data: Some(arguments),
                task: None,
            },
        };
        self.call(request, caller, call_id).await
    }

    /// Sends the answer to the question the remote task asked, and follows it on.
    pub async fn answer(
        &self,
        task: RemoteTask,
        answer: String,
        caller: &CallerRun,
        call_id: &str,
    ) -> Called {
        let request = RemoteRequest {
            text: answer,
            data: None,
            task: Some(task),
        };
        self.call(request, caller, call_id).await
    }

    async fn call(&self, request: RemoteRequest, caller: &CallerRun, call_id: &str) -> Called {
        if request.text.chars().count() > MAX_MESSAGE_CHARS {
            let message = format!(
                "`{}` was not called: its message is longer than {MAX_MESSAGE_CHARS} characters",
                self.name
            );
            return ToolOutput::error(message).into();
        }
        let url = self.agent.url().to_string();
        let child = caller.ctx.emitter.child(&self.name);
        let started = now_ms();
        caller.ctx.emitter.emit(SubAgentStarted {
            planner_step_id: caller.step_id.clone(),
            tool_call_id: call_id.to_string(),
            specialist_id: self.name.clone(),
            sub_task_description: request.text.clone(),
            sub_agent_run_id: child.run_id.clone(),
            remote: Some(url.clone()),
        });
        let prompt = request.text.clone();
        let in_flight = InFlight {
            agent: self.agent.clone(),
            task: Mutex::new(None),
        };
        let updates = Updates {
            emitter: &child,
            caller,
            call_id,
            tool: &self.name,
            in_flight: &in_flight,
        };
        let sink = |update: RemoteUpdate| updates.emit(update);
        let reply = self.agent.send(request, &sink).await;
        in_flight.done();
        let called = self.called(reply);
        caller.ctx.emitter.emit(SubAgentCompleted {
            planner_step_id: caller.step_id.clone(),
            tool_call_id: call_id.to_string(),
            specialist_id: self.name.clone(),
            sub_agent_run_id: child.run_id.clone(),
            result: called.output.clone(),
            remote: Some(url),
        });
        let Called { output, effect } = called;
        let effect = effect.or_else(|| {
            Some(ToolEffect::SubAgent(Box::new(SubagentTrace {
                subagent_id: child.run_id.clone(),
                subagent_type: self.name.clone(),
                parent_tool_call_id: call_id.to_string(),
                prompt,
                start_time: started,
                end_time: now_ms(),
                success: output.success,
                result: output.success.then(|| text_of(&output.data)),
                error: output.error.clone(),
                tool_executions: Vec::new(),
                usage: None,
            })))
        });
        Called { output, effect }
    }

    fn called(&self, reply: Result<RemoteReply, String>) -> Called {
        let name = &self.name;
        match reply {
            Ok(RemoteReply::Completed(answer)) => ToolOutput::ok(answer).into(),
            Ok(RemoteReply::Failed { state, message }) => {
                ToolOutput::error(format!("`{name}` ended {state}: {message}")).into()
            }
            Ok(RemoteReply::InputRequired { task, question }) => Called {
                output: ToolOutput::error(format!("`{name}` waits for an answer: {question}")),
                effect: Some(ToolEffect::RemoteWaiting {
                    tool: name.clone(),
                    question,
                    task: Box::new(task),
                }),
            },
            Err(message) => ToolOutput::error(format!("`{name}` failed: {message}")).into(),
        }
    }
}

fn text_of(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// Status updates as progress events one level below the caller.
struct Updates<'a> {
    emitter: &'a Emitter,
    caller: &'a CallerRun,
    call_id: &'a str,
    tool: &'a str,
    in_flight: &'a InFlight,
}

impl Updates<'_> {
    fn emit(&self, update: RemoteUpdate) {
        self.in_flight.started(&update.task.task_id);
        let message = match &update.message {
            Some(text) => format!("{}: {text}", update.state),
            None => update.state.clone(),
        };
        self.emitter.emit(ToolProgressed {
            step_id: self.caller.step_id.clone(),
            tool_call_id: self.call_id.to_string(),
            tool_name: self.tool.to_string(),
            progress: 0.0,
            total: None,
            message: Some(message),
        });
    }
}

/// The task of a call in flight: a call dropped before it ended (the run's time limit, an
/// interrupt) cancels it at the remote agent, so no work goes on there for nobody.
struct InFlight {
    agent: Arc<dyn RemoteAgent>,
    task: Mutex<Option<String>>,
}

impl InFlight {
    fn started(&self, task_id: &str) {
        *crate::sync::lock(&self.task) = Some(task_id.to_string());
    }

    fn done(&self) {
        *crate::sync::lock(&self.task) = None;
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(task_id) = crate::sync::lock(&self.task).take() {
            self.agent.cancel_blocking(&task_id);
        }
    }
}
