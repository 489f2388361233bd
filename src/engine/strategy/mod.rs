//! Execution strategies (UAP §5): how an agent turns a state into an answer. `loop`,
//! `react` and `plan` ship with runner; a custom strategy implements the trait.

mod plan;
mod react;
mod reply;
mod step_failure;
mod steps;
mod tool_loop;

pub use plan::PlanStrategy;
pub use react::ReactStrategy;
pub use tool_loop::LoopStrategy;
