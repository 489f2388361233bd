//! The GenAI client metrics (semantic conventions): `gen_ai.client.token.usage`, tokens per
//! model call by `gen_ai.token.type`, and `gen_ai.client.operation.duration`, seconds per
//! model call. Recorded as the events arrive; the SDK aggregates them and exports them at
//! its interval and at the process's end.

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Histogram, Meter};

/// The buckets the conventions advise for token counts.
const TOKEN_BUCKETS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];

/// The buckets the conventions advise for durations, in seconds.
const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

/// The two histograms of model calls.
pub struct GenAiMetrics {
    tokens: Histogram<u64>,
    duration: Histogram<f64>,
}

impl GenAiMetrics {
    pub fn new(meter: &Meter) -> Self {
        GenAiMetrics {
            tokens: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Number of input and output tokens used")
                .with_boundaries(TOKEN_BUCKETS.to_vec())
                .build(),
            duration: meter
                .f64_histogram("gen_ai.client.operation.duration")
                .with_unit("s")
                .with_description("GenAI operation duration")
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build(),
        }
    }

    /// One model call's tokens; `call` are its attributes (operation, provider, models).
    pub fn tokens(&self, input: u64, output: u64, call: &[KeyValue]) {
        let mut attributes = Vec::with_capacity(call.len() + 1);
        attributes.extend_from_slice(call);
        attributes.push(KeyValue::new("gen_ai.token.type", "input"));
        self.tokens.record(input, &attributes);
        if let Some(kind) = attributes.last_mut() {
            *kind = KeyValue::new("gen_ai.token.type", "output");
        }
        self.tokens.record(output, &attributes);
    }

    /// How long one model call took; `call` as for [`Self::tokens`], with `error.type` when
    /// it failed.
    pub fn duration(&self, seconds: f64, call: &[KeyValue]) {
        self.duration.record(seconds, call);
    }
}
