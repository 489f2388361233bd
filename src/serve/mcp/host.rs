//! Where a call's run goes: one of the `runner serve` runs (its `-j` slots and queue, its
//! run directories), so `/api/runs` shows it and SIGTERM interrupts it, checkpointed.
//! `runner mcp` hosts its runs the same way, in a server of its own with no HTTP side.

use std::sync::Arc;
use std::time::Duration;

use rmcp::service::{RequestContext, RoleServer};

use crate::output::result::RunResult;
use crate::serve::runs::LiveRun;
use crate::serve::server::Shared;
use crate::session::{Cancel, EventStream, RunHandle};

/// How long a call waits for a run to end: a run is bounded by its own limits, this only
/// keeps a broken run from holding the call forever.
const LONGEST_RUN: Duration = Duration::from_secs(24 * 60 * 60);

#[derive(Clone)]
pub struct Host(pub Shared);

/// A run going on for a call.
pub struct Going {
    pub session_id: String,
    pub events: EventStream,
    pub cancel: Cancel,
    run: Arc<LiveRun>,
}

impl Host {
    pub fn catalog(&self) -> &crate::serve::agents::Catalog {
        &self.0.catalog
    }

    /// How a run is hosted: a run directory under `.runner/runs`, no terminal, no answers
    /// file (a question or an approval pauses the run: the call asks the client).
    pub fn settings(&self) -> crate::session::RunSettings {
        self.0.settings()
    }

    /// [`Host::settings`] for a call that came over HTTP (`/mcp`): its run is a child of the
    /// span the request's `traceparent` header names.
    pub fn settings_for(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> crate::session::RunSettings {
        match context.extensions.get::<axum::http::request::Parts>() {
            Some(request) => self.0.settings_for(&request.headers),
            None => self.settings(),
        }
    }

    /// Where a new run keeps its session: NATS under `runner serve --nats`, else where the
    /// file says (`None`).
    pub fn new_run_sessions(&self) -> Option<crate::session::SessionsAt> {
        self.0.new_run_sessions()
    }

    /// A slot for a run (`-j` and `--queue`).
    pub async fn slot(&self) -> Result<tokio::sync::OwnedSemaphorePermit, String> {
        self.0.slots.take().await.map_err(|error| error.message)
    }

    /// Hosts the run of `handle` in its slot.
    pub fn host(&self, handle: RunHandle, slot: tokio::sync::OwnedSemaphorePermit) -> Going {
        let (events, cancel) = (handle.events(), handle.canceller());
        let run = self.0.runs.host(handle, slot);
        Going {
            session_id: run.session_id.clone(),
            events,
            cancel,
            run,
        }
    }
}

impl Going {
    /// The run's result, once it has ended.
    pub async fn result(self) -> Result<RunResult, String> {
        self.run
            .wait_ended(LONGEST_RUN)
            .await
            .map(|result| (*result).clone())
            .ok_or_else(|| format!("run `{}` did not end", self.run.run_id))
    }
}
