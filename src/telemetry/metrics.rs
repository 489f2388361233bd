//! The GenAI client metrics (semantic conventions): `gen_ai.client.token.usage`, tokens per
//! model call by `gen_ai.token.type`, and `gen_ai.client.operation.duration`, seconds per
//! model call. Recorded as the events arrive; the SDK aggregates them and exports them at
//! its interval and at the process's end.
//!
//! A run's model calls nearly always share their attributes (one provider, one model), so
//! the instruments are bound to the last call's: the SDK otherwise hashes the whole
//! attribute set at each record to find its series, a fifth of what export cost a step.

use std::sync::Mutex;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{BoundHistogram, Histogram, Meter};

use crate::sync::lock;

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
    bound: Mutex<Option<Bound>>,
}

/// The series of one set of call attributes.
struct Bound {
    call: Vec<KeyValue>,
    input: BoundHistogram<u64>,
    output: BoundHistogram<u64>,
    duration: BoundHistogram<f64>,
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
            bound: Mutex::new(None),
        }
    }

    /// One model call's tokens; `call` are its attributes (operation, provider, models).
    pub fn tokens(&self, input: u64, output: u64, call: &[KeyValue]) {
        self.with_bound(call, |bound| {
            bound.input.record(input);
            bound.output.record(output);
        });
    }

    /// How long one model call took; `call` as for [`Self::tokens`], with `error.type` when
    /// it failed.
    pub fn duration(&self, seconds: f64, call: &[KeyValue]) {
        self.with_bound(call, |bound| bound.duration.record(seconds));
    }

    /// Runs `record` with the instruments bound to `call`, bound anew when the last call's
    /// attributes were others.
    fn with_bound(&self, call: &[KeyValue], record: impl FnOnce(&Bound)) {
        let mut bound = lock(&self.bound);
        match &*bound {
            Some(last) if last.call == call => {}
            _ => *bound = Some(self.bind(call)),
        }
        if let Some(bound) = &*bound {
            record(bound);
        }
    }

    fn bind(&self, call: &[KeyValue]) -> Bound {
        let with_type = |kind: &'static str| {
            let mut attributes = call.to_vec();
            attributes.push(KeyValue::new("gen_ai.token.type", kind));
            attributes
        };
        Bound {
            call: call.to_vec(),
            input: self.tokens.bind(&with_type("input")),
            output: self.tokens.bind(&with_type("output")),
            duration: self.duration.bind(call),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use opentelemetry::metrics::MeterProvider as _;
    use opentelemetry_sdk::error::OTelSdkResult;
    use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};
    use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
    use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider, Temporality};

    use super::*;

    /// A series as exported: the metric's name, its attributes as `key=value,...` in key
    /// order, its count and sum.
    type Series = (String, String, u64, f64);

    /// An exporter that keeps what it was given.
    #[derive(Clone, Default)]
    struct Kept(Arc<Mutex<Vec<Series>>>);

    impl PushMetricExporter for Kept {
        async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
            let mut kept = lock(&self.0);
            for metric in metrics.scope_metrics().flat_map(|scope| scope.metrics()) {
                let name = metric.name().to_string();
                let points: Vec<(String, u64, f64)> = match metric.data() {
                    AggregatedMetrics::U64(MetricData::Histogram(histogram)) => histogram
                        .data_points()
                        .map(|p| (text(p.attributes()), p.count(), p.sum() as f64))
                        .collect(),
                    AggregatedMetrics::F64(MetricData::Histogram(histogram)) => histogram
                        .data_points()
                        .map(|p| (text(p.attributes()), p.count(), p.sum()))
                        .collect(),
                    _ => Vec::new(),
                };
                let series = points.into_iter().map(|(a, c, s)| (name.clone(), a, c, s));
                kept.extend(series);
            }
            Ok(())
        }

        fn force_flush(&self) -> OTelSdkResult {
            Ok(())
        }

        fn shutdown_with_timeout(&self, _: Duration) -> OTelSdkResult {
            Ok(())
        }

        fn temporality(&self) -> Temporality {
            Temporality::Cumulative
        }
    }

    fn text<'a>(attributes: impl Iterator<Item = &'a KeyValue>) -> String {
        let mut pairs: Vec<String> = attributes
            .map(|kv| format!("{}={}", kv.key, kv.value))
            .collect();
        pairs.sort();
        pairs.join(",")
    }

    fn call(model: &'static str) -> Vec<KeyValue> {
        vec![
            KeyValue::new("gen_ai.operation.name", "chat"),
            KeyValue::new("gen_ai.request.model", model),
        ]
    }

    #[test]
    fn each_call_lands_in_its_series_as_the_attributes_change_and_come_back() {
        let kept = Kept::default();
        let reader = PeriodicReader::builder(kept.clone()).build();
        let provider = SdkMeterProvider::builder().with_reader(reader).build();
        let metrics = GenAiMetrics::new(&provider.meter("test"));
        metrics.tokens(10, 1, &call("a"));
        metrics.duration(0.5, &call("a"));
        metrics.tokens(20, 2, &call("b"));
        let mut failed = call("a");
        failed.push(KeyValue::new("error.type", "timeout"));
        metrics.duration(1.0, &failed);
        metrics.tokens(30, 3, &call("a"));
        provider.force_flush().unwrap();

        let kept = lock(&kept.0);
        let series = |name: &str, attributes: &str| {
            let found = kept.iter().filter(|s| s.0 == name && s.1 == attributes);
            found.map(|s| (s.2, s.3)).next_back()
        };
        let tokens = "gen_ai.client.token.usage";
        let of = |model: &str, kind: &str| {
            let attributes = format!(
                "gen_ai.operation.name=chat,gen_ai.request.model={model},gen_ai.token.type={kind}"
            );
            series(tokens, &attributes)
        };
        assert_eq!(of("a", "input"), Some((2, 40.0)), "{kept:?}");
        assert_eq!(of("a", "output"), Some((2, 4.0)));
        assert_eq!(of("b", "input"), Some((1, 20.0)));
        assert_eq!(of("b", "output"), Some((1, 2.0)));
        let duration = "gen_ai.client.operation.duration";
        let a = "gen_ai.operation.name=chat,gen_ai.request.model=a";
        assert_eq!(series(duration, a), Some((1, 0.5)));
        let failed = format!("error.type=timeout,{a}");
        assert_eq!(series(duration, &failed), Some((1, 1.0)));
    }
}
