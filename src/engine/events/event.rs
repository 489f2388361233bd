//! One event on the wire: the envelope (who emitted it, when) and its typed data.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};

use super::data::EventData;

/// One event: who emitted it and when (the envelope of SPEC §4), and what happened. On the
/// wire the type comes first: `{"type", "timestamp", "runId", …, "data"}`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(title = "runner event (one line of events.jsonl)")]
pub struct Event {
    /// RFC 3339, milliseconds, UTC.
    #[schemars(regex(pattern = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"))]
    pub timestamp: Arc<str>,
    /// The agent run; a sub-agent run has its own.
    pub run_id: Arc<str>,
    /// The conversation (the session id).
    pub thread_id: Arc<str>,
    /// The name of the agent that emitted the event.
    pub agent: Arc<str>,
    /// The stable id of that agent (UAP §3.4; how it is made: `docs/events.md`); absent
    /// from events emitted before an agent runs, and from logs of older versions.
    #[serde(default, skip_serializing_if = "str::is_empty")]
    pub agent_id: Arc<str>,
    /// 0 for the root agent, +1 per sub-agent level; a handoff keeps the depth.
    pub depth: u32,
    /// The run that started this sub-agent run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_run_id: Option<Arc<str>>,
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
        if !self.agent_id.is_empty() {
            map.serialize_entry("agentId", &self.agent_id)?;
        }
        map.serialize_entry("depth", &self.depth)?;
        if let Some(parent) = &self.parent_run_id {
            map.serialize_entry("parentRunId", parent)?;
        }
        map.serialize_entry("data", &Payload(&self.data))?;
        map.end()
    }
}

/// An event's data without its type tag.
pub(super) struct Payload<'a>(pub(super) &'a EventData);

impl Serialize for Payload<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize_payload(serializer)
    }
}
