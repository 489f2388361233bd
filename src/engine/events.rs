//! One event stream per run (SPEC §4). Everything a run leaves behind (events.jsonl, the
//! transcript, progress, result.json) subscribes to it, so they can never disagree.
//! Sub-agents emit into the same bus with their own run id and `depth + 1`.

use std::io::Write;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::Value;

use super::clock::{new_id, now_rfc3339};

/// The event types `runner` emits; `docs/events.md` documents each.
pub mod kind {
    pub const RUN_CREATED: &str = "agent.run.created";
    pub const STEP_CREATED: &str = "agent.run.step.created";
    pub const STEP_COMPLETED: &str = "agent.run.step.completed";
    pub const STATUS_CHANGED: &str = "agent.run.status.changed";
    pub const MESSAGE_CREATED: &str = "thread.message.created";
    pub const MESSAGE_DELTA: &str = "thread.message.delta";
    pub const MESSAGE_COMPLETED: &str = "thread.message.completed";
    pub const TOOL_CALL_CREATED: &str = "thread.run.step.tool_call.created";
    pub const TOOL_STARTED: &str = "agent.tool.execution.started";
    pub const TOOL_COMPLETED: &str = "agent.tool.execution.completed";
    pub const SUB_AGENT_STARTED: &str = "agent.sub_agent.invocation.started";
    pub const SUB_AGENT_COMPLETED: &str = "agent.sub_agent.invocation.completed";
    pub const REQUIRES_ACTION: &str = "thread.run.requires_action";
    pub const USER_INPUT_PROVIDED: &str = "agent.user_input.provided";
    pub const RUN_FAILED: &str = "thread.run.failed";
    pub const RUN_COMPLETED: &str = "thread.run.completed";
    pub const LLM_USAGE: &str = "agent.llm.usage";
    pub const CHECKPOINT_SAVED: &str = "agent.checkpoint.saved";
    pub const HANDOFF: &str = "agent.handoff";
    pub const RELOADED: &str = "agent.definition.reloaded";
    pub const RELOAD_FAILED: &str = "agent.definition.reload_failed";
    pub const PLAN_UPDATED: &str = "agent.plan.updated";
    pub const PLAN_STEP_STATUS: &str = "agent.plan.step.status.changed";
    pub const THINKING: &str = "agent.reasoning.created";
}

/// One event, in the envelope of SPEC §4.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub timestamp: String,
    pub run_id: String,
    pub thread_id: String,
    pub agent: String,
    pub depth: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_run_id: Option<String>,
    pub data: Value,
}

/// Something that receives every event.
pub trait EventSink: Send + Sync {
    fn emit(&self, event: &Event);
}

impl<F: Fn(&Event) + Send + Sync> EventSink for F {
    fn emit(&self, event: &Event) {
        self(event)
    }
}

/// The subscribers of a run.
#[derive(Clone, Default)]
pub struct EventBus {
    sinks: Arc<Vec<Arc<dyn EventSink>>>,
}

impl EventBus {
    pub fn new(sinks: Vec<Arc<dyn EventSink>>) -> Self {
        EventBus {
            sinks: Arc::new(sinks),
        }
    }

    pub fn publish(&self, event: &Event) {
        for sink in self.sinks.iter() {
            sink.emit(event);
        }
    }
}

/// Emits events on behalf of one agent run (its ids, name and depth).
#[derive(Clone)]
pub struct Emitter {
    bus: EventBus,
    pub run_id: String,
    pub thread_id: String,
    pub agent: String,
    pub depth: u32,
    pub parent_run_id: Option<String>,
}

impl Emitter {
    /// The emitter of a root run.
    pub fn root(bus: EventBus, agent: &str, run_id: String, thread_id: String) -> Self {
        Emitter {
            bus,
            run_id,
            thread_id,
            agent: agent.to_string(),
            depth: 0,
            parent_run_id: None,
        }
    }

    /// The emitter of a sub-agent run: a new run id, one level deeper.
    pub fn child(&self, agent: &str) -> Self {
        Emitter {
            bus: self.bus.clone(),
            run_id: new_id(),
            thread_id: self.thread_id.clone(),
            agent: agent.to_string(),
            depth: self.depth + 1,
            parent_run_id: Some(self.run_id.clone()),
        }
    }

    /// The emitter after a handoff: the new agent at the same depth and run.
    pub fn handed_off(&self, agent: &str) -> Self {
        Emitter {
            agent: agent.to_string(),
            ..self.clone()
        }
    }

    pub fn emit(&self, kind: &'static str, data: Value) {
        self.bus.publish(&Event {
            kind,
            timestamp: now_rfc3339(),
            run_id: self.run_id.clone(),
            thread_id: self.thread_id.clone(),
            agent: self.agent.clone(),
            depth: self.depth,
            parent_run_id: self.parent_run_id.clone(),
            data,
        });
    }
}

/// Appends each event as one JSON line, flushed per line, so a crash leaves every emitted
/// event on disk and never half a line.
pub struct JsonlSink<W: Write + Send> {
    out: Mutex<W>,
}

impl<W: Write + Send> JsonlSink<W> {
    pub fn new(out: W) -> Self {
        JsonlSink {
            out: Mutex::new(out),
        }
    }
}

impl<W: Write + Send> EventSink for JsonlSink<W> {
    fn emit(&self, event: &Event) {
        let Ok(mut line) = serde_json::to_vec(event) else {
            return;
        };
        line.push(b'\n');
        if let Ok(mut out) = self.out.lock() {
            // A full disk must not stop the run; the result reports the run itself.
            let _ = out.write_all(&line).and_then(|()| out.flush());
        }
    }
}
