//! When a subscriber that writes a file writes what it holds: the events of one moment of
//! a run go out in one `write`, and nothing waits in memory while the run waits.
//!
//! Most events come in bursts with no wait between them (a step starts, then its model call;
//! a reply is complete, its usage and tool calls follow; a call ends, then its step). A
//! file subscriber holds them and writes them when the run is about to wait: for a model
//! (the `thread.message.created` that starts a model call, and whenever a streamed reply
//! has handed over all it received and waits for more: an explicit flush from the bus, so
//! the deltas of one network read go out in one `write`), for
//! a tool (`agent.tool.execution.started`, `agent.tool.progress`, `agent.tool.output`, a call that ends while others of
//! its turn still run), for a person (a permission decision, a pause), and at the end of
//! the run. A step's end goes out with the next step's model call. So `tail -f` of
//! `events.jsonl` or the transcript shows every event before any wait it precedes, and each
//! step whole before the next one waits.
//!
//! An event type not named below is written at once: a new one is never held by mistake.

use super::data::EventData;
use super::event::Event;

/// Decides, event by event, whether to write what is held.
#[derive(Debug, Default)]
pub struct FlushPoints {
    /// Tool calls started and not yet completed, at every depth.
    running: usize,
}

impl FlushPoints {
    /// Whether the events held so far, `event` included, are to be written now.
    pub fn after(&mut self, event: &Event) -> bool {
        match &event.data {
            EventData::ToolStarted(_) => {
                self.running += 1;
                true
            }
            // The last call of a turn to end is followed at once by the step's end; one
            // that ends while others run is news while they run.
            EventData::ToolCompleted(_) => {
                self.running = self.running.saturating_sub(1);
                self.running > 0
            }
            // A message that is whole (a prompt, a tool's result) is followed at once by
            // what the run does with it; a model call's starts the wait for its reply.
            EventData::MessageCreated(created) => created.starts_model_call(),
            // A step's end is followed at once by its checkpoint and the next step's start,
            // then its model call (a summary call that fits the history to the window
            // flushes before it waits): written with them, one write a step less.
            EventData::StepCompleted(_) => false,
            // Followed at once by more of the same moment, never by a wait.
            EventData::RunCreated(_)
            | EventData::StatusChanged(_)
            | EventData::StepCreated(_)
            | EventData::LlmUsage(_)
            | EventData::MessageCompleted(_)
            | EventData::ReasoningCreated(_)
            | EventData::ToolCallWritten(_)
            | EventData::ToolCallCreated(_)
            | EventData::CheckpointSaved(_) => false,
            // Written when the stream waits for more (`EventSink::flush`) or, at the
            // latest, with what follows the reply.
            EventData::MessageDelta(_) => false,
            _ => true,
        }
    }
}
