//! Span ids, random as the SDK makes them, except the first run's: they are chosen when the
//! process starts, before the run's MCP servers are, so that these (and everything else the
//! run starts) can be given the run's span as their parent before the span exists.

use std::sync::{Arc, Mutex};

use opentelemetry::trace::{SpanId, TraceId};
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator};

use crate::sync::lock;

/// Ids for the SDK, the first span's chosen ahead.
#[derive(Debug, Clone)]
pub struct ChosenAhead {
    /// The first span's trace: the caller's, or one chosen here (then taken by the SDK
    /// for the first span, which has no parent).
    trace: TraceId,
    unused_trace: Arc<Mutex<Option<TraceId>>>,
    span: SpanId,
    unused_span: Arc<Mutex<Option<SpanId>>>,
    random: RandomIdGenerator,
}

impl ChosenAhead {
    /// Chooses the first span's ids: in the caller's trace when there is one.
    pub fn new(caller_trace: Option<TraceId>) -> Self {
        let random = RandomIdGenerator::default();
        let trace = caller_trace.unwrap_or_else(|| random.new_trace_id());
        let span = random.new_span_id();
        ChosenAhead {
            trace,
            unused_trace: Arc::new(Mutex::new(caller_trace.is_none().then_some(trace))),
            span,
            unused_span: Arc::new(Mutex::new(Some(span))),
            random,
        }
    }

    /// The ids the first span has (or will have).
    pub fn first(&self) -> (TraceId, SpanId) {
        (self.trace, self.span)
    }
}

impl IdGenerator for ChosenAhead {
    fn new_span_id(&self) -> SpanId {
        let chosen = lock(&self.unused_span).take();
        chosen.unwrap_or_else(|| self.random.new_span_id())
    }

    fn new_trace_id(&self) -> TraceId {
        let chosen = lock(&self.unused_trace).take();
        chosen.unwrap_or_else(|| self.random.new_trace_id())
    }
}
