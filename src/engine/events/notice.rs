//! What a run says to the person watching it besides its events: a warning, a line of the
//! `logging` middleware, a refused reload's diagnostics. A notice travels on the bus beside the events but is no event: it
//! never reaches `events.jsonl`, the transcript or the result (a warning reaches the result
//! through the run's `warnings`). The engine never prints; the progress subscriber
//! (`output::progress`) writes notices on stderr.

/// One thing to tell the person watching the run.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Notice {
    /// A problem that did not stop the run (also kept in the run's `warnings`).
    Warning(String),
    /// A line of a middleware's log (`logging`, a failed `summarize` call).
    Log(String),
    /// A saved definition is invalid (`exec --watch`): its diagnostics, one rendered
    /// diagnostic each; the run goes on with the previous one.
    ReloadRefused(Vec<String>),
}
