//! The trace context the programs a run starts inherit (W3C Trace Context): `TRACEPARENT`
//! and `TRACESTATE` in the environment of hooks, `shell` commands and stdio MCP servers, and
//! the `traceparent` header of requests to MCP servers over HTTP and to remote A2A agents.
//! Set by the OpenTelemetry export (`crate::telemetry`) to the run's span, so what those
//! programs export joins the run's trace; without export nothing is set, and a child
//! inherits whatever `TRACEPARENT` this process was given. Each run carries its own
//! ([`ChildTrace`]): nothing here is process-wide.

use std::ffi::OsString;
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};

use crate::sync::{read, write};

/// `traceparent` and `tracestate`, as the header values (and as a checkpoint keeps a
/// session's first traced run: `session::ResumeData::trace`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Carried {
    pub traceparent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracestate: Option<String>,
}

/// The longest `tracestate` kept (W3C Trace Context: at most 32 members of at most 256
/// characters each; 512 is what a propagator must pass on at least).
const MAX_TRACESTATE: usize = 512;

impl Carried {
    /// A context as a caller gave it (headers, a job, the environment): `None` unless
    /// `traceparent` is a W3C Trace Context one (`00-<32 hex>-<16 hex>-<2 hex>`, ids not
    /// all zeros); a `tracestate` that is not printable ASCII of at most 512 characters is
    /// left out.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<Carried> {
        let traceparent = traceparent.trim();
        let parts: Vec<&str> = traceparent.split('-').collect();
        let hex = |text: &str, len: usize| {
            text.len() == len
                && text
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        };
        let nonzero = |text: &str| text.bytes().any(|b| b != b'0');
        let valid = matches!(parts.as_slice(), [version, trace, span, flags]
            if *version == "00" && hex(trace, 32) && hex(span, 16) && hex(flags, 2)
                && nonzero(trace) && nonzero(span));
        if !valid {
            return None;
        }
        let tracestate = tracestate.map(str::trim).filter(|state| {
            !state.is_empty()
                && state.len() <= MAX_TRACESTATE
                && state.bytes().all(|b| (b' '..=b'~').contains(&b))
        });
        Some(Carried {
            traceparent: traceparent.to_string(),
            tracestate: tracestate.map(String::from),
        })
    }

    /// `TRACEPARENT` and `TRACESTATE` of this process's environment, when valid.
    pub fn from_env() -> Option<Carried> {
        let traceparent = std::env::var("TRACEPARENT").ok()?;
        Carried::parse(&traceparent, std::env::var("TRACESTATE").ok().as_deref())
    }

    /// Starts `command` in this context: its `TRACEPARENT` and `TRACESTATE` are these.
    pub fn apply(&self, command: &mut std::process::Command) {
        command.env("TRACEPARENT", &self.traceparent);
        match &self.tracestate {
            Some(state) => command.env("TRACESTATE", state),
            None => command.env_remove("TRACESTATE"),
        };
    }
}

/// The trace context the programs one run starts are given: `None` without export (they
/// inherit this process's `TRACEPARENT`, if any), else the run's span. Each run has its own,
/// made before the run starts (with the ids its `invoke_agent` span will have, for its MCP
/// servers, which start first), cloned into whatever starts programs or sends requests for
/// it, and set by the export to the span itself when that starts. Many runs of one process
/// (`runner serve`) thus each pass on their own span.
#[derive(Debug, Clone, Default)]
pub struct ChildTrace(Option<Arc<RwLock<Carried>>>);

impl ChildTrace {
    /// The context of a run whose span is to be `carried`.
    pub fn new(carried: Carried) -> Self {
        ChildTrace(Some(Arc::new(RwLock::new(carried))))
    }

    /// From now on, the run's programs are started in `carried` (nothing without export).
    pub fn set(&self, carried: Carried) {
        if let Some(current) = &self.0 {
            *write(current) = carried;
        }
    }

    /// The context the run's programs are started in, if export gave one.
    pub fn current(&self) -> Option<Carried> {
        self.0.as_ref().map(|current| read(current).clone())
    }

    /// `vars` (a child's environment) with `TRACEPARENT` and `TRACESTATE` replaced by the
    /// run's, when it has one.
    pub fn carry(&self, vars: &mut Vec<(OsString, OsString)>) {
        let Some(carried) = self.current() else {
            return;
        };
        vars.retain(|(name, _)| name != "TRACEPARENT" && name != "TRACESTATE");
        vars.push(("TRACEPARENT".into(), carried.traceparent.into()));
        if let Some(state) = carried.tracestate {
            vars.push(("TRACESTATE".into(), state.into()));
        }
    }

    /// The headers of a request the run makes to a server (`traceparent`, `tracestate`).
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        let Some(carried) = self.current() else {
            return Vec::new();
        };
        let state = carried.tracestate.map(|state| ("tracestate", state));
        std::iter::once(("traceparent", carried.traceparent))
            .chain(state)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_w3c_traceparent_is_carried() {
        let valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let carried = Carried::parse(valid, Some("vendor=x")).unwrap();
        assert_eq!(carried.tracestate.as_deref(), Some("vendor=x"));
        assert!(
            Carried::parse(valid, Some("bad\nstate"))
                .unwrap()
                .tracestate
                .is_none()
        );
        for bad in [
            "",
            "garbage",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        ] {
            assert!(Carried::parse(bad, None).is_none(), "{bad}");
        }
    }
}
