//! How events travel: a run's emitter publishes to the bus, which hands every event to
//! each subscriber.

use std::sync::Arc;

use super::data::EventData;
use super::event::Event;
use super::notice::Notice;
use crate::engine::clock::{new_id, now_stamp};

/// Something that receives every event (and, if it wants them, the run's notices).
pub trait EventSink: Send + Sync {
    fn emit(&self, event: &Event);

    /// A notice for the person watching the run; most subscribers ignore them.
    fn notice(&self, _notice: &Notice) {}

    /// The run is about to wait: a subscriber that holds events writes them now. (The
    /// waits an event itself announces are the file subscribers' `FlushPoints`.)
    fn flush(&self) {}
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

    /// Tells every subscriber that the run is about to wait.
    pub fn flush(&self) {
        for sink in self.sinks.iter() {
            sink.flush();
        }
    }

    /// Hands `notice` to every subscriber.
    pub fn notify(&self, notice: &Notice) {
        for sink in self.sinks.iter() {
            sink.notice(notice);
        }
    }
}

/// Emits events on behalf of one agent run (its ids, name and depth). The envelope's
/// strings are shared with every event it emits, not copied into each.
#[derive(Clone)]
pub struct Emitter {
    bus: EventBus,
    pub run_id: Arc<str>,
    pub thread_id: Arc<str>,
    pub agent: Arc<str>,
    /// The agent's stable id; empty until the engine runs an agent on this emitter.
    pub agent_id: Arc<str>,
    pub depth: u32,
    pub parent_run_id: Option<Arc<str>>,
}

impl Emitter {
    /// The emitter of a root run.
    pub fn root(bus: EventBus, agent: &str, run_id: String, thread_id: String) -> Self {
        Emitter {
            bus,
            run_id: run_id.into(),
            thread_id: thread_id.into(),
            agent: agent.into(),
            agent_id: Arc::default(),
            depth: 0,
            parent_run_id: None,
        }
    }

    /// The emitter of a sub-agent run (`agent`'s name and id): a new run id, one level
    /// deeper.
    pub fn child(&self, (agent, agent_id): (&str, &str)) -> Self {
        Emitter {
            bus: self.bus.clone(),
            run_id: new_id().into(),
            thread_id: self.thread_id.clone(),
            agent: agent.into(),
            agent_id: agent_id.into(),
            depth: self.depth + 1,
            parent_run_id: Some(self.run_id.clone()),
        }
    }

    /// The emitter after a handoff (`agent`'s name and id): the new agent at the same depth
    /// and run.
    pub fn handed_off(&self, (agent, agent_id): (&str, &str)) -> Self {
        Emitter {
            agent: agent.into(),
            agent_id: agent_id.into(),
            ..self.clone()
        }
    }

    /// The run is about to wait (for more of a streamed reply): held events are written.
    pub fn flush(&self) {
        self.bus.flush();
    }

    /// Tells the person watching the run something that is no event (see [`Notice`]).
    pub fn notify(&self, notice: Notice) {
        self.bus.notify(&notice);
    }

    pub fn emit(&self, data: impl Into<EventData>) {
        self.bus.publish(&Event {
            timestamp: now_stamp(),
            run_id: self.run_id.clone(),
            thread_id: self.thread_id.clone(),
            agent: self.agent.clone(),
            agent_id: self.agent_id.clone(),
            depth: self.depth,
            parent_run_id: self.parent_run_id.clone(),
            data: data.into(),
        });
    }
}

impl std::fmt::Debug for Emitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Emitter")
            .field("run_id", &self.run_id)
            .field("agent", &self.agent)
            .field("depth", &self.depth)
            .finish_non_exhaustive()
    }
}
