//! Span ids, random as the SDK makes them, except a run's `invoke_agent` span's: those are
//! chosen before the run starts, before its MCP servers do, so that these (and everything
//! else the run starts) can be given the run's span as their parent before the span exists
//! (`trace_env::ChildTrace`). The SDK takes no ids from the span's builder, only from its
//! generator; [`start_with`] hands the chosen ones to the generator for the one span it
//! starts, on its thread.

use std::cell::Cell;

use opentelemetry::trace::{SpanId, TraceId};
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator};

thread_local! {
    /// The ids of the span being started on this thread, when they were chosen ahead.
    static CHOSEN: Cell<Option<(TraceId, SpanId)>> = const { Cell::new(None) };
}

/// Ids for the SDK: the chosen ones while [`start_with`] starts a span, else random.
#[derive(Debug, Default)]
pub struct Chosen {
    random: RandomIdGenerator,
}

/// Ids for a span to be started later: in `trace` when it will have a parent there.
pub fn ahead(trace: Option<TraceId>) -> (TraceId, SpanId) {
    let random = RandomIdGenerator::default();
    (
        trace.unwrap_or_else(|| random.new_trace_id()),
        random.new_span_id(),
    )
}

/// Runs `start` (which starts one span) with `ids` as the span's: its span id, and its trace
/// id when it has no parent (one with a parent is in the parent's trace, whose id `ids`
/// were chosen with).
pub fn start_with<T>(ids: Option<(TraceId, SpanId)>, start: impl FnOnce() -> T) -> T {
    CHOSEN.with(|chosen| chosen.set(ids));
    let started = start();
    CHOSEN.with(|chosen| chosen.set(None));
    started
}

impl IdGenerator for Chosen {
    fn new_span_id(&self) -> SpanId {
        let chosen = CHOSEN.with(Cell::get);
        chosen.map_or_else(|| self.random.new_span_id(), |(_, span)| span)
    }

    fn new_trace_id(&self) -> TraceId {
        let chosen = CHOSEN.with(Cell::get);
        chosen.map_or_else(|| self.random.new_trace_id(), |(trace, _)| trace)
    }
}
