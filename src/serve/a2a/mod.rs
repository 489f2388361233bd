//! The agents as A2A agents (`docs/a2a.md`), endpoints of `runner serve`: each valid agent
//! file has an Agent Card at `/a2a/{agent}/.well-known/agent-card.json` and the JSON-RPC
//! binding of A2A 1.0 at `/a2a/{agent}`. A task is a run of the session layer (and the
//! runs that continue it after a pause), its context id the session.
//!
//! * `http`: the routes; `origin`: the Host and Origin checks; `card`: an agent's card.
//! * `rpc`: the methods; `send`: where a message goes (a new task, an answer, a session
//!   continued); `start`: the runs a task gets; `inputs`, `answer`: a message as a run's
//!   inputs, or as the answer to what a task waits for.
//! * `task`, `tasks`: a task (status, artifacts, history, updates) and those kept;
//!   `follow`, `outcome`: a run's events and result as the task's updates; `stream`: the
//!   answers on the wire (JSON, server-sent events).

mod answer;
mod card;
mod follow;
mod http;
mod inputs;
mod origin;
mod outcome;
mod rpc;
mod send;
mod start;
mod stream;
mod task;
mod tasks;

use std::sync::Arc;

use super::options::Options;
use super::server::Shared;

/// The largest request body taken, as `runner serve`'s other routes (the message, its
/// parts, the JSON-RPC envelope around them).
pub const MAX_MESSAGE: usize = super::body::MAX_BODY;

/// What the A2A endpoints share.
pub struct A2a {
    server: Shared,
    tasks: tasks::Tasks,
    allowed: origin::Allowed,
    /// Requests carry the server's token (the card says so).
    token: bool,
}

/// The A2A routes of `server`.
pub fn routes<S: Clone + Send + Sync + 'static>(
    server: Shared,
    options: &Options,
) -> axum::Router<S> {
    let a2a = A2a {
        server,
        tasks: tasks::Tasks::default(),
        allowed: origin::Allowed {
            listen: options.listen,
            origins: options.allow_origin.clone(),
        },
        token: options.token_env.is_some(),
    };
    http::routes(Arc::new(a2a))
}
