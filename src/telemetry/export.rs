//! One process's export: the tracer provider (batching on its own thread, bounded queue)
//! and the meter provider (aggregating, exporting at its interval and at the end),
//! built at the first run from the environment and that run's `telemetry:` resource, the
//! caller's trace context (`TRACEPARENT`), and the flush at the end, bounded to 2 s.

use std::collections::HashMap;
use std::env;
use std::sync::{Arc, OnceLock, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::WithHttpConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::resource::{EnvResourceDetector, TelemetryResourceDetector};
use opentelemetry_sdk::trace::{Sampler, SdkTracer, SdkTracerProvider};

use super::batch::BatchTrace;
use super::client;
use super::config::{self, ExportConfig};
use super::exporter::{WarnOnce, Warned};
use super::ids;
use super::metrics::GenAiMetrics;
use super::spans::{GenAiSpans, RunTrace};
use crate::engine::events::EventSink;
use crate::policy::Redactor;
use crate::spec::telemetry::{AttributeValue, TelemetrySpec};
use crate::trace_env::{Carried, ChildTrace};

/// How long the process waits at its end for the last spans to leave.
const FLUSH: Duration = Duration::from_secs(2);

/// The service name when `OTEL_SERVICE_NAME` does not give one.
const SERVICE: &str = "runner";

/// Where spans and metrics go: one of each per process.
struct Providers {
    traces: SdkTracerProvider,
    metrics: SdkMeterProvider,
}

/// A process's OpenTelemetry export. Dropped (after the last run), it flushes for at most
/// [`FLUSH`], then lets go whatever is still queued.
pub struct Telemetry {
    config: ExportConfig,
    /// The caller's trace, from `TRACEPARENT`/`TRACESTATE`: root runs are its children.
    parent: Context,
    provider: OnceLock<Option<Providers>>,
    warned: Warned,
}

impl Telemetry {
    /// The export `--otel` (`flag`) and the environment ask for; `None` when off. A request
    /// this build cannot honour is a warning on stderr, and export stays off.
    pub fn from_env(flag: bool) -> Option<Arc<Telemetry>> {
        let config = match config::from_env(flag) {
            Ok(config) => config?,
            Err(warning) => {
                eprintln!("warning: {warning}");
                return None;
            }
        };
        for warning in &config.warnings {
            eprintln!("warning: {warning}");
        }
        let parent = caller_context(|name| env::var(name).ok());
        Some(Arc::new(Telemetry {
            config,
            parent,
            provider: OnceLock::new(),
            warned: Warned::default(),
        }))
    }

    /// The trace context of a run about to start, under `caller`'s span (else
    /// `TRACEPARENT`'s): its span's ids chosen now, so that what the run starts before the
    /// span exists (its MCP servers) is its child. Nothing when spans are not exported: the
    /// run's programs keep the `TRACEPARENT` this process was given.
    pub fn child_trace(&self, caller: Option<&Carried>) -> ChildTrace {
        if !self.config.traces {
            return ChildTrace::default();
        }
        let parent = caller.map(carried_context);
        let parent = parent.as_ref().unwrap_or(&self.parent).span();
        let parent = parent.span_context();
        let (trace, span) = ids::ahead(parent.is_valid().then(|| parent.trace_id()));
        // As the default sampler decides: a root span is sampled, a child as its parent.
        let sampled = !parent.is_valid() || parent.is_sampled();
        ChildTrace::new(Carried {
            traceparent: format!("00-{trace}-{span}-{:02x}", u8::from(sampled)),
            tracestate: Some(parent.trace_state().header()).filter(|s| !s.is_empty()),
        })
    }

    /// A subscriber that turns a run's events into spans. The first run's `telemetry:`
    /// resource is the process's (a process exports as one resource); `redact` are the
    /// agent's patterns, applied to recorded content besides the built-in ones; `trace`
    /// puts the run under its caller's span and links it to its session's first traced run.
    pub fn subscriber(
        &self,
        spec: Option<&TelemetrySpec>,
        redact: &[String],
        trace: RunTrace,
    ) -> Option<Arc<dyn EventSink>> {
        let provider = self.provider.get_or_init(|| self.build(spec)).as_ref()?;
        let content = match self.config.capture_content {
            // The patterns were checked when the file was validated; the built-ins remain.
            true => Some(Redactor::new(redact).unwrap_or_default()),
            false => None,
        };
        let tracer: SdkTracer = provider.traces.tracer("runner");
        let metrics = GenAiMetrics::new(&provider.metrics.meter("runner"));
        let parent = match &trace.caller {
            Some(caller) => carried_context(caller),
            None => self.parent.clone(),
        };
        Some(Arc::new(GenAiSpans::new(
            tracer,
            parent,
            content,
            metrics,
            trace,
            self.config.traces,
        )))
    }

    /// The span of a batch of `agent`'s runs (`runner batch`), under `TRACEPARENT`'s when
    /// there is one; `spec` as for [`Telemetry::subscriber`].
    pub fn batch(
        &self,
        spec: Option<&TelemetrySpec>,
        agent: &str,
        batch_id: &str,
    ) -> Option<BatchTrace> {
        let provider = self.provider.get_or_init(|| self.build(spec)).as_ref()?;
        let tracer: SdkTracer = provider.traces.tracer("runner");
        Some(BatchTrace::start(tracer, &self.parent, agent, batch_id))
    }

    /// The providers, or `None` (with the one warning) when an exporter cannot be built.
    /// A signal whose exporter is `none` gets a provider that exports nothing: spans
    /// sampled off (they are still built, for the metrics), metrics aggregated by no one.
    fn build(&self, spec: Option<&TelemetrySpec>) -> Option<Providers> {
        // The process-wide TLS provider, as the model clients install it.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let off = |error: &dyn std::fmt::Display| {
            self.warned
                .warn(format_args!("OpenTelemetry export is off: {error}"));
        };
        let resource = resource(spec);
        let mut traces = SdkTracerProvider::builder()
            .with_id_generator(ids::Chosen::default())
            .with_resource(resource.clone());
        traces = match self.config.traces {
            false => traces.with_sampler(Sampler::AlwaysOff),
            true => match client::http_client("TRACES").and_then(|client| {
                let exporter = opentelemetry_otlp::SpanExporter::builder().with_http();
                let exporter = exporter.with_http_client(client).build();
                exporter.map_err(|error| error.to_string())
            }) {
                Ok(exporter) => traces.with_batch_exporter(WarnOnce::new(
                    exporter,
                    self.config.endpoint.clone(),
                    self.warned.clone(),
                )),
                Err(error) => {
                    off(&error);
                    return None;
                }
            },
        };
        let mut metrics = SdkMeterProvider::builder().with_resource(resource);
        // The metrics exporter reads its endpoint as the span exporter does, from
        // `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`, else the general one plus `/v1/metrics`.
        if self.config.metrics {
            match client::http_client("METRICS").and_then(|client| {
                let exporter = opentelemetry_otlp::MetricExporter::builder().with_http();
                let exporter = exporter.with_http_client(client).build();
                exporter.map_err(|error| error.to_string())
            }) {
                Ok(exporter) => {
                    metrics = metrics.with_reader(PeriodicReader::builder(exporter).build())
                }
                Err(error) => {
                    off(&error);
                    return None;
                }
            }
        }
        Some(Providers {
            traces: traces.build(),
            metrics: metrics.build(),
        })
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        let Some(Some(providers)) = self.provider.get() else {
            return;
        };
        let deadline = Instant::now() + FLUSH;
        // A failed export has warned already; what is left is a collector that is slow.
        let traces = providers.traces.shutdown_with_timeout(FLUSH).is_ok();
        flush_metrics(&providers.metrics, deadline);
        if !traces && self.config.traces {
            self.warned.warn(format_args!(
                "OpenTelemetry export to {} did not finish within {} s",
                self.config.endpoint,
                FLUSH.as_secs()
            ));
        }
    }
}

