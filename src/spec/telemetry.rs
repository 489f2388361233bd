//! `telemetry:` in an agent file: what the OpenTelemetry export of its runs adds to the
//! resource (the process, as the tracing backend shows it). Export itself is switched on by
//! the environment or `--otel`, never by the file (docs/telemetry.md).

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What an agent's runs add to the OpenTelemetry resource.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TelemetrySpec {
    /// Resource attributes (`team: search`, `deployment.environment.name: ci`), under those
    /// of `OTEL_RESOURCE_ATTRIBUTES` and `OTEL_SERVICE_NAME`, which win.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    #[schemars(extend("propertyNames" = {"pattern": "^[A-Za-z_][A-Za-z0-9_.-]{0,254}$"}))]
    pub resource: IndexMap<String, AttributeValue>,
}

/// A resource attribute's value: a string, a number or a boolean.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum AttributeValue {
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
}
