//! The building blocks every strategy uses, one concept per file: a model call, a turn of
//! tool calls, the checks of a final answer, and the boundaries between steps.

mod answer;
pub(super) mod boundary;
mod fit_window;
mod metering;
mod model_call;
mod tool_turn;

pub use answer::{check_structured, parse_json_answer};
pub use boundary::{
    AfterStep, SavePoint, StepEnd, after_step, end_step, fail_step, save_checkpoint, start_step,
};
pub use model_call::{CallOptions, call_model};
pub use tool_turn::{result_for_model, run_approved_tools, run_tools};
