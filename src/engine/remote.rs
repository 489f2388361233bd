//! Remote agents as tools: a sub-agent that runs elsewhere (an A2A agent).
//!
//! The engine knows only the [`RemoteAgent`](super::remote_port::RemoteAgent) port: send a message (a new task, or a
//! follow-up on a task that asked a question), hear its status updates, get its answer;
//! cancel a task. The compile layer plugs the A2A client in. A call runs one level below
//! its caller: `agent.sub_agent.invocation.started`/`completed` (with `remote`: the URL)
//! frame it in the caller's step, and each status update of the remote task is an
//! `agent.tool.progress` event at the caller's depth + 1.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::agent::RemoteAgentTool;
use super::clock::now_ms;
use super::effect::ToolEffect;
use super::events::{Emitter, SubAgentCompleted, SubAgentStarted, ToolProgressed};
use super::remote_port::{RemoteAgent, RemoteReply, RemoteRequest, RemoteTask, RemoteUpdate};
use super::scheduler::Called;
use super::subagent::CallerRun;
use super::trace::SubagentTrace;
use crate::tools::ToolOutput;

/// The most characters a message sent to a remote agent may have.
pub const MAX_MESSAGE_CHARS: usize = 1 << 20;

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
        // A remote agent is known by its tool's name: its own file is not ours to read.
        let id = crate::spec::agent_id::unwritten_agent_id(&self.name);
        let child = caller.ctx.emitter.child((&self.name, &id));
        let started = now_ms();
        caller.ctx.emitter.emit(SubAgentStarted {
            planner_step_id: caller.step_id.clone(),
            tool_call_id: call_id.to_string(),
            specialist_id: self.name.clone(),
            sub_task_description: request.text.clone(),
            sub_agent_run_id: child.run_id.to_string(),
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
            sub_agent_run_id: child.run_id.to_string(),
            result: called.output.clone(),
            remote: Some(url),
        });
        let Called { output, effect } = called;
        let effect = effect.or_else(|| {
            Some(ToolEffect::SubAgent(Box::new(SubagentTrace {
                subagent_id: child.run_id.to_string(),
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
