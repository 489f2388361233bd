//! `runner serve`: the agents of a directory over HTTP (`docs/serve.md`). A front end of
//! the session layer like the CLI: each run is a [`crate::session::RunHandle`] on this
//! process's runtime, its events streamed to clients as server-sent events, its session
//! answered or resumed by a request. Nothing here assembles a run.
//!
//! * `options`: what it is told; `server`: routes, life and SIGTERM; `guard`: the cap on
//!   connections and their timeouts; `slots`: `-j` and the
//!   queue; `runs`: the runs hosted, `lines`: their events as sent, serialized once;
//!   `agents`: the agent files served.
//! * `api_agents`, `api_runs`, `api_sessions`, `events`: the routes; `openapi`: their
//!   document; `auth`, `body`, `ids`, `error`, `redact`: what every request and answer
//!   goes through.
//! * `web`: the web view at `/`, its files embedded (`web/`).
//! * `mcp`: the agents as MCP tools, at `/mcp` and over stdio (`runner mcp`).
//! * `a2a`: the agents as A2A agents, at `/a2a/{agent}` (their cards and JSON-RPC).

mod a2a;
mod agents;
mod api_agents;
mod api_runs;
mod api_sessions;
mod auth;
mod body;
mod error;
mod events;
mod guard;
mod ids;
mod lines;
pub(crate) mod mcp;
mod openapi;
mod options;
mod redact;
mod runs;
mod server;
mod slots;
mod web;

pub use options::Options;
pub use server::run;
