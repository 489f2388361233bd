//! The exporters' HTTP client: reqwest's blocking client, as the OTLP exporter builds its
//! own (the signal's timeout from `OTEL_EXPORTER_OTLP_{TRACES,METRICS}_TIMEOUT`, else
//! `OTEL_EXPORTER_OTLP_TIMEOUT`, else 10 s), except that it reads the system's root
//! certificates only when the signal's endpoint is `https`: reading and parsing them, once
//! per signal, was most of what starting the export cost a run (as the model clients, a
//! plain `http` endpoint needs no roots).

use std::env;
use std::thread;
use std::time::Duration;

/// A signal's client, as the exporter of `signal` (`TRACES` or `METRICS`) reads the
/// variables.
pub fn http_client(signal: &str) -> Result<reqwest::blocking::Client, String> {
    let var = |name: &str| {
        let value = env::var(format!("OTEL_EXPORTER_OTLP_{signal}_{name}"));
        value
            .or_else(|_| env::var(format!("OTEL_EXPORTER_OTLP_{name}")))
            .ok()
    };
    let timeout = var("TIMEOUT")
        .and_then(|ms| ms.trim().parse().ok())
        .map_or(Duration::from_secs(10), Duration::from_millis);
    let endpoint = var("ENDPOINT").unwrap_or_default();
    let tls = endpoint
        .trim()
        .get(..8)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://"));
    let builder = reqwest::blocking::Client::builder().timeout(timeout);
    let builder = match tls {
        true => builder,
        false => builder.tls_certs_only(Vec::new()),
    };
    // On a thread of its own, as the exporter does: the blocking client starts (and
    // owns) a runtime, which must not be made inside the caller's.
    let built = thread::Builder::new()
        .name("otel-http-client".into())
        .spawn(move || builder.build())
        .map_err(|error| format!("cannot start a thread: {error}"))?
        .join()
        .map_err(|_| "building the HTTP client panicked".to_string())?;
    built.map_err(|error| format!("cannot build the HTTP client: {error}"))
}
