//! What a tool call does to the run itself, besides its result for the model. Tools that act
//! on the world have no effect; the engine's own tools (handoffs, `ask_user`, sub-agents)
//! report one as a typed value the engine matches on.

use super::pending::Pending;
use super::state::AgentState;
use super::trace::SubagentTrace;
use crate::tools::FormRequest;

/// The effect of one tool call on the run.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolEffect {
    /// The conversation goes to the agent behind this handoff tool.
    Handoff { tool: String },
    /// `ask_user` found no answer: the run pauses until the person answers.
    InputRequired {
        question: String,
        id: Option<String>,
    },
    /// The tool's service (an MCP server) needed a form filled in and nobody could: the
    /// run pauses on it, and the call is made again on resume with the answer.
    FormRequired(FormRequest),
    /// `permissions` asked for approval and nobody could give it: the call waits, not run,
    /// for `runner resume --approve/--deny`.
    ApprovalRequired { rule: String },
    /// An external tool was called: the call waits, not run, for the output the program
    /// running the agent submits (`runner resume --tool-output`).
    /// `arguments`: those a `pre_tool_use` hook rewrote the call's to, if one did.
    OutputRequired {
        arguments: Option<serde_json::Value>,
    },
    /// A sub-agent ran; its trace joins the caller's state.
    SubAgent(Box<SubagentTrace>),
    /// A sub-agent paused on a question: the run pauses with it, keeping its state.
    SubAgentWaiting {
        agent: String,
        prompt: String,
        state: Box<AgentState>,
        pending: Box<Pending>,
    },
    /// A remote agent's task asks a question: the run pauses, and the answer is sent to
    /// that task on resume.
    RemoteWaiting {
        tool: String,
        question: String,
        task: Box<super::pending::RemoteTask>,
    },
}

impl ToolEffect {
    /// For a call that waits without running (its effect came from the policy or from an
    /// external tool): what it waits for, as its result and progress line say.
    pub fn waits_for(&self) -> &'static str {
        match self {
            ToolEffect::OutputRequired { .. } => "waits for the client's output",
            _ => "waits for approval",
        }
    }
}
