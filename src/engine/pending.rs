//! What a paused or interrupted run's state lacks, that a resume must settle first: calls
//! that were in flight, calls waiting for approval, a server's form, or a question waiting
//! for its answer (asked by the agent itself, or
//! by a sub-agent at any depth, whose own state waits with it).

use serde::{Deserialize, Serialize};

use super::state::AgentState;
use crate::provider::ToolCall;
use crate::tools::FormRequest;

/// What a checkpoint's state lacks that a resume must settle first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Pending {
    /// These calls were running: their results are missing, and they may have taken effect.
    ToolsInFlight { calls: Vec<ToolCall> },
    /// `ask_user` waits for an answer, which becomes the call's result.
    InputRequired {
        question: String,
        id: Option<String>,
        call: ToolCall,
    },
    /// A form `call`'s MCP server needed filled in: the call is made again on resume,
    /// with the answer ready for the form.
    FormRequired { call: ToolCall, form: FormRequest },
    /// Calls that `permissions` sent to `ask` with nobody to decide: not run, each waits
    /// for `runner resume --approve/--deny`, which runs or refuses it.
    ApprovalRequired { calls: Vec<ApprovalCall> },
    /// Calls of external tools, not run: each waits for the output the program running
    /// the agent submits (`runner resume --tool-output`), which becomes its result.
    OutputsRequired { calls: Vec<ToolCall> },
    /// The sub-agent behind `call` waits for an answer: its run goes on from `state` once
    /// its own `pending` is settled, and its answer becomes the call's result.
    SubAgent {
        call: ToolCall,
        agent: String,
        prompt: String,
        state: Box<AgentState>,
        pending: Box<Pending>,
    },
    /// The remote agent behind `call` asked `question`: the answer is sent to its task as
    /// a follow-up message, and what the task then answers becomes the call's result.
    Remote {
        call: ToolCall,
        question: String,
        task: RemoteTask,
    },
}

/// A remote task, by its ids.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteTask {
    pub task_id: String,
    pub context_id: String,
}

/// A call waiting for approval, and the rule that asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalCall {
    pub call: ToolCall,
    pub rule: String,
}

/// The calls a paused run waits to have approved, wherever in the tree they were made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Approving<'a> {
    pub calls: &'a [ApprovalCall],
    /// The sub-agent that made them; `None` when the run's own agent did.
    pub agent: Option<&'a str>,
}

/// The external calls a paused run waits to have outputs for, wherever in the tree they
/// were made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Submitting<'a> {
    pub calls: &'a [ToolCall],
    /// The sub-agent that made them; `None` when the run's own agent did.
    pub agent: Option<&'a str>,
}

/// The question a paused run waits on, wherever in the tree it was asked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Asked<'a> {
    pub question: &'a str,
    pub id: Option<&'a str>,
    /// The `ask_user` call the answer goes to.
    pub call: &'a ToolCall,
    /// The sub-agent that asked; `None` when the run's own agent did.
    pub agent: Option<&'a str>,
}

impl Pending {
    /// The question this pause waits on; `None` for calls in flight.
    pub fn asked(&self) -> Option<Asked<'_>> {
        match self {
            Pending::ToolsInFlight { .. }
            | Pending::ApprovalRequired { .. }
            | Pending::OutputsRequired { .. } => None,
            Pending::InputRequired { question, id, call } => Some(Asked {
                question,
                id: id.as_deref(),
                call,
                agent: None,
            }),
            Pending::FormRequired { call, form } => Some(Asked {
                question: &form.question,
                id: None,
                call,
                agent: None,
            }),
            Pending::Remote { call, question, .. } => Some(Asked {
                question,
                id: None,
                call,
                agent: Some(call.name.as_str()),
            }),
            Pending::SubAgent { agent, pending, .. } => {
                let inner = pending.asked()?;
                Some(Asked {
                    agent: inner.agent.or(Some(agent.as_str())),
                    ..inner
                })
            }
        }
    }

    /// The calls this pause waits to have approved; `None` for anything else.
    pub fn approving(&self) -> Option<Approving<'_>> {
        match self {
            Pending::ApprovalRequired { calls } => Some(Approving { calls, agent: None }),
            Pending::SubAgent { agent, pending, .. } => {
                let inner = pending.approving()?;
                Some(Approving {
                    agent: inner.agent.or(Some(agent.as_str())),
                    ..inner
                })
            }
            Pending::ToolsInFlight { .. }
            | Pending::InputRequired { .. }
            | Pending::FormRequired { .. }
            | Pending::OutputsRequired { .. }
            | Pending::Remote { .. } => None,
        }
    }

    /// The external calls this pause waits to have outputs for; `None` for anything else.
    pub fn submitting(&self) -> Option<Submitting<'_>> {
        match self {
            Pending::OutputsRequired { calls } => Some(Submitting { calls, agent: None }),
            Pending::SubAgent { agent, pending, .. } => {
                let inner = pending.submitting()?;
                Some(Submitting {
                    agent: inner.agent.or(Some(agent.as_str())),
                    ..inner
                })
            }
            _ => None,
        }
    }

    /// The form this pause waits on, wherever in the tree its call was made.
    pub fn form(&self) -> Option<&FormRequest> {
        match self {
            Pending::FormRequired { form, .. } => Some(form),
            Pending::SubAgent { pending, .. } => pending.form(),
            _ => None,
        }
    }
}