/// Sends the last metrics, waiting for them until `deadline`. The meter provider's shutdown
/// waits for its exporter's own timeout (10 s by default), so it runs on a thread of its
/// own that the process leaves behind when the time is up. Its failure is not warned of:
/// many trace backends (Jaeger, Phoenix) refuse metrics, and that must not cost every run
/// a warning; the spans' warning covers a collector that is down.
fn flush_metrics(metrics: &SdkMeterProvider, deadline: Instant) {
    let metrics = metrics.clone();
    let (done, flushed) = mpsc::channel();
    let shutdown = thread::Builder::new()
        .name("otel-metrics-flush".into())
        .spawn(move || {
            let _ = metrics.shutdown();
            done.send(())
        });
    if shutdown.is_ok() {
        let left = deadline.saturating_duration_since(Instant::now());
        let _ = flushed.recv_timeout(left);
    }
}

/// The resource: `service.name` `runner`, the agent file's attributes, the SDK's own, then
/// `OTEL_RESOURCE_ATTRIBUTES` and `OTEL_SERVICE_NAME` over them.
fn resource(spec: Option<&TelemetrySpec>) -> Resource {
    let file = spec.into_iter().flat_map(|spec| &spec.resource);
    let file = file.map(|(key, value)| KeyValue::new(key.clone(), attribute(value)));
    let mut builder = Resource::builder_empty()
        .with_service_name(SERVICE)
        .with_attributes(file)
        .with_detectors(&[
            Box::new(TelemetryResourceDetector),
            Box::new(EnvResourceDetector::new()),
        ]);
    if let Some(name) = env::var("OTEL_SERVICE_NAME").ok().filter(|n| !n.is_empty()) {
        builder = builder.with_service_name(name);
    }
    builder.build()
}

fn attribute(value: &AttributeValue) -> opentelemetry::Value {
    match value {
        AttributeValue::Bool(b) => (*b).into(),
        AttributeValue::Int(i) => (*i).into(),
        AttributeValue::Float(f) => (*f).into(),
        AttributeValue::Text(s) => s.clone().into(),
    }
}

/// The context `carried` names (its span as a remote parent).
pub fn carried_context(carried: &Carried) -> Context {
    caller_context(|name| match name {
        "TRACEPARENT" => Some(carried.traceparent.clone()),
        _ => carried.tracestate.clone(),
    })
}

/// The trace context `TRACEPARENT` and `TRACESTATE` (as `lookup` reads them) carry, W3C
/// Trace Context; an empty context when there is none or it does not parse.
pub fn caller_context(lookup: impl Fn(&str) -> Option<String>) -> Context {
    let carrier: HashMap<String, String> =
        [("traceparent", "TRACEPARENT"), ("tracestate", "TRACESTATE")]
            .into_iter()
            .filter_map(|(header, name)| Some((header.to_string(), lookup(name)?)))
            .collect();
    TraceContextPropagator::new().extract(&carrier)
}

#[cfg(test)]
mod tests {
    use opentelemetry::trace::TraceContextExt;

    use super::*;

    #[test]
    fn traceparent_makes_runs_children_of_the_callers_trace() {
        let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let cx = caller_context(|name| (name == "TRACEPARENT").then(|| parent.to_string()));
        let span = cx.span();
        let context = span.span_context();
        assert!(context.is_remote());
        assert_eq!(
            context.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        let none = caller_context(|_| Some("garbage".to_string()));
        assert!(!none.span().span_context().is_valid());
    }
}
