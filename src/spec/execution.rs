//! The `execution` key: which strategy runs the agent, its bounds, and tool concurrency.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::tools::ParameterSchema;

/// How the agent is run. Each strategy has its own options; an option of another
/// strategy is an error.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Execution {
    /// loop (default): call the model, run its tool calls, repeat until a reply has none.
    /// react: a reasoning call, then an action call, per step.
    /// plan: a plan as structured output, its steps in dependency order, then a final answer.
    #[serde(default)]
    pub strategy: Strategy,
    /// loop: the most model calls before the run ends with `limit_reached`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_iterations: Option<u64>,
    /// react: the most reasoning+action steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_steps: Option<u64>,
    /// react: the template that asks for the reasoning of each step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_prompt: Option<String>,
    /// plan: the most plan steps (a longer plan is rejected and asked for again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_plan_steps: Option<u64>,
    /// plan: make a new plan when a step fails (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_replan: Option<bool>,
    /// plan: a JSON Schema replacing the default plan shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_schema: Option<ParameterSchema>,
    /// plan: the most plans a run makes (the first, a new one after a failed step, one asked
    /// for again when malformed); none when absent. Reaching it ends the run with
    /// `limit_reached`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_plans: Option<u32>,
    /// plan: the most model calls one plan step makes; none when absent. Reaching it ends
    /// the run with `limit_reached`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_step_calls: Option<u32>,
    /// The most tool calls of one reply that run; the rest get a tool error saying so
    /// (default 256). A reply with thousands of calls is a runaway, not a plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_calls_per_turn: Option<u32>,
    /// `tool_protocol: xml`: replies in a row without a valid action that are answered with
    /// what was wrong before the run fails (`xml_format`); default 4.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format_retries: Option<u32>,
    /// Tool calls of one model turn: true (default) runs them concurrently, false one at a
    /// time, a number at most that many at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tools: Option<ParallelTools>,
    /// true: each tool offered to the model takes an optional `after` argument, the calls
    /// of the same reply (their ids, or their positions from 1) that must finish before
    /// this call starts (UAP §8.6). A cycle or an unknown call is a tool error to the model.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub model_order: bool,
}

/// The execution strategies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// Call the model; run its tool calls; repeat until a reply has no tool call.
    #[default]
    Loop,
    /// Reason without tools, then act with tools, each step.
    React,
    /// Plan first, run the plan's steps, compose the answer.
    Plan,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Loop => "loop",
            Strategy::React => "react",
            Strategy::Plan => "plan",
        }
    }
}

/// `true`, `false`, or the most tool calls at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ParallelTools {
    /// true: all calls of a turn at once; false: one at a time.
    Enabled(bool),
    /// At most this many calls at once.
    AtMost(#[schemars(range(min = 1))] u32),
}

impl ParallelTools {
    /// The most calls at once (`None`: unbounded).
    pub fn limit(self) -> Option<usize> {
        match self {
            ParallelTools::Enabled(true) => None,
            ParallelTools::Enabled(false) => Some(1),
            ParallelTools::AtMost(n) => Some(n.max(1) as usize),
        }
    }
}

/// Which strategy each option belongs to: used to reject options of another strategy.
pub const STRATEGY_OPTIONS: &[(&str, Strategy)] = &[
    ("max_iterations", Strategy::Loop),
    ("max_steps", Strategy::React),
    ("reasoning_prompt", Strategy::React),
    ("max_plan_steps", Strategy::Plan),
    ("allow_replan", Strategy::Plan),
    ("plan_schema", Strategy::Plan),
    ("max_plans", Strategy::Plan),
    ("max_step_calls", Strategy::Plan),
];
