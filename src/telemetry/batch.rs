//! A `runner batch` as one trace: a `batch {agent}` span for the whole batch (a child of
//! `TRACEPARENT`'s span, when the batch was given one) and an `input {line}` span under it
//! for each input, whose span its child `runner exec` (or `resume`) is given as its
//! `TRACEPARENT`, so the input's run nests under it.

use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::SdkTracer;

use crate::trace_env::Carried;

/// The batch's span, open until the batch is dropped.
pub struct BatchTrace {
    tracer: SdkTracer,
    cx: Context,
}

/// One input's span, open until [`InputSpan::end`].
pub struct InputSpan {
    cx: Context,
}

impl BatchTrace {
    pub(super) fn start(tracer: SdkTracer, parent: &Context, agent: &str, batch_id: &str) -> Self {
        let span = tracer
            .span_builder(format!("batch {agent}"))
            .with_kind(SpanKind::Internal)
            .with_attributes([
                KeyValue::new("gen_ai.agent.name", agent.to_string()),
                KeyValue::new("runner.batch.id", batch_id.to_string()),
            ])
            .start_with_context(&tracer, parent);
        let cx = parent.with_span(span);
        BatchTrace { tracer, cx }
    }

    /// Starts the span of the input on `line`, named `id` in the results (its `"id"`, or
    /// its line number).
    pub fn input(&self, line: u64, id: &str) -> InputSpan {
        let attributes = vec![
            KeyValue::new("runner.batch.input.line", line as i64),
            KeyValue::new("runner.batch.input.id", id.to_string()),
        ];
        let span = self
            .tracer
            .span_builder(format!("input {line}"))
            .with_kind(SpanKind::Internal)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, &self.cx);
        InputSpan {
            cx: self.cx.with_span(span),
        }
    }
}

impl Drop for BatchTrace {
    fn drop(&mut self) {
        self.cx.span().end();
    }
}

impl InputSpan {
    /// The span as its run's `TRACEPARENT` names it.
    pub fn carried(&self) -> Carried {
        super::spans::carried(self.cx.span().span_context())
    }

    /// Ends the span with its run's status (`completed`, `failed`, ...): an error unless
    /// `ok`, with `error` as its message.
    pub fn end(self, status: &str, ok: bool, error: Option<&str>) {
        let span = self.cx.span();
        span.set_attribute(KeyValue::new("runner.run.status", status.to_string()));
        span.set_status(match ok {
            true => Status::Ok,
            false => Status::error(error.unwrap_or(status).to_string()),
        });
        span.end();
    }
}
