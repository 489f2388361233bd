//! OpenTelemetry export (docs/telemetry.md): a run's events become spans that follow the
//! GenAI semantic conventions, sent over OTLP/HTTP to whatever collector the environment
//! names. A subscriber of the event stream like the transcript writer: the engine knows
//! nothing of it, and a collector that is down costs a run one warning.

mod attributes;
mod batch;
mod client;
pub mod config;
mod content;
mod export;
mod exporter;
mod ids;
mod metrics;
mod spans;

pub use batch::{BatchTrace, InputSpan};
pub use export::Telemetry;
pub use spans::RunTrace;
