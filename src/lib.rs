//! `runner`: a declarative agent runner.
//!
//! The library is usable without the CLI; the `runner` binary is a thin front-end.
//! Flow: `spec` (what the user wrote) → `compile` → `engine` (how it runs), which talks to
//! models through `provider` and acts through `tools` (and MCP servers, `mcp`); `output` is what a run leaves behind.
//!
//! # The public API
//!
//! What a program may use is the list below (`docs/library.md` shows it at work):
//!
//! * [`RunFile`]: run an agent file in one call, as `runner exec` does ([`NotStarted`]
//!   when it never started).
//! * [`session`]: host runs — [`session::start`], [`session::resume()`],
//!   [`session::blocking`], a [`session::RunHandle`] per run (its events, cancel, answer,
//!   outcome), [`session::Conversation`] for a chat.
//! * How a run ended: [`RunOutcome`] (the engine's, with the final [`AgentState`]),
//!   [`RunResult`] (the `result.json` envelope), [`RunStatus`], [`ErrorCode`], [`Limit`].
//! * Events: [`Event`], its typed payload [`EventData`], and [`EventSink`] to receive them
//!   (and the [`Notice`]s beside them: warnings, log lines).
//! * An agent built in code: [`Agent::builder`] ([`AgentBuilder`]) with a [`Provider`]
//!   (e.g. [`ScriptedProvider`]) and [`Tool`]s, driven by [`Agent::stream`].
//!
//! Everything else is the crate's own (`pub(crate)`), free to change from one version to
//! the next.

// Why the internal modules are declared through this macro: they are private to users of
// the library (`pub(crate)`), but this crate's own integration tests and benchmarks are
// other crates, and they test internals (the transcript parser, the providers' stream
// parsers, the policy, the engine's scheduler...). They build the library with the
// `testing` feature (through the dev-dependency on itself), which makes these modules
// `pub` and `#[doc(hidden)]`: reachable from `tests/` and `benches/` by their usual paths,
// never part of the documented API, and private in a build without the feature (a
// dependent crate's normal build). An item inside them keeps its `pub`: the module's
// visibility bounds it. Dead code stays visible as such: without the feature an item only
// the tests use is reported unused, so such items are compiled for the tests only
// (`#[cfg(any(test, feature = "testing"))]`), and `.ci/run` checks that build.
macro_rules! internal_modules {
    ($($name:ident),* $(,)?) => {$(
        #[cfg(feature = "testing")]
        #[doc(hidden)]
        pub mod $name;
        #[cfg(not(feature = "testing"))]
        pub(crate) mod $name;
    )*};
}

internal_modules!(
    a2a, a2a_client, agent_test, batch, checkpoint, cli, compile, engine, fsutil, log, mcp, nats,
    output, policy, protocol, provider, reload, sandbox, spec, telemetry, tools,
);
// rustfmt finds files through `mod` items and does not expand macros: without these
// declarations (`cfg(any())` is never true, so they are never compiled) `cargo fmt` would
// skip every module above.
// rustfmt finds files through `mod` items and does not expand macros: these declarations,
// never compiled (`cfg(any())` is never true), show it the modules above so that `cargo fmt`
// formats them (`.ci/run` also checks every tracked file, so a module left out shows).
#[cfg(any())]
mod a2a;
#[cfg(any())]
mod a2a_client;
#[cfg(any())]
mod agent_test;
#[cfg(any())]
mod batch;
#[cfg(any())]
mod checkpoint;
#[cfg(any())]
mod cli;
#[cfg(any())]
mod compile;
#[cfg(any())]
mod engine;
#[cfg(any())]
mod fsutil;
#[cfg(any())]
mod log;
#[cfg(any())]
mod mcp;
#[cfg(any())]
mod nats;
#[cfg(any())]
mod output;
#[cfg(any())]
mod policy;
#[cfg(any())]
mod protocol;
#[cfg(any())]
mod provider;
#[cfg(any())]
mod reload;
mod run_file;
#[cfg(any())]
mod sandbox;
pub(crate) mod secrets;
pub(crate) mod serve;
#[cfg(any())]
mod spec;
#[cfg(any())]
mod telemetry;
#[cfg(any())]
mod tools;
// Public: its own `pub use` list (session/mod.rs) is the session API.
pub mod session;
pub(crate) mod sync;
/// The mock model server and test helpers (the `testing` feature): not a stable API.
#[cfg(feature = "testing")]
pub mod testing;
pub(crate) mod trace_env;

// The public API, item by item.
pub use engine::budget::{Budget, RunLimits};
pub use engine::events::{Event, EventData, EventSink, Notice};
pub use engine::outcome::RunError;
pub use engine::{Agent, AgentBuilder, AgentState, ErrorCode, Limit, RunOutcome, RunStatus};
pub use output::result::{ResultUsage, RunResult};
pub use provider::{
    BoxFuture, DeltaSink, ErrorKind, Message, ModelRequest, ModelResponse, Provider, ProviderError,
    ScriptedProvider, ScriptedResponse, ScriptedToolCall, ScriptedUsage, StreamDelta, ToolCall,
    Usage,
};
pub use run_file::{NotStarted, RunFile};
pub use tools::{Tool, ToolContext, ToolOutput};

/// The `runner` binary's entry (`src/main.rs`): the whole command line, parsed and run.
/// Not an API: public only because the binary is a crate of its own.
#[doc(hidden)]
pub use cli::binary::run as binary_main;
