//! The agent file: what the user wrote, typed, located and checked.
//!
//! Nothing here knows HTTP or how an agent runs; the engine never reads YAML.

pub mod agent;
pub mod agent_id;
pub mod context;
pub mod destination;
pub mod diagnostic;
pub mod duration;
pub mod execution;
pub mod hooks;
pub mod inputs;
pub mod limits;
pub mod load;
pub mod loadable;
pub mod mcp_import;
pub mod middleware;
pub mod model;
pub mod paths;
pub mod pattern;
pub mod permissions;
pub mod project;
mod read;
pub mod sandbox;
pub mod schema_alternatives;
pub mod schema_check;
pub mod schema_gen;
pub mod script;
pub mod telemetry;
pub mod template;
pub mod tools;
pub mod tree;
pub mod user_schema;
pub mod validate;
pub mod widening;
pub mod yaml;
mod yaml_builder;
mod yaml_scalar;

pub use agent::AgentSpec;
pub use diagnostic::{Code, Diagnostic, Severity, did_you_mean};
pub use paths::normalize;
// For the crate's own tests and benchmarks (the `testing` feature).
#[cfg(any(test, feature = "testing"))]
pub use validate::Validator;
