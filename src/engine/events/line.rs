//! An event as one JSON line, byte for byte what its `Serialize` gives, written with less
//! work: the envelope's ids, name and depth are the same for every event one emitter
//! sends, so their JSON is made once and reused while consecutive events share them.
//! (The envelope was half the map entries a step's events serialised.)

use std::io::Write;
use std::sync::Arc;

use super::event::{Event, Payload};

/// The JSON of the last envelope written, from `"runId"` to the comma before `"data"`,
/// and what it was made from.
#[derive(Debug, Default)]
pub(super) struct EnvelopeJson {
    run_id: Arc<str>,
    thread_id: Arc<str>,
    agent: Arc<str>,
    agent_id: Arc<str>,
    depth: u32,
    parent_run_id: Option<Arc<str>>,
    json: Vec<u8>,
}

impl EnvelopeJson {
    /// Whether `event`'s envelope is the one kept (never, before the first).
    fn matches(&self, event: &Event) -> bool {
        !self.json.is_empty()
            && self.run_id == event.run_id
            && self.thread_id == event.thread_id
            && self.agent == event.agent
            && self.agent_id == event.agent_id
            && self.depth == event.depth
            && self.parent_run_id == event.parent_run_id
    }

    /// Keeps `event`'s envelope and its JSON, in the order of `Event`'s `Serialize`.
    fn remember(&mut self, event: &Event) -> serde_json::Result<()> {
        self.run_id.clone_from(&event.run_id);
        self.thread_id.clone_from(&event.thread_id);
        self.agent.clone_from(&event.agent);
        self.agent_id.clone_from(&event.agent_id);
        self.depth = event.depth;
        self.parent_run_id.clone_from(&event.parent_run_id);
        let json = &mut self.json;
        json.clear();
        entry(json, "runId", &event.run_id)?;
        entry(json, "threadId", &event.thread_id)?;
        entry(json, "agent", &event.agent)?;
        if !event.agent_id.is_empty() {
            entry(json, "agentId", &event.agent_id)?;
        }
        entry(json, "depth", &event.depth)?;
        if let Some(parent) = &event.parent_run_id {
            entry(json, "parentRunId", parent)?;
        }
        Ok(())
    }
}

/// `"key":value,` (keys here are plain ASCII: nothing to escape).
fn entry(json: &mut Vec<u8>, key: &str, value: &impl serde::Serialize) -> serde_json::Result<()> {
    json.push(b'"');
    json.extend_from_slice(key.as_bytes());
    json.extend_from_slice(b"\":");
    serde_json::to_writer(&mut *json, value)?;
    json.push(b',');
    Ok(())
}

/// `text` as a JSON string: as it is when nothing in it needs escaping, as a stamp never
/// does (the check is a fraction of what serde_json's escaping loop costs).
fn string(out: &mut Vec<u8>, text: &str) -> serde_json::Result<()> {
    if text.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
        return Ok(());
    }
    serde_json::to_writer(out, text)
}

/// Appends `event` to `out` as one JSON line (its JSON and `\n`), reusing `envelope`'s
/// JSON when the event's envelope is the one kept there.
pub(super) fn write_line(
    event: &Event,
    envelope: &mut EnvelopeJson,
    out: &mut Vec<u8>,
) -> serde_json::Result<()> {
    out.extend_from_slice(b"{\"type\":\"");
    // Event types are dotted lowercase names: nothing to escape.
    out.extend_from_slice(event.kind().as_bytes());
    out.extend_from_slice(b"\",\"timestamp\":");
    string(out, &event.timestamp)?;
    out.push(b',');
    if !envelope.matches(event) {
        envelope.remember(event)?;
    }
    out.extend_from_slice(&envelope.json);
    out.extend_from_slice(b"\"data\":");
    serde_json::to_writer(&mut *out, &Payload(&event.data))?;
    out.write_all(b"}\n").map_err(serde_json::Error::io)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::events::data::{CheckpointSaved, Delta, EventData, MessageDelta};

    fn event(
        run: &str,
        agent_id: &str,
        depth: u32,
        parent: Option<&str>,
        data: EventData,
    ) -> Event {
        Event {
            timestamp: "2026-11-28T09:00:00.000Z".into(),
            run_id: run.into(),
            thread_id: "thread \"1\"".into(),
            agent: "ag\u{e9}nt\n".into(),
            agent_id: agent_id.into(),
            depth,
            parent_run_id: parent.map(Arc::from),
            data,
        }
    }

    #[test]
    fn lines_are_what_serialize_gives_as_the_envelope_changes_and_returns() {
        let created = || {
            EventData::from(CheckpointSaved {
                name: "step-1".into(),
                step: 1,
            })
        };
        let delta = || {
            EventData::from(MessageDelta {
                message_id: "m\u{1}".into(),
                delta: Delta::Chunk {
                    content_chunk: "\"quoted\" \u{7f} \u{2028}".into(),
                },
            })
        };
        let mut stamped = event("r1", "id-1", 0, None, delta());
        stamped.timestamp = "a \"stamp\" \\ with\ttabs".into();
        let events = [
            stamped,
            event("r1", "", 0, None, created()),
            event("r1", "", 0, None, delta()),
            event("r1", "id-1", 0, None, delta()),
            event("r2", "id-2", 1, Some("r1"), created()),
            event("r2", "id-2", 1, Some("r1"), delta()),
            event("r1", "id-1", 0, None, delta()),
            event("r1", "id-1", 0, Some("r0"), delta()),
        ];
        let mut envelope = EnvelopeJson::default();
        for event in &events {
            let mut line = Vec::new();
            write_line(event, &mut envelope, &mut line).unwrap();
            let mut expected = serde_json::to_vec(event).unwrap();
            expected.push(b'\n');
            assert_eq!(
                String::from_utf8(line).unwrap(),
                String::from_utf8(expected).unwrap()
            );
        }
    }
}
