//! One event stream per run (SPEC §4). Everything a run leaves behind (events.jsonl, the
//! transcript, progress, result.json) subscribes to it, so they can never disagree.
//! Sub-agents emit into the same bus with their own run id and `depth + 1`.

mod data;
mod jsonl;

use std::sync::Arc;

use schemars::JsonSchema;
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};

pub use data::*;
pub use jsonl::JsonlSink;

use super::clock::{new_id, now_rfc3339};

/// One event: who emitted it and when (the envelope of SPEC §4), and what happened. On the
/// wire the type comes first: `{"type", "timestamp", "runId", …, "data"}`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(title = "runner event (one line of events.jsonl)")]
pub struct Event {
    /// RFC 3339, milliseconds, UTC.
    #[schemars(regex(pattern = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"))]
    pub timestamp: String,
    /// The agent run; a sub-agent run has its own.
    pub run_id: String,
    /// The conversation (the session id).
    pub thread_id: String,
    /// The name of the agent that emitted the event.
    pub agent: String,
    /// 0 for the root agent, +1 per sub-agent level; a handoff keeps the depth.
    pub depth: u32,
    /// The run that started this sub-agent run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_run_id: Option<String>,
    #[serde(flatten)]
    pub data: EventData,
}

impl Event {
    /// The event's type, e.g. `agent.run.created`.
    pub fn kind(&self) -> &'static str {
        self.data.kind()
    }
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("type", self.kind())?;
        map.serialize_entry("timestamp", &self.timestamp)?;
        map.serialize_entry("runId", &self.run_id)?;
        map.serialize_entry("threadId", &self.thread_id)?;
        map.serialize_entry("agent", &self.agent)?;
        map.serialize_entry("depth", &self.depth)?;
        if let Some(parent) = &self.parent_run_id {
            map.serialize_entry("parentRunId", parent)?;
        }
        map.serialize_entry("data", &Payload(&self.data))?;
        map.end()
    }
}

/// An event's data without its type tag.
struct Payload<'a>(&'a EventData);

impl Serialize for Payload<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize_payload(serializer)
    }
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

    pub fn emit(&self, data: impl Into<EventData>) {
        self.bus.publish(&Event {
            timestamp: now_rfc3339(),
            run_id: self.run_id.clone(),
            thread_id: self.thread_id.clone(),
            agent: self.agent.clone(),
            depth: self.depth,
            parent_run_id: self.parent_run_id.clone(),
            data: data.into(),
        });
    }
}
