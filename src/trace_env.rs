//! The trace context the programs a run starts inherit (W3C Trace Context): `TRACEPARENT`
//! and `TRACESTATE` in the environment of hooks, `shell` commands and stdio MCP servers, and
//! the `traceparent` header of requests to MCP servers over HTTP. Set by the OpenTelemetry
//! export (`crate::telemetry`) to the current run's span, so what those programs export
//! joins the run's trace; without export nothing is set, and a child inherits whatever
//! `TRACEPARENT` this process was given.

use std::ffi::OsString;
use std::sync::RwLock;

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

static CARRIED: RwLock<Option<Carried>> = RwLock::new(None);

/// From now on, children are started in this trace context.
pub fn set(carried: Carried) {
    *write(&CARRIED) = Some(carried);
}

/// The context children are started in, if export set one.
pub fn current() -> Option<Carried> {
    read(&CARRIED).clone()
}

/// `vars` (a child's environment) with `TRACEPARENT` and `TRACESTATE` replaced by the
/// current context's, when there is one.
pub fn carry(vars: &mut Vec<(OsString, OsString)>) {
    let Some(carried) = current() else {
        return;
    };
    vars.retain(|(name, _)| name != "TRACEPARENT" && name != "TRACESTATE");
    vars.push(("TRACEPARENT".into(), carried.traceparent.into()));
    if let Some(state) = carried.tracestate {
        vars.push(("TRACESTATE".into(), state.into()));
    }
}

/// The headers of a request to a server, for the current context.
pub fn headers() -> Vec<(&'static str, String)> {
    let Some(carried) = current() else {
        return Vec::new();
    };
    let state = carried.tracestate.map(|state| ("tracestate", state));
    std::iter::once(("traceparent", carried.traceparent))
        .chain(state)
        .collect()
}
