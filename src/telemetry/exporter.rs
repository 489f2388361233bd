//! The OTLP exporter, wrapped so that a collector that is down, slow or refusing costs the
//! run one warning on stderr and nothing else: the spans of a failed batch are dropped.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

/// Whether the one warning was printed: shared with the provider's shutdown, which warns
/// (once, in the same words' spirit) when the last spans could not be flushed in time.
#[derive(Debug, Clone, Default)]
pub struct Warned(Arc<AtomicBool>);

impl Warned {
    /// Prints `warning: {message}` unless a warning was printed before.
    pub fn warn(&self, message: impl fmt::Display) {
        if !self.0.swap(true, Ordering::Relaxed) {
            eprintln!("warning: {message}; spans are dropped, the run goes on");
        }
    }
}

/// An exporter that warns once, naming the endpoint, at its first failed export.
#[derive(Debug)]
pub struct WarnOnce<E> {
    inner: E,
    endpoint: String,
    warned: Warned,
}

impl<E> WarnOnce<E> {
    pub fn new(inner: E, endpoint: String, warned: Warned) -> Self {
        WarnOnce {
            inner,
            endpoint,
            warned,
        }
    }
}

impl<E: SpanExporter> SpanExporter for WarnOnce<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let outcome = self.inner.export(batch).await;
        if let Err(error) = &outcome {
            self.warned.warn(format_args!(
                "OpenTelemetry export to {} failed: {error}",
                self.endpoint
            ));
        }
        outcome
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}
