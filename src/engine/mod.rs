//! The engine: agents, state, strategies, tool scheduling, limits, middleware and events.
//! It knows nothing of YAML or the command line.

pub mod agent;
pub mod budget;
pub mod builder;
pub mod call_order;
pub mod checkpointing;
pub mod clock;
pub mod context;
pub mod effect;
pub mod error_code;
pub mod events;
pub mod external;
mod guard;
pub mod id;
pub mod limit;
pub mod middleware;
pub mod outcome;
pub mod pending;
pub mod plan;
pub mod remote;
pub mod remote_port;
pub mod request_params;
pub mod resume;
pub mod run;
pub mod scheduler;
pub mod state;
pub mod step;
pub mod stop_when;
pub mod strategy;
pub mod subagent;
pub mod thread;
pub mod token_estimate;
pub mod toolset;
pub mod trace;
pub mod xml_turn;

#[cfg(test)]
mod never_prints;

pub use agent::{Agent, RunContext};
// For the crate's own tests and benchmarks (the `testing` feature).
#[cfg(any(test, feature = "testing"))]
pub use agent::{StrategyResult, Turn};
pub use builder::AgentBuilder;
pub use error_code::ErrorCode;
pub use limit::Limit;
pub use outcome::{RunOutcome, RunStatus};
pub use state::AgentState;
