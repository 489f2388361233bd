//! Whether and how a process exports: read from the variables every OpenTelemetry SDK reads
//! and `--otel`. Off unless asked for: a run that asks nothing sends nothing anywhere.
//!
//! The exporter and the SDK read the rest themselves: `OTEL_EXPORTER_OTLP_(TRACES_)HEADERS`,
//! `_TIMEOUT`, `_COMPRESSION`, `OTEL_TRACES_SAMPLER(_ARG)`, `OTEL_BSP_*`,
//! `OTEL_RESOURCE_ATTRIBUTES`.

use std::env;

/// The variable that records message content on spans (GenAI semantic conventions).
pub const CAPTURE_CONTENT: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

/// Export asked for, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportConfig {
    /// Where spans go, for the one warning a failed export prints.
    pub endpoint: String,
    /// Record prompts, replies, tool arguments and results (redacted) on spans.
    pub capture_content: bool,
    /// Spans are exported (`OTEL_TRACES_EXPORTER` is not `none`).
    pub traces: bool,
    /// Metrics are exported (`OTEL_METRICS_EXPORTER` is not `none`).
    pub metrics: bool,
    /// What was asked for that this build ignores (an exporter it does not have), each
    /// one warning.
    pub warnings: Vec<String>,
}

/// Whether the signal `variable` chooses the exporter of is exported: as the SDKs read
/// `OTEL_TRACES_EXPORTER` and `OTEL_METRICS_EXPORTER`, a comma-separated list, `otlp` by
/// default, `none` for no exporter. An exporter this build lacks (`console`, `zipkin`,
/// `prometheus`, ...) is a warning and otherwise ignored, as the specification asks of a
/// value not understood: then only `none` alone turns the signal off.
fn exported(variable: &str, value: Option<String>, warnings: &mut Vec<String>) -> bool {
    let Some(value) = value else {
        return true;
    };
    let names: Vec<&str> = value
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .collect();
    for name in names.iter().filter(|n| !matches!(**n, "otlp" | "none")) {
        warnings.push(format!(
            "{variable} `{name}` is not built in (only `otlp` and `none`); it is ignored"
        ));
    }
    names.contains(&"otlp") || !names.contains(&"none")
}

/// What the environment (`lookup`) and `--otel` (`flag`) ask for: `Ok(None)` when export is
/// off, `Err` (a warning; export stays off) when asked for in a way this build cannot do.
pub fn export_config(
    flag: bool,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Option<ExportConfig>, String> {
    let set = |name: &str| lookup(name).filter(|value| !value.trim().is_empty());
    let is_true = |name: &str| set(name).is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    if is_true("OTEL_SDK_DISABLED") {
        return Ok(None);
    }
    let mut warnings = Vec::new();
    let traces_on = exported(
        "OTEL_TRACES_EXPORTER",
        set("OTEL_TRACES_EXPORTER"),
        &mut warnings,
    );
    let metrics_on = exported(
        "OTEL_METRICS_EXPORTER",
        set("OTEL_METRICS_EXPORTER"),
        &mut warnings,
    );
    if !traces_on && !metrics_on {
        return Ok(None);
    }
    let traces = set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    let general = set("OTEL_EXPORTER_OTLP_ENDPOINT");
    if !flag && traces.is_none() && general.is_none() {
        return Ok(None);
    }
    let protocol = set("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL").or(set("OTEL_EXPORTER_OTLP_PROTOCOL"));
    if let Some(protocol) = protocol.filter(|p| p.trim() != "http/protobuf") {
        return Err(format!(
            "OpenTelemetry export is off: OTEL_EXPORTER_OTLP_PROTOCOL is `{protocol}`, and \
             this build of runner speaks only `http/protobuf` (OTLP over HTTP; a collector's \
             port 4318)"
        ));
    }
    // As the exporter resolves it: the traces endpoint as is, else the general one plus
    // the signal's path, else the default.
    let endpoint = match (traces, general) {
        (Some(traces), _) => traces,
        (None, Some(general)) => format!("{}/v1/traces", general.trim_end_matches('/')),
        (None, None) => "http://localhost:4318/v1/traces".to_string(),
    };
    Ok(Some(ExportConfig {
        endpoint,
        capture_content: is_true(CAPTURE_CONTENT),
        traces: traces_on,
        metrics: metrics_on,
        warnings,
    }))
}

/// [`export_config`] of this process's environment.
pub fn from_env(flag: bool) -> Result<Option<ExportConfig>, String> {
    export_config(flag, |name| env::var(name).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(flag: bool, vars: &[(&str, &str)]) -> Result<Option<ExportConfig>, String> {
        export_config(flag, |name| {
            vars.iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| value.to_string())
        })
    }

    #[test]
    fn off_unless_asked_for() {
        assert_eq!(config(false, &[]), Ok(None));
        assert_eq!(
            config(false, &[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")]),
            Ok(None)
        );
        let on = config(true, &[]).unwrap().unwrap();
        assert_eq!(on.endpoint, "http://localhost:4318/v1/traces");
        assert!(!on.capture_content);
    }

    #[test]
    fn endpoints_resolve_as_the_exporter_does() {
        let general = config(false, &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/")]);
        assert_eq!(
            general.unwrap().unwrap().endpoint,
            "http://c:4318/v1/traces"
        );
        let traces = config(
            false,
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t/x"),
            ],
        );
        assert_eq!(traces.unwrap().unwrap().endpoint, "http://t/x");
    }

    #[test]
    fn disabled_and_unsupported_protocols_turn_it_off() {
        assert_eq!(config(true, &[("OTEL_SDK_DISABLED", "TRUE")]), Ok(None));
        let none = [
            ("OTEL_TRACES_EXPORTER", "none"),
            ("OTEL_METRICS_EXPORTER", "none"),
        ];
        assert_eq!(config(true, &none), Ok(None));
        let grpc = config(true, &[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]);
        assert!(grpc.unwrap_err().contains("`grpc`"));
        let capture = config(true, &[(CAPTURE_CONTENT, "true")]).unwrap().unwrap();
        assert!(capture.capture_content);
    }

    #[test]
    fn each_signal_is_turned_off_alone_and_unknown_exporters_are_warned_of() {
        let traces_off = config(true, &[("OTEL_TRACES_EXPORTER", "none")])
            .unwrap()
            .unwrap();
        assert!(!traces_off.traces && traces_off.metrics);
        let metrics_off = config(true, &[("OTEL_METRICS_EXPORTER", " none ")])
            .unwrap()
            .unwrap();
        assert!(metrics_off.traces && !metrics_off.metrics);
        let console = config(true, &[("OTEL_TRACES_EXPORTER", "console")])
            .unwrap()
            .unwrap();
        assert!(console.traces, "a value not understood is as if unset");
        assert_eq!(console.warnings.len(), 1, "{:?}", console.warnings);
        assert!(console.warnings[0].contains("`console`"));
        let both = config(true, &[("OTEL_METRICS_EXPORTER", "otlp,prometheus")])
            .unwrap()
            .unwrap();
        assert!(both.metrics && both.warnings.len() == 1);
    }
}
