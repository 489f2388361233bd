//! Middleware (UAP §9) wraps every model call: `before` runs in order and may rewrite the
//! state the call sees (context management), `after` runs in reverse order and may rewrite
//! the response, `on_error` may recover from a failed call.

mod chain;
mod command;
pub(crate) mod history;
mod logging;
mod prune_tool_outputs;
mod sliding_window;
pub(crate) mod summarize;

pub use command::CommandMiddleware;
pub use logging::Logging;
pub use prune_tool_outputs::PruneToolOutputs;
pub use sliding_window::SlidingWindow;
pub use summarize::Summarize;

pub use chain::{CallContext, Middleware, Spend, run_after, run_before, run_on_error};
